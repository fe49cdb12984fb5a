"""Deliveries never hold up a look, and a mass incident pages a human a few times, not 10,000:
a real paging endpoint that accepts and never answers, real page commands, digests past
``[notify] digest_after``."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from tests.core.realprocs import wait_for
from tests.core.test_watchdog import ListNotifier, config, start, watchdog
from zombietop.clock import FakeClock
from zombietop.config import Config
from zombietop.health import Health
from zombietop.heartbeat_line import parse_line
from zombietop.model import EventKind
from zombietop.page import PageKind
from zombietop.paging.notify import DELIVERY_CONCURRENCY, CommandNotifier, Page, WebhookNotifier
from zombietop.store import Store


def notify_config(**notify: object) -> Config:
    base = config()
    return replace(base, notify=replace(base.notify, **notify))  # type: ignore[arg-type]


@pytest.fixture
def silent_server() -> Iterator[tuple[int, list[socket.socket]]]:
    """A paging endpoint that accepts every connection and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    accepted: list[socket.socket] = []
    listener.setblocking(False)
    try:
        yield listener.getsockname()[1], accepted
    finally:
        listener.close()


async def test_a_hung_webhook_never_holds_up_a_look(
    store: Store, clock: FakeClock, silent_server: tuple[int, list[socket.socket]]
) -> None:
    port, _ = silent_server
    hook = WebhookNotifier(f"http://127.0.0.1:{port}/hook", timeout=120)
    dog, _, _ = watchdog(store, clock, notify_config())
    dog.outbox.notifiers = [hook]
    for number in range(12):  # more than the loop's default executor has threads
        await start(store, f"t{number}")
    clock.advance(200)
    report = await dog.tick()
    # The look went on: every task is quarantined and paged, while every delivery still hangs.
    assert len(report.pages) == 12
    for number in range(12):
        assert (await store.get_task(f"t{number}")).quarantined
    assert dog.outbox.in_flight == 12 and report.deliveries == ()
    clock.advance(30)
    report = await dog.tick()  # and the next look too
    assert report.withheld is None and dog.outbox.in_flight == 12
    await dog.outbox.close(0)  # stop waiting on the endpoint; the store keeps the pages
    assert dog.outbox.in_flight == 0


async def test_page_commands_are_bounded_and_an_exit_0_is_delivered(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    started = tmp_path / "started"
    # Each command says it started, then exits 0 at once and leaves a child that holds its
    # stderr open: the page was delivered, however long that child lingers.
    script = f"echo $$ >> {started}; sleep 60 & exit 0"
    command = CommandNotifier(["sh", "-c", script], timeout=1.0)
    dog, _, _ = watchdog(store, clock, notify_config(digest_after=1000))
    dog.outbox.notifiers = [command]
    tasks = 3 * DELIVERY_CONCURRENCY
    for number in range(tasks):
        await start(store, f"t{number}")
    clock.advance(200)
    await dog.tick()
    await wait_for(
        lambda: started.exists() and len(started.read_text().split()) == DELIVERY_CONCURRENCY,
        what="the first page commands",
    )
    # The rest wait for a free slot: never more page commands at once than the bound.
    assert len(psutil.Process(os.getpid()).children()) <= DELIVERY_CONCURRENCY
    results = list(await dog.outbox.settle())
    while dog.outbox.in_flight:
        results += await dog.outbox.settle()
    assert len(results) == tasks and all(r.ok for r in results), [r.error for r in results]
    assert len(started.read_text().split()) == tasks  # each page once, none retried
    delivered = await store.events(kind=EventKind.DELIVERY, limit=100)
    assert len(delivered) == tasks and all(e.data["ok"] for e in delivered)
    # The children the commands left behind went with their session.
    await wait_for(lambda: not _sleepers(), what="the left-behind children to end")


def _sleepers() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "ppid"]):
        if proc.info["cmdline"] == ["sleep", "60"] and proc.info["ppid"] == 1:
            found.append(proc)
    return found


async def test_a_mass_incident_is_one_digest_and_one_all_clear_per_group(
    store: Store, clock: FakeClock
) -> None:
    tokens = {}
    for number in range(30):
        host = "batch-07" if number < 25 else "batch-08"
        await store.create_task(
            task_id=f"t{number:02}",
            run_id="r",
            step="export",
            step_type="d",
            actor="t",
            host=host,
        )
        lease = await store.acquire_lease(f"t{number:02}", owner="w1", ttl=3600)
        await store.record_heartbeat(
            f"t{number:02}", parse_line("stage=transform p=61"), owner="w1", token=lease.token
        )
        tokens[f"t{number:02}"] = lease.token
        clock.advance(1)  # t00 has been silent the longest
    clock.advance(200)
    notifier = ListNotifier()
    dog, _, _ = watchdog(store, clock, notify_config(digest_after=20), notifier=notifier)
    await dog.tick()
    await dog.outbox.settle()
    by_host = {page.host: page for page in notifier.pages}
    assert len(notifier.pages) == 2 and set(by_host) == {"batch-07", "batch-08"}
    big = by_host["batch-07"]
    assert big.kind == "incident" and big.task_id is None
    assert big.line.startswith("25 tasks stalled on batch-07 since ")
    worst = big.line.split("; worst: ")[1].split(" | ")
    assert worst[0].startswith("t00 stalled: ") and worst[1].startswith("t01 stalled: ")
    assert worst[-1] == "and 22 more"
    assert sorted(big.tasks) == [f"t{n:02}" for n in range(25)]
    assert by_host["batch-08"].line.startswith("5 tasks stalled on batch-08")
    # Each task's own line is still in the store, once.
    pages = await store.events(kind=EventKind.PAGE, limit=100)
    assert sorted(e.task_id or "" for e in pages) == sorted(tokens)
    # Back to beating: one all-clear per group.
    for task_id, token in tokens.items():
        await store.record_heartbeat(
            task_id, parse_line("stage=transform p=62"), owner="w1", token=token
        )
    await dog.tick()
    await dog.outbox.settle()
    clears = [page for page in notifier.pages if page.kind == "all_clear"]
    assert len(clears) == 2
    assert {page.line.split(";")[0] for page in clears} == {
        "25 tasks all clear (now healthy) on batch-07",
        "5 tasks all clear (now healthy) on batch-08",
    }


def test_a_few_pages_go_one_by_one_and_pages_without_a_task_always_alone() -> None:
    from zombietop.paging.digest import compose

    pages = [
        Page(
            kind=PageKind.INCIDENT,
            line=f"t{n} stalled",
            task_id=f"t{n}",
            health=Health.STALLED,
            at=0,
        )
        for n in range(3)
    ]
    alone = Page(kind=PageKind.WATCHDOG, line="zombietop watchdog cannot read the store", at=0)
    assert compose([*pages, alone], after=3, at=0) == [*pages, alone]
    composed = compose([*pages, alone], after=2, at=0)
    assert composed[0] == alone and len(composed) == 2
    assert composed[1].line.startswith("3 tasks stalled on an unknown host")


if sys.platform != "linux":  # pragma: no cover
    pytestmark = pytest.mark.skip("process groups and /proc as on Linux")
