"""What ``zombietop status`` does before it prints: the modules it loads and the polls it takes.

Plain ``status`` loads only its own command's modules (not the watchdog's, the agent's or the
SDK's, nor ``--json``'s writer), and no package it does not use: no screen, no Prometheus
client, no HTTP or PostgreSQL client, no OpenTelemetry, no ``importlib.metadata``, and no psutil
while no task runs on this host. It takes the second process sample (for CPU%) only when a live
process of this host was seen for the first time. ``--json`` writes its tasks as they are
built, in the text ``json.dumps`` would write for the whole object.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.procs import read_start, this_host
from zombietop.store import open_store
from zombietop.tui.cli import status as status_cli
from zombietop.tui.cli.main import COMMANDS, build_parser, command_named, main
from zombietop.tui.cli.status_json import JsonStream

NEVER_FOR_PLAIN_STATUS = {
    "textual",
    "rich",
    "prometheus_client",
    "psutil",
    "aiohttp",
    "asyncpg",
    "opentelemetry",
    "importlib.metadata",
    "zombietop.sdk",
    "zombietop.watch.watchdog",
    "zombietop.agent",
    "zombietop.run.runner",
    "zombietop.act",
    "zombietop.otel",
    "zombietop.serve",
    "zombietop.tui.cli.status_json",
    "zombietop.tui.demo.command",
}


def make_store(path: Path, *, pid: int | None, host: str) -> None:
    """One running task, its process ``pid`` on ``host`` (None: no process recorded)."""

    async def fill() -> None:
        async with await open_store(path, create=True) as store:
            await store.create_task(
                task_id="export-1", run_id="r", step="export", step_type="default", actor="t"
            )
            lease = await store.acquire_lease("export-1", owner="w", ttl=3600)
            if pid is not None:
                start = read_start(pid)
                assert start is not None
                await store.set_process(
                    "export-1",
                    owner="w",
                    token=lease.token,
                    pid=pid,
                    pid_start_time=start.time,
                    host=host,
                    pid_start_identity=start.identity,
                )
            await store.record_heartbeat(
                "export-1", parse_line("stage=s p=5"), owner="w", token=lease.token
            )

    asyncio.run(fill())


def loaded_by_status(db: Path, *flags: str) -> set[str]:
    code = (
        "import sys\n"
        "from zombietop.tui.cli.main import main\n"
        f"main(['--db', {str(db)!r}, 'status', *{list(flags)!r}])\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert "export-1" in done.stdout
    return set(done.stderr.split())


def test_plain_status_loads_only_what_it_prints_with(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    make_store(db, pid=None, host=this_host())
    loaded = loaded_by_status(db)
    assert "zombietop.tui.cli.status" in loaded
    assert not {name.split(".")[0] for name in loaded} & NEVER_FOR_PLAIN_STATUS
    assert not loaded & NEVER_FOR_PLAIN_STATUS


def test_the_dashboard_loads_no_other_commands_module(tmp_path: Path) -> None:
    """``zombietop`` with no command opens the dashboard: the watchdog's, the agent's and every
    other command's modules stay unloaded (only ``--help`` lists them all)."""
    db = tmp_path / "z.db"
    make_store(db, pid=None, host=this_host())
    code = (
        "import sys\n"
        "from zombietop.tui.cli.main import main\n"
        f"status = main(['--db', {str(db)!r}, '--read-only'])\n"
        "print(status, ' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    done = subprocess.run(  # stdout is a pipe: the dashboard says it needs a terminal
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60
    )
    assert "the dashboard needs a terminal" in done.stderr
    loaded = set(done.stderr.split())
    assert not loaded & set(COMMANDS)
    assert not loaded & NEVER_FOR_PLAIN_STATUS - {"textual", "rich", "psutil", "zombietop.act"}


def test_a_task_of_another_host_needs_no_psutil(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    make_store(db, pid=1, host="elsewhere.example")
    assert "psutil" not in loaded_by_status(db, "--json")


@pytest.fixture
def polls(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The moments ``status`` polled the store, by the monitor's own count."""
    taken: list[float] = []
    poll = Monitor.poll

    async def counted(self: Monitor) -> object:
        snapshot = await poll(self)
        taken.append(snapshot.taken_at or 0.0)
        return snapshot

    monkeypatch.setattr(Monitor, "poll", counted)
    monkeypatch.setattr(status_cli, "STATUS_SAMPLE_GAP", 0.05)
    return taken


def test_no_second_sample_when_no_local_process_lives(tmp_path: Path, polls: list[float]) -> None:
    ended = subprocess.Popen(["sleep", "60"])
    db = tmp_path / "z.db"
    make_store(db, pid=ended.pid, host=this_host())
    ended.kill()
    ended.wait()
    main(["--db", str(db), "status"])
    assert len(polls) == 1


def test_a_live_local_process_gets_its_second_sample(
    tmp_path: Path, polls: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        db = tmp_path / "z.db"
        make_store(db, pid=sleeper.pid, host=this_host())
        main(["--db", str(db), "status", "--json"])
        assert len(polls) == 2
        assert '"cpu_percent": 0.0' in capsys.readouterr().out
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.parametrize(
    "tasks",
    [[], [{"task_id": "a", "reasons": [1, 2]}], [{"task_id": "a"}, {"ctx": {"line": "x\ny"}}]],
    ids=["none", "one", "two"],
)
def test_the_streamed_object_is_the_one_json_dumps_writes(tasks: list[dict[str, object]]) -> None:
    """``status --json`` writes its tasks one at a time, in the very text of the whole object."""
    obj = {"generated_at": "now", "tasks": [], "schedules": [{"name": "s"}], "pings": []}
    written: list[str] = []
    stream = JsonStream(obj, written.append)
    for task in tasks:
        stream.task(task)
    stream.close()
    assert "".join(written) == json.dumps({**obj, "tasks": tasks}, indent=2) + "\n"


def test_the_command_table_names_what_each_module_registers() -> None:
    """A command line loads only its command's module, found in ``main.COMMANDS``: the table
    must say every command each module registers, and nothing else."""
    parser = build_parser()
    registered = list(parser.commands.choices)
    assert registered == [name for names in COMMANDS.values() for name in names]
    for module, names in COMMANDS.items():
        for name in names:
            alone = build_parser(name)
            assert list(alone.commands.choices) == list(names), module
            assert command_named(["--db", "x.db", name, "--help"]) == name
    assert command_named(["--db", "status"]) is None  # a flag's value, not a command
    assert command_named(["--refresh", "2"]) is None
