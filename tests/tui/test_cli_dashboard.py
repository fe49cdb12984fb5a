"""`zombietop` alone: one-line errors before the screen opens, a clean exit on hang-up."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zombietop.store import open_store
from zombietop.tui.cli.main import main


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, err


def test_missing_store_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    code, err = _run(capsys, "--db", str(tmp_path / "nope.db"), "--read-only")
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("zombietop: no store at ")
    assert "Traceback" not in err


def test_bad_config_is_one_line_and_exit_2(tmp_path: Path, capsys) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[timeouts]\nstage = "1h"\ntask = "30m"\n')
    code, err = _run(capsys, "--config", str(config), "--db", str(tmp_path / "x.db"))
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("zombietop: ")
    assert "stage" in err and "task" in err


def test_bad_refresh_is_one_line(tmp_path: Path, capsys) -> None:
    code, err = _run(capsys, "--db", str(tmp_path / "x.db"), "--refresh", "0")
    assert code == 2 and err.startswith("zombietop: --refresh 0")


def test_subcommands_still_dispatch(tmp_path: Path, capsys) -> None:
    db = tmp_path / "s.db"
    assert main(["--db", str(db), "init"]) == 0
    assert main(["--db", str(db), "status"]) == 0


@pytest.mark.slow
def test_hangup_exits_cleanly(tmp_path: Path) -> None:
    """Closing the terminal (SIGHUP) ends the dashboard within seconds; it never spins."""
    db = tmp_path / "z.db"

    async def create() -> None:
        async with await open_store(db, create=True):
            pass

    asyncio.run(create())
    pid, master = pty.fork()
    if pid == 0:  # the child: the dashboard on a fresh terminal
        os.execv(
            sys.executable, [sys.executable, "-m", "zombietop.tui", "--db", str(db), "--read-only"]
        )
    try:
        # Wait until it has drawn something, then hang up.
        deadline = time.monotonic() + 30
        seen = b""
        while time.monotonic() < deadline and b"zombietop" not in seen:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        assert b"zombietop" in seen
        os.kill(pid, signal.SIGHUP)
        os.close(master)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done, _status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the dashboard was still running 10 s after SIGHUP")
    finally:
        subprocess.run(["true"], check=False)


def test_terminal_alive_notices_a_lost_terminal_without_sighup() -> None:
    """With SIGHUP ignored (nohup), the per-refresh check still sees the terminal go."""
    pid, master = pty.fork()
    if pid == 0:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        from zombietop.tui.launch import terminal_alive

        before = terminal_alive()
        os.write(1, b"ready\n")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and terminal_alive():
            time.sleep(0.05)
        os._exit(0 if before and not terminal_alive() else 1)
    assert os.read(master, 100).startswith(b"ready")
    os.close(master)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
