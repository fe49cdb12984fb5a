"""The vocabulary of operator actions: what was asked, and what happened.

Every action (from a key in the dashboard, the CLI, or the watchdog) goes through one executor
(``zombietop.act.executor.Executor``), which implements ``ActionExecutor``. The faces depend only on
this protocol, so tests can hand them a recording fake.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from zombietop.model import TaskState


class ActionKind(StrEnum):
    """What an operator can do to a task."""

    RESUME = "resume"
    """Bump the token, keep the checkpoint, attempt + 1, requeue or relaunch."""
    DISCARD = "discard"
    """Bump the token, mark discarded, keep every artifact; dependents stay blocked."""
    KILL = "kill"
    """Verify identity, SIGTERM the process group, SIGKILL after kill_grace if still alive."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionRequest:
    """An action as the operator asked for it, with the lease token they were looking at."""

    kind: ActionKind
    task_id: str
    expected_token: int | None
    """The token on screen when the operator decided; the executor refuses if it moved."""
    actor: str
    reason: str | None = None


class Outcome(StrEnum):
    """How an action ended; every one is reported and recorded as an event."""

    REQUEUED = "requeued"
    RELAUNCHED = "relaunched"
    DISCARDED = "discarded"
    TERM_SENT = "term_sent"
    """SIGTERM went out; the kill is pending until the process exits or the grace runs out."""
    EXITED = "exited"
    """The process exited after SIGTERM, within the grace."""
    ESCALATED = "escalated"
    """Still alive after the grace: SIGKILL was sent."""
    GONE = "gone"
    """The process was already gone; nothing was signalled."""
    PERMISSION_DENIED = "permission_denied"
    IDENTITY_MISMATCH = "identity_mismatch"
    """The PID now belongs to another process; nothing was signalled."""
    REFUSED = "refused"
    """Read-only store, task changed since the operator looked, or a failed compensation."""
    REQUESTED = "requested"
    """The task runs on another host: the action waits in the store for that host's agent."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ActionOutcome:
    """What an action did, in one line a notification can show."""

    request: ActionRequest
    outcome: Outcome
    message: str
    new_token: int | None = None
    request_id: int | None = None
    """For ``REQUESTED``: the store's request the task's host agent will carry out."""

    @property
    def ok(self) -> bool:
        return self.outcome not in (
            Outcome.REFUSED,
            Outcome.PERMISSION_DENIED,
            Outcome.IDENTITY_MISMATCH,
        )


class ActionExecutor(Protocol):
    """The single door every action goes through."""

    @property
    def read_only(self) -> bool: ...

    async def run(self, request: ActionRequest) -> ActionOutcome:
        """Carry out one action; refusals are outcomes, not exceptions."""
        ...

    async def complete_pending_kills(self) -> list[ActionOutcome]:
        """Escalate or close every pending kill on this host whose grace has run out."""
        ...


NOTHING_TO_DO = frozenset({TaskState.SUCCEEDED, TaskState.DISCARDED})
"""The states a resume or a discard has nothing left to do to: the store refuses both."""


def finished_refusal(task_id: str, state: TaskState, verb: str) -> str | None:
    """Why a resume or a discard (``verb``) of a task in ``state`` is refused, or None: the
    store's own check, which a bulk action's confirm states before anything is asked."""
    if state in NOTHING_TO_DO:
        return f"{task_id} is {state}; there is nothing to {verb}"
    return None


def kill_refusal(task_id: str, pid: int | None) -> str | None:
    """Why a kill is refused before any process is read (none is recorded), or None: the
    graceful kill's own first check."""
    return f"{task_id} has no process recorded; nothing to kill" if pid is None else None
