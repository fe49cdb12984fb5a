"""The kernel's record of when a process tree last ran: idle known in one read, with no
earlier sample (issue 46: a ``status`` run never saw more than its own 1.5 s)."""

from __future__ import annotations

import os
import sys
import time

import pytest

from tests.core.realprocs import Children, wait_for
from zombietop.last_ran import _last_cpu, longer_idle, tree_idle_s
from zombietop.model import IdleSource

linux = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/PID/task/TID/sched")


@linux
async def test_a_sleep_reads_idle_for_as_long_as_it_has_slept(children: Children) -> None:
    began = time.monotonic()
    sleeper = children.start(["sleep", "60"])

    async def slept() -> bool:
        idle = tree_idle_s([sleeper.pid])
        return idle is not None and idle > 2

    await wait_for(slept, timeout=20, what="the sleep to idle 2s")
    idle = tree_idle_s([sleeper.pid])
    assert idle is not None and 2 < idle <= time.monotonic() - began + 0.05


@linux
async def test_each_thread_is_compared_with_the_clock_of_its_own_cpu(
    children: Children,
) -> None:
    """A sleep pinned to each CPU in turn reads its idle time, and the reader comes back to the
    CPUs it may run on."""
    allowed = os.sched_getaffinity(0)
    for cpu in sorted(allowed):
        began = time.monotonic()
        sleeper = children.start(["taskset", "-c", str(cpu), "sleep", "60"])

        async def slept(pid: int = sleeper.pid) -> bool:
            idle = tree_idle_s([pid])
            return idle is not None and idle > 1

        await wait_for(slept, timeout=20, what=f"the sleep on CPU {cpu} to idle 1s")
        assert _last_cpu(sleeper.pid, str(sleeper.pid)) == cpu
        idle = tree_idle_s([sleeper.pid])
        assert idle is not None and 1 < idle <= time.monotonic() - began + 0.05
        assert os.sched_getaffinity(0) == allowed
        sleeper.kill()


@linux
def test_a_busy_tree_reads_not_idle(children: Children) -> None:
    busy = children.start([sys.executable, "-c", "while True: pass"])
    idle = tree_idle_s([busy.pid])
    assert idle is not None and idle < 1


@linux
def test_a_tree_with_a_member_gone_is_not_known(children: Children) -> None:
    gone = children.start(["true"])
    gone.wait()
    assert tree_idle_s([gone.pid]) is None


@pytest.mark.parametrize(
    ("kernel", "sampled", "said"),
    [
        (5.0, None, (5.0, IdleSource.KERNEL)),
        (None, 7.0, (7.0, IdleSource.SAMPLES)),
        (5.0, 120.0, (120.0, IdleSource.SAMPLES)),
        (300.0, 4.0, (300.0, IdleSource.KERNEL)),
        (None, None, (None, None)),
    ],
)
def test_the_longer_of_two_lower_bounds_is_said_with_its_source(
    kernel: float | None, sampled: float | None, said: tuple[float | None, IdleSource | None]
) -> None:
    assert longer_idle(kernel, sampled) == said
