"""A failed quarantine or page is retried: an incident opens only once its hold is written (a
real full filesystem), and pages not yet delivered wait in the store for the next watchdog."""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.test_watchdog import INTERVAL, config, start, watchdog
from tests.stores import count_rows
from zombietop.clock import FakeClock
from zombietop.paging.notify import DeliveryError, Page
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore


class DownNotifier:
    """A channel that is down until told otherwise."""

    name = kind = "list"
    keeps_incidents = False

    def __init__(self) -> None:
        self.tries = 0

    async def send(self, page: Page) -> None:
        self.tries += 1
        raise DeliveryError("list: connection refused")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs of the test's own, so that filling it fills nothing else."""
    mount = tmp_path / "fs"
    mount.mkdir()
    if os.geteuid() != 0:
        pytest.skip("a real full filesystem needs root to mount a small tmpfs")
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(folder: Path) -> Path:
    """Write a file until the filesystem is full; return it (delete it to free the space)."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        for size in (65536, 4096, 512, 1):  # down to the last blocks
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    with pytest.raises(OSError) as full:
        (folder / "probe").write_bytes(b"\0" * 4096)
    assert full.value.errno == errno.ENOSPC
    return filler


async def test_a_quarantine_that_fails_on_a_full_disk_is_written_once_space_is_freed(
    small_fs: Path,
) -> None:
    clock = FakeClock()
    store = await SQLiteStore.open(small_fs / "z.db", create=True, clock=clock)
    try:
        await start(store)
        dog, notifier, logs = watchdog(store, clock)
        await dog.tick()
        clock.advance(10 * INTERVAL)  # silent for 5 minutes: stalled
        async with store._read() as db:  # an empty WAL: the next write must grow it
            await db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        filler = fill(small_fs)
        for _ in range(3):
            await dog.tick()
            clock.advance(INTERVAL)
        assert not (await store.get_task("export-2031")).quarantined
        assert "export-2031" not in dog.incidents
        said = [line for line in logs if line.startswith("could not quarantine export-2031")]
        assert len(said) == 1 and "full" in said[0], logs
        # The human hears it from the watchdog at once, and only once.
        assert [p.kind for p in notifier.pages] == ["watchdog"]
        assert "cannot write" in notifier.pages[0].line
        assert "could not quarantine export-2031 (stalled)" in notifier.pages[0].line
        filler.unlink()
        await dog.tick()
        task = await store.get_task("export-2031")
        assert task.quarantined and task.quarantined_by == dog.actor
        assert [p.kind for p in notifier.pages] == ["watchdog", "all_clear", "incident"]
        assert "writes" in notifier.pages[1].line
        assert notifier.pages[2].line.startswith("export-2031 stalled:")
    finally:
        await store.close()


async def test_pages_still_failing_when_watch_stops_are_delivered_by_the_next(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
    down = DownNotifier()
    first, _, _ = watchdog(store, clock, notifier=down)  # type: ignore[arg-type]
    await first.tick()
    clock.advance(10 * INTERVAL)
    await first.tick()
    await first.outbox.settle()  # its failed attempt is written back to the store
    assert down.tries == 1 and first.outbox.pending == 1
    await first.release()  # watch stops: SIGTERM, or a --once run's end
    assert await count_rows(store, "pending_pages") == 1
    clock.advance(INTERVAL)
    second, notifier, logs = watchdog(store, clock)
    await second.tick()
    incidents = [p for p in notifier.pages if p.kind == "incident"]
    assert len(incidents) == 1 and incidents[0].line.startswith("export-2031 stalled:")
    assert "1 undelivered page(s) from the store: delivering them" in logs
    await second.outbox.settle()  # the delivered page's row goes once its delivery is done
    assert await count_rows(store, "pending_pages") == 0
    # It remembers the incident from the page log: no second page of its own.
    clock.advance(INTERVAL)
    await second.tick()
    assert [p.kind for p in notifier.pages] == ["incident"]


async def test_a_kept_page_runs_out_of_attempts_across_restarts(
    store: Store, clock: FakeClock
) -> None:
    """Attempts are kept with the page: a watchdog restarted in a loop does not retry forever."""
    await start(store)
    down = DownNotifier()
    cfg = config(renotify=0.0)  # one page, no later notices: only its attempts are counted
    dog, _, _ = watchdog(store, clock, cfg, notifier=down)  # type: ignore[arg-type]
    await dog.tick()
    clock.advance(10 * INTERVAL)
    await dog.tick()
    for _ in range(10):
        await dog.release()
        clock.advance(3600)
        dog, _, _ = watchdog(store, clock, cfg, notifier=down)  # type: ignore[arg-type]
        await dog.tick()
    assert down.tries == 5  # NotifySettings(max_attempts=5) in these tests
    assert await count_rows(store, "pending_pages") == 0
