"""The sweep finds a store's processes by tag and by ``--db``, spares its caller, and escalates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.core.realprocs import Children, pid_alive, wait_for_file
from zombietop.act.sweep import STARTED_FOR, find, stop_all, tag_env
from zombietop.locations import clean_env

pytestmark = pytest.mark.slow

SLEEP = "import time; time.sleep(60)"
REPO = Path(__file__).resolve().parents[2]


def ignoring_term(ready: Path) -> str:
    return (
        "import signal, time, pathlib; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"pathlib.Path({str(ready)!r}).touch(); time.sleep(60)"
    )


def test_tagged_processes_and_their_children_are_found(tmp_path: Path, children: Children) -> None:
    db = tmp_path / "demo.db"
    ready = tmp_path / "ready"
    # A tagged parent whose child inherits the tag (as a wrapper's command does).
    script = (
        "import subprocess, sys, pathlib, time; "
        f"subprocess.Popen([sys.executable, '-c', {SLEEP!r}]); "
        f"pathlib.Path({str(ready)!r}).touch(); time.sleep(60)"
    )
    parent = children.start([sys.executable, "-c", script], env=tag_env(db, clean_env()))
    wait_for_file(ready)
    untagged = children.start([sys.executable, "-c", SLEEP])
    deadline = time.monotonic() + 10
    while len(found := find(db)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert parent.pid in {f.pid for f in found}
    assert len(found) == 2 and all(f.why == "tag" for f in found)
    assert untagged.pid not in {f.pid for f in found}
    assert find(tmp_path / "other.db") == []


def test_a_relative_db_on_the_command_line_counts(tmp_path: Path, children: Children) -> None:
    db = tmp_path / "demo.db"
    argv = [sys.executable, "-c", SLEEP, "--db", "demo.db"]
    proc = children.start(
        argv, cwd=tmp_path, env={k: v for k, v in os.environ.items() if k != STARTED_FOR}
    )
    deadline = time.monotonic() + 10
    while not find(db) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [(f.pid, f.why) for f in find(db)] == [(proc.pid, "--db")]


def test_the_caller_and_its_parents_are_spared(tmp_path: Path) -> None:
    db = tmp_path / "demo.db"
    # A tagged shell runs a tagged python that sweeps: neither may find itself or its parent.
    code = (
        "import os; from zombietop.act.sweep import find; "
        f"print(sorted({{f.pid for f in find({str(db)!r})}} & {{os.getpid(), os.getppid()}}))"
    )
    result = subprocess.run(
        ["sh", "-c", f'{sys.executable} -c "{code}"; true'],
        env=tag_env(db, clean_env()),
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert result.stdout.strip() == "[]"


def test_stop_all_terms_then_kills_what_ignores_sigterm(tmp_path: Path, children: Children) -> None:
    db = tmp_path / "demo.db"
    ready = tmp_path / "ready"
    env = tag_env(db, clean_env())
    polite = children.start([sys.executable, "-c", SLEEP], env=env)
    stubborn = children.start([sys.executable, "-c", ignoring_term(ready)], env=env)
    wait_for_file(ready)
    said: list[str] = []
    report = stop_all(db, grace=0.5, log=said.append)
    assert report.clean
    assert {f.pid for f in report.terminated} == {polite.pid, stubborn.pid}
    assert [f.pid for f in report.killed] == [stubborn.pid]
    assert "still alive 0.5s after SIGTERM: sent SIGKILL" in said[0]
    for proc in (polite, stubborn):
        proc.wait(timeout=5)
        assert not pid_alive(proc.pid)
    assert polite.returncode == -signal.SIGTERM
    assert stubborn.returncode == -signal.SIGKILL
