"""The watchdog with the real executor: a graceful kill at the second stage overrun against a real
child, an all-clear after resume, and quarantine blocking `zombietop run --after`."""

from __future__ import annotations

import asyncio
import signal
import subprocess
from dataclasses import replace
from pathlib import Path

import psutil

from tests.core.realprocs import Children, pid_alive, start_task_process, wait_for, zombietop
from zombietop.act.executor import Executor
from zombietop.actions import ActionKind, Outcome
from zombietop.clock import FakeClock
from zombietop.config import Config, WatchSettings
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.model import TaskState
from zombietop.paging.notify import Page
from zombietop.procs import PsutilProbe
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog


class ListNotifier:
    name = kind = "list"
    keeps_incidents = False

    def __init__(self) -> None:
        self.pages: list[Page] = []

    async def send(self, page: Page) -> None:
        self.pages.append(page)


def make_watchdog(
    store: SQLiteStore, config: Config, clock: FakeClock
) -> tuple[Watchdog, ListNotifier]:
    config = replace(config, watch=WatchSettings(interval=5))
    notifier = ListNotifier()
    monitor = Monitor(store, config, probe=PsutilProbe(), clock=clock, reuse_verdicts=True)
    executor = Executor(store, config, clock=clock)
    dog = Watchdog(
        monitor, config, executor=executor, notifiers=[notifier], clock=clock, log=lambda _: None
    )
    return dog, notifier


async def test_second_stage_overrun_kills_a_real_child_gracefully(
    fake_store: SQLiteStore,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(fake_store, children, f"sleep 60 & : > {ready}; wait", ready)
    group = [proc.pid, *(kid.pid for kid in psutil.Process(proc.pid).children())]
    dog, notifier = make_watchdog(fake_store, fast_config, fake_clock)  # stage 20s, kill_grace 1s
    kills = []
    for step in range(1, 40):  # beating with moving progress: only the stage budget speaks
        fake_clock.advance(2)
        await fake_store.renew_lease("t1", owner="test-owner", token=1, ttl=3)
        await fake_store.record_heartbeat(
            "t1", parse_line(f"stage=load p={step}"), owner="test-owner", token=1
        )
        report = await dog.tick()
        kills += [a.outcome for a in report.actions if a.request.kind is ActionKind.KILL]
        if kills:
            break
    overruns = [p for p in notifier.pages if p.kind == "stage_overrun"]
    assert len(overruns) == 1 and overruns[0].line.endswith(
        "killed gracefully at 40s in this stage"
    )
    assert kills[0] is Outcome.TERM_SENT
    beat = (await fake_store.get_record("t1")).heartbeat
    assert beat is not None and fake_clock.now() - beat.stage_started_at == 40
    assert await asyncio.to_thread(proc.wait, 10) == -signal.SIGTERM
    # The kill has exited once its whole group is gone: the shell's `sleep 60` too, which on a
    # busy machine may outlive the shell a while.
    await wait_for(lambda: not any(pid_alive(pid) for pid in group), what="the group to end")
    fake_clock.advance(0.5)
    report = await dog.tick()
    # The exit is reported once: in the tick that sent TERM if the child was quick, else the next.
    kills += [a.outcome for a in report.actions]
    assert kills == [Outcome.TERM_SENT, Outcome.EXITED]


async def test_all_clear_after_resume(
    fake_store: SQLiteStore, fast_config: Config, fake_clock: FakeClock
) -> None:
    await fake_store.create_task(task_id="t1", run_id="r", step="s", step_type="d", actor="test")
    lease = await fake_store.acquire_lease("t1", owner="w", ttl=60)
    await fake_store.record_heartbeat("t1", parse_line("stage=a p=5"), owner="w", token=lease.token)
    dog, notifier = make_watchdog(fake_store, fast_config, fake_clock)
    fake_clock.advance(5)
    await dog.tick()
    executor = Executor(fake_store, fast_config, clock=fake_clock)
    outcome = await executor.resume(
        "t1", expected_token=lease.token, actor="oncall", reason="looked fine"
    )
    assert outcome.outcome is Outcome.REQUEUED, outcome.message
    await dog.tick()
    await dog.tick()
    assert [p.kind for p in notifier.pages] == ["incident", "all_clear"]
    assert notifier.pages[1].line.startswith("t1 all clear: now queued (was stalled")


async def test_quarantine_blocks_run_after_until_resume_or_discard(
    fake_store: SQLiteStore,
    fast_config: Config,
    fast_config_path: Path,
    fake_clock: FakeClock,
    db: Path,
) -> None:
    await fake_store.create_task(task_id="up", run_id="r", step="s", step_type="d", actor="test")
    lease = await fake_store.acquire_lease("up", owner="w", ttl=60)
    await fake_store.record_heartbeat("up", parse_line("stage=a p=5"), owner="w", token=lease.token)
    dog, _ = make_watchdog(fake_store, fast_config, fake_clock)
    fake_clock.advance(5)
    await dog.tick()
    assert (await fake_store.get_task("up")).quarantined

    def run_after() -> subprocess.CompletedProcess[str]:
        argv = zombietop(
            db, fast_config_path, "run", "--task", "down", "--after", "up", "--", "true"
        )
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    blocked = await asyncio.to_thread(run_after)
    assert blocked.returncode == 2
    assert "upstream up is quarantined" in blocked.stderr and blocked.stderr.count("\n") == 1
    executor = Executor(fake_store, fast_config, clock=fake_clock)
    await executor.resume("up", expected_token=lease.token, actor="oncall", reason="retry it")
    still = await asyncio.to_thread(run_after)
    assert still.returncode == 2 and "upstream up is queued, not succeeded" in still.stderr
    again = await fake_store.acquire_lease("up", owner="w2", ttl=60)
    await fake_store.finish_task(
        "up", owner="w2", token=again.token, state=TaskState.SUCCEEDED, exit_code=0
    )
    assert (await asyncio.to_thread(run_after)).returncode == 0


async def test_a_quiet_task_is_killed_at_the_second_overrun_though_its_verdict_is_reused(
    fake_store: SQLiteStore,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    """Nothing about the task changes between ticks, so the monitor keeps its verdict; the time
    its stage has run must still be read as of each tick, or the kill would never come."""
    ready = tmp_path / "ready"
    proc = await start_task_process(fake_store, children, f"sleep 60 & : > {ready}; wait", ready)
    dog, _ = make_watchdog(fake_store, fast_config, fake_clock)  # stage 20s, kill at 40s
    record = await fake_store.get_record("t1")
    task = record.task
    started = (
        record.heartbeat.stage_started_at
        if record.heartbeat
        else task.started_at or task.claimed_at or task.created_at
    )
    kills: list[float] = []
    for _ in range(30):
        fake_clock.advance(2)
        report = await dog.tick()
        if any(a.request.kind is ActionKind.KILL for a in report.actions):
            kills.append(fake_clock.now() - started)
            break
    assert kills and 40 <= kills[0] < 42
    assert await asyncio.to_thread(proc.wait, 10) == -signal.SIGTERM
