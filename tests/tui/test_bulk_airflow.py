"""A bulk ack of 30 rows of one failed DAG run, through a real Airflow database (Airflow 3's
own schema, task instances written through Airflow's own tables) and a real zombietop store:
one dialog, then one ack and one event per task instance, kept by the source's name; and a
bulk resume of the same rows, which zombietop never does to an engine's tasks, names
Airflow's own command in its one confirm and asks nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from textual.widgets import Button, Static

from tests.airflow_env import AirflowDatabase
from tests.tui.helpers import notified, settle
from zombietop.act.executor import Executor
from zombietop.act.source_actions import SourceActions
from zombietop.clock import FakeClock
from zombietop.config import Config, load_config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind
from zombietop.oncall.acks import Desk
from zombietop.sources.airflow import AirflowSource
from zombietop.store.sqlite import SQLiteStore
from zombietop.tui.app import ZombietopApp
from zombietop.tui.screens.bulk import BulkAckScreen, BulkConfirmScreen
from zombietop.tui.testing import NOW

pytestmark = pytest.mark.slow

RUN = "scheduled__2026-11-29T04:00:00+00:00"
PARTS = 30


def _failed_run() -> list[dict[str, object]]:
    """Thirty partitions of one DAG run, all failed a quarter of an hour ago on worker-3."""
    return [
        {"dag_id": "warehouse_load", "run_id": RUN, "task_id": f"load_part_{n:02d}",
         "operator": "PythonOperator", "state": "failed", "hostname": "worker-3",
         "start_date": NOW - 1500, "end_date": NOW - 900, "try_number": 1}
        for n in range(PARTS)
    ]  # fmt: skip


@dataclass
class Dashboard:
    app: ZombietopApp
    store: SQLiteStore
    source: AirflowSource


@pytest.fixture
async def dashboard(airflow3_sqlite: AirflowDatabase, tmp_path: Path) -> AsyncIterator[Dashboard]:
    """The dashboard as ``zombietop --source`` builds it over the Airflow database."""
    airflow3_sqlite.write(_failed_run())
    clock = FakeClock(NOW)
    config: Config = load_config(None)
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    source = AirflowSource(airflow3_sqlite.url, clock=clock)
    await source.open()
    monitor = Monitor(store, config, clock=clock, sources=[source])

    def source_name(task_id: str) -> str | None:
        owner = monitor.source_of.get(task_id)
        return None if owner is None else owner.name

    app = ZombietopApp(
        monitor,
        executor=SourceActions(monitor, Executor(store, config, clock=clock)),
        clock=clock,
        refresh=3600,
        store_label="zombietop.db",
        actor="alice@laptop",
        desk=Desk(store, config.oncall, source_of=source_name),
        oncall=config.oncall,
    )
    try:
        yield Dashboard(app, store, source)
    finally:
        await source.close()
        await store.close()


async def test_a_bulk_ack_of_thirty_failed_rows_is_one_dialog_and_thirty_acks(
    dashboard: Dashboard,
) -> None:
    app, store = dashboard.app, dashboard.store
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        failed = [v.task_id for v in app.rows.views if v.health is Health.FAILED]
        assert len(failed) == PARTS
        await pilot.press("slash", *"warehouse_load", "enter", "asterisk")
        await settle(pilot)
        assert app.bulk.marked == set(failed)
        await pilot.press("a")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BulkAckScreen)
        summary = str(screen.query_one("#summary", Static).render())
        assert f"{PARTS} tasks: {PARTS} ✗ failed" in summary
        assert f"and {PARTS - 5} more" in summary
        await pilot.press(*"warehouse disk full", "enter")
        await settle(pilot)
        assert app.bulk.marked == frozenset()
    acks = await store.acks()
    assert sorted(a.task_id for a in acks) == sorted(failed)
    assert {(a.source, a.reason) for a in acks} == {(dashboard.source.name, "warehouse disk full")}
    acked = [e.task_id for e in await store.events(kind=EventKind.ACK, limit=500)]
    assert sorted(acked) == sorted(failed)  # one event per task instance


async def test_a_bulk_resume_of_an_engines_rows_asks_nothing_and_names_its_command(
    dashboard: Dashboard,
) -> None:
    app = dashboard.app
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("asterisk", "r")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BulkConfirmScreen)
        assert screen.query_one("#confirm", Button).disabled
        skipped = "\n".join(str(s.render()) for s in screen.query("#skipped Static"))
        assert f"{PARTS} tasks will not be resumed:" in skipped
        assert "zombietop never writes to it" in skipped
        assert "airflow tasks clear" in skipped
        said = notified(app)
        await pilot.press("y")  # nothing to ask: the dialog closes, asking nothing
        await settle(pilot)
        assert said == [f"resume of {PARTS} marked tasks: none of them can be resumed here"]
    assert await dashboard.store.events(limit=500) == []
