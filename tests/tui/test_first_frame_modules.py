"""What the dashboard has loaded when its first whole poll is on the screen.

The first frame needs the task table and the engine that fills it. The other screens (the
jobs view, the saved views' picker, help, workers, the on-call and bulk dialogs) load when
their key is pressed, psutil when a process of this host is looked at, and nothing reads the
installed packages' metadata (``importlib.metadata``) or loads a client the store does not use.
The dashboard runs as a user starts it, on a terminal of its own, in a fresh interpreter.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import sys
import time
from pathlib import Path

from tests.tui.test_status_start import make_store
from zombietop.procs import this_host

NOT_FOR_THE_FIRST_FRAME = {
    "psutil",
    "importlib.metadata",
    "aiohttp",
    "asyncpg",
    "opentelemetry",
    "prometheus_client",
    "zombietop.otel",
    "zombietop.serve",
    "zombietop.tui.cli.status",
    "zombietop.tui.screens.jobs",
    "zombietop.tui.screens.job_history",
    "zombietop.tui.screens.view_picker",
    "zombietop.tui.screens.help",
    "zombietop.tui.screens.workers",
    "zombietop.tui.screens.oncall",
    "zombietop.tui.screens.bulk",
}

AT_FIRST_SNAPSHOT = """
import os, sys
from zombietop.tui import launch
from zombietop.tui.cli.main import main

def write_loaded():
    with open(sys.argv[2], "w") as out:
        out.write(" ".join(sorted(sys.modules)))
    os._exit(0)

launch.settle_collector = write_loaded  # called once the first whole poll is shown
main(["--db", sys.argv[1]])
"""

TIMEOUT_S = 60.0


def loaded_at_first_frame(db: Path, out: Path) -> set[str]:
    """The modules of a dashboard (not read-only: its executor too) once its first whole poll
    is on its terminal."""
    pid, terminal = pty.fork()
    if pid == 0:  # the child: the dashboard on a fresh terminal
        os.execv(sys.executable, [sys.executable, "-c", AT_FIRST_SNAPSHOT, str(db), str(out)])
    deadline = time.monotonic() + TIMEOUT_S
    try:
        # Read what it draws (a full terminal would block it) until it exits.
        while time.monotonic() < deadline:
            ready, _, _ = select.select([terminal], [], [], 0.5)
            if ready:
                try:
                    os.read(terminal, 65536)
                except OSError:  # the child has closed the terminal: it exited
                    break
            done, _status = os.waitpid(pid, os.WNOHANG)
            if done:
                pid = 0
                break
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(terminal)
    assert out.exists(), f"the dashboard showed no first poll within {TIMEOUT_S:g} s"
    return set(out.read_text().split())


def test_the_first_frame_loads_no_other_screen_and_no_unused_package(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    make_store(db, pid=None, host=this_host())
    loaded = loaded_at_first_frame(db, tmp_path / "modules.txt")
    assert "zombietop.tui.screens.dashboard" in loaded
    assert "zombietop.act.executor" in loaded  # the executor is made at the start
    packages = {name.split(".")[0] for name in loaded}
    assert sorted((loaded | packages) & NOT_FOR_THE_FIRST_FRAME) == []
