"""A source that cannot be read withholds only its own tasks' verdicts (issue 29, item 9).

The source is a real SQLite file with Airflow 3's columns (``tests/airflow_by_hand.py``), cut
short with ``truncate`` as an attack run did: SQLite reads it as "malformed". zombietop's own
tasks are still judged and paged, the page names the source (not the store), and the source's
open incident is neither closed nor paged again while nothing can be known of it.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import replace
from pathlib import Path

from tests.airflow_by_hand import add_finished, add_running, add_task, make_database, utc_text
from tests.core.test_watchdog import INTERVAL, ListNotifier, RecordingExecutor, config, start
from zombietop.clock import FakeClock
from zombietop.config import OnCallSettings, load_config
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind
from zombietop.oncall import acks
from zombietop.paging.notify import Page
from zombietop.sources.airflow import AirflowSource
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

AIRFLOW_TASK = "etl/load/r"
RENOTIFY = 600.0


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


async def test_an_ack_on_a_sources_task_holds_its_renotify_until_the_incident_ends(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    """Item 9.3: an Airflow task instance is acked in zombietop's store (the engine is never
    written); the watchdog honours it, and the all-clear ends it."""
    airflow = tmp_path / "airflow.db"
    make_database(airflow, "wal")
    add_running(airflow, "load", started=clock.now() - 900, beat=clock.now() - 600)
    source = AirflowSource(f"airflow+sqlite:///{airflow}", clock=clock)
    await source.open()
    cfg = config(renotify=RENOTIFY)

    async def once() -> list[Page]:
        # A fresh watchdog each time, as `watch --once` from cron: its memory is the event log.
        notifier = ListNotifier()
        dog = Watchdog(
            Monitor(store, cfg, clock=clock, sources=[source]),
            cfg,
            executor=None,
            notifiers=[notifier],
            clock=clock,
            log=lambda line: None,
        )
        await dog.tick()
        return notifier.pages

    try:
        assert [(p.kind, p.task_id) for p in await once()] == [("incident", AIRFLOW_TASK)]
        clock.advance(RENOTIFY)
        assert [p.kind for p in await once()] == ["renotify"]

        await acks.ack(
            store, OnCallSettings(), AIRFLOW_TASK, by="ana", duration=3 * RENOTIFY,
            source=source.name,
        )  # fmt: skip
        for _ in range(2):
            clock.advance(RENOTIFY)
            assert await once() == []

        beat(airflow, "load", clock.now())  # it beats again: the incident ends
        assert [p.kind for p in await once()] == ["all_clear"]
        assert await store.acks() == []
        (ended,) = [
            e for e in await store.events(kind=EventKind.ACK) if e.data["action"] == "unack"
        ]
        assert ended.message.endswith("the incident ended")
        assert ended.data["source"] == source.name
    finally:
        await source.close()


async def test_an_ack_on_a_sources_task_ends_in_time(
    tmp_path: Path, store: Store, clock: FakeClock
) -> None:
    airflow = tmp_path / "airflow.db"
    make_database(airflow, "wal")
    add_running(airflow, "load", started=clock.now() - 900, beat=clock.now() - 600)
    source = AirflowSource(f"airflow+sqlite:///{airflow}", clock=clock)
    await source.open()
    cfg = config(renotify=RENOTIFY)
    notifier = ListNotifier()
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, sources=[source]),
        cfg,
        executor=None,
        notifiers=[notifier],
        clock=clock,
        log=lambda line: None,
    )
    try:
        await dog.tick()
        await acks.ack(
            store, OnCallSettings(), AIRFLOW_TASK, by="ana", duration=RENOTIFY, source=source.name
        )
        clock.advance(RENOTIFY - 1)
        await dog.tick()
        clock.advance(2)  # the ack ran out: the incident is loud again
        await dog.tick()
        assert [p.kind for p in notifier.pages] == ["incident", "renotify"]
        assert notifier.pages[1].line.endswith("(2nd notice, open 10m01s)")
    finally:
        await source.close()


def beat(path: Path, task_id: str, at: float) -> None:
    """The task instance of DAG ``etl`` beats at ``at``, as Airflow's supervisor writes it."""
    conn = sqlite3.connect(path)
    conn.execute(
        "UPDATE task_instance SET last_heartbeat_at = ?, updated_at = ? WHERE task_id = ?",
        (utc_text(at), utc_text(at), task_id),
    )
    conn.commit()
    conn.close()


async def test_a_stage_overrun_of_a_sources_task_says_nobody_kills_it(
    tmp_path: Path, clock: FakeClock
) -> None:
    """Item 6: with `stage = "2m"` for a DAG, the page says what will happen (no kill by the
    watchdog, and who can kill it), and at twice the stage nothing claims a kill."""
    airflow = tmp_path / "airflow.db"
    make_database(airflow, "wal")
    add_running(airflow, "load", started=clock.now() - 150, beat=clock.now())
    path = tmp_path / "config.toml"
    path.write_text('[step_types.etl]\nstage = "2m"\n')
    cfg = replace(config(), step_types=load_config(path).step_types)
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    source = AirflowSource(f"airflow+sqlite:///{airflow}", clock=clock)
    await source.open()
    executor, notifier, logs = RecordingExecutor(), ListNotifier(), []
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, sources=[source]),
        cfg,
        executor=executor,
        notifiers=[notifier],
        clock=clock,
        log=logs.append,
    )
    try:
        await dog.tick()
        (page,) = notifier.pages
        assert page.line.startswith(f"{AIRFLOW_TASK} stage_overrun: ")
        assert page.line.endswith(
            " - zombietop does not kill airflow's tasks on its own; kill it from the dashboard"
        )
        for _ in range(4):  # past twice the stage: 4m30s in a stage of 2m
            clock.advance(30)
            beat(airflow, "load", clock.now())
            await dog.tick()
        assert len(notifier.pages) == 1
        assert executor.requests == []
        said = [*logs, *(e.message for e in await store.events(task_id=AIRFLOW_TASK, limit=50))]
        assert not [line for line in said if "not kill:" in line or "killing" in line], said
    finally:
        await source.close()
        await store.close()


async def test_only_transitions_into_or_out_of_a_paging_health_are_events(
    tmp_path: Path, clock: FakeClock
) -> None:
    """Item 8: 48 task instances are queued, run, stall together, recover and succeed: the
    event log keeps the changes into and out of stalled, not the others (which were 96 for
    48 tasks that only ran and succeeded)."""
    airflow = tmp_path / "airflow.db"
    make_database(airflow, "wal")
    names = [f"t{n:02d}" for n in range(48)]
    for name in names:
        add_task(airflow, name)
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=clock)
    source = AirflowSource(f"airflow+sqlite:///{airflow}", clock=clock)
    await source.open()
    cfg = config()
    dog = Watchdog(
        Monitor(store, cfg, clock=clock, sources=[source]),
        cfg,
        executor=None,
        notifiers=[ListNotifier()],
        clock=clock,
        log=lambda line: None,
    )

    def set_all(state: str, *, beat: float | None = None, end: float | None = None) -> None:
        conn = sqlite3.connect(airflow)
        conn.execute(
            "UPDATE task_instance SET state = ?, hostname = 'worker-7', pid = 4121, "
            "start_date = ?, last_heartbeat_at = ?, end_date = ?, updated_at = ? "
            "WHERE dag_id = 'etl'",
            (
                state,
                utc_text(clock.now() - 30),
                None if beat is None else utc_text(beat),
                None if end is None else utc_text(end),
                utc_text(clock.now()),
            ),
        )
        conn.commit()
        conn.close()

    try:
        await dog.tick()  # all queued
        set_all("running", beat=clock.now())
        clock.advance(INTERVAL)
        await dog.tick()  # all healthy
        clock.advance(400)  # past Airflow's 300 s: every one stalled
        await dog.tick()
        set_all("running", beat=clock.now())
        await dog.tick()  # healthy again
        set_all("success", end=clock.now())
        clock.advance(INTERVAL)
        await dog.tick()
        events = await store.events(kind=EventKind.TRANSITION, limit=1000)
        moves = sorted({e.message for e in events})
        # Into stalled, and out of it into the watchdog's hold (its release is an event of
        # its own); queued -> healthy and on to succeeded are none.
        assert moves == ["healthy -> stalled", "stalled -> quarantined"]
        assert len(events) == 2 * 49  # the 48 and etl/extract/r
    finally:
        await source.close()
        await store.close()
