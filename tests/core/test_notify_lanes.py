"""Each paging channel has a lane of its own: a PagerDuty endpoint that accepts connections and
never answers delays only PagerDuty's pages, never a command channel's."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.pagerduty_stand_in import ROUTING_KEY
from tests.core.test_watchdog import INTERVAL, config, start
from zombietop.clock import FakeClock
from zombietop.config import NotifySettings, PagerDutySettings
from zombietop.judge.monitor import Monitor
from zombietop.paging.notify import CommandNotifier
from zombietop.paging.pagerduty import PagerDutyNotifier
from zombietop.store import Store
from zombietop.watch.watchdog import Watchdog

TASKS = 300
HUNG_FOR = 30.0
"""The channels' timeout: a hung PagerDuty holds each delivery this long."""
ON_TIME = 10.0
"""Seconds the command's pages may take to leave: far less than one hung PagerDuty attempt."""


@contextmanager
def hanging_receiver() -> Iterator[str]:
    """A loopback endpoint that accepts every connection, reads, and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        listener.settimeout(0.1)
        while not done.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            held.append(connection)

    thread = threading.Thread(target=accept)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v2/enqueue"
    finally:
        done.set()
        thread.join()
        for connection in held:
            connection.close()  # the stuck deliveries end now, not at their timeout
        listener.close()


async def test_a_hung_pagerduty_does_not_hold_back_the_command_channel(
    store: Store, clock: FakeClock, tmp_path: Path
) -> None:
    for number in range(TASKS):
        await start(store, f"export-{number:03}")
    paged = tmp_path / "paged"
    with hanging_receiver() as url:
        settings = NotifySettings(
            retry_backoff=600.0, max_attempts=2, timeout=HUNG_FOR, digest_after=20
        )
        pagerduty = PagerDutyNotifier(
            PagerDutySettings(url=url), HUNG_FOR, environ={"ZOMBIETOP_PAGERDUTY_KEY": ROUTING_KEY}
        )
        command = CommandNotifier(["sh", "-c", f"cat >> {paged}"], HUNG_FOR)
        cfg = replace(config(), notify=settings)
        dog = Watchdog(
            Monitor(store, cfg, clock=clock, reuse_verdicts=True),
            cfg,
            executor=None,
            notifiers=[pagerduty, command],
            clock=clock,
            log=lambda line: None,
        )
        clock.advance(600)  # every task silent past its heartbeat timeout: all stalled
        await dog.tick()
        asked = time.monotonic()
        clock.advance(INTERVAL)
        await dog.tick()
        # The command got the look's pages as one digest; it leaves at once, while every
        # PagerDuty delivery in flight waits on an endpoint that never answers.
        while not paged.exists() or "stalled" not in paged.read_text():
            assert time.monotonic() - asked < ON_TIME, "the command's page waited for PagerDuty"
            await dog.outbox.wait(0.1)
        assert dog.outbox.in_flight > 0, "PagerDuty's deliveries still hang"
        await dog.outbox.close(0)
    lines = paged.read_text()
    assert lines.startswith(f"{TASKS} tasks stalled"), lines[:200]


pytestmark = pytest.mark.backends("sqlite")
