"""The dashboard and ``status`` show ``flapping`` as the watchdog's pages do: the monitor reads
the watchdog's transition events, one bounded read per poll, and folds each task's flips by the
same rule. A real store with a fake clock, then a real ``zombietop status --json``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.core.realprocs import zombietop
from tests.core.test_watchdog import start
from zombietop.clock import FakeClock
from zombietop.config import default_config
from zombietop.health import Flag, Health
from zombietop.heartbeat_line import parse_line
from zombietop.judge import flip_book
from zombietop.judge.flapping import flips_of
from zombietop.judge.monitor import Monitor
from zombietop.model import Event, EventKind
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore

MIN = 60.0


async def _flip(store: Store, clock: FakeClock, task_id: str, n: int) -> None:
    """Record ``n`` flips of the task, a minute apart, as the watchdog records them."""
    healths = (Health.HEALTHY, Health.STALLED)
    for i in range(n):
        clock.advance(MIN)
        before, after = healths[i % 2], healths[(i + 1) % 2]
        await store.record_event(
            kind=EventKind.TRANSITION,
            actor="watchdog",
            message=f"{task_id}: {before} -> {after}",
            task_id=task_id,
            data={"from": str(before), "to": str(after)},
        )


def _transition(task_id: str | None, before: str, after: str, at: float) -> Event:
    data = {"from": before, "to": after}
    return Event(
        event_id=int(at),
        at=at,
        task_id=task_id,
        kind="transition",
        actor="watchdog",
        message="",
        data=data,
    )


@pytest.mark.parametrize(
    ("events", "moments"),
    [
        # Into and out of a health that pages: flips.
        ([("t", "healthy", "stalled", 1.0), ("t", "stalled", "healthy", 2.0)], {"t": [1.0, 2.0]}),
        # From one paging health to another, or between healths that do not page: none.
        ([("t", "stalled", "dead", 1.0), ("t", "spinning", "healthy", 2.0)], {}),
        # No task, or a health this version does not know (a newer writer): skipped.
        ([(None, "healthy", "stalled", 1.0), ("t", "healthy", "molten", 2.0)], {}),
        (
            [("a", "healthy", "stalled", 1.0), ("b", "healthy", "dead", 2.0)],
            {"a": [1.0], "b": [2.0]},
        ),
    ],
)
def test_the_flips_among_transition_events(
    events: list[tuple[str | None, str, str, float]], moments: dict[str, list[float]]
) -> None:
    assert flips_of(_transition(*event) for event in events) == moments


def _flags(monitor: Monitor, task_id: str) -> tuple[Flag, ...]:
    return monitor.last.by_id()[task_id].verdict.flags


@pytest.mark.parametrize("reuse", [False, True])
async def test_a_task_that_flips_more_than_the_threshold_reads_flapping(
    store: Store, clock: FakeClock, reuse: bool
) -> None:
    """Six flips in an hour are allowed (flap_threshold 6): no flag. The seventh flags the
    task, with its reason, on every poll until it goes flap_window without a flip."""
    token = await start(store, ttl=24 * 3600)
    monitor = Monitor(store, default_config(), clock=clock, reuse_verdicts=reuse)
    await monitor.poll()
    await _flip(store, clock, "export-2031", 6)
    await monitor.poll()
    assert Flag.FLAPPING not in _flags(monitor, "export-2031")

    await _flip(store, clock, "export-2031", 1)
    await monitor.poll()
    assert Flag.FLAPPING in _flags(monitor, "export-2031")
    reasons = monitor.last.by_id()["export-2031"].verdict.reasons
    assert any("flapping: 7 flips in " in r.before for r in reasons)
    await monitor.poll()  # no new transition: still flapping
    assert Flag.FLAPPING in _flags(monitor, "export-2031")

    # A monitor started later (a new dashboard, a `status`) reads the same flips back.
    later = Monitor(store, default_config(), clock=clock, reuse_verdicts=reuse)
    await later.poll()
    assert Flag.FLAPPING in _flags(later, "export-2031")

    # Steady for a whole window: the flag is gone, and the flips forgotten.
    clock.advance(3600)
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=62"), owner="w1", token=token
    )
    await monitor.poll()
    assert Flag.FLAPPING not in _flags(monitor, "export-2031")
    assert monitor.flip_book is not None and monitor.flip_book.flips == {}


async def test_a_poll_reads_a_bounded_number_of_transitions(
    store: Store, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With three transitions read per poll, seven flips are all counted after three polls."""
    monkeypatch.setattr(flip_book, "TRANSITIONS_PER_POLL", 3)
    await start(store, ttl=24 * 3600)
    await _flip(store, clock, "export-2031", 7)
    monitor = Monitor(store, default_config(), clock=clock)
    flagged = []
    for _ in range(3):
        await monitor.poll()
        flagged.append(Flag.FLAPPING in _flags(monitor, "export-2031"))
    assert flagged == [False, False, True]


async def test_the_watchdogs_own_monitor_reads_no_transitions(
    store: Store, clock: FakeClock
) -> None:
    await start(store, ttl=24 * 3600)
    await _flip(store, clock, "export-2031", 7)
    monitor = Monitor(store, default_config(), clock=clock, count_flips=False)
    await monitor.poll()
    assert monitor.flip_book is None
    assert Flag.FLAPPING not in _flags(monitor, "export-2031")


async def test_status_shows_a_flapping_task(
    real_store: SQLiteStore, db: Path, fast_config_path: Path
) -> None:
    """`zombietop status`, table and --json, of a task with seven flips just now."""
    await start(real_store, ttl=24 * 3600)
    # The real store stamps the events with the real time: seven flips within a second.
    await _flip(real_store, FakeClock(), "export-2031", 7)
    as_json = subprocess.run(
        zombietop(db, fast_config_path, "status", "--json"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    task = {t["task_id"]: t for t in json.loads(as_json.stdout)["tasks"]}["export-2031"]
    assert "flapping" in task["flags"]
    table = subprocess.run(
        zombietop(db, fast_config_path, "status"), capture_output=True, text=True, timeout=60
    )
    line = next(line for line in table.stdout.splitlines() if "export-2031" in line)
    assert "flapping" in line
