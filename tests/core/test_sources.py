"""The source interface without an engine: the table of engines, clocks, holds, limits and the
no-expiry lease."""

from __future__ import annotations

import io
import os
import sys
import textwrap
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest

from zombietop.act.executor import Executor
from zombietop.act.source_actions import SourceActions
from zombietop.actions import ActionKind, ActionRequest, Outcome
from zombietop.clock import FakeClock
from zombietop.config import Limits, default_config, default_limits, load_config
from zombietop.errors import SourceError
from zombietop.health import Health
from zombietop.judge.classify import classify
from zombietop.judge.monitor import Monitor
from zombietop.judge.source_limits import JudgingConfig
from zombietop.model import EventKind, Heartbeat, Lease, Task, TaskRecord, TaskState
from zombietop.sources import (
    ENGINES,
    Capability,
    Origin,
    SourceRecord,
    check_source_url,
    open_source,
    read_holds,
    read_sources,
    shifted,
)
from zombietop.sources.airflow import AirflowSource
from zombietop.sources.registry import engine, engines
from zombietop.store.sqlite import SQLiteStore

NOW = 1_796_000_000.0


def _record(task_id: str = "dag/t/run", *, beat_age: float = 10.0) -> TaskRecord:
    task = Task(
        task_id=task_id,
        run_id="run",
        step="t",
        step_type="dag",
        state=TaskState.RUNNING,
        created_at=NOW - 100,
        claimed_at=NOW - 90,
        started_at=NOW - 90,
        updated_at=NOW - 5,
    )
    lease = Lease(task_id=task_id, owner="airflow@w", token=1, acquired_at=NOW - 90)
    beat = Heartbeat(
        task_id=task_id,
        written_at=NOW - beat_age,
        progress_changed_at=NOW - beat_age,
        stage_started_at=NOW - 90,
    )
    return TaskRecord(task=task, lease=lease, heartbeat=beat)


class FakeSource:
    """A source whose clock runs ``skew`` seconds ahead of the store's."""

    kind = "fake"
    capability = Capability.READ_ONLY
    clock = "a clock ahead of the store's"

    def __init__(self, skew: float, records: Sequence[TaskRecord]) -> None:
        self.name = "fake://one"
        self.skew = skew
        self.records = records
        self.asked_since: float | None = None

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def now(self) -> float:
        return NOW + self.skew

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        self.asked_since = since
        origin = Origin(source=self.name, kind="fake", capability=Capability.READ_ONLY)
        return [SourceRecord(record=r, origin=origin) for r in self.records]

    def limits(self, base: Limits) -> Limits:
        return replace(base, heartbeat_timeout=300.0)

    def refusal(self, kind: ActionKind, origin: Origin) -> str | None:
        return None


def test_shifted_moves_every_time() -> None:
    moved = shifted(_record(), -60)
    assert moved.task.started_at == NOW - 150 and moved.task.updated_at == NOW - 65
    assert moved.heartbeat is not None and moved.heartbeat.written_at == NOW - 70
    assert moved.lease is not None and moved.lease.acquired_at == NOW - 150


async def test_records_come_onto_the_stores_clock() -> None:
    # The source's clock is a minute ahead: its heartbeat "10 s ago" is 10 s old on the store's.
    base = _record()
    assert base.heartbeat is not None
    ahead = replace(base, heartbeat=replace(base.heartbeat, written_at=NOW + 50))
    source = FakeSource(60.0, [ahead])
    read = await read_sources([source], NOW, NOW - 3600, "here")
    records, origins, owners = read.records, read.origins, read.owners
    beat = records[0].heartbeat
    assert beat is not None and beat.written_at == NOW - 10
    assert source.asked_since == NOW - 3600 + 60  # ``since`` on the source's own clock
    assert origins["dag/t/run"].kind == "fake" and owners["dag/t/run"] is source
    # Within the tolerance, records are taken as they are (the very same objects).
    same = FakeSource(0.2, [ahead])
    read = await read_sources([same], NOW, None, "here")
    assert read.records[0] is ahead


def test_a_lease_without_expiry_is_never_reclaimable() -> None:
    record = _record(beat_age=500)
    verdict = classify(NOW, record.task, record.lease, record.heartbeat, None, default_limits())
    assert verdict.health is Health.STALLED
    assert [r.code for r in verdict.reasons] == ["heartbeat_stale"]
    assert "lease" not in verdict.context(NOW)


def test_judging_config_fills_engine_defaults_and_keeps_its_objects(tmp_path) -> None:
    config = default_config()
    source = AirflowSource("airflow+sqlite:///airflow.db")
    tasks = [_record().task]
    judge = JudgingConfig()
    first = judge(config, tasks, {"dag/t/run": source})
    assert first.limits_for("dag").heartbeat_timeout == 300.0
    assert first.limits_for("dag").stage == config.defaults.task
    assert judge(config, tasks, {"dag/t/run": source}) is first
    path = tmp_path / "config.toml"
    path.write_text('[step_types.dag]\nheartbeat_timeout = "3m"\nstage = "1h"\n')
    own = JudgingConfig()(load_config(path), tasks, {"dag/t/run": source})
    assert own.limits_for("dag").heartbeat_timeout == 180.0
    assert own.limits_for("dag").stage == 3600.0


async def test_holds_are_read_from_zombietops_events(tmp_path) -> None:
    store = await SQLiteStore.open(tmp_path / "z.db", create=True, clock=FakeClock(NOW))
    try:
        for kind, task_id in [
            (EventKind.QUARANTINED, "a/b/c"),
            (EventKind.QUARANTINED, "d/e/f"),
            (EventKind.UNQUARANTINED, "d/e/f"),
        ]:
            await store.record_event(
                kind=kind,
                actor="watchdog@h",
                message="m",
                task_id=task_id,
                data={"source": "airflow+sqlite:///x", "reason": "stalled: late"},
            )
        # A store task's quarantine (no source) is the store's business, not a hold.
        await store.record_event(kind=EventKind.QUARANTINED, actor="x", message="m", task_id="g")
        holds = await read_holds(store)
    finally:
        await store.close()
    assert holds == {"a/b/c": (NOW, "watchdog@h", "stalled: late")}


MEMORY_ENGINE = """
from zombietop.errors import SourceError
from zombietop.act.executor import Executor
from zombietop.sources.base import Engine


class MemorySource:
    def __init__(self, url, *, heartbeat_timeout=None):
        self.url, self.heartbeat_timeout = url, heartbeat_timeout


def check_url(url):
    if not url.partition("://")[2]:
        raise SourceError(f"source {url!r}: no list name; use memory+list://NAME")
    return url


ENGINE = Engine(
    kind="memory",
    name="Memory",
    schemes=("memory+list",),
    forms=("memory+list://NAME",),
    check_url=check_url,
    make=MemorySource,
    heartbeat_timeout=(60.0, "Memory's default"),
    actions="kill it",
    task_id=str,
    resume=str,
    discard=str,
)
"""


@pytest.fixture
def memory_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A new engine as docs/contributing/adding-a-source.md says: its module, and one line in the table."""
    name = "zt_memory_engine"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MEMORY_ENGINE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(ENGINES, "memory", name)
    yield name
    sys.modules.pop(name, None)


def test_every_engine_in_the_table_declares_itself() -> None:
    assert ENGINES, "the table names no engine"
    for kind in ENGINES:
        found = engine(kind)
        assert found.kind == kind
        assert found.schemes and all(s.startswith(f"{kind}+") for s in found.schemes)
        assert found.forms and all(f.split("://")[0] in found.schemes for f in found.forms)


def test_a_new_engine_is_its_module_and_one_line(memory_engine: str, tmp_path: Path) -> None:
    source = open_source("memory+list://jobs", heartbeat_timeout=30.0)
    assert type(source).__module__ == memory_engine
    assert (source.url, source.heartbeat_timeout) == ("memory+list://jobs", 30.0)
    # The engine checks its own URLs, with its own words.
    with pytest.raises(SourceError, match=r"^source 'memory\+list://': no list name; use"):
        check_source_url("memory+list://")
    # The config takes its URLs with no change of its own.
    path = tmp_path / "config.toml"
    path.write_text('[[sources]]\nurl = "memory+list://jobs"\n')
    assert [s.url for s in load_config(path).sources] == ["memory+list://jobs"]


@pytest.mark.parametrize("url", ["mysql://db/airflow", "airflow+mssql://db", "no-scheme"])
def test_an_unknown_kind_lists_every_scheme_in_the_table(memory_engine: str, url: str) -> None:
    with pytest.raises(SourceError) as raised:
        check_source_url(url)
    message = str(raised.value)
    assert message.startswith(f"source {url!r}: unknown kind; zombietop reads these kinds")
    schemes = [scheme for found in engines() for scheme in found.schemes]
    assert "memory+list" in schemes
    assert ", ".join(schemes) in message
    assert "memory+list://NAME" in message


def test_an_unknown_kind_hides_the_password() -> None:
    with pytest.raises(SourceError) as raised:
        check_source_url("mysql://zombietop:secret@db/airflow")
    assert "secret" not in str(raised.value)
    assert "'mysql://zombietop:***@db/airflow'" in str(raised.value)


def test_a_table_line_whose_module_declares_no_engine_says_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "zt_no_engine.py").write_text("ENGINE = None\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(ENGINES, "none", "zt_no_engine")
    try:
        with pytest.raises(RuntimeError, match="zt_no_engine declares no ENGINE of kind 'none'"):
            check_source_url("none+x://y")
    finally:
        sys.modules.pop("zt_no_engine", None)


async def test_only_a_kill_is_carried_out_on_a_source_task_whatever_the_source_refuses(
    tmp_path: Path,
) -> None:
    """FakeSource refuses nothing: a resume of its task is still refused, never tried."""
    clock = FakeClock(NOW)
    store = await SQLiteStore.open(tmp_path / "z.db", create=True, clock=clock)
    try:
        monitor = Monitor(
            store, default_config(), clock=clock, sources=[FakeSource(0.0, [_record()])]
        )
        await monitor.poll()
        request = ActionRequest(
            kind=ActionKind.RESUME, task_id="dag/t/run", expected_token=1, actor="me"
        )
        done = await SourceActions(monitor, Executor(store, default_config())).run(request)
    finally:
        await store.close()
    assert done.outcome is Outcome.REFUSED
    assert done.message == (
        "dag/t/run is a task of fake://one: zombietop does nothing to a source's tasks but kill "
        "their process; resume it in the engine itself"
    )


class BrokenSource(FakeSource):
    """A source whose every read fails, as a damaged file does."""

    def __init__(self) -> None:
        super().__init__(0.0, [])
        self.name = "fake://broken"

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        raise SourceError("database disk image is malformed")


async def test_one_source_that_cannot_be_read_hides_nothing_else() -> None:
    good = FakeSource(0.0, [_record()])
    read = await read_sources([BrokenSource(), good], NOW, None, "here")
    assert [r.task.task_id for r in read.records] == ["dag/t/run"]
    assert read.owners == {"dag/t/run": good}
    # The error always names its source, so that whoever reads it knows where to look.
    assert read.errors == {
        "fake://broken": "source fake://broken: database disk image is malformed"
    }


async def test_an_agent_keeps_the_samples_of_a_source_it_cannot_read(tmp_path: Path) -> None:
    """Writing no samples for a source drops its earlier ones: a source that cannot be read
    this round must not make its tasks' processes look unseen elsewhere."""
    from zombietop.agent import Agent

    clock = FakeClock(NOW)
    base = _record()
    running = replace(base, task=replace(base.task, host="host-a", pid=os.getpid()))
    source = FakeSource(0.0, [running])
    store = await SQLiteStore.open(tmp_path / "z.db", create=True, clock=clock)
    err = io.StringIO()
    try:
        agent = Agent(
            store, default_config(), host="host-a", clock=clock, err=err, sources=[source]
        )
        await agent.tick()
        assert set(await store.process_samples()) == {"dag/t/run"}

        async def broken(since: float | None, host: str) -> Sequence[SourceRecord]:
            raise SourceError("source fake://one: database disk image is malformed")

        source.poll = broken  # type: ignore[method-assign]
        clock.advance(5)
        await agent.tick()
        assert set(await store.process_samples()) == {"dag/t/run"}
        assert "cannot read source fake://one: database disk image is malformed" in err.getvalue()
    finally:
        await store.close()
