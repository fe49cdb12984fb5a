"""Whether one poll of the store can be acted on, and what to say when it cannot.

A look of the watchdog (see docs/glossary.md) acts on its verdicts only
when the store could be read, read in time, and its ages can be trusted (``ClockWatch``).
Otherwise its verdicts are withheld: nothing is quarantined, killed or paged on them. The
watchdog pages itself when the store cannot be read, and again when it can; a stretch of
withheld looks is logged once as it starts and once as it ends (``WithheldStretch``).

While the store could not be read, no job could write its beats either: the first looks after
it comes back would judge every task by that gap. So verdicts stay withheld after an outage for
as long as it lasted (at most the longest heartbeat_timeout), and the time a job's store may
wait before it reconnects: each job has the time to reconnect and beat again.

A source (an engine's database) that cannot be read withholds only the verdicts on its own
tasks: the watchdog pages that once, naming the source, and once when it reads it again.
A poll past ``[monitor] read_at_most`` that leaves tasks unread is logged once as it starts and
once as it ends: those tasks are neither judged nor paged.
"""

from __future__ import annotations

from collections.abc import Callable

from zombietop.durations import format_age
from zombietop.judge.monitor import Snapshot
from zombietop.judge.unlisted import unread_log_line
from zombietop.model import EventKind
from zombietop.page import SOURCE_READ, STORE_READ, PageKind
from zombietop.store.interface import RECONNECT_MOST_S
from zombietop.watch.clock_watch import ClockWatch, beats_of
from zombietop.watch.watchdog_hands import Hands, Look
from zombietop.watch.withheld import WithheldStretch


class PollTrust:
    """Decide whether a poll's snapshot can be acted on; page and log what changes."""

    def __init__(
        self,
        hands: Hands,
        clocks: ClockWatch,
        *,
        interval: float,
        monotonic: Callable[[], float],
        settle_most: float = 0.0,
    ) -> None:
        self.hands = hands
        self.clocks = clocks
        self.interval = interval
        """``[watch] interval``: a poll that takes longer lags behind the store."""
        self.monotonic = monotonic
        self.stretch = WithheldStretch()
        self._store_down = False
        """The watchdog paged that it cannot read the store, and has not paged the all-clear."""
        self._sources_down: set[str] = set()
        """The sources the watchdog paged it cannot read, and has not paged the all-clear of."""
        self._unread = 0
        """How many tasks the last poll left unread (past ``[monitor] read_at_most``)."""
        self.settle_most = settle_most
        """The longest heartbeat_timeout: an outage longer than it is waited out this long."""
        self._read_at: float | None = None
        """The store's time at the last poll that read it."""
        self._settle: tuple[float, str] | None = None
        """(store time, reason) until which verdicts stay withheld after an outage."""

    async def check_store(self, snapshot: Snapshot, look: Look, *, standby: bool) -> str | None:
        """Withhold verdicts (and say so, once) while the store cannot be read or lags."""
        hands = self.hands
        if snapshot.error is not None:
            reason = f"cannot read store {hands.store.describe()}: {snapshot.error}"
            if not self._store_down:
                self._store_down = True
                if standby:
                    # The active watchdog pages it, if it too cannot read the store.
                    look.logs.append(f"standby: {reason}")
                    return reason
                hands.page(
                    look,
                    PageKind.WATCHDOG,
                    f"zombietop watchdog {reason} - verdicts withheld until it can",
                    incident=STORE_READ,
                )
            return reason
        if self._store_down:
            self._store_down = False
            hands.page(
                look,
                PageKind.ALL_CLEAR,
                f"zombietop watchdog reads {hands.store.describe()} again",
                incident=STORE_READ,
            )
            settling = self._start_settling(snapshot.taken_at)
            if settling is not None:
                look.logs.append(f"verdicts withheld: {settling}")
        if snapshot.taken_at is not None:
            self._read_at = snapshot.taken_at
        settling = self._settling(snapshot.taken_at)
        if settling is not None:
            return settling
        if snapshot.poll_seconds > self.interval:
            reason = (
                f"store lags: one poll took {snapshot.poll_seconds:.1f}s, "
                f"longer than the {self.interval:g}s interval"
            )
            return reason
        return None

    def _start_settling(self, now: float | None) -> str | None:
        """The store is readable again after an outage: wait about as long as it lasted.
        Return why verdicts are withheld meanwhile."""
        if now is None or self._read_at is None:
            return None  # no read before this one: nothing to measure the gap by
        outage = now - self._read_at
        wait = min(outage, self.settle_most) + RECONNECT_MOST_S + 1.0
        reason = (
            f"the store could not be read for {format_age(outage)}, so no job could write "
            f"its beats; waiting {format_age(wait)} for them to beat again"
        )
        self._settle = (now + wait, reason)
        return reason

    def _settling(self, now: float | None) -> str | None:
        if self._settle is None or now is None:
            return None
        until, reason = self._settle
        if now < until:
            return reason
        self._settle = None
        return None

    def check_sources(self, snapshot: Snapshot, look: Look, *, standby: bool) -> None:
        """Page once when a source cannot be read, and once when it can again. Only that
        source's tasks go unjudged meanwhile (``Snapshot.unread``): the store's and the other
        sources' are acted on as ever."""
        down = snapshot.source_errors
        for name in sorted(down.keys() - self._sources_down):
            line = (
                f"zombietop watchdog cannot read {down[name]} - verdicts on its tasks "
                "withheld until it can"
            )
            self._sources_down.add(name)
            if standby:
                # The active watchdog pages it, if it too cannot read the source.
                look.logs.append(f"standby: {line}")
            else:
                self.hands.page(look, PageKind.WATCHDOG, line, incident=SOURCE_READ + name)
        for name in sorted(self._sources_down - down.keys()):
            self._sources_down.discard(name)
            self.hands.page(
                look,
                PageKind.ALL_CLEAR,
                f"zombietop watchdog reads source {name} again",
                incident=SOURCE_READ + name,
            )

    def check_unread(self, snapshot: Snapshot, look: Look) -> None:
        """Log once when a poll first leaves tasks unread, and once when none are any more:
        those tasks are neither judged nor paged (``zombietop_tasks_unread`` has the number)."""
        line = unread_log_line(self._unread, snapshot)
        if line is not None:
            look.logs.append(line)
        self._unread = snapshot.left_unread

    async def check_clocks(
        self, snapshot: Snapshot, looked: tuple[float, float], walled_at: float, look: Look
    ) -> str | None:
        """Withhold verdicts for a look whose ages cannot be trusted (``ClockWatch``).

        ``looked`` is this host's monotonic clock before and after the poll, ``walled_at`` its
        wall clock before it.
        """
        assert snapshot.taken_at is not None
        verdict = self.clocks.check(snapshot.taken_at, beats_of(snapshot.tasks), looked, walled_at)
        look.logs.extend(verdict.said)
        if verdict.recorded is not None:
            line = f"verdicts withheld: {verdict.recorded}"
            look.logs.append(line)
            look.told = True
            await self.hands.record(EventKind.WATCHDOG, line, None, {})
        return verdict.withheld

    def note_withheld(self, withheld: str | None, look: Look) -> None:
        """Log the start and the end of a stretch of looks whose verdicts are withheld."""
        news = self.stretch.look(withheld, self.monotonic(), told=look.told)
        if news is not None:
            look.logs.append(news)
