"""Whether a look's ages can be trusted: the clocks the watchdog measures them by, watched.

The words look and watchdog are as in docs/glossary.md.

Every age (a heartbeat's, a lease's) is the store's clock less a moment the store holds. On
SQLite, the store's clock is read in this very process (the anchor plus this host's boot clock),
so a process that reads its boot clock wrong sees every task an hour old at its first look. Two
things can make it so, and neither is visible to the clock itself: libfaketime, which answers
``clock_gettime`` in-process, and a time namespace the offset of which could not be taken away.
The kernel's own count in /proc/uptime is a file, which libfaketime does not touch, and it is
moved by the same time-namespace offset: so the first look can tell, with no look before it.

Between looks, the store's clock is compared with this host's monotonic clock (a jump), and the
beats written since the last look with their ages (this host reads the store's clock wrong).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from zombietop.clock import boottime_offset_ns, host_boottime
from zombietop.durations import format_age

if TYPE_CHECKING:
    from zombietop.judge.monitor import TaskView

JUMP_TOLERANCE = 5.0
"""Seconds by which a clock may disagree with this host's monotonic clock between two looks
before the watchdog calls it a jump (a loaded host delays a look's reads by a second or so)."""
JUMPS_KEPT = 16
UPTIME_PATH = "/proc/uptime"
WITHHELD = "kills, quarantines and pages withheld"
AGREE_AGAIN = {
    "process": "this process's boot clock and the kernel's count agree again",
    "beats": "the store's clock and the tasks' beats agree again",
}


def signed(seconds: float) -> str:
    """``+1h00m``: a jump to the second (the two clocks are read a moment apart)."""
    return ("+" if seconds >= 0 else "-") + format_age(abs(round(seconds)))


def kernel_uptime() -> float | None:
    """The host's seconds since boot as the kernel counts them in /proc/uptime (moved back by
    this process's time-namespace offset); None where it cannot be read."""
    offset = boottime_offset_ns()
    try:
        with open(UPTIME_PATH, encoding="ascii") as file:
            seen = float(file.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return None if offset is None else seen - offset / 1e9


@dataclass(frozen=True, slots=True, kw_only=True)
class Beat:
    """What the clock watch needs of one executing task at a look."""

    task_id: str
    seq: int
    written_at: float


def beats_of(views: Iterable[TaskView]) -> list[Beat]:
    """The last beat of each executing task, as the clock watch compares them across looks."""
    return [
        Beat(task_id=view.task_id, seq=view.heartbeat.seq, written_at=view.heartbeat.written_at)
        for view in views
        if view.heartbeat is not None and view.task.state.executing
    ]


@dataclass(frozen=True, slots=True, kw_only=True)
class ClockVerdict:
    withheld: str | None = None
    """Why this look's ages cannot be trusted; None when they can."""
    said: tuple[str, ...] = ()
    """News for the log: a step of the wall clock that changed nothing, clocks that agree again."""
    recorded: str | None = None
    """A line for the event log: why verdicts are withheld, the first look it is so."""


class ClockWatch:
    """Watch the clocks across looks; say when a look's ages cannot be trusted."""

    def __init__(
        self,
        *,
        local: bool,
        boottime: Callable[[], float | None] = host_boottime,
        uptime: Callable[[], float | None] = kernel_uptime,
    ) -> None:
        self.local = local
        """The store's clock is read in this process (SQLite): check this process's clock."""
        self._boottime = boottime
        self._uptime = uptime
        self._last: tuple[float, float, float, float] | None = None
        """(store time, monotonic before and after the poll, wall) of the last look."""
        self._seqs: dict[str, int] = {}
        """Each executing task's heartbeat seq at the last look: a beat written since then
        cannot be older than the time between the looks."""
        self._jumps: list[tuple[float, float]] = []
        """(store time after, size) of each jump of the store's clock noticed: a stage timer
        started before a jump is that much younger than the store's clock says."""
        self._disagree: str | None = None
        """Which check found the clocks at odds, while they are."""

    def jumped_since(self, moment: float) -> float:
        """How far the store's clock jumped after ``moment`` (its own reading)."""
        return sum(size for at, size in self._jumps if at > moment)

    def process_clock_error(self) -> float | None:
        """How far this process's boot clock runs from the kernel's count; None if unknown."""
        kernel = self._uptime()
        mine = self._boottime()
        if kernel is None or mine is None:
            return None
        return mine - kernel

    def check(
        self,
        now: float,
        beats: Sequence[Beat],
        looked: tuple[float, float],
        walled_at: float,
    ) -> ClockVerdict:
        """Judge one look: ``now`` is the store's time, ``looked`` this host's monotonic clock
        before and after the poll, ``walled_at`` its wall clock before it."""
        last, self._last = self._last, (now, *looked, walled_at)
        seqs, self._seqs = self._seqs, {beat.task_id: beat.seq for beat in beats}
        error = self.process_clock_error() if self.local else None
        if error is not None and abs(error) > JUMP_TOLERANCE:
            reason = (
                f"this process reads the boot clock {signed(error)} off the kernel's own count "
                f"({UPTIME_PATH}): a faked clock (libfaketime?) or a time namespace it cannot "
                f"see; every age would be wrong, so {WITHHELD} until they agree"
            )
            return self._odds("process", reason)
        if last is None:
            return self._agree()
        # The store's time was read somewhere within each poll: between the two looks, at
        # least ``shortest`` and at most ``longest`` passed (a slow poll widens it, never
        # makes a jump).
        shortest, longest = looked[0] - last[2], looked[1] - last[1]
        moved = now - last[0]
        store_jump = moved - min(max(moved, shortest), longest)
        elapsed = looked[0] - last[1]
        wall_jump = (walled_at - last[3]) - elapsed
        said: tuple[str, ...] = ()
        if abs(wall_jump) > JUMP_TOLERANCE and abs(store_jump) <= JUMP_TOLERANCE:
            said = (
                f"this host's wall clock stepped {signed(wall_jump)}; ages are measured on the "
                "store's clock, which did not move: nothing withheld",
            )
        if abs(store_jump) > JUMP_TOLERANCE:
            self._jumps = [*self._jumps[-JUMPS_KEPT + 1 :], (now, store_jump)]
            reason = (
                f"the store's clock jumped {signed(store_jump)} between two looks "
                f"{elapsed:.0f}s apart: {WITHHELD} for this round"
            )
            return ClockVerdict(withheld=reason, said=said, recorded=reason)
        stale = [
            beat
            for beat in beats
            if seqs.get(beat.task_id, beat.seq) != beat.seq
            and now - beat.written_at > longest + JUMP_TOLERANCE
        ]
        if stale:
            first = stale[0]
            reason = (
                f"{len(stale)} task(s) beat since the last look {elapsed:.0f}s ago yet look "
                f"{format_age(now - first.written_at)} old ({first.task_id}): this host reads "
                f"the store's clock wrong; {WITHHELD} until it agrees"
            )
            return self._odds("beats", reason, said)
        return self._agree(said)

    def _odds(self, which: str, reason: str, said: tuple[str, ...] = ()) -> ClockVerdict:
        first, self._disagree = self._disagree is None, which
        return ClockVerdict(withheld=reason, said=said, recorded=reason if first else None)

    def _agree(self, said: tuple[str, ...] = ()) -> ClockVerdict:
        if self._disagree is not None:
            which, self._disagree = self._disagree, None
            said = (*said, AGREE_AGAIN[which])
        return ClockVerdict(said=said)
