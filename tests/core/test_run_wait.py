"""`zombietop run --after X --wait` as a real process: queued behind X, started when X
succeeds, failed when X is discarded, interrupted by SIGTERM, reclaimable when it dies."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.core.realprocs import Children, wait_for, zombietop
from zombietop.clock import FakeClock
from zombietop.config import Config
from zombietop.errors import TaskNotFound
from zombietop.health import Health
from zombietop.judge.monitor import Monitor, TaskView
from zombietop.model import TaskState
from zombietop.procs import PsutilProbe
from zombietop.run.claim import Claim
from zombietop.run.job_runs import claim_run
from zombietop.run.upstream_wait import UpstreamWait
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore

WAITS_FOR_GO = 'while [ ! -e "$GO" ]; do sleep 0.05; done'


def _run(
    db: Path, config_path: Path, children: Children, *args: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    return children.start(
        zombietop(db, config_path, "run", *args),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )


async def _view(monitor: Monitor, task_id: str) -> TaskView | None:
    return (await monitor.poll()).by_id().get(task_id)


async def _waiting(store: SQLiteStore, task_id: str) -> bool:
    """True once the waiter has recorded its task, queued, under its lease."""
    try:
        record = await store.get_record(task_id)
    except TaskNotFound:
        return False
    lease = record.lease
    return record.task.state is TaskState.QUEUED and lease is not None and lease.held


async def _upstream(store: SQLiteStore, task_id: str) -> None:
    """An upstream task, queued, as a scheduler would leave it."""
    await store.create_task(
        task_id=task_id, run_id="r2031", step=task_id, step_type="default", actor="test"
    )


async def test_the_waiter_is_queued_blocked_then_starts_when_its_upstream_succeeds(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
    tmp_path: Path,
) -> None:
    go, started = tmp_path / "go", tmp_path / "started"
    upstream = _run(
        db,
        fast_config_path,
        children,
        "--task",
        "extract-2031",
        "--",
        "sh",
        "-c",
        WAITS_FOR_GO,
        env={"GO": str(go), "PATH": "/usr/bin:/bin"},
    )
    await wait_for(lambda: _waiting_or_running(real_store), what="extract-2031 running")
    waiter = _run(
        db,
        fast_config_path,
        children,
        "--task",
        "load-2031",
        "--after",
        "extract-2031",
        "--wait",
        "--",
        "sh",
        "-c",
        f"touch {started}",
    )
    await wait_for(lambda: _waiting(real_store, "load-2031"), while_running=waiter, what="queued")
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe(), include_finished=True)
    # Quarantined: still waiting, shown blocked behind it.
    await real_store.set_quarantine("extract-2031", quarantined=True, actor="test", reason="held")
    view = await _view(monitor, "load-2031")
    assert view is not None and view.health is Health.QUEUED
    assert view.waiting_on == (("extract-2031", Health.QUARANTINED),)
    # Several heartbeat intervals later the waiter still waits, and its lease is renewed.
    first = await real_store.get_lease("load-2031")
    assert first is not None and first.renewed_at is not None
    renewed_at = first.renewed_at

    async def renewed() -> bool:
        lease = await real_store.get_lease("load-2031")
        return lease is not None and (lease.renewed_at or 0.0) > renewed_at

    await wait_for(renewed, while_running=waiter, what="the waiting lease renewed")
    assert waiter.poll() is None and not started.exists()
    await real_store.set_quarantine("extract-2031", quarantined=False, actor="test")
    go.touch()
    assert upstream.wait(timeout=60) == 0
    assert waiter.wait(timeout=60) == 0, waiter.stderr.read() if waiter.stderr else ""
    assert started.exists()
    task = await real_store.get_task("load-2031")
    assert task.state is TaskState.SUCCEEDED and task.upstream == ("extract-2031",)


async def _waiting_or_running(store: SQLiteStore) -> bool:
    try:
        task = await store.get_task("extract-2031")
    except TaskNotFound:
        return False
    return task.state.executing


async def test_a_discarded_upstream_ends_the_waiter_failed_with_the_reason(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children, tmp_path: Path
) -> None:
    await _upstream(real_store, "extract-2031")
    started = tmp_path / "started"
    waiter = _run(
        db,
        fast_config_path,
        children,
        "--task",
        "load-2031",
        "--after",
        "extract-2031",
        "--wait",
        "--",
        "sh",
        "-c",
        f"touch {started}",
    )
    await wait_for(lambda: _waiting(real_store, "load-2031"), while_running=waiter, what="queued")
    discard = subprocess.run(
        zombietop(db, fast_config_path, "discard", "extract-2031", "--yes", "--reason", "bad"),
        capture_output=True,
        timeout=60,
    )
    assert discard.returncode == 0, discard.stderr
    assert waiter.wait(timeout=60) == 1
    task = await real_store.get_task("load-2031")
    assert task.state is TaskState.FAILED
    assert task.state_reason is not None
    assert task.state_reason.startswith("upstream extract-2031 was discarded (bad)")
    assert "sh never started" in task.state_reason
    assert not started.exists()


async def test_sigterm_ends_the_wait_interrupted_and_recorded(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    await _upstream(real_store, "extract-2031")
    waiter = _run(
        db, fast_config_path, children, "--task", "load-2031", "--after", "extract-2031",
        "--wait", "--", "true",
    )  # fmt: skip
    await wait_for(lambda: _waiting(real_store, "load-2031"), while_running=waiter, what="queued")
    waiter.send_signal(signal.SIGTERM)
    assert waiter.wait(timeout=60) == 128 + signal.SIGTERM
    task = await real_store.get_task("load-2031")
    assert task.state is TaskState.INTERRUPTED
    assert task.state_reason == (
        "stopped by SIGTERM while waiting for extract-2031, before the command started"
    )
    lease = await real_store.get_lease("load-2031")
    assert lease is not None and not lease.held


async def test_a_waiter_that_dies_shows_reclaimable_for_its_own_reason(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
) -> None:
    await _upstream(real_store, "extract-2031")
    waiter = _run(
        db, fast_config_path, children, "--task", "load-2031", "--after", "extract-2031",
        "--wait", "--", "true",
    )  # fmt: skip
    await wait_for(lambda: _waiting(real_store, "load-2031"), while_running=waiter, what="queued")
    monitor = Monitor(real_store, fast_config, probe=PsutilProbe(), include_finished=True)
    view = await _view(monitor, "load-2031")
    assert view is not None and view.health is Health.QUEUED
    waiter.kill()
    waiter.wait(timeout=60)

    async def reclaimable() -> bool:
        seen = await _view(monitor, "load-2031")
        return seen is not None and seen.health is Health.RECLAIMABLE

    await wait_for(reclaimable, timeout=30, what="the dead waiter reclaimable")
    seen = await _view(monitor, "load-2031")
    assert seen is not None
    assert [r.code for r in seen.verdict.reasons][:1] == ["waiter_lost"]
    assert "waiting wrapper run@" in seen.verdict.context(await real_store.now())

    # A resume relaunches it waiting again (`run --wait`), not refused behind its upstream.
    resume = await asyncio.to_thread(
        subprocess.run,
        zombietop(db, fast_config_path, "resume", "load-2031", "--yes", "--reason", "again"),
        capture_output=True,
        timeout=60,
    )
    assert resume.returncode == 0, resume.stderr

    async def waiting_again() -> bool:
        lease = await real_store.get_lease("load-2031")
        return await _waiting(real_store, "load-2031") and lease is not None and lease.token == 3

    try:
        await wait_for(waiting_again, timeout=60, what="the relaunched waiter")
        lease = await real_store.get_lease("extract-2031") or await real_store.acquire_lease(
            "extract-2031", owner="test", ttl=60
        )
        await real_store.finish_task(
            "extract-2031", owner="test", token=lease.token, state=TaskState.SUCCEEDED
        )

        async def succeeded() -> bool:
            return (await real_store.get_task("load-2031")).state is TaskState.SUCCEEDED

        await wait_for(succeeded, timeout=60, what="load-2031 started and succeeded")
    finally:
        lease = await real_store.get_lease("load-2031")
        if lease is not None and lease.held and lease.owner is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(lease.owner.rsplit(":", 1)[1]), signal.SIGKILL)


async def test_a_job_run_after_a_job_that_starts_5s_later_waits_for_it(
    real_store: SQLiteStore,
    db: Path,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
    tmp_path: Path,
) -> None:
    """The reported fault: cron starts `extract` and `publish --after extract --wait` at the
    same minute; `publish` came first and exited 2 ("no such task ... would wait forever")."""
    done = tmp_path / "published"
    publish = _run(
        db, fast_config_path, children,
        "--job", "publish", "--after", "extract", "--wait", "--", "touch", str(done),
    )  # fmt: skip

    async def publish_waiting() -> bool:
        runs = await real_store.job_runs("publish", 1)
        return bool(runs) and await _waiting(real_store, runs[0].task_id)

    await wait_for(publish_waiting, while_running=publish, what="publish queued")
    (waiting,) = await real_store.job_runs("publish", 1)
    assert waiting.upstream == ("extract",)
    view = await _view(Monitor(real_store, fast_config), waiting.task_id)
    assert view is not None and view.health is Health.QUEUED
    assert "waiting for extract: not started yet" in view.verdict.context(time.time())
    await asyncio.sleep(5)  # the scenario itself: extract starts 5 s after publish
    assert publish.poll() is None and not done.exists()
    go = tmp_path / "go"
    extract = _run(
        db, fast_config_path, children, "--job", "extract", "--", "sh", "-c", WAITS_FOR_GO,
        env={**os.environ, "GO": str(go)},
    )  # fmt: skip

    async def behind_the_run() -> bool:
        view = await _view(Monitor(real_store, fast_config), waiting.task_id)
        runs = await real_store.job_runs("extract", 1)
        return (
            bool(runs) and view is not None and [u for u, _ in view.waiting_on] == [runs[0].task_id]
        )

    # Its row names the run it waits behind, and the root causes can hold it behind that run.
    await wait_for(behind_the_run, while_running=extract, what="publish behind extract's run")
    go.touch()
    assert await asyncio.to_thread(extract.wait, 60) == 0
    assert await asyncio.to_thread(publish.wait, 60) == 0
    assert done.exists()
    (published,) = await real_store.job_runs("publish", 1)
    assert published.task_id == waiting.task_id  # the waiting run started, no second run
    assert published.state is TaskState.SUCCEEDED
    assert publish.stderr is not None
    said = publish.stderr.read().decode()
    assert "waits for extract: not started yet" in said
    assert "succeeded: starting publish/" in said


async def test_after_a_job_name_means_its_latest_run_when_that_started_just_before(
    real_store: SQLiteStore, db: Path, fast_config_path: Path, children: Children
) -> None:
    extract = _run(db, fast_config_path, children, "--job", "extract", "--", "sleep", "0.5")
    assert await asyncio.to_thread(extract.wait, 60) == 0
    (ran,) = await real_store.job_runs("extract", 1)
    publish = _run(
        db, fast_config_path, children, "--job", "publish", "--after", "extract", "--wait",
        "--", "true",
    )  # fmt: skip
    assert await asyncio.to_thread(publish.wait, 60) == 0
    (published,) = await real_store.job_runs("publish", 1)
    assert published.upstream == (ran.task_id,)
    assert published.state is TaskState.SUCCEEDED


async def extract_succeeded_5s_ago(store: Store, clock: FakeClock) -> None:
    """A run of the job ``extract`` that started and succeeded, and 5 s after it."""
    extract = await store.create_task(
        task_id="extract/1", run_id="1", step="extract", step_type="extract", actor="cron",
        job="extract",
    )  # fmt: skip
    lease = await store.acquire_lease(extract.task_id, owner="cron", ttl=60)
    await store.finish_task(
        extract.task_id, owner="cron", token=lease.token, state=TaskState.SUCCEEDED
    )
    clock.advance(5.0)


async def test_a_job_run_that_ended_between_resolving_and_the_claim_is_the_one_waited_for(
    store: Store, clock: FakeClock
) -> None:
    """Cron starts `publish --after extract --wait` and `extract` at once: on a loaded host
    extract may start and succeed after the waiter looked for it by name and before the waiter
    recorded its task. That run is within the window the name was resolved with, so the
    waiter starts at its first look, instead of waiting for extract's next run (tomorrow)."""
    await extract_succeeded_5s_ago(store, clock)
    waiter = await store.create_task(
        task_id="publish/1", run_id="1", step="publish", step_type="publish", actor="cron",
        job="publish", upstream=("extract",),
    )  # fmt: skip
    held = await store.acquire_lease(waiter.task_id, owner="run", ttl=60)
    claim = Claim(task=waiter, lease=held, owner="run")
    said: list[str] = []
    waiting = UpstreamWait(store, said.append).wait(
        claim, interval=3600, ttl=60, command=("true",), window=60
    )
    # Its first look decides, with no interval waited: a wait that goes on is the bug.
    code = await asyncio.wait_for(waiting, timeout=30)
    assert code is None, said  # start the command now
    assert "extract succeeded: starting publish/1" in said


async def test_the_start_after_the_wait_checks_the_run_the_wait_saw_succeed(
    store: Store, clock: FakeClock
) -> None:
    """The wait found `extract`'s run within its window and said go; the claim that starts the
    command checks the upstream again, and must look in the same window. With only the task's
    own creation time it found no run of extract, said "does not exist", and waited again for
    ever (a docs example hung in CI this way)."""
    await extract_succeeded_5s_ago(store, clock)
    waiting = await claim_run(
        store, job="publish", run="1", owner="run", ttl=60, after=("extract",), wait=True,
        window=60,
    )  # fmt: skip
    said: list[str] = []
    code = await UpstreamWait(store, said.append).wait(
        waiting, interval=3600, ttl=60, command=("true",), window=60
    )
    assert code is None, said
    started = await claim_run(store, job="publish", run="1", owner="run", ttl=60, window=60)
    assert started.task.state is TaskState.STARTING  # claimed to start, not refused
    assert started.token == waiting.token + 1
