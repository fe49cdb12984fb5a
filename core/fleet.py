"""What the zombietop processes of a fleet record in the store for each other: the agent of
each host, the watchdog that acts, the process samples agents share, and the actions owed on a
host."""

from __future__ import annotations

from dataclasses import dataclass

from zombietop.model import ProcessSample
from zombietop.rows import Row, RowReads, column, read_row


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentPresence:
    """The last beat of a host's ``zombietop agent``, as the store recorded it."""

    host: str
    agent_id: str
    pid: int
    interval_s: float
    """How often the agent said it would beat; it counts as gone after a few missed beats."""
    started_at: float
    seen_at: float
    """The store's clock at the last beat."""
    reported_at: float | None = None
    """The agent host's own clock at the last beat."""
    stopped_at: float | None = None
    """Set when the agent shut down cleanly."""

    @property
    def clock_skew_s(self) -> float | None:
        """How far the host's clock is ahead of the store's (negative: behind)."""
        return None if self.reported_at is None else self.reported_at - self.seen_at

    def absent_after(self) -> float:
        """Seconds of silence after which nobody should count on this agent."""
        return 3 * self.interval_s + 1.0

    def present(self, now: float) -> bool:
        return self.stopped_at is None and now - self.seen_at <= self.absent_after()

    @classmethod
    def from_row(cls, row: Row) -> AgentPresence:
        return read_row(cls, row)


@dataclass(frozen=True, slots=True, kw_only=True)
class WatchdogLease:
    """Which ``zombietop watch`` acts on the store; the others wait as standbys."""

    owner: str
    host: str
    pid: int
    token: int
    """Grows each time the lease changes hands."""
    acquired_at: float
    renewed_at: float
    expires_at: float
    """Store time after which a standby may take over."""

    def active(self, now: float) -> bool:
        return now <= self.expires_at

    @classmethod
    def from_row(cls, row: Row) -> WatchdogLease:
        return read_row(cls, row)


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredSample:
    """A process sample an agent wrote to the store, for dashboards on other hosts."""

    host: str
    sample: ProcessSample
    written_at: float
    """The store's clock when the agent wrote it; an old sample says nothing about now."""
    after_finish: bool = False
    """The agent took it knowing the task had finished: only such a sample tells an orphan."""

    @classmethod
    def from_row(cls, row: Row) -> StoredSample:
        return read_row(cls, row, _STORED_SAMPLE_READS)


# The store keeps no I/O deltas of a sample, only how long its I/O has been idle (io_idle_s)
# and how long it has used neither CPU nor I/O (idle_s, from schema v16 on SQLite, v14 on
# PostgreSQL), not where that idle time came from (idle_source).
_SAMPLE_READS: RowReads = {
    "alive": column("alive", bool),
    "identity_ok": column("identity_ok", bool),
    "read_bytes_delta": None,
    "write_bytes_delta": None,
    "idle_source": None,
}
_STORED_SAMPLE_READS: RowReads = {
    "sample": lambda row: read_row(ProcessSample, row, _SAMPLE_READS),
    "after_finish": column("after_finish", bool),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class HostRequest:
    """An action asked for on one host and owed by the agent of the task's host."""

    request_id: int
    task_id: str
    host: str
    kind: str
    """An ``zombietop.actions.ActionKind`` value."""
    expected_token: int | None
    actor: str
    reason: str | None
    requested_at: float
    claimed_by: str | None = None
    claimed_at: float | None = None
    outcome: str | None = None
    message: str | None = None
    finished_at: float | None = None
    requester_uid: int | None = None
    """The real uid of the process that asked, as it recorded itself (None: from before v6)."""
    requester: str | None = None
    """That uid's user name on the asking host."""
    source: str | None = None
    """The read-only source whose task this is (None: the store's own): the agent reads the
    task from that source itself, never from the request."""

    @property
    def pending(self) -> bool:
        return self.finished_at is None

    @classmethod
    def from_row(cls, row: Row) -> HostRequest:
        return read_row(cls, row)
