"""The one door every operator action goes through: resume, discard and the graceful kill.

Each action re-reads the task and refuses when its lease token moved since the operator looked,
or when the store is read-only. Refusals are outcomes, not exceptions, and every outcome is an
event in the store with the actor, the reason and what happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.clock import Clock
from zombietop.config import Config, Limits
from zombietop.durations import format_age
from zombietop.errors import ActionRefused, TaskNotFound, UnsafePath
from zombietop.locations import clean_env, store_location, task_file_name
from zombietop.model import EventKind, PendingKill, Task, TaskRecord
from zombietop.private import state_subdir
from zombietop.procs import read_start, spawn_detached, this_host, tie, untied
from zombietop.start_identity import ProcessStart, same_start, start_words
from zombietop.store import Store, location_of
from zombietop.sweep import spared
from zombietop.task_processes import (
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


def fill_placeholders(command: Sequence[str], task: Task) -> list[str]:
    """Put the task id and checkpoint into an argument list (never through a shell)."""
    checkpoint = task.checkpoint or ""
    return [
        arg.replace("{task_id}", task.task_id).replace("{checkpoint}", checkpoint)
        for arg in command
    ]


Vouch = Callable[[PendingKill], str | None]
"""For a kill of a read-only source's task: None when the source, read just now, still says the
task runs as the kill's process on this host; else why not (nothing is then signalled)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Launch:
    """A detached process the executor started, and where its output goes."""

    pid: int
    log: Path
    argv: tuple[str, ...]


class Executor:
    """Carry out resume, discard and kill against one store; implements ``ActionExecutor``."""

    def __init__(
        self,
        store: Store,
        config: Config,
        *,
        clock: Clock | None = None,
        host: str | None = None,
        store_path: Path | str | None = None,
        zombietop: Sequence[str] | None = None,
    ) -> None:
        self.store = store
        self.config = config
        self.host = host if host is not None else this_host()
        self._clock = clock
        where = store_location(store_path) if store_path is not None else location_of(store)
        self.store_path: Path | str | None = where
        # How to start `zombietop run` for a relaunch: this interpreter, so a venv carries over.
        self.zombietop = tuple(zombietop) if zombietop else (sys.executable, "-m", "zombietop.tui")
        self.me = f"zombietop@{self.host}:{os.getpid()}"
        self._launched: list[subprocess.Popen[bytes]] = []

    @property
    def read_only(self) -> bool:
        return self.store.read_only

    async def _now(self) -> float:
        return self._clock.now() if self._clock is not None else await self.store.now()

    # The door ------------------------------------------------------------------------------

    async def run(self, request: ActionRequest) -> ActionOutcome:
        """Carry out one action; refusals are outcomes, not exceptions."""
        if self.read_only:
            # Nothing can be recorded in a read-only store, so this refusal is not an event.
            return ActionOutcome(
                request=request,
                outcome=Outcome.REFUSED,
                message=f"store {self.store.describe()} is open read-only; actions are disabled",
            )
        try:
            record = await self.store.get_record(request.task_id)
        except TaskNotFound as exc:
            return ActionOutcome(request=request, outcome=Outcome.REFUSED, message=str(exc))
        token = None if record.lease is None else record.lease.token
        if token != request.expected_token:
            return await self._done(
                request,
                Outcome.REFUSED,
                f"task changed since you looked: token {request.expected_token} is now {token}",
                token=token,
            )
        if self._needs_its_host(request, record):
            assert record.task.host is not None
            return await self.ask_agent(request, record.task.host)
        if request.kind is ActionKind.RESUME:
            return await self._resume(request, record)
        if request.kind is ActionKind.DISCARD:
            return await self._discard(request, record)
        return await self._kill(request, record)

    async def resume(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> ActionOutcome:
        """Resume a task: bump the token, keep the checkpoint, requeue or relaunch it."""
        return await self._ask(ActionKind.RESUME, task_id, expected_token, actor, reason)

    async def discard(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> ActionOutcome:
        """Discard a task: bump the token, mark it discarded, keep its artifacts."""
        return await self._ask(ActionKind.DISCARD, task_id, expected_token, actor, reason)

    async def kill(
        self, task_id: str, *, expected_token: int | None, actor: str, reason: str | None = None
    ) -> ActionOutcome:
        """Start a graceful kill: SIGTERM now, SIGKILL after kill_grace if still alive."""
        return await self._ask(ActionKind.KILL, task_id, expected_token, actor, reason)

    async def _ask(
        self,
        kind: ActionKind,
        task_id: str,
        expected_token: int | None,
        actor: str,
        reason: str | None,
    ) -> ActionOutcome:
        request = ActionRequest(
            kind=kind, task_id=task_id, expected_token=expected_token, actor=actor, reason=reason
        )
        return await self.run(request)

    async def _done(
        self,
        request: ActionRequest,
        outcome: Outcome,
        message: str,
        *,
        token: int | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> ActionOutcome:
        why = f" (reason: {request.reason})" if request.reason else ""
        await self.store.record_event(
            kind=EventKind.ACTION,
            actor=request.actor,
            task_id=request.task_id,
            message=f"{request.kind} {outcome}: {message}{why}",
            data={
                "action": str(request.kind),
                "outcome": str(outcome),
                "reason": request.reason,
                "expected_token": request.expected_token,
                "token": token,
                **dict(data or {}),
            },
        )
        return ActionOutcome(request=request, outcome=outcome, message=message, new_token=token)

    # Another host's task ---------------------------------------------------------------------

    def _needs_its_host(self, request: ActionRequest, record: TaskRecord) -> bool:
        """True when the action must run on the task's host and that is not this one.

        Signals only reach local processes, and a relaunch (or its compensation) must start
        where the task lives; a discard, or a resume that only requeues, is store work only.
        """
        task = record.task
        if task.host is None or task.host == self.host:
            return False
        if request.kind is ActionKind.KILL:
            return True
        if request.kind is ActionKind.RESUME:
            limits = self.config.limits_for(task.step_type)
            return bool(task.command or limits.resume_command or limits.compensate_command)
        return False

    async def ask_agent(
        self, request: ActionRequest, host: str, *, source: str | None = None
    ) -> ActionOutcome:
        """Leave the action in the store for the agent on ``host`` (the task's); ``source``
        names the read-only source of a task the store does not hold."""
        try:
            asked = await self.store.request_host_action(
                task_id=request.task_id,
                host=host,
                kind=str(request.kind),
                expected_token=request.expected_token,
                actor=request.actor,
                reason=request.reason,
                source=source,
            )
        except ActionRefused as exc:
            return ActionOutcome(
                request=request,
                outcome=Outcome.REQUESTED,
                message=str(exc),
                new_token=request.expected_token,
            )
        now = await self._now()
        agent = next((a for a in await self.store.agents() if a.host == host), None)
        if agent is not None and agent.present(now):
            where = f"waiting for agent on {host}"
        else:
            seen = "" if agent is None else f", last seen {format_age(now - agent.seen_at)} ago"
            where = f"no agent on {host}{seen}: it waits until `zombietop agent` runs there"
        return ActionOutcome(
            request=request,
            outcome=Outcome.REQUESTED,
            message=f"{request.kind} of {request.task_id} requested: {where}",
            new_token=request.expected_token,
            request_id=asked.request_id,
        )

    # Discard -------------------------------------------------------------------------------

    async def _discard(self, request: ActionRequest, record: TaskRecord) -> ActionOutcome:
        try:
            task, lease = await self.store.discard_task(
                request.task_id,
                expected_token=request.expected_token,
                actor=request.actor,
                reason=request.reason,
            )
        except ActionRefused as exc:
            return await self._done(request, Outcome.REFUSED, str(exc))
        return await self._done(
            request,
            Outcome.DISCARDED,
            f"{task.task_id} discarded (token {request.expected_token} -> {lease.token}); "
            "artifacts kept, dependents stay blocked",
            token=lease.token,
        )

    # Resume --------------------------------------------------------------------------------

    async def _resume(self, request: ActionRequest, record: TaskRecord) -> ActionOutcome:
        task = record.task
        limits = self.config.limits_for(task.step_type)
        stopped, refusal = await self._stop_old_copy(task, limits)
        if refusal is not None:
            return await self._done(request, Outcome.REFUSED, refusal)
        if limits.compensate_command:
            failure = await self._compensate(task, limits)
            if failure is not None:
                return await self._done(
                    request,
                    Outcome.REFUSED,
                    f"not resuming {task.task_id}: {failure}",
                    data={"compensation": "failed"},
                )
        try:
            task, lease = await self.store.resume_task(
                request.task_id,
                expected_token=request.expected_token,
                actor=request.actor,
                reason=request.reason,
            )
        except ActionRefused as exc:
            return await self._done(request, Outcome.REFUSED, str(exc))
        where = f"checkpoint {task.checkpoint}" if task.checkpoint else "no checkpoint"
        if not task.command and not limits.resume_command:
            return await self._done(
                request,
                Outcome.REQUEUED,
                f"{task.task_id} requeued for its engine as attempt {task.attempt} ({where})"
                + stopped,
                token=lease.token,
            )
        try:
            launch = await asyncio.to_thread(self._launch, task, limits)
        except (OSError, ActionRefused, UnsafePath) as exc:
            return await self._done(
                request,
                Outcome.REQUEUED,
                f"{task.task_id} requeued as attempt {task.attempt}, "
                f"but could not be relaunched: {exc}",
                token=lease.token,
            )
        how = "relaunched" if task.command else "ran resume_command for"
        return await self._done(
            request,
            Outcome.RELAUNCHED,
            f"{how} {task.task_id} as attempt {task.attempt} from {where} "
            f"(pid {launch.pid}, log {launch.log}){stopped}",
            token=lease.token,
            data={"pid": launch.pid, "log": str(launch.log), "argv": list(launch.argv)},
        )

    async def _stop_old_copy(self, task: Task, limits: Limits) -> tuple[str, str | None]:
        """Before a resume, stop the task's recorded process if it still lives on this host:
        SIGTERM (and SIGCONT) to its group, ``kill_grace``, SIGKILL only if the same process is
        still alive. Nothing can fence out an orphan whose wrapper died, so two copies would
        run for ever. Return what was done (for the outcome) and why to refuse, if it must."""
        pid = task.pid
        if pid is None or task.host != self.host or pid == os.getpid():
            # Our own process is an SDK job resuming itself: the new token fences it.
            return "", None
        if not await asyncio.to_thread(alive_as, pid, task.pid_start):
            return "", None
        if await asyncio.to_thread(tie, pid, task.task_id) is None:
            # The store's pid alone is not trusted (see ``tie``): resume, signal nothing.
            return f"; pid {pid} is alive but carries no tag of {task.task_id}: not signalled", None
        pgid = await asyncio.to_thread(signal_target, pid)
        outside = await asyncio.to_thread(outside_group, task.task_id, pid, pgid, spared=spared())
        target = f"process group {pgid}" if pgid is not None else f"pid {pid}"
        if outside:
            target += f" and {processes(len(outside))} outside it ({pids_words(outside)})"
        how = "SIGTERM"
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                for each in (sig, signal.SIGCONT) if sig is signal.SIGTERM else (sig,):
                    if pgid is not None:
                        os.killpg(pgid, each)
                    else:
                        os.kill(pid, each)
            except ProcessLookupError:
                if not outside:
                    break
            except PermissionError:
                return "", (
                    f"not resuming {task.task_id}: its old process (pid {pid}) is still alive "
                    f"and not ours to signal; stop it as its owner (kill {pid}), then resume"
                )
            outside = await asyncio.to_thread(signal_each, outside, sig, task.task_id)
            how = sig.name
            if await self._gone_within(pid, task.pid_start, outside, limits.kill_grace):
                break
        else:
            return "", (
                f"not resuming {task.task_id}: its old process (pid {pid}) outlived SIGKILL; "
                "find out what holds it (uninterruptible I/O?) and resume once it is gone"
            )
        return f"; stopped the old copy first ({target} exited after {how})", None

    @staticmethod
    async def _gone_within(
        pid: int, start: ProcessStart | None, outside: Sequence[Outside], seconds: float
    ) -> bool:
        """Wait up to ``seconds`` of real time for ``pid`` and ``outside`` to exit (a real
        process's grace)."""
        deadline = time.monotonic() + seconds

        def alive() -> bool:
            return alive_as(pid, start) or any(each.alive() for each in outside)

        while await asyncio.to_thread(alive):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    def _launch(self, task: Task, limits: Limits) -> Launch:
        """Start the relaunch detached (own session), logging beside the store."""
        if self.store_path is None:
            raise ActionRefused("the store has no file path to hand to a relaunched task")
        if task.command:
            argv = [*self.zombietop, "--db", str(self.store_path)]
            if self.config.path is not None:
                argv += ["--config", str(self.config.path)]
            argv += [
                "run",
                "--task",
                task.task_id,
                "--run",
                task.run_id,
                "--type",
                task.step_type,
                "--",
                *task.command,
            ]
        else:
            assert limits.resume_command is not None
            argv = fill_placeholders(limits.resume_command, task)
        logs = state_subdir(self.store_path, "logs")
        log = logs / f"{task_file_name(task.task_id)}.{task.attempt}.log"
        env = clean_env()
        env["ZOMBIETOP_DB"] = str(self.store_path)
        cwd = task.cwd if task.cwd and Path(task.cwd).is_dir() else None
        # Reaped when it ends, so a long-lived dashboard leaves no zombies of its own.
        proc = spawn_detached(argv, log=log, env=env, cwd=cwd)
        self._launched = [*(p for p in self._launched if p.returncode is None), proc]
        return Launch(pid=proc.pid, log=log, argv=tuple(argv))

    async def _compensate(self, task: Task, limits: Limits) -> str | None:
        """Run the step type's compensate_command; return why it failed, or None."""
        assert limits.compensate_command is not None
        argv = fill_placeholders(limits.compensate_command, task)
        env = clean_env()
        env.update(ZOMBIETOP_TASK=task.task_id, ZOMBIETOP_CHECKPOINT=task.checkpoint or "")
        cwd = task.cwd if task.cwd and Path(task.cwd).is_dir() else None
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=cwd,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE,
            )
        except OSError as exc:
            return f"compensation {argv[0]!r} could not start: {exc.strerror or exc}"
        try:
            # An undo is one call's worth of work: hold it to the request budget.
            _, err = await asyncio.wait_for(proc.communicate(), timeout=limits.request)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return f"compensation {argv[0]!r} ran past {format_age(limits.request)} and was killed"
        if proc.returncode != 0:
            tail = err.decode(errors="replace").strip().splitlines()[-1:] if err else []
            said = f": {tail[0]}" if tail else ""
            return f"compensation {argv[0]!r} failed with exit {proc.returncode}{said}"
        return None

    # Kill ----------------------------------------------------------------------------------

    async def _kill(self, request: ActionRequest, record: TaskRecord) -> ActionOutcome:
        task = record.task
        return await self.kill_process(
            request,
            task,
            self.config.limits_for(task.step_type).kill_grace,
            pending=record.pending_kill,
        )

    async def kill_process(
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
        token = request.expected_token
        if task.pid is None:
            return await self._done(
                request,
                Outcome.REFUSED,
                f"{task.task_id} has no process recorded; nothing to kill",
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
        actual = await asyncio.to_thread(read_start, pid)
        if actual is None:
            return await self._done(
                request,
                Outcome.GONE,
                f"pid {pid} of {task.task_id} is already gone; nothing signalled",
                token=token,
                data=data,
            )
        if not same_start(task.pid_start, actual):
            return await self._done(
                request,
                Outcome.IDENTITY_MISMATCH,
                f"pid {pid} now belongs to another process (started {start_words(actual)}, "
                f"the task's started {start_words(task.pid_start)}); nothing signalled",
                token=token,
                data=data,
            )
        if source is None and await asyncio.to_thread(tie, pid, task.task_id) is None:
            return await self._done(
                request, Outcome.IDENTITY_MISMATCH, untied(pid, task.task_id), token=token
            )
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
        outside = await asyncio.to_thread(signal_each, outside, signal.SIGTERM, task.task_id)
        also = ""
        if outside:
            everyone = [*members, *(each.pid for each in outside)]
            in_sessions |= {each.session for each in outside}
            also = (
                f", and to {processes(len(outside))} of {task.task_id} outside that group "
                f"({pids_words(outside)}): {counted(len(everyone), len(in_sessions))}"
            )
        return await self._done(
            request,
            Outcome.TERM_SENT,
            f"SIGTERM sent to {target} of {task.task_id}{also}; "
            f"SIGKILL in {format_age(grace)} if {'any' if outside else 'it'} is still alive",
            token=token,
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

    async def complete_pending_kills(
        self, vouch: Vouch | None = None, *, sources: Collection[str] = ()
    ) -> list[ActionOutcome]:
        """Close each open kill on this host whose process exited; SIGKILL those past the grace.

        A kill of a read-only source's task is finished only by a zombietop that has just read
        that source (its name in ``sources``), with ``vouch``: the store's record of it alone
        never earns a SIGKILL. The others are left for such a zombietop.
        """
        if self.read_only:
            return []
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
