"""A task that flaps: its health goes into and out of a health that pages too often.

For the word flip, see docs/glossary.md. The flips of a task are
kept as a ``Flips`` record, folded one flip at a time (``Flips.with_flip``), from the first
flip after the task was last steady: a flip that comes ``flap_window`` or more after the one
before it starts a new record. A task flaps once more than ``flap_threshold`` flips fell
within one ``flap_window``, and flaps until ``flap_window`` passes with no flip.

Pure: the watchdog folds the flips it records (and reads back from its events after a
restart), the monitor folds those it reads from the same events (``flip_book``), and both ask
``judge_flapping`` with their ``now``, so every rule is a table-driven test.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from zombietop.config import Limits
from zombietop.durations import format_age, format_duration
from zombietop.health import Flag, Health
from zombietop.judge.verdict import FLAPPING_REASON, Reason, Verdict
from zombietop.model import Event


def is_flip(before: Health, after: Health) -> bool:
    """True when a change of health goes into or out of a health that pages."""
    return before.pages != after.pages


def flips_of(events: Iterable[Event]) -> dict[str, list[float]]:
    """By task id, the moments of the flips among transition events (oldest first)."""
    moments: dict[str, list[float]] = {}
    for event in events:
        before, after = event.data.get("from"), event.data.get("to")
        if event.task_id is None or before not in set(Health) or after not in set(Health):
            continue
        if is_flip(Health(before), Health(after)):
            moments.setdefault(event.task_id, []).append(event.at)
    return moments


@dataclass(frozen=True, slots=True, kw_only=True)
class Flips:
    """A task's flips since it was last steady."""

    first_at: float
    """The first flip after the task was last steady."""
    last_at: float
    count: int
    """How many flips since ``first_at``."""
    recent: tuple[float, ...]
    """The latest flips, at most ``flap_threshold + 1`` of them: enough to tell whether more
    than ``flap_threshold`` fell within one window."""
    tripped_at: float | None = None
    """The flip that made the task flap (None: it has not flapped since ``first_at``)."""

    @classmethod
    def first(cls, at: float) -> Flips:
        return cls(first_at=at, last_at=at, count=1, recent=(at,))

    def with_flip(self, at: float, limits: Limits) -> Flips:
        """This record with one more flip at ``at``, or a new one when the task was steady."""
        if at - self.last_at >= limits.flap_window:
            return Flips.first(at)
        recent = (*self.recent, at)[-(limits.flap_threshold + 1) :]
        tripped = self.tripped_at
        if tripped is None and len(recent) > limits.flap_threshold:
            tripped = at if recent[-1] - recent[0] <= limits.flap_window else None
        return Flips(
            first_at=self.first_at,
            last_at=at,
            count=self.count + 1,
            recent=recent,
            tripped_at=tripped,
        )


def fold_flip(flips: Flips | None, at: float, limits: Limits) -> Flips:
    """``flips`` with one more flip at ``at`` (a first record when there is none)."""
    return Flips.first(at) if flips is None else flips.with_flip(at, limits)


@dataclass(frozen=True, slots=True, kw_only=True)
class Flapping:
    """A task that flaps, as of one moment."""

    since: float
    """The first flip of the stretch."""
    flips: int
    steady_at: float
    """When the task is steady again if it does not flip before then."""


def judge_flapping(now: float, flips: Flips | None, limits: Limits) -> Flapping | None:
    """Whether the task flaps at ``now`` (None: it does not, or no longer does)."""
    if flips is None or flips.tripped_at is None:
        return None
    steady_at = flips.last_at + limits.flap_window
    if now >= steady_at:
        return None
    return Flapping(since=flips.first_at, flips=flips.count, steady_at=steady_at)


def steady(now: float, flips: Flips | None, limits: Limits) -> bool:
    """True when the task flapped and has since gone ``flap_window`` without a flip."""
    return (
        flips is not None
        and flips.tripped_at is not None
        and now >= flips.last_at + limits.flap_window
    )


def with_flapping(verdict: Verdict, flapping: Flapping, limits: Limits) -> Verdict:
    """``verdict`` with the flag ``flapping`` and its reason: ``flapping: 7 flips in 42m
    (flap threshold 6 in 1h); not paged until steady for 1h``."""
    if Flag.FLAPPING in verdict.flags:
        return verdict
    window = format_duration(limits.flap_window)
    reason = Reason(
        code=FLAPPING_REASON,
        before=f"flapping: {flapping.flips} flips in ",
        since=flapping.since,
        after=(
            f" (flap threshold {limits.flap_threshold} in {window}); "
            f"not paged until steady for {window}"
        ),
        limit=limits.flap_window,
    )
    return replace(
        verdict,
        flags=(*verdict.flags, Flag.FLAPPING),
        reasons=(*verdict.reasons, reason),
        stable_until=min(verdict.stable_until, flapping.steady_at),
    )


def steady_words(flips: Flips) -> str:
    """``flapped for 1h12m (9 flips)``: how long the stretch lasted, first flip to last."""
    return f"flapped for {format_age(flips.last_at - flips.first_at)} ({flips.count} flips)"
