"""The demo as a user drives it: ``zombietop demo`` in a real terminal (tmux), keys and all.

Kill the SIGTERM-ignoring job (K) and watch the kill escalate; kill the checkpointing job, resume
it and watch it carry on from its checkpoint; quit with ctrl+c, and nothing the demo started is
left running.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.tui.test_demo import assert_all_gone, kill_outcomes, live_pids, status
from zombietop.act.sweep import stop_all
from zombietop.locations import task_file_name
from zombietop.tui.demo.command import CHECKPOINTED, STUBBORN, DemoPaths

SPEED = "10"
FOCUS_ON_THE_TABLE = "K Kill"
"""In the footer while the task table has the focus, and not while the filter has it."""
DEADLINE_S = 60.0

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("tmux") is None, reason="needs tmux to give the demo a terminal"
    ),
]


class Terminal:
    """A private tmux server with one window of a fixed size."""

    def __init__(self, name: str, size: tuple[int, int]) -> None:
        # Unique on the host: tmux keeps its sockets in one folder per user, and a second run
        # of the suite (another checkout, the same test) must never share or kill this server.
        self.socket = f"{name}-{uuid.uuid4().hex[:8]}"
        self.size = size

    def tmux(self, *args: str) -> str:
        # The snapshot plugin pins COLUMNS and LINES for its own tests; the dashboard in the
        # window would believe them over the window's real size.
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "TMUX")}
        result = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=10, env=env
        )
        return result.stdout

    def start(self, command: str) -> None:
        width, height = self.size
        self.tmux("new-session", "-d", "-s", "demo", "-x", str(width), "-y", str(height), command)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "demo")

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "demo", *(["-l"] if literal else []), *keys)

    def wait_for(self, text: str, timeout: float = DEADLINE_S, *, gone: bool = False) -> str:
        """Wait until ``text`` is on the screen (or, ``gone``, no longer on it)."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if (text in screen) != gone:
                return screen
            if time.monotonic() > deadline:
                never = "never stopped seeing" if gone else "never saw"
                raise AssertionError(f"{never} {text!r} on screen; last screen:\n{screen}")
            time.sleep(0.1)


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    term = Terminal("zombietop-demo-test", (120, 50))
    try:
        yield term
    finally:
        term.tmux("kill-server")


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoPaths]:
    paths = DemoPaths(db=tmp_path.resolve() / "demo.db")
    try:
        yield paths
    finally:
        stop_all(paths.db, grace=1.0)


def wait_status(
    paths: DemoPaths,
    capsys: pytest.CaptureFixture[str],
    what: str,
    check: Callable[[dict[str, dict[str, Any]]], bool],
) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + DEADLINE_S
    while True:
        if paths.db.exists():
            tasks = status(paths, capsys)
            if check(tasks):
                return tasks
        if time.monotonic() > deadline:
            raise AssertionError(f"status never showed {what} within {DEADLINE_S:g}s")
        time.sleep(0.2)


def select(term: Terminal, task_id: str) -> None:
    """Filter the table down to one task, so the action keys act on it."""
    term.keys("Escape")
    # A key right behind ESC would read as Alt+key: let the escape stand alone.
    time.sleep(0.5)
    term.keys("/")
    term.wait_for("filter: task id")
    # The footer lists the task keys only while the table has the focus: a K typed before the
    # focus is back on the table would go into the filter.
    term.wait_for(FOCUS_ON_THE_TABLE, gone=True)
    term.keys(task_id, literal=True)
    term.keys("Enter")
    term.wait_for("(1 of ")  # the header counts the rows the filter leaves
    term.wait_for(FOCUS_ON_THE_TABLE)


def test_in_the_dashboard_a_kill_escalates_and_a_resume_carries_on_from_the_checkpoint(
    tmp_path: Path,
    terminal: Terminal,
    demo: DemoPaths,
    capsys: pytest.CaptureFixture[str],
) -> None:
    exited = tmp_path / "exited"
    argv = [sys.executable, "-m", "zombietop.tui", "demo", "--speed", SPEED, "--db", str(demo.db)]
    # Stay open after the demo ends, so its last words can be read off the screen.
    terminal.start(f"{shlex.join(argv)}; echo $? > {exited}; sleep 60")
    terminal.wait_for(STUBBORN)
    wait_status(
        demo,
        capsys,
        "both jobs under way",
        lambda t: (
            t[STUBBORN]["health"] == "healthy" and t[CHECKPOINTED]["counters"].get("items", 0) >= 5
        ),
    )

    # The job that ignores SIGTERM: the kill escalates to SIGKILL after the grace.
    select(terminal, STUBBORN)
    terminal.keys("K")
    terminal.wait_for(f"kill {STUBBORN}?")
    terminal.keys("y")
    # Whoever finishes the kill (this dashboard, or the watchdog if it looks first) records it,
    # and the task's detail lists the escalation among its events.
    wait_status(
        demo, capsys, f"{STUBBORN} interrupted", lambda t: t[STUBBORN]["health"] == "interrupted"
    )
    deadline = time.monotonic() + DEADLINE_S
    while kill_outcomes(demo, STUBBORN) != ["term_sent", "escalated"]:
        assert time.monotonic() < deadline, kill_outcomes(demo, STUBBORN)
        time.sleep(0.1)
    terminal.keys("Enter")
    terminal.wait_for("kill escalated: process group")
    terminal.keys("Escape")
    time.sleep(0.5)
    assert "ignored" in (demo.logs / f"{STUBBORN}.1.log").read_text()

    # The job that checkpoints: killed, it stops cleanly; resumed, it carries on from there.
    select(terminal, CHECKPOINTED)
    terminal.keys("K")
    terminal.wait_for(f"kill {CHECKPOINTED}?")
    terminal.keys("y")
    tasks = wait_status(
        demo,
        capsys,
        f"{CHECKPOINTED} interrupted",
        lambda t: t[CHECKPOINTED]["health"] == "interrupted",
    )
    checkpoint = json.loads(Path(tasks[CHECKPOINTED]["checkpoint"]).read_text())["item"]
    assert checkpoint >= 5
    terminal.keys("r")
    terminal.wait_for(f"Resume {CHECKPOINTED}")
    terminal.keys("y")
    terminal.wait_for("relaunched")
    tasks = wait_status(
        demo,
        capsys,
        f"{CHECKPOINTED} attempt 2 carrying on from item {checkpoint}",
        lambda t: (
            t[CHECKPOINTED]["attempt"] == 2
            and t[CHECKPOINTED]["health"] == "healthy"
            and t[CHECKPOINTED]["counters"].get("resumed_from") == checkpoint
            and t[CHECKPOINTED]["counters"].get("items", 0) > checkpoint
        ),
    )
    log = (demo.logs / f"{task_file_name(CHECKPOINTED)}.2.log").read_text()
    assert f"attempt 2: starting at item {checkpoint} of" in log

    # Quit: the demo stops everything it started, the relaunched attempt included.
    pids = live_pids(demo, tasks)
    assert len(pids) >= 10
    # ctrl+c quits as in htop and k9s (Textual's own would only say "press q"), and the demo
    # stops its jobs as it does after q.
    terminal.keys("C-c")
    screen = terminal.wait_for("none left running", timeout=30)
    assert "zombietop demo: stopped" in screen
    deadline = time.monotonic() + 10
    # The shell's `> exited` makes the file before `echo` writes to it: wait for the line.
    while not (exited.exists() and exited.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert exited.read_text().strip() == "0"
    assert_all_gone(demo, pids)
