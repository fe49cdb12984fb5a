"""A source that cannot be read withholds only its own tasks' verdicts (issue 29, item 9).

The source is a real SQLite file with Airflow 3's columns (``tests/airflow_by_hand.py``), cut
short with ``truncate`` as an attack run did: SQLite reads it as "malformed". zombietop's own
tasks are still judged and paged, the page names the source (not the store), and the source's
open incident is neither closed nor paged again while nothing can be known of it.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.airflow_by_hand import add_finished, add_running, make_database
from tests.core.test_watchdog import INTERVAL, ListNotifier, config, start
from zombietop.clock import FakeClock
from zombietop.monitor import Monitor
from zombietop.sources.airflow import AirflowSource
from zombietop.store.sqlite import SQLiteStore
from zombietop.watchdog import Watchdog

AIRFLOW_TASK = "etl/load/r"


async def test_an_unreadable_source_hides_only_its_own_tasks(
    tmp_path: Path, clock: FakeClock
) -> None:
    airflow = tmp_path / "airflow" / "airflow.db"
    airflow.parent.mkdir()
    make_database(airflow, "wal")
    # Airflow's task stopped beating 10 minutes ago: past Airflow's own 300 s.
    add_running(airflow, "load", started=clock.now() - 900, beat=clock.now() - 600)
    add_finished(airflow, 20_000)  # a file of some 800 kB, as the one cut short was
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    source = AirflowSource(f"airflow+sqlite:///{airflow}", clock=clock)
    await source.open()
    cfg = config()
    notifier, logs = ListNotifier(), []
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, sources=[source]),
        cfg,
        executor=None,
        notifiers=[notifier],
        clock=clock,
        log=logs.append,
    )
    try:
        await start(store)  # zombietop's own task, beating now
        report = await dog.tick()
        assert report.withheld is None
        assert [(p.kind, p.task_id) for p in notifier.pages] == [("incident", AIRFLOW_TASK)]

        whole = airflow.read_bytes()
        os.truncate(airflow, 300_000)
        clock.advance(600)  # zombietop's own task is stalled now
        for _ in range(3):
            report = await dog.tick()
            assert report.withheld is None
            clock.advance(INTERVAL)

        pages = notifier.pages[1:]
        assert [(p.kind, p.task_id) for p in pages] == [
            ("watchdog", None),
            ("incident", "export-2031"),
        ]
        said = pages[0].line
        assert said.startswith(f"zombietop watchdog cannot read source {source.name}: ")
        assert "malformed" in said and "verdicts on its tasks withheld until it can" in said
        assert "store" not in said
        assert pages[1].line.startswith("export-2031 stalled")
        assert AIRFLOW_TASK in dog.incidents  # still open: not "no longer active"

        # A watchdog started while the source cannot be read never saw its tasks: it keeps the
        # incident it remembers from the event log open all the same.
        other = ListNotifier()
        fresh = Watchdog(
            Monitor(store, cfg, clock=clock, sources=[source]),
            cfg,
            executor=None,
            notifiers=[other],
            clock=clock,
            log=logs.append,
            dry_run=True,
        )
        await fresh.tick()
        assert AIRFLOW_TASK in fresh.incidents
        assert not any("all clear" in line for line in logs)

        airflow.write_bytes(whole)  # restored: read again, and its incident was never closed
        await dog.tick()
        assert [(p.kind, p.line) for p in notifier.pages[3:]] == [
            ("all_clear", f"zombietop watchdog reads source {source.name} again")
        ]
        assert AIRFLOW_TASK in dog.incidents
    finally:
        await source.close()
        await store.close()
