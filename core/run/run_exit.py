"""How the end of a ``zombietop run`` command is written: its state, the reason, and who
stopped it (a kill, a forwarded signal, a signal from outside, or the wrapper on a lost lease)."""

from __future__ import annotations

import contextlib
import signal

from zombietop.errors import LeaseLost, StoreError
from zombietop.model import EventKind, PendingKill, TaskState
from zombietop.run.child import exit_status
from zombietop.run.claim import Claim
from zombietop.run.signal_forwarding import FORWARDED, SignalForwarding
from zombietop.store import Store


async def record_exit(
    store: Store,
    claim: Claim,
    *,
    pid: int,
    returncode: int,
    started: float,
    signals: SignalForwarding,
) -> None:
    """Record how the command ended; raise ``LeaseLost`` when the task is not ours now."""
    task_id = claim.task.task_id
    code = exit_status(returncode)
    record = await store.get_record(task_id)
    stopper = stopped_by(record.pending_kill, pid, returncode, started, signals)
    if stopper is not None:
        # Killed is killed: a polite TERM handler that exits 0 has not finished the work.
        state, reason = TaskState.INTERRUPTED, f"stopped by {stopper} (exit {code})"
    elif returncode == 0:
        state, reason = TaskState.SUCCEEDED, None
    elif returncode < 0:
        state, reason = TaskState.FAILED, f"killed by {signal.Signals(-returncode).name}"
    else:
        state, reason = TaskState.FAILED, None  # the exit code says it all
    await store.finish_task(
        task_id,
        owner=claim.owner,
        token=claim.token,
        state=state,
        exit_code=code,
        reason=reason,
        stopped_by=stopper,
    )


def stopped_by(
    kill: PendingKill | None,
    pid: int,
    returncode: int,
    started: float,
    signals: SignalForwarding,
) -> str | None:
    """Who stopped the command, or None when it reached its exit on its own."""
    if kill is not None and kill.pid == pid and kill.term_sent_at >= started:
        return f"a kill by {kill.requested_by}"
    forwarded = signals.stopped_by()
    if forwarded is not None:
        return forwarded
    if -returncode in FORWARDED:
        # Signalled straight at the command by someone outside zombietop.
        return f"{signal.Signals(-returncode).name} from outside zombietop"
    return None


async def record_lost(store: Store, claim: Claim, returncode: int, lost: str | None) -> None:
    """Record that the command was stopped because its lease was lost (``lost`` says how).

    Interrupted if the lease is still ours to end (it expired and nobody took it over);
    otherwise the state belongs to the new owner, and the task's events say what happened.
    """
    code = exit_status(returncode)
    stopper = "zombietop run, on losing the lease"
    try:
        await store.finish_task(
            claim.task.task_id,
            owner=claim.owner,
            token=claim.token,
            state=TaskState.INTERRUPTED,
            exit_code=code,
            reason=f"stopped by {stopper} (exit {code}): {lost}",
            stopped_by=stopper,
        )
        return
    except (LeaseLost, StoreError):
        pass
    with contextlib.suppress(StoreError):
        await store.record_event(
            kind=EventKind.NOTE,
            actor=claim.owner,
            task_id=claim.task.task_id,
            message=f"the command of token {claim.token} was stopped after its lease was "
            f"lost (exit {code}): {lost}",
            data={"exit_code": code, "stopped_by": stopper, "token": claim.token},
        )
