"""A new engine written on ``ReadOnlySource`` is its ``poll`` and its ``ENGINE``: the base gives
the rest (url, name, the default heartbeat timeout, the clock, limits, refusals), and the monitor
judges its tasks as any source's, by the lease rule of ``poll``'s docstring."""

from __future__ import annotations

import json
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from zombietop.actions import ActionKind
from zombietop.config import default_config, default_limits
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.sources import ENGINES, open_source
from zombietop.sources.base import ReadOnlySource, SourceRecord
from zombietop.store.sqlite import SQLiteStore

JSON_ENGINE = '''
"""Tasks in a JSON file, as a read-only source: a list of {id, state, started, beat, worker}."""

import json
from pathlib import Path

from zombietop.errors import SourceError
from zombietop.model import Heartbeat, HeartbeatSource, Lease, Task, TaskRecord, TaskState
from zombietop.sources.base import Engine, ReadOnlySource, SourceRecord


class JsonFileSource(ReadOnlySource):
    async def poll(self, since, host):
        path = Path(self.url.partition("://")[2])
        try:
            rows = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise SourceError(f"source {self.name}: cannot read {path} ({exc})") from None
        found = []
        for row in rows:
            tid, started, beat = row["id"], row["started"], row["beat"]
            task = Task(
                task_id=tid,
                run_id=tid,
                step=tid,
                step_type="json",
                state=TaskState(row["state"]),
                created_at=started,
                claimed_at=started,
                started_at=started,
                updated_at=beat,
            )
            lease = None
            if row["worker"]:
                lease = Lease(task_id=tid, owner=row["worker"], token=1, acquired_at=started)
            heartbeat = Heartbeat(
                task_id=tid,
                written_at=beat,
                progress_changed_at=beat,
                stage_started_at=started,
                source=HeartbeatSource.SUPERVISOR,
            )
            record = TaskRecord(task=task, lease=lease, heartbeat=heartbeat)
            found.append(SourceRecord(record=record, origin=self.origin({"id": tid})))
        return found


def check_url(url):
    if not url.partition("://")[2]:
        raise SourceError(f"source {url!r}: no file; use jsonfile+path:///PATH")
    return url


ENGINE = Engine(
    kind="jsonfile",
    name="JsonFile",
    schemes=("jsonfile+path",),
    forms=("jsonfile+path:///PATH",),
    check_url=check_url,
    make=JsonFileSource,
    heartbeat_timeout=(60.0, "JsonFile: one minute"),
    actions="re-run it with jsonctl, or kill it",
    task_id=lambda origin: str(origin.ids["id"]),
    resume=lambda origin: f"Re-run it: jsonctl rerun {origin.ids['id']}",
    discard=lambda origin: f"Drop it: jsonctl drop {origin.ids['id']}",
)
'''


@pytest.fixture
def json_engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The JSON-file engine as a module of its own, and its line in the registry's table."""
    name = "zt_json_engine"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(JSON_ENGINE))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(ENGINES, "jsonfile", name)
    yield name
    sys.modules.pop(name, None)


def test_the_json_engine_is_its_poll_and_its_engine() -> None:
    # The issue measured 108 lines for such an engine before the base; it is 65 here.
    assert len(JSON_ENGINE.strip().splitlines()) <= 70


async def test_the_monitor_judges_a_new_engines_tasks(json_engine: str, tmp_path: Path) -> None:
    now = time.time()
    tasks = tmp_path / "tasks.json"
    rows = [
        {"id": "fine", "state": "running", "started": now - 100, "beat": now - 5, "worker": "w1"},
        {"id": "lost", "state": "running", "started": now - 100, "beat": now - 5, "worker": None},
        {
            "id": "quiet",
            "state": "running",
            "started": now - 900,
            "beat": now - 600,
            "worker": "w2",
        },
    ]
    tasks.write_text(json.dumps(rows))
    source = open_source(f"jsonfile+path://{tasks}")
    assert isinstance(source, ReadOnlySource)
    assert type(source).__module__ == json_engine
    assert (source.kind, source.name, source.heartbeat_timeout) == (
        "jsonfile",
        f"jsonfile+path://{tasks}",
        60.0,
    )
    store = await SQLiteStore.open(tmp_path / "z.db", create=True)
    try:
        monitor = Monitor(store, default_config(), sources=[source])
        snapshot = await monitor.poll()
    finally:
        await store.close()
    healths = {view.task.task_id: view.health for view in snapshot.tasks}
    # A running task without a held lease: nobody holds it.
    assert healths == {
        "fine": Health.HEALTHY,
        "lost": Health.RECLAIMABLE,
        "quiet": Health.STALLED,
    }
    # The engine's heartbeat timeout, with where it comes from, reaches the limits.
    limits = source.limits(default_limits())
    assert limits.heartbeat_timeout == 60.0
    assert limits.source("heartbeat_timeout") == "JsonFile: one minute"
    assert limits.engine == "JsonFile"


def test_the_base_refuses_resume_and_discard_with_the_engines_command(
    json_engine: str, tmp_path: Path
) -> None:
    source = open_source(f"jsonfile+path://{tmp_path / 'tasks.json'}")
    assert isinstance(source, ReadOnlySource)
    origin = source.origin({"id": "lost"})
    where = f"lost is JsonFile's (read-only source {source.name}); zombietop never writes to it."
    assert source.refusal(ActionKind.RESUME, origin) == f"{where} Re-run it: jsonctl rerun lost"
    assert source.refusal(ActionKind.DISCARD, origin) == f"{where} Drop it: jsonctl drop lost"
    assert source.refusal(ActionKind.KILL, origin) is None


def test_a_source_whose_module_declares_no_engine_says_so(tmp_path: Path) -> None:
    class Orphan(ReadOnlySource):
        async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
            return []

    with pytest.raises(RuntimeError, match="declares no ENGINE with make=Orphan"):
        Orphan("none+x://y")
