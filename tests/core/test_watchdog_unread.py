"""The watchdog of a poll past ``[monitor] read_at_most``: one log line when tasks are first
left unread and one when none are any more, and ``zombietop_tasks_unread`` at every poll."""

from __future__ import annotations

from dataclasses import replace

from prometheus_client.parser import text_string_to_metric_families

from tests.core.test_watchdog import ListNotifier, config, start
from zombietop.clock import FakeClock
from zombietop.health import Health
from zombietop.judge.monitor import Monitor, Snapshot
from zombietop.judge.quiet import Counted
from zombietop.store import Store
from zombietop.watch.metrics import Metrics
from zombietop.watch.watchdog import Watchdog


class CountingMonitor(Monitor):
    """A real monitor whose polls say what the store counted, one ``Counted`` a poll in turn
    (the store's side, ``Store.poll_loud``, is not this test's)."""

    def __init__(self, store: Store, clock: FakeClock, counted: list[Counted | None]) -> None:
        super().__init__(store, config(), clock=clock)
        self.counted = counted
        self.said = Snapshot(taken_at=None)
        """The snapshot of the latest poll, as the watchdog was handed it."""
        self.unlisted = False
        """The store's tasks are among those left unread: no row for any of them."""

    async def poll(self) -> Snapshot:
        snapshot = await super().poll()
        counted = self.counted.pop(0)
        if self.unlisted:
            snapshot = replace(snapshot, tasks=(), counts={})
        if counted is not None:
            counts = dict(snapshot.counts)
            for health, n in counted.quiet.items():
                counts[health] = counts.get(health, 0) + n
            snapshot = replace(snapshot, counts=counts, counted=counted)
        self.said = snapshot
        return snapshot


def counted(unread: int) -> Counted:
    return Counted(quiet={Health.HEALTHY: 900_000}, unread=unread, read_at_most=20_000)


def gauges(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(metrics.render().decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


async def test_unread_is_logged_once_per_change_and_exported(
    store: Store, clock: FakeClock
) -> None:
    await start(store)
    polls = [None, counted(12_000), counted(12_345), counted(0), None, counted(7)]
    logs: list[str] = []
    monitor = CountingMonitor(store, clock, polls)
    dog = Watchdog(
        monitor,
        config(),
        executor=None,
        notifiers=[],
        clock=clock,
        log=logs.append,
    )
    metrics = Metrics()
    seen: list[tuple[list[str], float, float]] = []
    while monitor.counted:
        report = await dog.tick()
        metrics.update(monitor.said, incidents_open=0)
        found = gauges(metrics)
        unread = found[("zombietop_tasks_unread", ())]
        healthy = found[("zombietop_tasks", (("health", "healthy"),))]
        seen.append(([line for line in report.logs if "unread" in line], unread, healthy))
        clock.advance(1)
    said = [lines for lines, _, _ in seen]
    assert [len(lines) for lines in said] == [0, 1, 0, 1, 0, 1]
    assert said[1][0].startswith("12,000 active tasks were left unread: ")
    assert "[monitor] read_at_most (20,000)" in said[1][0]
    assert said[3][0].startswith("every task that may need attention is read again")
    assert said[5][0].startswith("7 active tasks were left unread")
    assert [unread for _, unread, _ in seen] == [0, 12_000, 12_345, 0, 0, 7]
    # The quiet tasks counted without a row are in the per-health gauge.
    assert [healthy for _, _, healthy in seen] == [1, 900_001, 900_001, 900_001, 1, 900_001]
    assert all(line in logs for lines in said for line in lines)


async def test_no_all_clear_for_a_task_left_unread(store: Store, clock: FakeClock) -> None:
    """A stalled task is paged; the next polls leave it unread (more tasks silent longer
    than it past read_at_most): no all-clear for it, as for a source that cannot be read."""
    await start(store)
    monitor = CountingMonitor(store, clock, [None, counted(1), counted(1)])
    notifier = ListNotifier()
    dog = Watchdog(
        monitor, config(), executor=None, notifiers=[notifier], clock=clock, log=[].append
    )
    clock.advance(200)
    await dog.tick()
    assert [p.kind for p in notifier.pages] == ["incident"]
    monitor.unlisted = True
    await dog.tick()
    await dog.tick()
    assert [p.kind for p in notifier.pages] == ["incident"]
    assert "export-2031" in dog.incidents
