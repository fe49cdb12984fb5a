"""The graceful kill of a task's process tree: SIGTERM now, SIGKILL after the grace.

The kill is recorded in the store before its SIGTERM, so whoever finishes pending kills next (this
zombietop, another one, the host's agent) still owes the process its SIGKILL if we die right
after. Every signal follows an identity check: the pid's start (boot id and ticks, see
``zombietop.start_identity``) and the task's tag on the process (``zombietop.act.task_processes``),
so a pid the kernel gave to another process since is never signalled.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import Any

from zombietop.act.action_events import recorded
from zombietop.act.sweep import spared
from zombietop.act.task_processes import (
    Outside,
    alive_as,
    counted,
    group_left,
    group_members,
    kill_is_tied,
    outside_group,
    pids_words,
    processes,
    sessions,
    signal_each,
    signal_target,
    still_alive,
)
from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome, kill_refusal
from zombietop.durations import format_age
from zombietop.errors import ActionRefused
from zombietop.model import EventKind, PendingKill, Task
from zombietop.procs import read_start, tie, untied
from zombietop.start_identity import ProcessStart, same_start, start_words
from zombietop.store import Store

Vouch = Callable[[PendingKill], str | None]
"""For a kill of a read-only source's task: None when the source, read just now, still says the
task runs as the kill's process on this host; else why not (nothing is then signalled)."""


class GracefulKill:
    """Start kills on this host (SIGTERM with a kill record) and finish them (SIGKILL)."""

    def __init__(
        self, store: Store, *, host: str, me: str, now: Callable[[], Awaitable[float]]
    ) -> None:
        self.store = store
        self.host = host
        self.me = me
        """Who finishes a kill, as its closing event names it."""
        self._now = now

    # Start: identity, record, SIGTERM --------------------------------------------------------

    async def start(
        self,
        request: ActionRequest,
        task: Task,
        grace: float,
        *,
        pending: PendingKill | None,
        source: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> ActionOutcome:
        """SIGTERM the process of ``task`` on this host after checking its identity, with a
        kill record in the store first, so whoever finishes pending kills sends the SIGKILL.

        ``source`` names the read-only source ``task`` was just read from: its record, not the
        store's, names the process, so the tag the store's tasks must carry is not asked for.
        ``data`` goes into every event.
        """
        checked = await self._checked_start(request, task, pending, source=source, data=data)
        if isinstance(checked, ActionOutcome):
            return checked
        actual = checked
        assert task.pid is not None
        pid, token = task.pid, request.expected_token
        pgid = signal_target(pid)
        # A child that left the group (setsid) outlives a signal to it: found by its tag.
        outside = (
            []
            if source is not None
            else await asyncio.to_thread(outside_group, task.task_id, pid, pgid, spared=spared())
        )
        members = await asyncio.to_thread(group_members, pgid) if pgid is not None else [pid]
        in_sessions = await asyncio.to_thread(sessions, members)  # before the signal, see there
        # Recorded before the signal: if we die right after SIGTERM, whoever polls next still
        # owes the process its SIGKILL. A signal that fails closes the record at once.
        try:
            kill = await self.store.open_kill(
                task.task_id,
                pid=pid,
                pid_start_time=task.pid_start_time,
                # The process just checked: a task recorded without the kernel's count (by an
                # older zombietop) still gets an exact check before its SIGKILL.
                pid_start_identity=actual.identity,
                pgid=pgid,
                host=self.host,
                requested_by=request.actor,
                grace=grace,
                source=source,
            )
        except ActionRefused as exc:
            return ActionOutcome(
                request=request, outcome=Outcome.TERM_SENT, message=str(exc), new_token=token
            )
        failed = await self._term(kill, request, pid, pgid)
        if failed is not None:
            return failed
        outside = await asyncio.to_thread(signal_each, outside, signal.SIGTERM, task.task_id)
        return await self._term_sent(
            request, task, kill, pgid, len(members), in_sessions, outside, grace, data
        )

    async def _checked_start(
        self,
        request: ActionRequest,
        task: Task,
        pending: PendingKill | None,
        *,
        source: str | None,
        data: Mapping[str, Any] | None,
    ) -> ProcessStart | ActionOutcome:
        """The start of the task's process, read just now and checked against the task's
        record; else the outcome that says why nothing is signalled."""
        token = request.expected_token
        refusal = kill_refusal(task.task_id, task.pid)
        if refusal is not None:
            return await recorded(
                self.store,
                request,
                Outcome.REFUSED,
                refusal,
                token=token,
                data=data,
            )
        if pending is not None and pending.pending:
            left = pending.deadline - await self._now()
            return ActionOutcome(
                request=request,
                outcome=Outcome.TERM_SENT,
                new_token=token,
                message=f"a kill of {task.task_id} is already pending; "
                f"SIGKILL in {format_age(max(left, 0))}",
            )
        pid = task.pid
        assert pid is not None  # kill_refusal said so
        actual = await asyncio.to_thread(read_start, pid)
        if actual is None:
            return await recorded(
                self.store,
                request,
                Outcome.GONE,
                f"pid {pid} of {task.task_id} is already gone; nothing signalled",
                token=token,
                data=data,
            )
        if not same_start(task.pid_start, actual):
            return await recorded(
                self.store,
                request,
                Outcome.IDENTITY_MISMATCH,
                f"pid {pid} now belongs to another process (started {start_words(actual)}, "
                f"the task's started {start_words(task.pid_start)}); nothing signalled",
                token=token,
                data=data,
            )
        if source is None and await asyncio.to_thread(tie, pid, task.task_id) is None:
            return await recorded(
                self.store,
                request,
                Outcome.IDENTITY_MISMATCH,
                untied(pid, task.task_id),
                token=token,
            )
        return actual

    async def _term(
        self, kill: PendingKill, request: ActionRequest, pid: int, pgid: int | None
    ) -> ActionOutcome | None:
        """Send SIGTERM (and SIGCONT) to the group, or the pid; None when it was sent, else
        the outcome of the kill, closed at once."""
        target = f"process group {pgid}" if pgid is not None else f"pid {pid}"
        try:
            if pgid is not None:
                os.killpg(pgid, signal.SIGTERM)
            else:
                os.kill(pid, signal.SIGTERM)
            # A stopped job (SIGSTOP, ^Z) holds the TERM until it runs again: wake it so its
            # handler can run within the grace instead of meeting the SIGKILL stopped.
            with contextlib.suppress(ProcessLookupError):
                if pgid is not None:
                    os.killpg(pgid, signal.SIGCONT)
                else:
                    os.kill(pid, signal.SIGCONT)
        except ProcessLookupError:
            return await self._close(
                kill, request, Outcome.GONE, f"{target} exited before SIGTERM; nothing signalled"
            )
        except PermissionError:
            return await self._close(
                kill,
                request,
                Outcome.PERMISSION_DENIED,
                f"not allowed to signal {target} (owned by another user); "
                "run zombietop as its owner",
            )
        return None

    async def _term_sent(
        self,
        request: ActionRequest,
        task: Task,
        kill: PendingKill,
        pgid: int | None,
        member_count: int,
        in_sessions: set[int],
        outside: Sequence[Outside],
        grace: float,
        data: Mapping[str, Any] | None,
    ) -> ActionOutcome:
        """Record that SIGTERM went out, with what the SIGKILL must later find. ``in_sessions``
        are the sessions of the group's members, read before the signal."""
        assert task.pid is not None
        pid = task.pid
        target = f"process group {pgid}" if pgid is not None else f"pid {pid}"
        also = ""
        if outside:
            everyone = member_count + len(outside)
            in_sessions = in_sessions | {each.session for each in outside}
            also = (
                f", and to {processes(len(outside))} of {task.task_id} outside that group "
                f"({pids_words(outside)}): {counted(everyone, len(in_sessions))}"
            )
        return await recorded(
            self.store,
            request,
            Outcome.TERM_SENT,
            f"SIGTERM sent to {target} of {task.task_id}{also}; "
            f"SIGKILL in {format_age(grace)} if {'any' if outside else 'it'} is still alive",
            token=request.expected_token,
            data={
                **dict(data or {}),
                "pid": pid,
                "pgid": pgid,
                "deadline": kill.deadline,
                "outside": [each.to_data() for each in outside],
            },
        )

    async def _close(
        self, kill: PendingKill, request: ActionRequest, outcome: Outcome, message: str
    ) -> ActionOutcome:
        why = f" (reason: {request.reason})" if request.reason else ""
        await self.store.close_kill(
            kill.task_id,
            outcome=str(outcome),
            actor=request.actor,
            message=f"kill {outcome}: {message}{why}",
            data={"reason": request.reason},
        )
        return ActionOutcome(
            request=request, outcome=outcome, message=message, new_token=request.expected_token
        )

    # Finish: exited, or SIGKILL past the grace -----------------------------------------------

    async def complete_pending(
        self, vouch: Vouch | None = None, *, sources: Collection[str] = ()
    ) -> list[ActionOutcome]:
        """Close each open kill on this host whose process exited; SIGKILL those past the grace.

        A kill of a read-only source's task is finished only by a zombietop that has just read
        that source (its name in ``sources``), with ``vouch``: the store's record of it alone
        never earns a SIGKILL. The others are left for such a zombietop.
        """
        outcomes = []
        for kill in await self.store.open_kills(self.host):
            if kill.source is not None and (vouch is None or kill.source not in sources):
                continue
            outcome = await self._complete(kill, await self._now(), vouch)
            if outcome is not None:
                outcomes.append(outcome)
        return outcomes

    async def _complete(
        self, kill: PendingKill, now: float, vouch: Vouch | None
    ) -> ActionOutcome | None:
        outside = await self._outside_of(kill)
        leader, members, left = await asyncio.to_thread(still_alive, kill, outside)
        elapsed = now - kill.term_sent_at
        request = ActionRequest(
            kind=ActionKind.KILL, task_id=kill.task_id, expected_token=None, actor=kill.requested_by
        )
        too = f", and the {processes(len(outside))} outside its group too" if outside else ""
        exited = Outcome.EXITED, f"pid {kill.pid} exited after TERM in {elapsed:.1f} s{too}"
        if not leader and not members and not left:
            outcome, message = exited
        elif now < kill.deadline:
            return None
        elif kill.source is not None and vouch is not None and (why := vouch(kill)) is not None:
            outcome, message = Outcome.IDENTITY_MISMATCH, why
        elif (
            kill.source is None
            and (leader or members)
            and not await asyncio.to_thread(kill_is_tied, kill, leader, members)
        ):
            # A process in the middle of its exit shows no environment any more: the group
            # may have been ending while its tag was read, and then nothing is left to kill.
            leader, members, left = await asyncio.to_thread(still_alive, kill, outside)
            if leader or members or left:
                outcome, message = Outcome.IDENTITY_MISMATCH, untied(kill.pid, kill.task_id)
            else:
                outcome, message = exited
        else:
            targets = []
            if leader or members:
                targets.append(f"process group {kill.pgid}" if members else f"pid {kill.pid}")
            if left:
                targets.append(f"{processes(len(left))} outside it ({pids_words(left)})")
            outcome = Outcome.ESCALATED
            alive = " and ".join(targets)
            message = f"{alive} still alive {elapsed:.1f} s after TERM: sent SIGKILL"
        # Close first: of two zombietops finishing the same kill, only the winner signals.
        closed = await self.store.close_kill(
            kill.task_id,
            outcome=str(outcome),
            actor=self.me,
            message=f"kill {outcome}: {message}",
            data={"elapsed_s": round(elapsed, 3)},
        )
        if closed is None:
            return None
        if outcome is Outcome.ESCALATED:
            message = await asyncio.to_thread(self._sigkill, kill, message, left)
        return ActionOutcome(request=request, outcome=outcome, message=message)

    async def _outside_of(self, kill: PendingKill) -> list[Outside]:
        """The processes outside its group that the kill's SIGTERM went to, as its event
        recorded them (none for a kill recorded by an older zombietop)."""
        if kill.source is not None:
            return []
        events = await self.store.events(task_id=kill.task_id, kind=EventKind.ACTION, limit=20)
        for event in events:
            data = event.data
            sent = data.get("outcome") == str(Outcome.TERM_SENT)
            if sent and data.get("deadline") == kill.deadline:
                found = (Outside.from_data(each) for each in data.get("outside") or ())
                return [each for each in found if each is not None]
        return []

    def _sigkill(self, kill: PendingKill, message: str, outside: Sequence[Outside]) -> str:
        killed = signal_each(outside, signal.SIGKILL, kill.task_id)
        try:
            if kill.pgid is not None and group_left(kill):
                os.killpg(kill.pgid, signal.SIGKILL)
            elif alive_as(kill.pid, kill.pid_start):
                os.kill(kill.pid, signal.SIGKILL)
            elif not killed:
                return f"pid {kill.pid} exited just before SIGKILL was due"
        except ProcessLookupError:
            if not killed:
                return f"pid {kill.pid} exited just before SIGKILL was due"
        except PermissionError:
            return f"SIGKILL to pid {kill.pid} was not permitted"
        return message
