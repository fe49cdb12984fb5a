"""Kills and the incidents they end or keep open, with real processes.

The watchdog's own kill does not end the incident: a real `zombietop run` job stalls in a
stage, a real watchdog quarantines and pages it, kills it at its second stage overrun, and keeps
the incident open until someone resumes or discards the task. A failure that a person's kill
caused is that kill's outcome, not a new incident that pages the person who asked for it."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.realprocs import (
    FAST_CONFIG,
    Children,
    pid_alive,
    start_task_process,
    wait_for,
    zombietop,
)
from tests.core.test_root_causes import ListNotifier
from tests.core.test_watchdog import config, watchdog
from zombietop.act.executor import Executor
from zombietop.actions import Outcome
from zombietop.clock import FakeClock
from zombietop.config import WatchSettings, load_config
from zombietop.errors import TaskNotFound
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind, TaskState
from zombietop.procs import PsutilProbe
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

# One reported beat in stage "transform", then it sleeps: stalled, and over its stage budget.
STUCK = 'echo "stage=transform p=40" >> "$ZOMBIETOP_HEARTBEAT_FILE"; sleep 60'


@pytest.fixture
def kill_config_path(tmp_path: Path) -> Path:
    path = tmp_path / "kill.toml"
    text = FAST_CONFIG.replace('request = "2s"', 'request = "0.5s"')
    path.write_text(text.replace('stage = "20s"', 'stage = "1.5s"'))
    return path


async def test_the_watchdogs_own_kill_keeps_the_incident_open(
    real_store: SQLiteStore, db: Path, kill_config_path: Path, children: Children
) -> None:
    """The reported fault: quarantined, paged, killed at 2 x its stage budget, and then
    `all clear: now interrupted (still quarantined)` and a PagerDuty resolve."""
    config = load_config(kill_config_path)
    config = replace(config, watch=WatchSettings(interval=0.2, renotify=0.5, stage_kill_factor=2))
    notifier = ListNotifier()
    dog = Watchdog(
        Monitor(real_store, config, probe=PsutilProbe()),
        config,
        executor=Executor(real_store, config),
        notifiers=[notifier],
        log=lambda _: None,
    )
    job = children.start(
        zombietop(db, kill_config_path, "run", "--task", "export-2031", "--", "sh", "-c", STUCK),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )

    async def interrupted() -> bool:
        await dog.tick()
        try:
            task = await real_store.get_task("export-2031")
        except TaskNotFound:
            return False
        return task.state is TaskState.INTERRUPTED

    await wait_for(interrupted, timeout=60, interval=0.2, what="the watchdog's kill")
    assert job.wait(30) != 0
    kinds = [page.kind for page in notifier.pages]
    assert kinds[0] == "incident" and "stalled" in notifier.pages[0].line

    async def renotified() -> bool:
        await dog.tick()
        return any("killed at stage overrun" in page.line for page in notifier.pages)

    await wait_for(renotified, timeout=30, interval=0.2, what="a notice of the kill")
    assert "all_clear" not in [page.kind for page in notifier.pages]
    notice = next(page for page in notifier.pages if "killed at stage overrun" in page.line)
    assert notice.kind == "renotify"
    assert "export-2031 killed at stage overrun (stage=transform, was stalled); not finished" in (
        notice.line
    )
    assert "not finished - resume or discard (" in notice.line
    assert "export-2031" in dog.incidents

    # Discarded by a person: now the incident ends.
    task = await real_store.get_record("export-2031")
    token = task.lease.token if task.lease is not None else 0
    await Executor(real_store, config).discard("export-2031", expected_token=token, actor="ana")
    await dog.tick()
    assert notifier.pages[-1].kind == "all_clear"
    assert "export-2031" not in dog.incidents


async def test_a_failure_that_a_kill_caused_is_the_kills_outcome_not_a_page(
    store: Store, clock: FakeClock, children: Children, tmp_path: Path
) -> None:
    """The reported fault: an engine records the task a person killed from the dashboard as
    failed, and the watchdog paged that person for the failure."""
    ready = tmp_path / "ready"
    proc = await start_task_process(
        store, children, f": > {ready}; while :; do sleep 0.05; done", ready, task_id="load-7"
    )
    dog, notifier, logs = watchdog(store, clock, config())
    await dog.tick()
    executor = Executor(store, config(), clock=clock)
    sent = await executor.kill("load-7", expected_token=1, actor="ana", reason="stuck")
    assert sent.outcome is Outcome.TERM_SENT, sent.message
    await wait_for(lambda: not pid_alive(proc.pid), what="load-7 to end")
    (done,) = await executor.complete_pending_kills()
    assert done.outcome is Outcome.EXITED, done.message
    # As an engine records a task whose process was killed: failed, exit 143.
    await store.finish_task(
        "load-7", owner="test-owner", token=1, state=TaskState.FAILED, exit_code=143
    )
    clock.advance(1)
    await dog.tick()
    await dog.tick()
    assert [page.kind for page in notifier.pages] == []
    said = [line for line in logs if "the kill's outcome" in line]
    assert said == [
        "load-7 failed after the kill by ana: the kill's outcome, not a new incident (not paged)"
    ]
    recorded = await store.events(task_id="load-7", kind=EventKind.WATCHDOG)
    assert [event.message for event in recorded] == said

    # Resumed, the next attempt fails on its own: that failure is news, and pages.
    resumed = await executor.resume("load-7", expected_token=1, actor="ana")
    assert resumed.outcome is Outcome.REQUEUED, resumed.message
    clock.advance(1)
    lease = await store.acquire_lease("load-7", owner="w2", ttl=60)
    await store.finish_task("load-7", owner="w2", token=lease.token, state=TaskState.FAILED)
    clock.advance(1)
    await dog.tick()
    assert [page.kind for page in notifier.pages] == ["incident"]
    assert notifier.pages[0].line.startswith("load-7 failed")
