"""``SpinningWatch`` alone: a task that beats without progress is logged once when it starts
to spin, never paged, and listed in the digest of spinning tasks every ``digest_every``."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.core.test_watchdog import config, start
from tests.core.watchdog_parts import Parts, hands_on
from zombietop import health as health_table
from zombietop.clock import FakeClock
from zombietop.health import Health, HealthTraits
from zombietop.heartbeat_line import parse_line
from zombietop.model import EventKind
from zombietop.store import Store
from zombietop.watch.incident_book import IncidentBook
from zombietop.watch.spinning import SpinningWatch

pytestmark = pytest.mark.backends("sqlite")
DIGEST_EVERY = 3600.0


class Spinning:
    def __init__(self, parts: Parts, token: int) -> None:
        self.parts = parts
        self.token = token
        self.book = IncidentBook(parts.hands, renotify=600.0)
        self.watch = SpinningWatch(parts.hands, self.book, digest_every=DIGEST_EVERY)

    async def beat(self, minutes: int, *, moving: bool = False) -> None:
        """Beat once a minute, the progress flat (or a counter moving at each beat)."""
        for minute in range(minutes):
            self.parts.clock.advance(60)
            rows = f" rows={minute + 1}" if moving else ""
            await self.parts.store.record_heartbeat(
                "export-2031",
                parse_line(f"stage=transform p=61{rows}"),
                owner="w1",
                token=self.token,
            )

    async def look(self) -> tuple[Health, list[str]]:
        """One look: note the task, then the digest when it is due; the lines logged."""
        view, look = await self.parts.judged()
        await self.watch.note(view, look)
        await self.watch.digest(look)
        assert look.pages == []  # spinning is never paged
        return view.health, look.logs


async def spinning(store: Store, clock: FakeClock) -> Spinning:
    """A task five minutes flat in a config whose progress timeout is five minutes."""
    cfg = config()
    cfg = replace(cfg, defaults=replace(cfg.defaults, progress_timeout=300.0))
    spin = Spinning(hands_on(store, clock, cfg), await start(store, ttl=6 * 3600))
    await spin.beat(6)
    return spin


async def test_a_spinning_task_is_logged_once_and_listed_in_each_digest(
    store: Store, clock: FakeClock
) -> None:
    spin = await spinning(store, clock)
    health, logs = await spin.look()
    assert health is Health.SPINNING
    assert len(logs) == 2
    assert logs[0].startswith("spinning (not paged): export-2031 spinning")
    assert logs[1] == "digest: 1 spinning\n  " + logs[0].removeprefix("spinning (not paged): ")
    await spin.beat(1)
    assert (await spin.look())[1] == []  # said once; the digest waits its interval
    await spin.beat(60)
    health, logs = await spin.look()
    assert health is Health.SPINNING and len(logs) == 1 and logs[0].startswith("digest: 1 spinning")
    events = await spin.parts.events(EventKind.WATCHDOG)
    assert [e.data.get("digest", False) for e in events] == [False, True, True]


async def test_a_task_that_moves_again_leaves_the_digest(store: Store, clock: FakeClock) -> None:
    spin = await spinning(store, clock)
    await spin.look()
    await spin.beat(60, moving=True)
    health, logs = await spin.look()
    assert health is Health.HEALTHY and logs == ["digest: 0 spinning"]


async def test_the_first_digest_goes_out_at_once_and_the_book_remembers_when(
    store: Store, clock: FakeClock
) -> None:
    spin = Spinning(hands_on(store, clock), await start(store))
    look = spin.parts.look()
    await spin.watch.digest(look)
    assert look.logs == ["digest: 0 spinning"]
    assert spin.book.last_digest_at == clock.now()


async def test_a_new_warning_health_is_logged_and_digested_without_a_change_here(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Make ``healthy`` warn, as a new warning health would: the watch reads the trait, so the
    task is logged once and listed in the digest, never silently dropped."""
    warning_row = replace(health_table.HEALTH_TRAITS[Health.HEALTHY], warns=True)
    monkeypatch.setitem(dict_of(health_table.HEALTH_TRAITS), Health.HEALTHY, warning_row)
    spin = await spinning(store, clock)
    await spin.beat(1, moving=True)
    health, logs = await spin.look()
    assert health is Health.HEALTHY
    assert logs[0].startswith("healthy (not paged): export-2031 healthy")
    assert logs[1] == "digest: 0 spinning, 1 healthy\n  " + logs[0].removeprefix(
        "healthy (not paged): "
    )
    [event] = [e for e in await spin.parts.events(EventKind.WATCHDOG) if e.data.get("digest")]
    assert event.data["spinning"] == [] and len(event.data["healthy"]) == 1


def dict_of(table: object) -> dict[Health, HealthTraits]:
    assert isinstance(table, dict)
    return table
