"""Stand-ins for what the dashboard talks to: a snapshot source over fixed snapshots, and an
on-call desk and an executor that record what they were asked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import ClassVar

from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.judge.monitor import Snapshot
from zombietop.model import Ack, Event, HistoryPoint, Matcher, Note, Silence, Task
from zombietop.output import LastOutput
from zombietop.tui.testing.builders import NOW, H
from zombietop.tui.testing.events import sample_events, sample_history
from zombietop.tui.testing.fleet import sample_snapshot
from zombietop.tui.testing.oncall import sample_oncall


class SampleSource:
    """A ``SnapshotSource`` over fixed snapshots; ``fail_with`` makes the next polls fail."""

    def __init__(
        self,
        snapshots: Sequence[Snapshot] | None = None,
        *,
        read_only: bool = False,
        outputs: Mapping[str, LastOutput] | None = None,
        events: Sequence[Event] | None = None,
        job_runs: Mapping[str, Sequence[Task]] | None = None,
    ) -> None:
        self.snapshots = list(snapshots or [sample_snapshot()])
        self.job_runs_by_name = {job: list(runs) for job, runs in (job_runs or {}).items()}
        """By job, its runs, newest first (the store's ``job_runs``)."""
        self.job_reads = 0
        """How many times the jobs view read the latest ended runs."""
        self.read_after: list[float | None] = []
        """Each read's ``changed_after``: None for a read of every job."""
        self._events = None if events is None else list(events)
        self._read_only = read_only
        self.outputs: dict[str, LastOutput] = dict(outputs or {})
        self.polls = 0
        self.finds: list[str] = []
        """Each text the dashboard asked to find (``find``)."""
        self.fail_with: str | None = None
        self.failed_at = NOW + 14
        self.last = Snapshot(taken_at=None)

    @property
    def read_only(self) -> bool:
        return self._read_only

    async def poll(self) -> Snapshot:
        if self.fail_with is not None:
            self.last = replace(self.last, error=self.fail_with, failed_at=self.failed_at)
            return self.last
        index = min(self.polls, len(self.snapshots) - 1)
        self.polls += 1
        self.last = self.snapshots[index]
        return self.last

    async def glance(self, limit: int) -> Snapshot | None:
        """A fixed fleet is read whole at once: no glance."""
        return None

    def find(self, text: str) -> None:
        """A fixed fleet has every task listed: nothing to find; the texts are kept."""
        self.finds.append(text)

    async def history(self, task_id: str) -> list[HistoryPoint]:
        return sample_history(task_id)

    async def events(self, task_id: str | None = None, limit: int = 100) -> list[Event]:
        if self._events is not None:
            return [e for e in self._events if task_id is None or e.task_id == task_id][:limit]
        return sample_events(task_id)[:limit]

    async def last_output(self, task: Task) -> LastOutput | None:
        return self.outputs.get(task.task_id)

    async def latest_ended_runs(
        self, per_job: int, changed_after: float | None = None
    ) -> dict[str, list[Task]]:
        self.job_reads += 1
        self.read_after.append(changed_after)
        # A fixed store: every job's runs on a first read, none changed after.
        if changed_after is not None:
            return {}
        return {
            job: [run for run in runs if run.state.finished][:per_job]
            for job, runs in self.job_runs_by_name.items()
        }

    async def job_runs(self, job: str, limit: int) -> list[Task]:
        return self.job_runs_by_name.get(job, [])[:limit]


class RecordingDesk:
    """An ``OnCallDesk`` that records what was asked and answers as the store would."""

    def __init__(self, *, read_only: bool = False, now: float = NOW) -> None:
        self._read_only = read_only
        self.now = now
        self.acks: list[Ack] = []
        self.unacked: list[str] = []
        self.silences: list[Silence] = []
        self.notes: list[Note] = []

    @property
    def read_only(self) -> bool:
        return self._read_only

    async def ack(self, task_id: str, *, reason: str | None, duration: float | None) -> Ack:
        ack = Ack(
            task_id=task_id,
            by="you",
            reason=reason,
            acked_at=self.now,
            until=self.now + (duration or 2 * H),
        )
        self.acks.append(ack)
        return ack

    async def unack(self, task_id: str) -> Ack | None:
        self.unacked.append(task_id)
        return sample_oncall(self.now).ack_for(task_id)

    async def silence(
        self, *, matcher: Matcher, pattern: str, reason: str, duration: float
    ) -> Silence:
        made = Silence(
            silence_id=len(self.silences) + 1,
            matcher=matcher,
            pattern=pattern,
            by="you",
            reason=reason,
            created_at=self.now,
            until=self.now + duration,
        )
        self.silences.append(made)
        return made

    async def note(self, task_id: str, text: str) -> Note:
        made = Note(task_id=task_id, by="you", at=self.now, text=text)
        self.notes.append(made)
        return made


class RecordingExecutor:
    """An ``ActionExecutor`` that records requests and answers with a fixed outcome per kind."""

    OUTCOMES: ClassVar[dict[ActionKind, tuple[Outcome, str]]] = {
        ActionKind.RESUME: (Outcome.REQUEUED, "requeued with token {token}"),
        ActionKind.DISCARD: (Outcome.DISCARDED, "discarded; artifacts kept"),
        ActionKind.KILL: (Outcome.TERM_SENT, "SIGTERM sent; SIGKILL in 30s if still alive"),
    }

    def __init__(self, *, read_only: bool = False) -> None:
        self._read_only = read_only
        self.requests: list[ActionRequest] = []
        self.completions = 0
        self.pending_outcomes: list[ActionOutcome] = []

    @property
    def read_only(self) -> bool:
        return self._read_only

    async def run(self, request: ActionRequest) -> ActionOutcome:
        self.requests.append(request)
        if self._read_only:
            return ActionOutcome(
                request=request, outcome=Outcome.REFUSED, message="store is read-only"
            )
        outcome, message = self.OUTCOMES[request.kind]
        token = (request.expected_token or 0) + 1
        return ActionOutcome(
            request=request, outcome=outcome, message=message.format(token=token), new_token=token
        )

    async def complete_pending_kills(self) -> list[ActionOutcome]:
        self.completions += 1
        outcomes, self.pending_outcomes = self.pending_outcomes, []
        return outcomes
