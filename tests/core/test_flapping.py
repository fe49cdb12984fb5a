"""Flapping: a task whose health goes into and out of one that pages more than flap_threshold
times within flap_window gets one notice with its flips counted, no page while it flaps, and
one all-clear, saying how long it flapped, once it is steady for flap_window. The rule as a
table, then the real watchdog over a real store with a fake clock, restarts included, and over
a real `zombietop run` of a command that beats only when the test tells it to."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.realprocs import Children, wait_for, zombietop
from tests.core.test_watchdog import INTERVAL, config, start, watchdog
from zombietop.clock import FakeClock
from zombietop.config import Config, load_config
from zombietop.errors import ConfigError
from zombietop.health import Flag, Health
from zombietop.heartbeat_line import parse_line
from zombietop.judge.flapping import Flips, fold_flip, is_flip, judge_flapping, steady
from zombietop.model import EventKind, Heartbeat
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.watchdog import Watchdog

MIN = 60.0


def _folded(moments: list[float], threshold: int = 6, window: float = 3600.0) -> Flips | None:
    limits = replace(load_config(None).defaults, flap_threshold=threshold, flap_window=window)
    flips: Flips | None = None
    for at in moments:
        flips = fold_flip(flips, at, limits)
    return flips


@pytest.mark.parametrize(
    ("moments", "now", "flapping", "count"),
    [
        # Six flips in an hour are allowed; the seventh is one too many.
        ([i * 5 * MIN for i in range(6)], 26 * MIN, False, 6),
        ([i * 5 * MIN for i in range(7)], 31 * MIN, True, 7),
        # Seven flips spread over more than an hour never had more than six in one window.
        ([i * 11 * MIN for i in range(7)], 67 * MIN, False, 7),
        # A gap of the whole window in the middle: a new count starts after it.
        ([0, MIN, 2 * MIN, 62 * MIN, 63 * MIN, 64 * MIN, 65 * MIN], 66 * MIN, False, 4),
        # Still flapping 59 minutes after the last flip, steady at 60.
        ([i * MIN for i in range(7)], 65 * MIN, True, 7),
        ([i * MIN for i in range(7)], 66 * MIN, False, 7),
        # Once it flaps, fewer flips keep it flapping: each one within the window of the last.
        ([i * MIN for i in range(7)] + [50 * MIN, 100 * MIN], 150 * MIN, True, 9),
    ],
)
def test_flapping_rule(moments: list[float], now: float, flapping: bool, count: int) -> None:
    flips = _folded(moments)
    limits = load_config(None).defaults
    judged = judge_flapping(now, flips, limits)
    assert (judged is not None) is flapping
    assert flips is not None and flips.count == count
    if judged is not None:
        assert (judged.flips, judged.since) == (count, moments[0])


@pytest.mark.parametrize(
    ("threshold", "window", "moments", "flapping"),
    [
        (2, 10 * MIN, [0, MIN, 2 * MIN], True),
        (3, 10 * MIN, [0, MIN, 2 * MIN], False),
        (2, 90.0, [0, MIN, 2 * MIN], False),
    ],
)
def test_flapping_follows_the_step_types_threshold_and_window(
    threshold: int, window: float, moments: list[float], flapping: bool
) -> None:
    limits = replace(load_config(None).defaults, flap_threshold=threshold, flap_window=window)
    flips = _folded(moments, threshold, window)
    assert (judge_flapping(moments[-1], flips, limits) is not None) is flapping


def test_steady_only_after_flapping_and_a_whole_window_without_a_flip() -> None:
    limits = load_config(None).defaults
    flipped = _folded([i * MIN for i in range(7)])
    calm = _folded([0, MIN])
    assert not steady(6 * MIN + 3599, flipped, limits)
    assert steady(6 * MIN + 3600, flipped, limits)
    assert not steady(10 * 3600, calm, limits)


@pytest.mark.parametrize(
    ("before", "after", "flip"),
    [
        (Health.HEALTHY, Health.STALLED, True),
        (Health.STALLED, Health.HEALTHY, True),
        (Health.STALLED, Health.DEAD, False),
        (Health.SPINNING, Health.HEALTHY, False),
        (Health.QUARANTINED, Health.RECLAIMABLE, True),
    ],
)
def test_a_flip_is_into_or_out_of_a_health_that_pages(
    before: Health, after: Health, flip: bool
) -> None:
    assert is_flip(before, after) is flip


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("[thresholds]\nflap_threshold = 0\n", "flap_threshold must be a whole number >= 1"),
        ("[thresholds]\nflap_threshold = 2.5\n", "flap_threshold must be a whole number"),
        ("[thresholds]\nflap_threshold = 5000\n", "above its ceiling of 1000"),
        ('[thresholds]\nflap_window = "1m"\n', 'heartbeat_timeout = "2m" (default) must be'),
        ('[step_types.export]\nflap_window = "90s"\n', "[step_types.export]: heartbeat_timeout"),
        ("[step_types.export]\nflap_threshold = true\n", "flap_threshold must be a whole"),
    ],
)
def test_flap_settings_are_checked(tmp_path, text: str, error: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert error in str(raised.value)


def test_flap_settings_per_step_type(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "config.toml"
    path.write_text('[thresholds]\nflap_threshold = 3\n[step_types.export]\nflap_window = "2h"\n')
    loaded = load_config(path)
    export = loaded.limits_for("export")
    assert (loaded.defaults.flap_threshold, loaded.defaults.flap_window) == (3, 3600.0)
    assert (export.flap_threshold, export.flap_window) == (3, 7200.0)
    assert "[step_types.export]" in export.source("flap_window")


# The real watchdog -------------------------------------------------------------------------


def _patient() -> Config:
    """The watchdog's test config, with a stage budget the long test never overruns."""
    return config(stage=6 * 3600.0)


async def _flip_twice(dog: Watchdog, store: Store, clock: FakeClock, token: int, p: int) -> None:
    """Stall (no beat past the heartbeat timeout), then beat again: two flips, a look at each."""
    clock.advance(150)
    await dog.tick()
    await store.record_heartbeat(
        "export-2031", parse_line(f"stage=transform p={p}"), owner="w1", token=token
    )
    clock.advance(5)
    await dog.tick()


async def _steady_for(dog: Watchdog, store: Store, clock: FakeClock, token: int, s: float) -> None:
    """Beat and look every INTERVAL for ``s`` seconds: healthy throughout."""
    for step in range(int(s // INTERVAL)):
        clock.advance(INTERVAL)
        await store.record_heartbeat(
            "export-2031", parse_line(f"stage=transform p={step % 90}"), owner="w1", token=token
        )
        await dog.tick()


async def test_a_flapping_task_gets_one_notice_then_none_until_steady(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store, ttl=24 * 3600)
    dog, notifier, _ = watchdog(store, clock, _patient())
    await dog.tick()
    for p in range(3):  # six flips: each stall paged, each recovery cleared
        await _flip_twice(dog, store, clock, token, p)
    assert [page.kind for page in notifier.pages] == ["incident", "all_clear"] * 3
    for p in range(3, 6):  # the seventh flip flaps: one notice, then nothing
        await _flip_twice(dog, store, clock, token, p)
    flapping = notifier.pages[6:]
    assert [page.kind for page in flapping] == ["flapping"]
    line = flapping[0].line
    assert line.startswith("export-2031 stalled, flapping:") and "flapping: 7 flips in " in line
    assert "(flap threshold 6 in 1h); not paged until steady for 1h" in line
    assert not (await store.get_task("export-2031")).quarantined

    # Steady for 59 minutes: still held. At the hour: one all-clear that says how long.
    await _steady_for(dog, store, clock, token, 3600 - 2 * INTERVAL)
    assert len(notifier.pages) == 7
    await _steady_for(dog, store, clock, token, 2 * INTERVAL)
    steady_page = notifier.pages[7]
    assert steady_page.kind == "all_clear" and steady_page.incident == flapping[0].incident
    assert steady_page.line.startswith("export-2031 steady again: flapped for ")
    assert steady_page.line.endswith("(12 flips); now healthy")
    assert len(notifier.pages) == 8

    # Steady again, a stall is an incident as before.
    clock.advance(200)
    await dog.tick()
    assert [page.kind for page in notifier.pages[8:]] == ["incident"]
    kinds = [event.data.get("page") for event in await store.events(kind=EventKind.PAGE)]
    assert kinds.count("flapping") == 2  # the notice and the steady all-clear


async def test_a_restarted_watchdog_counts_the_flips_of_the_event_log(
    store: Store, clock: FakeClock
) -> None:
    token = await start(store, ttl=24 * 3600)
    first, notifier1, _ = watchdog(store, clock, _patient())
    await first.tick()
    for p in range(3):
        await _flip_twice(first, store, clock, token, p)
    clock.advance(150)
    await first.tick()  # the seventh flip: the notice
    assert [page.kind for page in notifier1.pages][-1] == "flapping"

    # A watchdog from cron, or restarted: it remembers the flips, pages no stall of them.
    second, notifier2, _ = watchdog(store, clock, _patient())
    await store.record_heartbeat(
        "export-2031", parse_line("stage=transform p=9"), owner="w1", token=token
    )
    await second.tick()
    await _flip_twice(second, store, clock, token, 10)
    assert notifier2.pages == []
    view = second.monitor.last.by_id()["export-2031"]
    assert view.health is Health.HEALTHY
    report_flags = second.flaps.flips["export-2031"]
    assert report_flags.count == 9 and report_flags.tripped_at is not None
    assert Flag.FLAPPING.mark == "flapping"


# A real run ---------------------------------------------------------------------------------

# The command beats once per line written to its FIFO, and between lines it waits on the FIFO:
# no CPU, no I/O, so no observed beat either, and the run stalls once the beat is old.
BEAT_ON_DEMAND = (
    'while read p < "$0"; do echo "stage=load p=$p" >> "$ZOMBIETOP_HEARTBEAT_FILE"; done'
)


@pytest.mark.slow
async def test_a_real_run_that_flaps_is_paged_once(
    db: Path, fast_config_path: Path, children: Children, tmp_path: Path
) -> None:
    """`zombietop run` of a command that beats only when told: beat, stall past the 600ms
    heartbeat timeout, beat again, seven times; the watchdog (a fake clock that never runs
    behind the real beats) pages the first three stalls, then one flapping notice."""
    fifo = tmp_path / "beats"
    os.mkfifo(fifo)
    wrapper = children.start(
        zombietop(
            db,
            fast_config_path,
            "run",
            "--job",
            "flappy",
            "--",
            "sh",
            "-c",
            BEAT_ON_DEMAND,
            str(fifo),
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    writer = os.open(fifo, os.O_RDWR)  # held open, so the command's reads block, not end

    async def beaten(count: int) -> Heartbeat | None:
        if not db.exists():
            return None
        store = await SQLiteStore.open(db)
        try:
            runs = await store.job_runs("flappy", 1)
            record = await store.get_record(runs[0].task_id) if runs else None
        finally:
            await store.close()
        if record is None:
            return None
        beat = record.heartbeat
        return beat if beat is not None and beat.progress == count else None

    async def beat(count: int) -> float:
        os.write(writer, f"{count}\n".encode())
        found: list[Heartbeat] = []

        async def seen() -> bool:
            got = await beaten(count)
            found[:] = [got] if got is not None else []
            return bool(found)

        await wait_for(seen, timeout=30, what=f"beat {count}", while_running=wrapper)
        return found[0].written_at

    try:
        cfg = replace(load_config(fast_config_path), watch=config().watch)
        assert cfg.defaults.heartbeat_timeout == 0.6  # and the default flapping: 6 in 1h
        clock = FakeClock(await beat(1) + 0.1)
        store = await SQLiteStore.open(db, clock=clock)
        try:
            dog, notifier, _ = watchdog(store, clock, cfg)
            await dog.tick()  # healthy
            for count in range(2, 6):
                clock.advance(1.0)  # the beat is now 1.1 s old: stalled
                await dog.tick()
                while time.time() < clock.now():  # the real beat must be newer than our clock
                    await asyncio.sleep(0.05)
                clock.set(await beat(count) + 0.1)
                await dog.tick()  # healthy again
        finally:
            await store.close()
    finally:
        os.close(writer)
    kinds = [page.kind for page in notifier.pages]
    # Flips 1-6 page and clear; the seventh (the fourth stall) is the flapping notice.
    assert kinds == ["incident", "all_clear"] * 3 + ["flapping"], kinds
    assert "flapping: 7 flips in " in notifier.pages[-1].line
