"""The store's tasks: create, read and poll them, record their process and end, quarantine,
resume and discard them.

Its SQL is in ``sql/common/tasks.sql`` and ``sql/<backend>/tasks.sql``.
"""

from __future__ import annotations

import abc
import json
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass

from zombietop.actions import finished_refusal
from zombietop.errors import ActionRefused, LeaseLost, StoreError
from zombietop.model import (
    EventKind,
    Heartbeat,
    Lease,
    PollChanges,
    Task,
    TaskRecord,
    TaskState,
)
from zombietop.start_identity import StartIdentity
from zombietop.store.columns import RECORD_WIDTH
from zombietop.store.jobs import Jobs
from zombietop.store.poll_cache import PollCache, task_record
from zombietop.store.sql_base import Conn, Duplicate, identity_params
from zombietop.trace_context import TraceContext


def like_literal(text: str) -> str:
    """``text`` for a LIKE pattern with ``ESCAPE '\\'``: its ``\\``, ``%`` and ``_`` stand for
    themselves, not for any text or any character."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """What a verdict on a task was made on: its latest heartbeat and its lease, as read
    (the lease's expiry only when the verdict was made on it; else None).

    A write that acts on the verdict checks them again inside its transaction: a task that
    beat or whose lease changed since (a lock may have held those writes back) is judged again
    at the next look instead.
    """

    beat_seq: int | None
    lease_token: int | None
    lease_expires_at: float | None
    lease_owner: str | None = None
    """Who held the lease: a lease let go (the task ended) since the look moves the task."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoudPoll:
    """A poll of a large store (``TasksInterface.poll_loud``): what it read, and what it only
    counted."""

    records: list[TaskRecord]
    """The loud active tasks, the longest silent first, up to the limit; then every task
    finished since the poll's ``finished_since``."""
    quiet: dict[str, int]
    """The quiet active tasks, by state."""
    loud: int
    """How many active tasks are loud, whether read or not."""
    gone_quiet: frozenset[str] = frozenset()
    """The tasks of ``again`` that are quiet now: read, not counted."""

    @property
    def active(self) -> int:
        return self.loud + sum(self.quiet.values()) + len(self.gone_quiet)


class TasksInterface(abc.ABC):
    """Part of ``Store``, implemented by ``Tasks`` below: tasks, from their creation to their end,
    and the operator's resume and discard."""

    @abc.abstractmethod
    async def create_task(
        self,
        *,
        task_id: str,
        run_id: str,
        step: str,
        step_type: str,
        actor: str,
        upstream: Sequence[str] = (),
        command: Sequence[str] = (),
        cwd: str | None = None,
        host: str | None = None,
        job: str | None = None,
    ) -> Task:
        """Add a queued task; raise ``StoreError`` if the id is taken. A task of a ``job`` is
        numbered after the job's latest run (``run_number``, from 1)."""

    @abc.abstractmethod
    async def get_task(self, task_id: str) -> Task:
        """Return the task or raise ``TaskNotFound``."""

    @abc.abstractmethod
    async def get_record(self, task_id: str) -> TaskRecord:
        """Return the task with its lease and latest heartbeat, or raise ``TaskNotFound``."""

    @abc.abstractmethod
    async def poll(self, finished_since: float | None) -> list[TaskRecord]:
        """Read every active task and those finished since ``finished_since`` (None: all)."""

    @abc.abstractmethod
    async def glance(self, limit: int) -> tuple[int, list[TaskRecord]]:
        """How many tasks are active, and the ``limit`` of them whose last sign of life is
        oldest: a first screenful while a whole ``poll`` is still to come. It leaves what
        ``poll`` follows as it was."""

    @abc.abstractmethod
    async def count_active(self) -> int:
        """How many tasks are active (not finished)."""

    @abc.abstractmethod
    async def poll_loud(
        self,
        finished_since: float | None,
        quiet: dict[str, float | str],
        limit: int,
        again: Collection[str] = (),
    ) -> LoudPoll:
        """A poll for a store too large to read whole: count the active tasks the ``quiet``
        bounds prove have nothing to say (``QuietBounds.params``), read at most ``limit`` of the
        others, those silent longest first, and every task finished since ``finished_since``
        (None: every finished task). The active tasks in ``again`` (those read at the poll
        before) are read too, and not counted quiet, so that a task that went quiet is seen to.
        It leaves what ``poll`` follows as it was."""

    @abc.abstractmethod
    async def find_quiet(
        self, text: str, quiet: dict[str, float | str], limit: int
    ) -> list[TaskRecord]:
        """The active tasks the ``quiet`` bounds prove quiet (those ``poll_loud`` counts) whose
        id or latest stage holds ``text``, in any case and taken literally (``%`` and ``_`` are
        no wildcards): the first ``limit`` by task id, read whole. The dashboard's filter finds
        with it the tasks a large store's poll only counted."""

    def poll_changes(self) -> PollChanges | None:
        """What the latest ``poll`` changed against the one before it, for a reader that keeps
        what it built from that one; None when the store does not say (read it all again).

        Ask right after ``poll`` returns, before anything else can poll the same store.
        """
        return None

    @abc.abstractmethod
    async def set_process(
        self,
        task_id: str,
        *,
        owner: str,
        token: int,
        pid: int,
        pid_start_time: float,
        host: str,
        pid_start_identity: StartIdentity | None = None,
        trace: TraceContext | None = None,
    ) -> None:
        """Record the process executing the task, with its start (the wall-clock time, and
        the kernel's count where /proc tells it) and the trace it runs in; fenced on the
        lease."""

    @abc.abstractmethod
    async def set_trace(self, task_id: str, *, owner: str, token: int, trace: TraceContext) -> None:
        """Record the trace the task runs in, alone: for a command gone before its process
        could be recorded (``set_process`` records both); fenced on the lease."""

    @abc.abstractmethod
    async def finish_task(
        self,
        task_id: str,
        *,
        owner: str,
        token: int,
        state: TaskState,
        exit_code: int | None = None,
        reason: str | None = None,
        stopped_by: str | None = None,
    ) -> Task:
        """End the owner's execution (succeeded, failed or interrupted) and release the lease.

        ``stopped_by`` names who stopped an interrupted task (a kill's requester, a forwarded
        signal); the state-change event carries it with the exit code.
        """

    @abc.abstractmethod
    async def set_quarantine(
        self,
        task_id: str,
        *,
        quarantined: bool,
        actor: str,
        reason: str | None = None,
        seen: Seen | None = None,
    ) -> Task:
        """Hold (or release) a task so that nothing downstream of it starts.

        With ``seen`` (what a verdict was made on), a hold is placed only if the task has not
        beaten or renewed its lease since; otherwise the task is returned as it is, unheld.
        """

    @abc.abstractmethod
    async def resume_task(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> tuple[Task, Lease]:
        """Take the lease from whoever holds it (token + 1, no owner), keep the checkpoint,
        count the attempt, clear the quarantine and requeue.

        Raise ``ActionRefused`` when the token is not ``expected_token`` (None: no lease yet)
        or the task succeeded or was discarded.
        """

    @abc.abstractmethod
    async def fence_task(self, task_id: str, *, expected_token: int | None, actor: str) -> Lease:
        """Take the lease from whoever holds it (token + 1, no owner) and change nothing else.

        A resume does this before it stops a copy that still runs, so that copy can no longer
        record its end: a task waiting ``--after`` it would take that end for the task's own.
        Raise ``ActionRefused`` as ``resume_task`` does.
        """

    @abc.abstractmethod
    async def discard_task(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> tuple[Task, Lease]:
        """Take the lease from whoever holds it (token + 1, no owner) and mark the task discarded.

        Raise ``ActionRefused`` when the token is not ``expected_token`` or the task succeeded
        or was already discarded.
        """


class Tasks(Jobs[Conn], TasksInterface):
    """Tasks, from their creation to their end, and the operator's resume and discard."""

    def __init__(self) -> None:
        super().__init__()
        self._poll_cache = PollCache()

    async def create_task(
        self,
        *,
        task_id: str,
        run_id: str,
        step: str,
        step_type: str,
        actor: str,
        upstream: Sequence[str] = (),
        command: Sequence[str] = (),
        cwd: str | None = None,
        host: str | None = None,
        job: str | None = None,
    ) -> Task:
        if not task_id or not task_id.strip():
            raise StoreError("a task id must not be empty")
        async with self._write() as db:
            now = await self._now_in(db)
            try:
                await self._insert(
                    db,
                    "insert_task",
                    {
                        "task_id": task_id,
                        "run_id": run_id,
                        "step": step,
                        "step_type": step_type,
                        "state": TaskState.QUEUED.value,
                        "upstream": json.dumps(list(upstream)),
                        "host": host,
                        "command": json.dumps(list(command)) if command else None,
                        "cwd": cwd,
                        "job": job,
                        "now": now,
                    },
                )
            except Duplicate:
                raise StoreError(f"task {task_id!r} already exists in {self._where()}") from None
            await self._event(
                db,
                now,
                kind=EventKind.TASK_CREATED,
                actor=actor,
                task_id=task_id,
                message=f"created {task_id} (run {run_id}, step {step}, type {step_type})",
                data={"upstream": list(upstream)},
            )
            return await self._task_in(db, task_id)

    async def get_task(self, task_id: str) -> Task:
        async with self._read() as db:
            return await self._task_in(db, task_id)

    async def get_record(self, task_id: str) -> TaskRecord:
        async with self._read() as db:
            row = await self._row(db, "select_task_record", {"task_id": task_id})
            if row is None:
                raise await self._missing_in(db, task_id)
        return task_record(row)

    async def poll(self, finished_since: float | None) -> list[TaskRecord]:
        cache = self._poll_cache
        async with self._read() as db:
            # The revision is read before the rows: a change committed in between is read
            # again next poll (if not already now), never missed.
            revision = await self._revision(db)
            if finished_since is not None and cache.can_follow(revision, finished_since):
                rows = await self._rows(db, "select_tasks_changed", {"rev": cache.changes})
                return cache.follow(rows, revision, finished_since)
            if finished_since is None:
                rows = await self._rows(db, "select_all_tasks", {})
            else:
                rows = await self._rows(
                    db, "select_tasks_for_poll", {"finished_since": finished_since}
                )
        return cache.reload(rows, revision, finished_since)

    async def glance(self, limit: int) -> tuple[int, list[TaskRecord]]:
        async with self._read() as db:
            row = await self._row(db, "count_active_tasks", {})
            rows = await self._rows(db, "select_tasks_to_glance", {"limit": limit})
        return (0 if row is None else int(row["active"])), [task_record(r) for r in rows]

    async def count_active(self) -> int:
        async with self._read() as db:
            row = await self._row(db, "count_active_tasks", {})
        return 0 if row is None else int(row["active"])

    async def poll_loud(
        self,
        finished_since: float | None,
        quiet: dict[str, float | str],
        limit: int,
        again: Collection[str] = (),
    ) -> LoudPoll:
        since = {"finished_since": 0.0 if finished_since is None else finished_since}
        async with self._read() as db:
            rows = await self._rows(db, "select_loud_tasks", {**quiet, "limit": limit})
            active = await self._rows(db, "count_active_by_state", {})
            ended = await self._rows(db, "select_finished_since", since)
            read = {row["task_id"] for row in rows}
            ids = json.dumps([task_id for task_id in again if task_id not in read])
            seen = await self._rows(db, "select_tasks_again", {**quiet, "ids": ids})
        # Every loud row carries the same counts (none: no task is loud).
        first = rows[0] if rows else {"loud": 0, "loud_running": 0, "loud_queued": 0}
        loud = {"running": int(first["loud_running"]), "queued": int(first["loud_queued"])}
        # The quiet tasks read again are listed, so not counted as well.
        listed = Counter(row["state"] for row in seen if row["quiet"])
        # Read one after the other, a task may change between the reads: never below none.
        counted = {
            row["state"]: max(0, int(row["tasks"]) - loud[row["state"]] - listed[row["state"]])
            for row in active
            if row["state"] in loud
        }
        gone_quiet = frozenset(row["task_id"] for row in seen if row["quiet"])
        records = [task_record(tuple(row)[:RECORD_WIDTH]) for row in [*rows, *seen]]
        records += [task_record(row) for row in ended]
        return LoudPoll(
            records=records, quiet=counted, loud=int(first["loud"]), gone_quiet=gone_quiet
        )

    async def find_quiet(
        self, text: str, quiet: dict[str, float | str], limit: int
    ) -> list[TaskRecord]:
        params = {**quiet, "pattern": f"%{like_literal(text.lower())}%", "limit": limit}
        async with self._read() as db:
            rows = await self._rows(db, "select_quiet_tasks_found", params)
        return [task_record(row) for row in rows]

    def poll_changes(self) -> PollChanges | None:
        return self._poll_cache.last

    async def set_process(
        self,
        task_id: str,
        *,
        owner: str,
        token: int,
        pid: int,
        pid_start_time: float,
        host: str,
        pid_start_identity: StartIdentity | None = None,
        trace: TraceContext | None = None,
    ) -> None:
        async with self._write() as db:
            await self._hold(db, task_id)
            now = await self._now_in(db)
            await self._fence(db, now, task_id, owner, token)
            await self._run(
                db,
                "set_process",
                {
                    "task_id": task_id,
                    "pid": pid,
                    "pid_start_time": pid_start_time,
                    **identity_params(pid_start_identity),
                    "host": host,
                    "trace_id": None if trace is None else trace.trace_id,
                    "span_id": None if trace is None else trace.span_id,
                    "parent_span_id": None if trace is None else trace.parent_id,
                    "now": now,
                },
            )

    async def set_trace(self, task_id: str, *, owner: str, token: int, trace: TraceContext) -> None:
        async with self._write() as db:
            await self._hold(db, task_id)
            now = await self._now_in(db)
            await self._fence(db, now, task_id, owner, token)
            await self._run(
                db,
                "set_trace",
                {
                    "task_id": task_id,
                    "trace_id": trace.trace_id,
                    "span_id": trace.span_id,
                    "parent_span_id": trace.parent_id,
                    "now": now,
                },
            )

    async def finish_task(
        self,
        task_id: str,
        *,
        owner: str,
        token: int,
        state: TaskState,
        exit_code: int | None = None,
        reason: str | None = None,
        stopped_by: str | None = None,
    ) -> Task:
        if state not in (TaskState.SUCCEEDED, TaskState.FAILED, TaskState.INTERRUPTED):
            raise ValueError(f"finish_task ends in succeeded, failed or interrupted, not {state}")
        async with self._write() as db:
            held = await self._hold(db, task_id)
            now = await self._now_in(db)
            lease = await self._lease_in(db, task_id)
            # Finishing is allowed just past expiry as long as nobody took the lease over:
            # the work is done, and recording that beats leaving a zombie behind.
            if lease is None or lease.owner != owner or lease.token != token:
                raise LeaseLost(
                    f"{owner} (token {token}) no longer owns {task_id}; not recording its end"
                )
            before = held or await self._task_in(db, task_id)
            await self._run(
                db,
                "finish_task",
                {
                    "task_id": task_id,
                    "state": state.value,
                    "exit_code": exit_code,
                    "reason": reason,
                    "finished_at": None if state is TaskState.INTERRUPTED else now,
                    "now": now,
                },
            )
            await self._run(
                db,
                "release_lease",
                {"task_id": task_id, "owner": owner, "token": token, "now": now},
            )
            exit_text = "" if exit_code is None else f" (exit {exit_code})"
            await self._event(
                db,
                now,
                kind=EventKind.STATE_CHANGED,
                actor=owner,
                task_id=task_id,
                message=f"{before.state} -> {state}{exit_text}" + (f": {reason}" if reason else ""),
                data={
                    "from": before.state.value,
                    "to": state.value,
                    "exit_code": exit_code,
                    "stopped_by": stopped_by,
                    "token": token,
                },
            )
            await self._event(
                db,
                now,
                kind=EventKind.LEASE_RELEASED,
                actor=owner,
                task_id=task_id,
                message=f"{owner} released token {token}",
                data={"owner": owner, "token": token},
            )
            after = await self._task_in(db, task_id)
            await self._count_run(db, after, now)
            return after

    async def set_quarantine(
        self,
        task_id: str,
        *,
        quarantined: bool,
        actor: str,
        reason: str | None = None,
        seen: Seen | None = None,
    ) -> Task:
        async with self._write() as db:
            before, now = await self._locked(db, task_id)
            if before.quarantined == quarantined:
                return before
            if seen is not None and await self._moved(db, task_id, seen):
                return before
            await self._run(
                db,
                "set_quarantine",
                {
                    "task_id": task_id,
                    "quarantined_at": now if quarantined else None,
                    "actor": actor if quarantined else None,
                    "reason": reason if quarantined else None,
                    "now": now,
                },
            )
            why = f": {reason}" if reason else ""
            await self._event(
                db,
                now,
                kind=EventKind.QUARANTINED if quarantined else EventKind.UNQUARANTINED,
                actor=actor,
                task_id=task_id,
                message=("quarantined" if quarantined else "released from quarantine") + why,
            )
            return await self._task_in(db, task_id)

    async def _moved(self, db: Conn, task_id: str, seen: Seen) -> bool:
        """Whether the task beat or its lease changed since ``seen`` was read."""
        row = await self._row(db, "select_heartbeat", {"task_id": task_id})
        beat_seq = None if row is None else Heartbeat.from_row(row).seq
        lease = await self._lease_in(db, task_id)
        now_seen = Seen(
            beat_seq=beat_seq,
            lease_token=None if lease is None else lease.token,
            lease_owner=None if lease is None else lease.owner,
            # The expiry only where the verdict was made on it (``seen`` holds it then).
            lease_expires_at=(
                lease.expires_at
                if lease is not None and seen.lease_expires_at is not None
                else None
            ),
        )
        return now_seen != seen

    # Resume and discard: the operator takes the lease away ---------------------------------

    async def _take_for_action(
        self, db: Conn, task_id: str, expected_token: int | None, verb: str
    ) -> tuple[Task, Lease | None, float]:
        """Hold and re-read the task inside the transaction; refuse if it moved on."""
        task, now = await self._locked(db, task_id)
        lease = await self._lease_in(db, task_id)
        token = None if lease is None else lease.token
        if token != expected_token:
            raise ActionRefused(
                f"task changed since you looked: token {expected_token} is now {token}; "
                f"look again before you {verb} {task_id}"
            )
        refusal = finished_refusal(task_id, task.state, verb)
        if refusal is not None:
            raise ActionRefused(refusal)
        return task, lease, now

    async def _bump_token(
        self, db: Conn, now: float, task_id: str, lease: Lease | None, actor: str
    ) -> Lease:
        token = (0 if lease is None else lease.token) + 1
        await self._run(db, "bump_lease_token", {"task_id": task_id, "token": token, "now": now})
        held = "" if lease is None or lease.owner is None else f" from {lease.owner}"
        await self._event(
            db,
            now,
            kind=EventKind.LEASE_RECLAIMED,
            actor=actor,
            task_id=task_id,
            message=f"{actor} took the lease{held}: token {token - 1} -> {token}, no owner",
            data={
                "token": token,
                "previous_owner": None if lease is None else lease.owner,
                "previous_token": None if lease is None else lease.token,
            },
        )
        return Lease(task_id=task_id, owner=None, token=token, renewed_at=now)

    async def fence_task(self, task_id: str, *, expected_token: int | None, actor: str) -> Lease:
        async with self._write() as db:
            _, lease, now = await self._take_for_action(db, task_id, expected_token, "resume")
            return await self._bump_token(db, now, task_id, lease, actor)

    async def resume_task(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> tuple[Task, Lease]:
        async with self._write() as db:
            before, lease, now = await self._take_for_action(db, task_id, expected_token, "resume")
            new_lease = await self._bump_token(db, now, task_id, lease, actor)
            await self._run(db, "requeue_task", {"task_id": task_id, "reason": reason, "now": now})
            await self._uncount_run(db, before, now)  # counted again as it ends again
            await self._run(db, "delete_heartbeat", {"task_id": task_id})
            why = f": {reason}" if reason else ""
            await self._event(
                db,
                now,
                kind=EventKind.STATE_CHANGED,
                actor=actor,
                task_id=task_id,
                message=f"{before.state} -> queued for attempt {before.attempt + 1}{why}",
                data={
                    "from": before.state.value,
                    "to": TaskState.QUEUED.value,
                    "token": new_lease.token,
                    "checkpoint": before.checkpoint,
                },
            )
            return await self._task_in(db, task_id), new_lease

    async def discard_task(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> tuple[Task, Lease]:
        async with self._write() as db:
            before, lease, now = await self._take_for_action(db, task_id, expected_token, "discard")
            new_lease = await self._bump_token(db, now, task_id, lease, actor)
            await self._run(db, "discard_task", {"task_id": task_id, "reason": reason, "now": now})
            why = f": {reason}" if reason else ""
            await self._event(
                db,
                now,
                kind=EventKind.STATE_CHANGED,
                actor=actor,
                task_id=task_id,
                message=f"{before.state} -> discarded{why}",
                data={
                    "from": before.state.value,
                    "to": TaskState.DISCARDED.value,
                    "token": new_lease.token,
                },
            )
            after = await self._task_in(db, task_id)
            if not before.state.finished:  # a failed run discarded was counted when it failed
                await self._count_run(db, after, now)
            return after, new_lease
