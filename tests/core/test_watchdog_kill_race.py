"""A killed command looks dead until its wrapper records the exit: the watchdog must not page that.

Found by the demo: kill a checkpointing job and, one poll in ten, the watchdog quarantined it as
``dead`` in the instant between the command's exit and ``zombietop run`` recording it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.heartbeat_line import parse_line
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind, ProcessSample, Task
from zombietop.paging.notify import Page
from zombietop.procs import this_host
from zombietop.store import Store
from zombietop.watch.watchdog import Watchdog

PID, STARTED = 4121, 1_700_000_000.0


class GoneProbe:
    """Every task's process has exited."""

    async def sample(self, tasks: Sequence[Task]) -> Mapping[str, ProcessSample]:
        return {
            t.task_id: ProcessSample(pid=t.pid or 0, alive=False, sampled_at=0.0) for t in tasks
        }


class Pages:
    name = kind = "list"
    keeps_incidents = False

    def __init__(self) -> None:
        self.pages: list[Page] = []

    async def send(self, page: Page) -> None:
        self.pages.append(page)


async def running_task(store: Store, task_id: str) -> None:
    await store.create_task(task_id=task_id, run_id="r", step="s", step_type="d", actor="t")
    lease = await store.acquire_lease(task_id, owner="w", ttl=3600)
    await store.set_process(
        task_id, owner="w", token=lease.token, pid=PID, pid_start_time=STARTED, host=this_host()
    )
    await store.record_heartbeat(
        task_id, parse_line("stage=render p=5"), owner="w", token=lease.token
    )


def dog(store: Store, clock: FakeClock) -> tuple[Watchdog, Pages]:
    config = default_config()
    pages = Pages()
    monitor = Monitor(store, config, probe=GoneProbe(), clock=clock, reuse_verdicts=True)
    watchdog = Watchdog(
        monitor, config, executor=None, notifiers=[pages], clock=clock, log=lambda _: None
    )
    return watchdog, pages


async def test_a_task_whose_killed_process_just_exited_is_not_an_incident(
    store: Store, clock: FakeClock
) -> None:
    await running_task(store, "render-2049")
    await store.open_kill(
        "render-2049",
        pid=PID,
        pid_start_time=STARTED,
        pgid=PID,
        host=this_host(),
        requested_by="ops",
        grace=30,
    )
    watchdog, pages = dog(store, clock)
    await watchdog.tick()
    # Closed as exited, and the wrapper has still not recorded the end: still not news.
    await store.close_kill("render-2049", outcome="exited", actor="ops", message="exited")
    await watchdog.tick()
    assert pages.pages == []
    assert not (await store.get_task("render-2049")).quarantined
    assert await store.events(kind=EventKind.PAGE) == []


async def test_a_process_that_dies_on_its_own_still_pages(store: Store, clock: FakeClock) -> None:
    await running_task(store, "thumbnails-2045")
    watchdog, pages = dog(store, clock)
    await watchdog.tick()
    assert [page.line.split(":")[0] for page in pages.pages] == ["thumbnails-2045 dead"]
    assert (await store.get_task("thumbnails-2045")).quarantined
