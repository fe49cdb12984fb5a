"""The dashboard over a real Airflow database: Airflow 3's own schema (``airflow db migrate``),
task instances written through Airflow's own tables, read by the real monitor at a frozen clock.

The source's name holds the test's temporary path; it is shown as a fixed one so the pictures
do not move between runs. Everything else on screen is what the monitor read.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from textual.pilot import Pilot

from tests.airflow_env import AirflowDatabase
from tests.tui.helpers import make_app, settle
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.judge.monitor import Monitor, Snapshot
from zombietop.model import Event, HistoryPoint
from zombietop.sources.airflow import AirflowSource
from zombietop.store.sqlite import SQLiteStore
from zombietop.tui.testing import NOW, SampleSource

SHOWN_AS = "airflow+postgresql://zombietop@airflow-db/airflow"
RUN = "scheduled__2026-11-29T04:00:00+00:00"


def _rows() -> list[dict[str, object]]:
    etl = {
        "dag_id": "nightly_etl",
        "run_id": RUN,
        "operator": "PythonOperator",
        "logical_date": NOW - 6 * 3600,
    }
    return [
        {**etl, "task_id": "extract_orders", "state": "success", "hostname": "worker-3",
         "start_date": NOW - 2000, "end_date": NOW - 1000},
        {**etl, "task_id": "transform", "state": "running", "hostname": "worker-7", "pid": 4121,
         "start_date": NOW - 3000, "last_heartbeat_at": NOW - 912, "try_number": 2},
        {**etl, "task_id": "load_warehouse", "state": "running", "hostname": "worker-7",
         "pid": 4122, "start_date": NOW - 600},
        {**etl, "task_id": "score", "map_index": 3, "state": "running", "hostname": "worker-3",
         "pid": 5230, "start_date": NOW - 400, "last_heartbeat_at": NOW - 4},
        {**etl, "task_id": "publish", "state": "queued", "queued_dttm": NOW - 30},
        {**etl, "task_id": "notify", "state": "scheduled", "scheduled_dttm": NOW - 30},
        {"dag_id": "reports", "task_id": "render", "run_id": "manual__2026-11-29",
         "operator": "BashOperator", "state": "failed", "hostname": "worker-3",
         "start_date": NOW - 900, "end_date": NOW - 700},
    ]  # fmt: skip


@pytest.fixture
def airflow_snapshot(airflow3_sqlite: AirflowDatabase, tmp_path: Path) -> Snapshot:
    airflow3_sqlite.write(_rows())

    async def read() -> Snapshot:
        clock = FakeClock(NOW)
        store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
        source = AirflowSource(airflow3_sqlite.url, clock=clock)
        await source.open()
        try:
            monitor = Monitor(store, load_config(None), clock=clock, sources=[source])
            return await monitor.poll()
        finally:
            await source.close()
            await store.close()

    snapshot = asyncio.run(read())
    assert snapshot.ok, snapshot.error
    origins = {k: replace(o, source=SHOWN_AS) for k, o in snapshot.origins.items()}
    return replace(snapshot, origins=origins)


class AirflowOnly(SampleSource):
    """The sample source's frames, without the sample fleet's history and events: zombietop's
    store holds neither for an Airflow task."""

    async def history(self, task_id: str) -> list[HistoryPoint]:
        return []

    async def events(self, task_id: str | None = None, limit: int = 100) -> list[Event]:
        return []


def test_airflow_main_80x24(snap_compare, airflow_snapshot: Snapshot):
    """Airflow's task instances as zombietop rows, most urgent first: 2 stalled
    (nightly_etl/transform/... heartbeat 15m old against Airflow's 5m; load_warehouse running with
    no heartbeat past the 1m start grace), healthy score[3], queued notify and publish, then
    failed reports/render and succeeded extract_orders; counts stalled 2, queued 2, healthy 1."""
    app = make_app(AirflowOnly([airflow_snapshot]))
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)


def test_airflow_detail_view(snap_compare, airflow_snapshot: Snapshot):
    """Enter on nightly_etl/transform: stalled, 'heartbeat 15m12s old (timeout 5m)', no progress
    history (Airflow reports none), no events; a source row
    (read-only) and an airflow row with dag_id, task_id, run_id, try_number 2, operator
    PythonOperator, hostname worker-7 and the logical date; lease owner airflow@worker-7 token 2
    with no expiry; the stage budget from Airflow (one stage per task instance)."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)

    app = make_app(AirflowOnly([airflow_snapshot]))
    assert snap_compare(app, terminal_size=(110, 40), run_before=run_before)
