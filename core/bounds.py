"""The range each number in the config may take: a floor, a ceiling, and why.

A value can be well formed and still make no sense: ``interval = "1ms"`` makes the watchdog a
busy loop, ``max_attempts = 1000000000000`` never gives up a page. Loading refuses a value
outside its range and names the key, the value and the bound it broke.
"""

from __future__ import annotations

from dataclasses import dataclass

from zombietop.durations import MAX_DURATION, format_duration

MINUTE = 60.0
DAY = 86400.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Bound:
    """The lowest and highest value a setting may take (both allowed), and why."""

    low: float
    high: float
    why_low: str
    why_high: str
    duration: bool = True
    """False for a count or a factor: shown as a plain number."""

    def as_written(self, value: float) -> str:
        """``value`` as a config file writes it: a quoted duration, or a plain number."""
        return f'"{format_duration(value)}"' if self.duration else f"{value:.12g}"

    def problem(self, value: float) -> str | None:
        """What is wrong with ``value`` ("below its floor of ...: why"), or None."""
        if self.low <= value <= self.high:
            return None
        if value < self.low:
            low = self.as_written(self.low)
            return f"is below its floor of {low}: {self.why_low}; give {low} or more"
        high = self.as_written(self.high)
        return f"is above its ceiling of {high}: {self.why_high}; give {high} or less"


_DATE = "longer than zombietop can add to a date"
_DETECTION = Bound(
    low=0.1,
    high=MAX_DURATION,
    why_low="a timer that short runs out before one look at the store is over",
    why_high=_DATE,
)
_DOUBLING = "each retry waits twice as long as the one before it"
_COUNT_HIGH = f"{_DOUBLING}, so the last of 20 already waits 2^19 times the first"

BOUNDS: dict[str, dict[str, Bound]] = {
    # [thresholds] and [timeouts], and the same keys in a [step_types.NAME].
    "limits": {
        key: _DETECTION
        for key in (
            "heartbeat_interval",
            "heartbeat_timeout",
            "lease_ttl",
            "progress_timeout",
            "start_grace",
            "queue_timeout",
            "idle_timeout",
            "request",
            "stage",
            "task",
            "kill_grace",
            "flap_window",
        )
    }
    | {
        "flap_threshold": Bound(
            low=1,
            high=1000,
            why_low="one flip in the window is the least that can be too many",
            why_high="a task that flips that often in one window flaps by any measure",
            duration=False,
        ),
    },
    "step_types": {
        "retry_backoff": Bound(
            low=1.0,
            high=DAY,
            why_low="a retry that soon finds the task as it left it",
            why_high=f"{_DOUBLING}: the later ones would wait weeks",
        ),
        "max_retries": Bound(
            low=1, high=20, why_low="one attempt is the least", why_high=_COUNT_HIGH, duration=False
        ),
    },
    "history": {
        "history_min_runs": Bound(
            low=1,
            high=100,
            why_low="a job needs one successful run to have a median",
            why_high="a job's summary keeps its latest 100 successful runs",
            duration=False,
        ),
        "slow_after": Bound(
            low=1.1,
            high=100.0,
            why_low="a run just past its median is an ordinary run, not a slow one",
            why_high="a run would be called slow only after 100 times its usual duration",
            duration=False,
        ),
        "too_fast_below": Bound(
            low=0.0,
            high=0.9,
            why_low="a share of the median below 0 is no duration; 0 turns the check off",
            why_high="a run nearly as long as usual did its work; 0 turns the check off",
            duration=False,
        ),
        "slow_min": Bound(
            low=0.1,
            high=MAX_DURATION,
            why_low="a timer that short runs out before one look at the store is over",
            why_high=_DATE,
        ),
        "drift_after": Bound(
            low=1.1,
            high=100.0,
            why_low="start times that spread just as much as before have not drifted",
            why_high="start times would be called drifting only at 100 times their spread",
            duration=False,
        ),
        "drift_min": Bound(
            low=1.0,
            high=DAY,
            why_low="a spread under a second is the clocks' noise; 0 lets any wider spread count",
            why_high="a job whose runs drift a day more than before is a missed schedule",
        ),
        "failing_after": Bound(
            low=1.1,
            high=100.0,
            why_low="a failure rate just as high as the month's is the job's usual rate",
            why_high="the day's rate can be at most 30 times the month's with a run a day",
            duration=False,
        ),
        "failing_min_runs": Bound(
            low=2,
            high=2000,
            why_low="one run makes no rate",
            why_high="a job's summary keeps at most its latest 2000 runs",
            duration=False,
        ),
    },
    "otel": {
        "queue_size": Bound(
            low=16,
            high=1_000_000,
            why_low="a storm of pages would drop most of its log records",
            why_high="a collector that is down would hold that many records in memory",
            duration=False,
        ),
        "timeout": Bound(
            low=0.5,
            high=10 * MINUTE,
            why_low="a collector across a network answers in more than that",
            why_high="an export that hangs longer holds its queue that long",
        ),
        "metrics_interval": Bound(
            low=1.0,
            high=DAY,
            why_low="metrics sent that often cost the collector more than they tell",
            why_high="a day between figures says nothing of a day",
        ),
    },
    "store": {
        "keep_finished": Bound(
            low=1.0,
            high=MAX_DURATION,
            why_low="a finished task would leave the store before anyone reads it",
            why_high=_DATE,
        ),
    },
    "monitor": {
        "refresh": Bound(
            low=0.25,
            high=10 * MINUTE,
            why_low="each refresh reads the store and probes the processes; faster is a busy loop",
            why_high="the dashboard would show data that old",
        ),
        "finished_window": Bound(
            low=1.0,
            high=7 * DAY,
            why_low="a finished task would leave the screen before anyone sees it",
            why_high="each poll reads every task that finished within it; "
            "`zombietop history JOB` shows older runs",
        ),
        "copy_lines": Bound(
            low=1,
            high=200,
            why_low="a copy of no line copies nothing",
            why_high="the detail view holds the last 200 lines of a task's output",
            duration=False,
        ),
        "read_at_most": Bound(
            low=100,
            high=1_000_000,
            why_low="a poll would count a store of a few hundred tasks instead of reading it, "
            "and read fewer tasks that have something to say than a screen shows",
            why_high="a poll that reads more whole tasks than this takes minutes and gigabytes "
            "(docs/benchmarks.md #14)",
            duration=False,
        ),
    },
    "watch": {
        "interval": Bound(
            low=1.0,
            high=3600.0,
            why_low="each look reads the whole store and renews the watchdog lease; "
            "faster is a busy loop",
            why_high="a stalled task would wait that long before anyone is paged",
        ),
        "digest_every": Bound(
            low=MINUTE,
            high=30 * DAY,
            why_low="the digest sums up the spinning tasks; it is not a page",
            why_high="spinning tasks would go unmentioned for over a month",
        ),
        "renotify": Bound(
            low=MINUTE,
            high=30 * DAY,
            why_low="a page again that soon is a page storm: give people time to act "
            '("0s" turns renotify off)',
            why_high='nobody would hear of an open incident again for over a month ("0s" turns '
            "renotify off)",
        ),
        "stage_kill_factor": Bound(
            low=0.0,
            high=100.0,
            why_low="",
            why_high="a task would be killed only after 100 times its stage budget; 0 never kills",
            duration=False,
        ),
    },
    "oncall": {
        "ack_for": Bound(
            low=MINUTE,
            high=365 * DAY,
            why_low="nobody can act on an incident that fast",
            why_high="an ack is meant to end while someone still remembers it",
        ),
        "max_silence": Bound(
            low=MINUTE,
            high=365 * DAY,
            why_low="a silence that short ends before it is read",
            why_high="a silence longer than a year is forgotten, not ended",
        ),
    },
    "notify": {
        "retry_backoff": Bound(
            low=1.0,
            high=3600.0,
            why_low="a channel that failed is tried again before it can recover",
            why_high=f"{_DOUBLING}: a page would wait days",
        ),
        "timeout": Bound(
            low=1.0,
            high=5 * MINUTE,
            why_low="a channel needs a moment to answer",
            why_high="a channel that hangs holds up the watchdog that long",
        ),
        "max_attempts": Bound(
            low=1, high=20, why_low="one attempt is the least", why_high=_COUNT_HIGH, duration=False
        ),
        "digest_after": Bound(
            low=1,
            high=10_000,
            why_low="a digest holds at least one page",
            why_high="past this many pages in one look, nobody reads them one by one",
            duration=False,
        ),
    },
    "schedules": {
        "grace": Bound(
            low=1.0,
            high=31 * DAY,
            why_low="a run needs a moment to start",
            why_high="a missed run would be noticed over a month late",
        ),
        "max_runtime": Bound(
            low=1.0, high=MAX_DURATION, why_low="a run needs a moment", why_high=_DATE
        ),
    },
    "sources": {
        "heartbeat_timeout": Bound(
            low=1.0,
            high=MAX_DURATION,
            why_low="an engine's heartbeat comes every few seconds at best",
            why_high=_DATE,
        ),
    },
    "serve": {
        "read_timeout": Bound(
            low=1.0,
            high=300.0,
            why_low="a ping over a slow link needs a moment to arrive",
            why_high="a slow client would hold a connection that long",
        ),
    },
}
"""By section (``limits``: thresholds and timeouts, in a step type too) and key."""
