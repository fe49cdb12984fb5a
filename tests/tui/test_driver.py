"""The quiet driver in a real terminal: it sleeps while nobody types, yet every key, a lone
Escape and quitting arrive as quickly as with Textual's own driver."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.tui.test_demo_dashboard import Terminal
from zombietop.tui.textual_compat import AWAKE_AFTER_INPUT

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux for a terminal")

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def app() -> Iterator[tuple[Terminal, psutil.Process]]:
    term = Terminal("zombietop-driver-test", (60, 10))
    try:
        term.start(
            f"cd {REPO} && {sys.executable} -m tests.tui.quiet_keys; echo EXITED $?; sleep 30"
        )
        term.wait_for("ready", timeout=20)
        shell = psutil.Process(int(term.tmux("display", "-p", "-t", "demo", "#{pane_pid}")))
        (process,) = [p for p in shell.children() if "quiet_keys" in " ".join(p.cmdline())]
        yield term, process
    finally:
        term.tmux("kill-server")


def wakeups(process: psutil.Process) -> int:
    """How many times the app's threads have gone to sleep and woken, so far."""
    return sum(
        int((task / "status").read_text().split("voluntary_ctxt_switches:")[1].split()[0])
        for task in Path(f"/proc/{process.pid}/task").iterdir()
    )


def test_it_sleeps_between_keys_and_misses_none(app: tuple[Terminal, psutil.Process]) -> None:
    term, process = app
    time.sleep(AWAKE_AFTER_INPUT + 0.5)  # nobody has typed for a while: asleep
    before = wakeups(process)
    time.sleep(2.0)
    assert wakeups(process) - before < 10  # Textual's own driver wakes 20 times
    term.keys("x")
    term.wait_for("key: x", timeout=2)
    time.sleep(AWAKE_AFTER_INPUT + 0.5)
    term.keys("Escape")  # alone: sent once no sequence follows it (ESCDELAY)
    term.wait_for("key: escape", timeout=2)
    time.sleep(AWAKE_AFTER_INPUT + 0.5)
    asked = time.monotonic()
    term.keys("q")
    term.wait_for("EXITED 0", timeout=5)
    assert time.monotonic() - asked < 1.5
