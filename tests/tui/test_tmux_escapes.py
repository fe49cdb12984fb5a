"""A real terminal: in tmux, an OSC or CSI in a task id neither retitles the pane nor wipes
the screen under ``zombietop status`` or the dashboard. The attack is reproduced first with
the same bytes printed raw, so the test can tell."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from zombietop.heartbeat_line import BeatLine
from zombietop.store.sqlite import SQLiteStore

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

TASK = "evil\x1b]2;owned\x07\x1b[2J-1"
SHOWN = "evil\\x1b]2;owned\\x07\\x1b[2J-1"
MARKER = "MARKER-still-on-screen"


class Tmux:
    """One tmux server of this test's own (its own socket), one pane running ``sh``."""

    def __init__(self, folder: Path) -> None:
        self.socket = f"zt-{uuid.uuid4().hex[:8]}"
        self.folder = folder
        self._run("new-session", "-d", "-s", "t", "-x", "132", "-y", "30", "sh")
        self._run("set-option", "-g", "allow-rename", "on")
        self._run("select-pane", "-t", "t", "-T", "before")

    def _run(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def type(self, line: str) -> None:
        self._run("send-keys", "-t", "t", "-l", line)
        self._run("send-keys", "-t", "t", "Enter")

    def keys(self, *keys: str) -> None:
        self._run("send-keys", "-t", "t", *keys)

    def screen(self) -> str:
        return self._run("capture-pane", "-p", "-t", "t")

    def title(self) -> str:
        return self._run("display-message", "-p", "-t", "t", "#{pane_title}").strip()

    def wait_for(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if text in screen:
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"{text!r} never showed; the pane holds:\n{screen}")
            time.sleep(0.1)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=10)


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[Tmux]:
    pane = Tmux(tmp_path)
    try:
        yield pane
    finally:
        pane.close()


@pytest.fixture
def hostile_db(tmp_path: Path) -> Path:
    """A store holding a task whose id (and stage) carry OSC and CSI, written straight through
    the store as anyone who can write it could."""
    db = tmp_path / "z.db"

    async def fill() -> None:
        store = await SQLiteStore.open(db, create=True)
        try:
            await store.create_task(task_id=TASK, run_id="r", step="s", step_type="d", actor="x")
            lease = await store.acquire_lease(TASK, owner="w\x1b]2;owner\x07", ttl=3600)
            await store.record_heartbeat(
                TASK,
                BeatLine(stage="load\x1b[2J", progress=10.0),
                owner=lease.owner or "",
                token=lease.token,
            )
        finally:
            await store.close()

    asyncio.run(fill())
    return db


def _zombietop(db: Path, *args: str) -> str:
    argv = [sys.executable, "-m", "zombietop.tui", "--db", str(db), *args]
    return " ".join(shlex.quote(a) for a in argv)


def test_the_raw_bytes_do_retitle_and_wipe_the_pane(tmux: Tmux) -> None:
    """The attack itself, so the checks below can see it: tmux obeys these bytes."""
    tmux.type(f"echo {MARKER}")
    tmux.wait_for(MARKER)
    tmux.type(r"printf 'evil\033]2;owned\007\033[2J-1\n'; echo END''OK")
    screen = tmux.wait_for("ENDOK")
    assert tmux.title() == "owned"
    assert MARKER not in screen, f"\\e[2J should have wiped the screen:\n{screen}"


def test_status_shows_the_id_escaped_and_the_pane_keeps_its_title(
    tmux: Tmux, hostile_db: Path
) -> None:
    tmux.type(f"echo {MARKER}")
    tmux.wait_for(MARKER)
    # --nagios lists only tasks to act on (this one is healthy): it must keep the pane too.
    for form in ("status", "status --nagios", "status --all"):
        tmux.type(f"{_zombietop(hostile_db, *form.split())}; echo END''OK")
        screen = tmux.wait_for("ENDOK")
        assert "nagios" in form or SHOWN in screen, screen
        assert MARKER in screen, f"the screen was wiped:\n{screen}"
        assert tmux.title() == "before"
        tmux._run("clear-history", "-t", "t")
        tmux.type(f"clear; echo {MARKER}")
        tmux.wait_for(MARKER)


def test_the_dashboard_shows_the_id_escaped_and_the_pane_keeps_its_title(
    tmux: Tmux, hostile_db: Path
) -> None:
    tmux.type(_zombietop(hostile_db, "--read-only", "--refresh", "0.5"))
    # The row shows the escaped id, whole or cut in its middle (the TASK column's width is the
    # layout's to choose at 132 columns): its start and its end show, escaped.
    tmux.wait_for("evil\\x1b")
    time.sleep(1.5)  # a few refreshes: still escaped, still titled as before
    assert "\\x07\\x1b[2J-1" in tmux.wait_for("evil\\x1b")
    assert tmux.title() == "before"
    tmux.keys("Enter")  # the detail view: the whole id
    tmux.wait_for("evil\\x1b]2;owned\\x07\\x1b[2J-1")
    tmux.wait_for("stage=load\\x1b[2J")
    assert tmux.title() == "before"
    tmux.keys("q")
    tmux.keys("q")
