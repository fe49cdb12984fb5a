"""In a real terminal (tmux), the dashboard asks for the mouse unless ``--no-mouse`` or
``[monitor] mouse = false`` leaves it to the terminal; tmux says whether an application holds
the mouse (``mouse_any_flag``)."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest

from tests.tui.test_tmux_escapes import Tmux, _zombietop, tmux
from zombietop.store.sqlite import SQLiteStore

__all__ = ["tmux"]  # the fixture, shared with the escapes' tests

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def empty_db(tmp_path: Path) -> Path:
    db = tmp_path / "z.db"

    async def make() -> None:
        store = await SQLiteStore.open(db, create=True)
        await store.close()

    asyncio.run(make())
    return db


def mouse_held(pane: Tmux, want: str, timeout: float = 30.0) -> str:
    """tmux's word on the mouse once it reads ``want`` (or the last one it read)."""
    deadline = time.monotonic() + timeout
    while True:
        flag = pane._run("display-message", "-p", "-t", "t", "#{mouse_any_flag}").strip()
        if flag == want or time.monotonic() > deadline:
            return flag
        time.sleep(0.1)


@pytest.mark.parametrize(
    ("flags", "config", "held"),
    [
        ((), "", "1"),
        (("--no-mouse",), "", "0"),
        ((), "[monitor]\nmouse = false\n", "0"),
    ],
    ids=["default", "--no-mouse", "config"],
)
def test_the_dashboard_takes_the_mouse_unless_told_not_to(
    tmux: Tmux, empty_db: Path, tmp_path: Path, flags: tuple[str, ...], config: str, held: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(config)
    tmux.type(_zombietop(empty_db, "--config", str(path), "--read-only", *flags))
    tmux.wait_for("READ-ONLY")
    time.sleep(0.5)  # the mouse is asked for as the app starts; give a late one its chance
    assert mouse_held(tmux, held) == held
    tmux.keys("q")
