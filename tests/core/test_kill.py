"""The graceful two-step kill against real process groups, with real signals."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests.core.realprocs import (
    Children,
    as_user,
    attempt_tags,
    pid_alive,
    start_task_process,
    start_with_pid,
    throwaway_user,
    wait_for,
    wait_for_file,
    zombietop,
)
from tests.stores import open_for_test
from zombietop.act.executor import Executor
from zombietop.act.task_processes import Outside, signal_each
from zombietop.actions import Outcome
from zombietop.clock import CLOCK_TICKS, FakeClock, host_boottime
from zombietop.config import Config
from zombietop.errors import LeaseLost, TaskNotFound
from zombietop.model import EventKind, TaskState
from zombietop.procs import read_start
from zombietop.start_identity import start_words
from zombietop.store import Store

# Two sleeping grandchildren in the group; the shell itself waits for them.
RESPECTS_TERM = "sleep 30 & sleep 30 & : > {ready}; wait"
# Ignored signals stay ignored across exec, so the grandchildren ignore TERM too.
IGNORES_TERM = "trap '' TERM; sleep 30 & sleep 30 & : > {ready}; wait"


def _grandchildren(pid: int) -> list[int]:
    return [child.pid for child in psutil.Process(pid).children(recursive=True)]


async def test_term_respecting_child_exits_and_is_never_killed(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(
        pinned_store, children, RESPECTS_TERM.format(ready=ready), ready
    )
    kids = _grandchildren(proc.pid)
    assert len(kids) == 2
    executor = Executor(pinned_store, fast_config, clock=fake_clock)

    sent = await executor.kill("t1", expected_token=1, actor="oncall", reason="stuck")
    assert sent.outcome is Outcome.TERM_SENT, sent.message
    assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGTERM
    # The whole group got the TERM; until its last member is gone the kill stays open.
    await wait_for(lambda: not any(pid_alive(kid) for kid in kids), what="grandchildren to die")
    fake_clock.advance(0.4)
    done = await executor.complete_pending_kills()

    assert [d.outcome for d in done] == [Outcome.EXITED]
    assert "exited after TERM in 0.4 s" in done[0].message
    # Past the deadline nothing is left to escalate: SIGKILL was never sent.
    fake_clock.advance(10)
    assert await executor.complete_pending_kills() == []
    record = await pinned_store.get_record("t1")
    assert record.pending_kill is not None and record.pending_kill.outcome == "exited"


async def test_term_ignoring_group_is_killed_after_the_grace_and_not_before(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(pinned_store, children, IGNORES_TERM.format(ready=ready), ready)
    kids = _grandchildren(proc.pid)
    executor = Executor(pinned_store, fast_config, clock=fake_clock)

    sent = await executor.kill("t1", expected_token=1, actor="oncall")
    assert sent.outcome is Outcome.TERM_SENT
    # Real time passes, but the grace (1 s of the store's clock) has not: no SIGKILL yet.
    await asyncio.sleep(0.3)
    fake_clock.advance(0.9)
    assert await executor.complete_pending_kills() == []
    assert proc.poll() is None and all(pid_alive(kid) for kid in kids)

    fake_clock.advance(0.2)
    done = await executor.complete_pending_kills()
    assert [d.outcome for d in done] == [Outcome.ESCALATED]
    assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGKILL
    await wait_for(lambda: not any(pid_alive(kid) for kid in kids), what="grandchildren to die")
    kinds = [(e.kind, e.data.get("outcome")) for e in await pinned_store.events(task_id="t1")]
    assert (EventKind.ACTION, "escalated") in kinds and (EventKind.ACTION, "term_sent") in kinds


async def test_a_group_that_ends_while_its_tag_is_read_has_exited(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A process in the middle of its exit shows an empty environment. The group's members,
    ending just as the SIGKILL was due, read as untagged, and the kill said the group "carries
    no tag" when nothing was left of it."""
    ready = tmp_path / "ready"
    proc = await start_task_process(pinned_store, children, IGNORES_TERM.format(ready=ready), ready)
    kids = _grandchildren(proc.pid)
    executor = Executor(pinned_store, fast_config, clock=fake_clock)
    sent = await executor.kill("t1", expected_token=1, actor="oncall")
    assert sent.outcome is Outcome.TERM_SENT, sent.message

    def ends_as_it_is_read(*_: object) -> bool:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(5)
        for kid in kids:
            while pid_alive(kid):
                time.sleep(0.01)
        return False  # what /proc said of them: no environment left to read

    monkeypatch.setattr("zombietop.act.graceful_kill.kill_is_tied", ends_as_it_is_read)
    fake_clock.advance(fast_config.defaults.kill_grace + 0.1)
    done = await executor.complete_pending_kills()
    assert [d.outcome for d in done] == [Outcome.EXITED], [d.message for d in done]


async def test_reused_pid_is_never_signalled(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    # The recorded start time is 100 s off: the live PID belongs to some other process.
    proc = await start_task_process(
        pinned_store, children, RESPECTS_TERM.format(ready=ready), ready, start_time_offset=-100.0
    )
    executor = Executor(pinned_store, fast_config, clock=fake_clock)

    outcome = await executor.kill("t1", expected_token=1, actor="oncall")

    assert outcome.outcome is Outcome.IDENTITY_MISMATCH and not outcome.ok
    assert "nothing signalled" in outcome.message
    await asyncio.sleep(0.2)
    assert proc.poll() is None
    assert await pinned_store.get_open_kill("t1") is None


# One process alone in its group, which the test reaps itself: nothing is left to an init
# that may take its time to reap orphans, so the new process follows within milliseconds.
ALONE = ": > {ready}; exec sleep 30"


async def _reuse_the_pid(
    children: Children, first: subprocess.Popen[bytes], started: int, tmp_path: Path
) -> subprocess.Popen[bytes]:
    """Once ``first`` (started at tick ``started``) has exited, start a process of the same task
    as its pid, leading a group of the same number, as soon as the kernel's count has moved on:
    well within the wall-clock tolerance of the first."""
    await asyncio.to_thread(first.wait, 5)
    await wait_for(lambda: _ticks_now() > started, what="the next clock tick")
    ready = tmp_path / "reused"
    env = {**os.environ, "ZOMBIETOP_TASK": "t1"}
    argv = ["sh", "-c", ALONE.format(ready=ready)]
    proc = start_with_pid(children, first.pid, argv, env=env)
    await wait_for(ready.exists, what="the new process")
    return proc


async def _recorded_ticks(store: Store) -> int:
    recorded = (await store.get_task("t1")).pid_start_identity
    assert recorded is not None
    return recorded.ticks


async def test_a_pid_reused_within_a_second_is_refused_by_its_ticks(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    """The new process carries the task's tag and started within the wall-clock tolerance of
    the recorded one: only the kernel's count of its start tells it is another process."""
    ready = tmp_path / "ready"
    first = await start_task_process(pinned_store, children, ALONE.format(ready=ready), ready)
    started = await _recorded_ticks(pinned_store)
    first.kill()
    second = await _reuse_the_pid(children, first, started, tmp_path)

    outcome = await Executor(pinned_store, fast_config, clock=fake_clock).kill(
        "t1", expected_token=1, actor="oncall"
    )

    assert outcome.outcome is Outcome.IDENTITY_MISMATCH, outcome.message
    recorded = (await pinned_store.get_task("t1")).pid_start
    assert f"the task's started {start_words(recorded)}" in outcome.message
    assert second.poll() is None and await pinned_store.get_open_kill("t1") is None


async def test_a_pending_kill_never_sigkills_a_new_group_that_took_the_pid(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    """SIGTERM ended the task's process; a new process of the same task (a relaunch, say) got
    its pid and leads a group of the same number. Past the grace nothing of ours is left: the
    kill exited, and the newcomer gets no SIGKILL."""
    ready = tmp_path / "ready"
    first = await start_task_process(pinned_store, children, ALONE.format(ready=ready), ready)
    started = await _recorded_ticks(pinned_store)
    executor = Executor(pinned_store, fast_config, clock=fake_clock)
    sent = await executor.kill("t1", expected_token=1, actor="oncall")
    assert sent.outcome is Outcome.TERM_SENT, sent.message
    second = await _reuse_the_pid(children, first, started, tmp_path)

    fake_clock.advance(fast_config.defaults.kill_grace + 1)
    done = await executor.complete_pending_kills()

    assert [d.outcome for d in done] == [Outcome.EXITED], [d.message for d in done]
    assert second.poll() is None and pid_alive(second.pid)


def _ticks_now() -> int:
    now = host_boottime()
    assert now is not None
    return int(now * CLOCK_TICKS)


async def test_already_gone_process_is_reported_gone(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(pinned_store, children, f": > {ready}", ready)
    await asyncio.to_thread(proc.wait, 5)
    outcome = await Executor(pinned_store, fast_config, clock=fake_clock).kill(
        "t1", expected_token=1, actor="x"
    )
    assert outcome.outcome is Outcome.GONE


async def test_stale_token_and_read_only_store_are_refused(
    live_store: Store,
    store_location: Path | str,
    fast_config: Config,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(live_store, children, RESPECTS_TERM.format(ready=ready), ready)
    executor = Executor(live_store, fast_config)
    await live_store.release_lease("t1", owner="test-owner", token=1)
    await live_store.acquire_lease("t1", owner="someone-else", ttl=60)

    stale = await executor.kill("t1", expected_token=1, actor="oncall")
    assert stale.outcome is Outcome.REFUSED
    assert stale.message == "task changed since you looked: token 1 is now 2"
    async with await open_for_test(store_location, read_only=True) as read_only:
        refused = await Executor(read_only, fast_config).kill("t1", expected_token=2, actor="wall")
    assert refused.outcome is Outcome.REFUSED and "read-only" in refused.message
    assert proc.poll() is None


async def test_pending_kill_is_finished_by_the_next_zombietop_process(
    live_store: Store,
    store_location: Path | str,
    fast_config: Config,
    fast_config_path: Path,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(live_store, children, IGNORES_TERM.format(ready=ready), ready)
    # The starter: sends TERM, records the pending kill, and exits without waiting.
    starter = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from zombietop.config import load_config\n"
        "from zombietop.act.executor import Executor\n"
        "from zombietop.store import open_store\n"
        "async def main():\n"
        f"    async with await open_store({str(store_location)!r}) as live_store:\n"
        f"        fast_config = load_config(Path({str(fast_config_path)!r}))\n"
        "        ex = Executor(live_store, fast_config)\n"
        "        out = await ex.kill('t1', expected_token=1, actor='starter')\n"
        "        print(out.outcome)\n"
        "asyncio.run(main())\n"
    )
    first = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", starter],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert first.stdout.strip() == "term_sent", first.stderr
    kill = await live_store.get_open_kill("t1")
    assert kill is not None and kill.requested_by == "starter"
    assert proc.poll() is None  # TERM ignored, and its starter is gone

    # The next zombietop on the host: `zombietop kill` sees the pending kill and finishes it.
    second = await asyncio.to_thread(
        subprocess.run,
        zombietop(store_location, fast_config_path, "kill", "t1", "--yes"),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert "already pending" in second.stdout
    assert "escalated" in second.stdout, second.stdout + second.stderr
    assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGKILL
    record = await live_store.get_record("t1")
    assert record.pending_kill is not None and record.pending_kill.outcome == "escalated"


async def test_cli_kill_reports_exit_after_term(
    live_store: Store,
    store_location: Path | str,
    patient_config_path: Path,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(live_store, children, RESPECTS_TERM.format(ready=ready), ready)
    result = await asyncio.to_thread(
        subprocess.run,
        zombietop(store_location, patient_config_path, "kill", "t1", "--yes", "--reason", "hung"),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert "t1: term_sent:" in result.stdout
    assert "t1: exited: pid" in result.stdout
    assert proc.wait(5) == -signal.SIGTERM
    wait_for_file(ready)


async def test_a_stopped_job_is_woken_after_sigterm_so_its_handler_runs(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    """The reported fault: a SIGSTOPped job kept its TERM pending through the grace, and met
    the SIGKILL without ever running its handler."""
    ready, handled = tmp_path / "ready", tmp_path / "handled"
    script = f"trap ': > {handled}; exit 0' TERM; : > {ready}; while :; do sleep 0.05; done"
    proc = await start_task_process(pinned_store, children, script, ready)
    proc.send_signal(signal.SIGSTOP)
    await wait_for(
        lambda: psutil.Process(proc.pid).status() == psutil.STATUS_STOPPED, what="the stop"
    )
    executor = Executor(pinned_store, fast_config, clock=fake_clock)
    sent = await executor.kill("t1", expected_token=1, actor="oncall", reason="stuck")
    assert sent.outcome is Outcome.TERM_SENT, sent.message
    assert await asyncio.to_thread(proc.wait, 5) == 0
    assert handled.exists()


async def test_resume_first_stops_an_orphan_that_is_still_running(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    """The reported fault: after its wrapper was SIGKILLed, resume relaunched while the orphan
    kept running for ever ("still alive until it is fenced out", but nothing fences it)."""
    ready = tmp_path / "ready"
    proc = await start_task_process(pinned_store, children, IGNORES_TERM.format(ready=ready), ready)
    kids = _grandchildren(proc.pid)
    executor = Executor(pinned_store, fast_config, clock=fake_clock)
    outcome = await executor.resume("t1", expected_token=1, actor="oncall", reason="retry")
    assert outcome.outcome is Outcome.REQUEUED, outcome.message
    assert f"stopped the old copy first (process group {proc.pid} exited after SIGKILL)" in (
        outcome.message
    )
    assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGKILL
    await wait_for(lambda: not any(pid_alive(kid) for kid in kids), what="the whole group")


async def test_resume_of_a_term_respecting_orphan_needs_no_sigkill(
    pinned_store: Store,
    patient_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(
        pinned_store, children, RESPECTS_TERM.format(ready=ready), ready
    )
    executor = Executor(pinned_store, patient_config, clock=fake_clock)
    outcome = await executor.resume("t1", expected_token=1, actor="oncall", reason="retry")
    assert "exited after SIGTERM" in outcome.message, outcome.message
    assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGTERM


async def test_resume_takes_the_lease_before_it_signals_the_old_copy(
    pinned_store: Store,
    patient_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    """The reported fault: the demo's publish-2031, waiting `--after export-2031`, failed
    ("upstream export-2031 was failed") when export-2031 was resumed, because the old copy's
    wrapper, stopped by the resume, recorded exit 143 as the task's end before the resume took
    the lease. The lease is taken while the old copy still runs, so its end is refused."""
    ready = tmp_path / "ready"
    proc = await start_task_process(
        pinned_store, children, RESPECTS_TERM.format(ready=ready), ready
    )
    fence = pinned_store.fence_task
    alive_when_fenced: list[bool] = []

    async def observed(task_id: str, **kwargs: Any) -> Any:
        alive_when_fenced.append(proc.poll() is None)
        return await fence(task_id, **kwargs)

    pinned_store.fence_task = observed  # type: ignore[method-assign]
    executor = Executor(pinned_store, patient_config, clock=fake_clock)
    outcome = await executor.resume("t1", expected_token=1, actor="oncall", reason="retry")

    assert "exited after SIGTERM" in outcome.message, outcome.message
    assert alive_when_fenced == [True]
    with pytest.raises(LeaseLost):  # what the old copy's wrapper gets when it records its end
        await pinned_store.finish_task(
            "t1", owner="test-owner", token=1, state=TaskState.FAILED, exit_code=143
        )
    assert (await pinned_store.get_task("t1")).state is TaskState.QUEUED


# An SDK job as a job author starts it by hand: no ZOMBIETOP_TASK, no --task on its command line.
BY_HAND = """
import sys, time
from pathlib import Path
from zombietop import Job
with Job("by-hand", db=sys.argv[1], config=sys.argv[2]) as job:
    job.beat("load", 5)
    Path(sys.argv[3]).touch()
    while True:
        time.sleep(0.05)
"""


async def test_an_sdk_job_started_by_hand_is_tied_by_its_open_file_and_killed(
    db: Path, patient_config_path: Path, children: Children, tmp_path: Path
) -> None:
    ready = tmp_path / "ready"
    job = children.start(
        [sys.executable, "-c", BY_HAND, str(db), str(patient_config_path), str(ready)]
    )
    wait_for_file(ready)
    result = await asyncio.to_thread(
        subprocess.run,
        zombietop(db, patient_config_path, "kill", "by-hand", "--yes", "--reason", "hung"),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "by-hand: term_sent:" in result.stdout
    assert job.wait(10) == 143  # the SDK's own TERM handler: interrupted, exit 143
    async with await open_for_test(db) as store:
        task = (await store.get_record("by-hand")).task
    assert task.state == "interrupted"


# Processes of the attempt that left its group -----------------------------------------------


def _outside(proc: subprocess.Popen[bytes], argv: list[str]) -> int:
    """The pid of the descendant of ``proc`` running ``argv`` (a child that left its group)."""
    for kid in psutil.Process(proc.pid).children(recursive=True):
        if kid.cmdline() == argv:
            assert os.getpgid(kid.pid) != proc.pid  # it did leave the group
            return kid.pid
    raise AssertionError(f"no {argv} under pid {proc.pid}")


async def test_a_kill_ends_the_setsid_children_of_the_attempt_too(
    db: Path, patient_config_path: Path, children: Children, tmp_path: Path
) -> None:
    """The reported fault: `sh -c 'setsid sleep 3011 & ...; sleep 300'` under `zombietop run`,
    then `zombietop kill e --yes`: the child kept running with ZOMBIETOP_TASK=e, the task was
    marked interrupted, and a resume ran a second copy beside it."""
    ready = tmp_path / "ready"
    script = f"setsid sleep 3011 & : > {ready}; sleep 300"
    wrapper = children.start(
        zombietop(db, patient_config_path, "run", "--task", "e", "--", "sh", "-c", script),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    wait_for_file(ready)
    async with await open_for_test(db) as store:
        await wait_for(lambda: _pid_of(store, "e"), what="the task's process")
        leader = (await store.get_task("e")).pid
    assert leader is not None
    # The count below is of processes that run: the setsid child, and the `sleep 300` the
    # shell starts only after it wrote the ready file.
    for argv in (["sleep", "3011"], ["sleep", "300"]):
        await wait_for(
            lambda argv=argv: any(k.cmdline() == argv for k in psutil.Process(leader).children()),
            what=f"the shell's child {' '.join(argv)}",
        )
    setsid_child = next(
        k.pid for k in psutil.Process(leader).children() if k.cmdline() == ["sleep", "3011"]
    )
    children.track_group(setsid_child)  # ended at the test's end, should the test fail
    assert os.getsid(setsid_child) == setsid_child and os.getsid(leader) != setsid_child

    result = await asyncio.to_thread(
        subprocess.run,
        zombietop(db, patient_config_path, "kill", "e", "--yes"),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        f"e: term_sent: SIGTERM sent to process group {leader} of e, and to 1 process of e "
        f"outside that group (pid {setsid_child}): 3 processes in 2 sessions; SIGKILL in 5m00s "
        "if any is still alive"
    ) in result.stdout, result.stdout
    assert "e: exited:" in result.stdout
    await wait_for(lambda: not pid_alive(setsid_child), what="the setsid child to end")
    assert await asyncio.to_thread(wrapper.wait, 20) == 128 + signal.SIGTERM
    async with await open_for_test(db) as store:
        assert (await store.get_task("e")).state == "interrupted"


async def _pid_of(store: Store, task_id: str) -> bool:
    try:
        return (await store.get_task(task_id)).pid is not None
    except TaskNotFound:
        return False


async def test_a_child_outside_the_group_that_ignores_term_is_killed_after_the_grace(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    deaf = ["sleep", "3012"]
    script = f"setsid sh -c \"trap '' TERM; : > {ready}; exec sleep 3012\" & wait"
    proc = await start_task_process(pinned_store, children, script, ready)
    await wait_for(lambda: _has(proc, deaf), what="the setsid child to exec")
    outside = _outside(proc, deaf)
    children.track_group(outside)
    executor = Executor(pinned_store, fast_config, clock=fake_clock)

    sent = await executor.kill("t1", expected_token=1, actor="oncall")
    assert sent.outcome is Outcome.TERM_SENT
    assert f"and to 1 process of t1 outside that group (pid {outside})" in sent.message
    assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGTERM  # the group is gone
    fake_clock.advance(0.5)
    assert await executor.complete_pending_kills() == []  # within the grace: not exited
    assert pid_alive(outside)

    fake_clock.advance(1.0)
    done = await executor.complete_pending_kills()
    assert [d.outcome for d in done] == [Outcome.ESCALATED], [d.message for d in done]
    assert f"1 process outside it (pid {outside}) still alive" in done[0].message
    await wait_for(lambda: not pid_alive(outside), what="SIGKILL to reach it")


async def test_the_sessions_a_term_reached_are_counted_before_they_end(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The sessions were read after the SIGTERM: on a busy machine a process had ended and
    been reaped by then, and the kill said "3 processes in 1 session"."""
    ready = tmp_path / "ready"
    proc = await start_task_process(pinned_store, children, ALONE.format(ready=ready), ready)
    tags = {**os.environ, **attempt_tags("t1", pinned_store)}
    apart = children.start(["sleep", "3019"], env=tags, process_group=None, start_new_session=True)
    await wait_for(lambda: _runs(apart, ["sleep", "3019"]), what="the process outside")
    real_signal_each = signal_each

    def each_ends_at_once(*args: Any) -> list[Outside]:
        signalled = real_signal_each(*args)
        assert proc.wait(5) == -signal.SIGTERM and apart.wait(5) == -signal.SIGTERM  # reaped
        return signalled

    monkeypatch.setattr("zombietop.act.graceful_kill.signal_each", each_ends_at_once)
    sent = await Executor(pinned_store, fast_config, clock=fake_clock).kill(
        "t1", expected_token=1, actor="oncall"
    )
    assert f"(pid {apart.pid}): 2 processes in 2 sessions;" in sent.message, sent.message


def _has(proc: subprocess.Popen[bytes], argv: list[str]) -> bool:
    with contextlib.suppress(psutil.Error):
        return any(k.cmdline() == argv for k in psutil.Process(proc.pid).children(recursive=True))
    return False


async def test_other_attempts_other_stores_and_other_users_are_never_signalled(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    """Each carries ZOMBIETOP_TASK=t1 and lives outside the task's group: anyone can set a
    variable, and the same task id runs in other stores and other attempts."""
    ready = tmp_path / "ready"
    proc = await start_task_process(
        pinned_store, children, RESPECTS_TERM.format(ready=ready), ready
    )
    tags = {**os.environ, **attempt_tags("t1", pinned_store)}
    others = [
        children.start(["sleep", "3013"], env={**tags, "ZOMBIETOP_ATTEMPT": "2"}),
        children.start(["sleep", "3013"], env={**tags, "ZOMBIETOP_DB": "/elsewhere/z.db"}),
    ]
    with throwaway_user() as user:
        others.append(children.start(as_user(user, "sleep", "3013"), env=tags))
        await wait_for(
            lambda: all(psutil.Process(o.pid).cmdline() == ["sleep", "3013"] for o in others),
            what="the others to run",
        )
        sent = await Executor(pinned_store, fast_config, clock=fake_clock).kill(
            "t1", expected_token=1, actor="oncall"
        )
        assert sent.outcome is Outcome.TERM_SENT
        assert "outside" not in sent.message, sent.message
        assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGTERM
        assert all(other.poll() is None for other in others)


async def test_a_tagged_process_that_took_the_pid_of_one_outside_gets_no_sigkill(
    pinned_store: Store,
    fast_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    """Every process signalled is checked again by its start before the SIGKILL: the one
    outside the group left after TERM, and a process of the same attempt got its pid."""
    ready = tmp_path / "ready"
    proc = await start_task_process(pinned_store, children, IGNORES_TERM.format(ready=ready), ready)
    tags = {**os.environ, **attempt_tags("t1", pinned_store)}
    first = children.start(["sleep", "3015"], env=tags, process_group=None, start_new_session=True)
    await wait_for(lambda: _runs(first, ["sleep", "3015"]), what="the first process")
    started = read_start(first.pid)
    assert started is not None and started.identity is not None
    ticks = started.identity.ticks
    executor = Executor(pinned_store, fast_config, clock=fake_clock)
    sent = await executor.kill("t1", expected_token=1, actor="oncall")
    assert f"(pid {first.pid})" in sent.message, sent.message
    assert await asyncio.to_thread(first.wait, 5) == -signal.SIGTERM
    await wait_for(lambda: _ticks_now() > ticks, what="the next clock tick")
    second = start_with_pid(
        children, first.pid, ["sleep", "3016"], env=tags, process_group=None, start_new_session=True
    )

    fake_clock.advance(fast_config.defaults.kill_grace + 1)
    done = await executor.complete_pending_kills()
    assert [d.outcome for d in done] == [Outcome.ESCALATED], [d.message for d in done]
    assert "outside" not in done[0].message
    assert await asyncio.to_thread(proc.wait, 5) == -signal.SIGKILL
    assert second.poll() is None and pid_alive(second.pid)


def _runs(proc: subprocess.Popen[bytes], argv: list[str]) -> bool:
    with contextlib.suppress(psutil.Error):
        return psutil.Process(proc.pid).cmdline() == argv
    return False


async def test_resume_stops_the_children_of_the_old_copy_that_left_its_group(
    pinned_store: Store,
    patient_config: Config,
    fake_clock: FakeClock,
    children: Children,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready"
    script = f"setsid sleep 3017 & : > {ready}; wait"
    proc = await start_task_process(pinned_store, children, script, ready)
    await wait_for(lambda: _has(proc, ["sleep", "3017"]), what="the setsid child")
    outside = _outside(proc, ["sleep", "3017"])
    children.track_group(outside)
    outcome = await Executor(pinned_store, patient_config, clock=fake_clock).resume(
        "t1", expected_token=1, actor="oncall"
    )
    assert (
        f"stopped the old copy first (process group {proc.pid} and 1 process outside it "
        f"(pid {outside}) exited after SIGTERM)"
    ) in outcome.message, outcome.message
    await wait_for(lambda: not pid_alive(outside), what="the old copy's setsid child to end")
