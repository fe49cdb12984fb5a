"""``zombietop run``: wrap any command with a lease, heartbeats from a file, and a recorded exit.

The wrapper takes the lease, starts the command as the leader of its own process group, and
then does three things until the command exits: renews the lease every heartbeat_interval
(only while the command lives and the lease is still ours), turns the last new line of
``$ZOMBIETOP_HEARTBEAT_FILE`` into a heartbeat, and forwards SIGTERM, SIGINT and SIGHUP to the
command's group (``zombietop.run.signal_forwarding``; its handlers are in place before the
command starts). If the lease is lost it stops the command (TERM, grace, KILL) rather than keep a
second owner running.

The command's process is recorded first, before anything that can fail: the wrapper needs no
new thread once the command runs (``zombietop.run.child``), and one that cannot start is said and
done without. Its stdout and stderr reach ours through ``zombietop.run.passthrough``, and their
last 64 KiB are kept beside the store (``zombietop.output``). Should the wrapper die, the
command's next write finds no reader (EPIPE; SIGPIPE kills most commands): like a lost lease,
that stops it rather than leave it running unsupervised.

While the command writes no heartbeat lines (or none for heartbeat_timeout), the wrapper looks
at its process tree every heartbeat_interval and records an observed heartbeat when its CPU
time, I/O or output moved: proof of activity, never of progress.

When the store cannot take the exit (a full disk, a server that is down), the wrapper keeps
trying every heartbeat_interval and renews the lease meanwhile, also past the lease's end as
long as nobody took the lease over (``PAST_THE_LEASE``), then exits with the command's status
and says what was not recorded. What the end is recorded as, and who stopped the command, is
``zombietop.run.run_exit``. The command runs in the caller's trace (``TRACEPARENT``), or in a
new one, with the run's own span as its parent (``zombietop.trace_context``).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from zombietop.config import Config, Limits
from zombietop.durations import format_age
from zombietop.errors import (
    HeartbeatParseError,
    LeaseLost,
    StoreError,
    StoreReplaced,
    UnsafePath,
    UpstreamBlocked,
    ZombietopError,
)
from zombietop.heartbeat_line import MAX_LINE, parse_line
from zombietop.locations import safe_name, store_location, task_file_name
from zombietop.model import EventKind, TaskState
from zombietop.output import OutputLog, private_output_path, prune_attempts
from zombietop.printable import printable
from zombietop.private import open_read, state_subdir, write_new
from zombietop.procs import TreeActivity, read_start, this_host
from zombietop.run.child import Child, exit_status
from zombietop.run.claim import Claim, claim_task, owner_name
from zombietop.run.command_env import command_env
from zombietop.run.job_runs import claim_run
from zombietop.run.passthrough import Passthrough
from zombietop.run.run_exit import record_exit, record_lost
from zombietop.run.signal_forwarding import SignalForwarding
from zombietop.run.stray_beats import StrayBeats
from zombietop.run.unwatched import EXIT_CANNOT_START
from zombietop.run.upstream_wait import UpstreamWait, after_window, resolve_after
from zombietop.start_identity import ProcessStart
from zombietop.store import Store, location_of
from zombietop.trace_context import join_or_start

PAST_THE_LEASE = 2
"""How many lease_ttls past the lease's end the wrapper still tries to record the command's
exit while the store fails: a store that comes back after an outage longer than the lease
still gets the exit, if nobody took the lease over meanwhile."""
PUMP_DRAIN = 2.0
"""Seconds to wait, once the command exits, for the rest of its output: a background child
that inherited its stdout may hold the pipe open long after."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSpec:
    """What ``zombietop run`` was asked to do."""

    command: tuple[str, ...]
    task_id: str | None = None
    run_id: str | None = None
    step_type: str | None = None
    after: tuple[str, ...] = ()
    cwd: str | None = None
    job: str | None = None
    """Start a new run of this job (``--job``); ``run_id`` then names the run."""
    wait: bool = False
    """Wait, queued, for the ``after`` tasks to succeed instead of refusing (``--wait``)."""
    require_lease: bool | None = None
    """Refuse to run the command when the store cannot be used (``--require-lease``), or run it
    unwatched (``--no-require-lease``); None: as the step type or the kind of run says."""


def default_task_id(command: Sequence[str]) -> str:
    """Name an unnamed task after its command: ``backup.sh-1a2b3c``."""
    return f"{safe_name(Path(command[0]).name)}-{os.urandom(3).hex()}"


class HeartbeatTail:
    """Read complete new lines from the heartbeat file; the last one wins.

    Memory stays bounded whatever the job writes: the file is read a chunk at a time, and a
    line past ``MAX_LINE`` keeps only its first ``MAX_LINE + 1`` bytes (so it is still
    rejected as too long, with its start shown) while the rest is dropped up to its newline.
    """

    CHUNK = 1 << 16

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._partial = b""
        self.latest: str | None = None
        """The newest complete line ever read, so a final beat can repeat one whose recording was
        cut short (the tail task is cancelled when the command exits, maybe mid-write)."""

    def last_line(self) -> str | None:
        """Return the last complete line written since the previous call (None: nothing new)."""
        try:
            with open(open_read(self.path), "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                if size < self._offset:
                    # Truncated or replaced by the job: start again from the top.
                    self._offset, self._partial = 0, b""
                handle.seek(self._offset)
                newest = None
                while data := handle.read(self.CHUNK):
                    self._offset += len(data)
                    newest = self._take(data) or newest
        except (FileNotFoundError, UnsafePath):
            return None
        if newest is None:
            return None
        self.latest = newest.decode("utf-8", errors="replace")
        return self.latest

    def _take(self, data: bytes) -> bytes | None:
        """Add a chunk; return its last complete non-blank line, if it ended one."""
        lines = data.split(b"\n")
        tail = lines.pop()
        newest = None
        for piece in lines:
            line, self._partial = (self._partial + piece)[: MAX_LINE + 1], b""
            if line.strip():
                newest = line
        self._partial = (self._partial + tail)[: MAX_LINE + 1]
        return newest


def _beat_file_used(beat_file: Path) -> bool:
    """True when the command wrote to its heartbeat file at all."""
    try:
        return beat_file.stat().st_size > 0
    except OSError:
        return False


def _seconds(seconds: float) -> str:
    return f"{seconds:g}s" if seconds < 60 else format_age(seconds)


class Runner:
    """Run one command under a lease until it exits; ``run`` returns its exit status."""

    def __init__(
        self,
        store: Store,
        config: Config,
        *,
        host: str | None = None,
        store_path: Path | str | None = None,
        tail_interval: float | None = None,
        err: TextIO | None = None,
        unusable: Callable[[RunSpec, StoreError], Awaitable[int]] | None = None,
    ) -> None:
        self.store = store
        self.unusable = unusable
        """Run the command unwatched when the store cannot be used (``fail_open``)."""
        self.config = config
        self.host = host if host is not None else this_host()
        where = store_location(store_path) if store_path is not None else location_of(store)
        self.store_path: Path | str | None = where
        self.tail_interval = tail_interval
        self.err = err or sys.stderr
        self.signals = SignalForwarding(self._say)
        self.lost: str | None = None
        self.line_at: float | None = None
        """When the command's latest heartbeat line was read (monotonic), None before one."""
        self.stray: StrayBeats | None = None
        """Heartbeat lines in the command's output, when it is passed through."""
        self.store_gone = False
        self.lease_until = math.inf
        """When the lease ends unless renewed (monotonic): the claim's or the last renewal's
        start, plus lease_ttl."""
        self.unrecorded: ProcessStart | None = None
        """The command's start while the store has not taken it yet (tried again each round)."""
        self.trace = join_or_start(os.environ)
        """The caller's trace joined (``TRACEPARENT``), or a new one; the command gets it."""

    def _say(self, text: str) -> None:
        print(printable(f"zombietop: {text}"), file=self.err, flush=True)

    async def run(self, spec: RunSpec) -> int:
        """Claim the task, run the command, record how it ended; return its exit status."""
        if not spec.command:
            raise ZombietopError(
                "nothing to run: give a command after --, e.g. zombietop run -- ./job.sh"
            )
        cwd = spec.cwd or os.getcwd()
        owner = owner_name("run", self.host)
        type_limits = self.config.limits_for(spec.step_type or spec.job)
        # Before the claim: a state directory that is not safely ours must not leave it claimed.
        folder = self._heartbeat_folder()
        if spec.after:
            # A job's name in --after means one of its runs (``upstream_wait``).
            window = after_window(type_limits)
            spec = replace(spec, after=await resolve_after(self.store, spec.after, window))
        while True:
            if spec.wait:
                waited = await self._wait_for_upstream(spec, owner, type_limits, cwd)
                if isinstance(waited, int):
                    return waited
                spec = waited
            claimed_at = time.monotonic()
            try:
                claim = await self._claim(spec, owner, type_limits, cwd)
            except UpstreamBlocked as exc:
                if not spec.wait:
                    raise
                # The upstream changed between the last look and the claim: wait again.
                self._say(f"{exc}; waiting again")
                continue
            except StoreError as exc:
                if self.unusable is None or isinstance(exc, StoreReplaced):
                    raise
                return await self.unusable(spec, exc)
            break
        task_id = claim.task.task_id
        self.lease_until = claimed_at + type_limits.lease_ttl
        limits = self.config.limits_for(claim.task.step_type)
        beat_file = write_new(folder / f"{task_file_name(task_id)}.{claim.token}.hb")
        try:
            return await self._supervise(claim, limits, spec, beat_file)
        finally:
            with contextlib.suppress(OSError):
                beat_file.unlink()
            if self.store_path is None:
                with contextlib.suppress(OSError):
                    folder.rmdir()

    async def _claim(
        self, spec: RunSpec, owner: str, limits: Limits, cwd: str, *, wait: bool = False
    ) -> Claim:
        """Claim the task (or the job's run) to start it now, or with ``wait`` to wait."""
        ttl, window = limits.lease_ttl, after_window(limits)
        if spec.job is not None:
            return await claim_run(
                self.store,
                job=spec.job,
                run=spec.run_id,
                owner=owner,
                ttl=ttl,
                step_type=spec.step_type,
                after=spec.after,
                command=spec.command,
                cwd=cwd,
                host=self.host,
                wait=wait,
                window=window,
            )
        return await claim_task(
            self.store,
            task_id=spec.task_id or default_task_id(spec.command),
            owner=owner,
            ttl=ttl,
            run_id=spec.run_id,
            step=Path(spec.command[0]).name,
            step_type=spec.step_type,
            after=spec.after,
            command=spec.command,
            cwd=cwd,
            host=self.host,
            wait=wait,
            window=window,
        )

    async def _wait_for_upstream(
        self, spec: RunSpec, owner: str, limits: Limits, cwd: str
    ) -> RunSpec | int:
        """Record the task queued behind its upstream and wait (``zombietop.run.upstream_wait``);
        the spec to start with once the upstream succeeded, else the exit status."""
        if spec.job is None:
            spec = replace(spec, task_id=spec.task_id or default_task_id(spec.command))
        claim = await self._claim(spec, owner, limits, cwd, wait=True)
        code = await UpstreamWait(self.store, self._say).wait(
            claim,
            interval=limits.heartbeat_interval,
            ttl=limits.lease_ttl,
            command=spec.command,
            window=after_window(limits),
        )
        # The upstream is in the task's record now: claiming again must not add it twice, and
        # a job's run waited for is the run to start.
        return code if code is not None else replace(spec, after=(), run_id=claim.task.run_id)

    def _heartbeat_folder(self) -> Path:
        if self.store_path is not None:
            return state_subdir(self.store_path, "heartbeats")
        return Path(tempfile.mkdtemp(prefix="zombietop-"))  # 0700, made for this run alone

    async def _supervise(self, claim: Claim, limits: Limits, spec: RunSpec, beat_file: Path) -> int:
        started = await self.store.now()
        output = self._output_log(claim)
        pipes = Passthrough(output, self._say) if output is not None else None
        child = Child()
        # Before the start: a signal that comes while the command starts is forwarded to it
        # once its pid is known, never left to kill the wrapper and orphan the command.
        self.signals.install(child, limits.kill_grace)
        try:
            if not spec.task_id:
                self._say(f"task {claim.task.task_id}")
            try:
                child.start(
                    spec.command,
                    cwd=spec.cwd or claim.task.cwd or os.getcwd(),
                    env=command_env(
                        claim, beat_file, self.trace, self.store_path, self.config.path
                    ),
                    stdout=None if pipes is None else pipes.stdout,
                    stderr=None if pipes is None else pipes.stderr,
                )
            except OSError as exc:
                if pipes is not None:
                    pipes.close()
                return await self._not_started(claim, spec, exc)
            self.signals.pass_early(child)
            try:
                code = await self._watch(claim, limits, child, beat_file, pipes, started)
            finally:
                if pipes is not None:
                    await pipes.finish(PUMP_DRAIN)
        finally:
            self.signals.remove()
            child.close()
        # All the output is in: a command that printed its beats and exited says so too.
        await self._mind_stray_beats(claim, file_used=_beat_file_used(beat_file), seen_by=math.inf)
        return code

    async def _not_started(self, claim: Claim, spec: RunSpec, exc: OSError) -> int:
        reason = f"cannot start {spec.command[0]!r}: {exc.strerror or exc}"
        self._say(reason)
        await self.store.finish_task(
            claim.task.task_id,
            owner=claim.owner,
            token=claim.token,
            state=TaskState.FAILED,
            exit_code=EXIT_CANNOT_START,
            reason=reason,
        )
        return EXIT_CANNOT_START

    def _output_log(self, claim: Claim) -> OutputLog | None:
        if self.store_path is None:
            return None
        task = claim.task
        try:
            log = OutputLog(private_output_path(self.store_path, task.task_id, task.attempt))
        except (OSError, UnsafePath) as exc:
            self._say(f"not keeping the output of {task.task_id}: {exc}")
            return None
        prune_attempts(self.store_path, task.task_id, task.attempt)
        return log

    async def _watch(
        self,
        claim: Claim,
        limits: Limits,
        child: Child,
        beat_file: Path,
        pipes: Passthrough | None,
        started: float,
    ) -> int:
        task_id = claim.task.task_id
        # First, before anything that can fail: once the store has the process, a kill and
        # the probe find it even if the wrapper dies right after.
        await self._record_process(claim, child)
        if pipes is not None:
            self.stray = pipes.stray
            pipes.start()
        tail = HeartbeatTail(beat_file)
        helpers = [
            asyncio.create_task(self._renew(claim, limits, child)),
            asyncio.create_task(self._tail(claim, limits, tail)),
            asyncio.create_task(self._observe(claim, limits, child, pipes)),
        ]
        try:
            returncode = await child.wait()
        finally:
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
        code = exit_status(returncode)
        if self.store_gone:
            return code
        try:
            if self.lost is None:
                # The command's last words count: read what it wrote just before it exited, or
                # repeat the newest line in case the cancelled tail was recording it just then.
                tail.last_line()
                if tail.latest is not None:
                    await self._record_line(claim, tail.latest)
                assert child.pid is not None
                pid = child.pid
                await self._keep_trying(
                    claim,
                    limits,
                    f"the exit of {task_id} (exit {code})",
                    lambda: record_exit(
                        self.store,
                        claim,
                        pid=pid,
                        returncode=returncode,
                        started=started,
                        signals=self.signals,
                    ),
                )
            else:
                await record_lost(self.store, claim, returncode, self.lost)
        except StoreReplaced as exc:
            self._lose_store(exc, claim)
        return code

    async def _record_process(self, claim: Claim, child: Child) -> None:
        """Record the command's pid and start; when the store fails, say so and leave it to
        the next round."""
        assert child.pid is not None
        # Read here, not on a thread: a thread may not start now (the user's process limit),
        # and this is one small /proc read.
        start = read_start(child.pid)
        if start is None:
            # Gone already: its exit is what gets recorded, and the trace it ran in.
            with contextlib.suppress(StoreError, LeaseLost):
                await self.store.set_trace(
                    claim.task.task_id, owner=claim.owner, token=claim.token, trace=self.trace
                )
            return
        self.unrecorded = start
        try:
            await self._set_process(claim, child.pid, start)
        except StoreError as exc:
            self._say(f"could not record the process of {claim.task.task_id} yet: {exc}")

    async def _set_process(self, claim: Claim, pid: int, start: ProcessStart) -> None:
        try:
            await self.store.set_process(
                claim.task.task_id,
                owner=claim.owner,
                token=claim.token,
                pid=pid,
                pid_start_time=start.time,
                pid_start_identity=start.identity,
                host=self.host,
                trace=self.trace,
            )
        except StoreReplaced as exc:
            self._lose_store(exc, claim)
        except LeaseLost:
            pass  # the renew loop notices and stops the command
        self.unrecorded = None

    async def _keep_trying(
        self, claim: Claim, limits: Limits, what: str, write: Callable[[], Awaitable[None]]
    ) -> None:
        """Write ``what`` to the store. While the store fails (a full disk, a server that is
        down), try again every heartbeat_interval, renewing the lease meanwhile, until
        ``PAST_THE_LEASE`` lease_ttls past the last renewal: an end is still taken after the
        lease expired, as long as nobody took the lease over. Say on stderr what is waited
        for, and how it ended."""
        try:
            await write()
            return
        except LeaseLost as exc:
            self._say(f"{what} is not recorded: {exc}")
            return
        except StoreReplaced:
            raise
        except StoreError as exc:
            error = exc
        interval, ttl = limits.heartbeat_interval, limits.lease_ttl
        patience = (1 + PAST_THE_LEASE) * ttl
        self._say(
            f"cannot record {what} yet: {error}; trying again every {_seconds(interval)}, and "
            f"renewing the lease meanwhile, for up to {_seconds(patience)} after the last "
            "renewal, as long as nobody takes the lease over"
        )
        tries = 1
        while True:
            await asyncio.sleep(interval)
            # A renewal refused (expired, or taken over) ends nothing: the write says which.
            with contextlib.suppress(LeaseLost, StoreError):
                await self._renew_once(claim, limits)
            tries += 1
            try:
                await write()
            except LeaseLost as exc:
                self._say(f"{what} is not recorded: {exc}")
                return
            except StoreReplaced:
                raise
            except StoreError as exc:
                error = exc
            else:
                self._say(f"recorded {what} after {tries} tries")
                return
            if time.monotonic() >= self.lease_until + PAST_THE_LEASE * ttl:
                break
        self._say(
            f"gave up: {what} is not recorded ({error}), and the lease could not be renewed for "
            f"{_seconds(patience)}; {claim.task.task_id} stays unfinished in the store: resume "
            "or discard it once the store works again"
        )

    def _lose_store(self, exc: StoreReplaced, claim: Claim) -> None:
        """The store's path names another file now (or none): the command is not at fault, so
        let it finish, and say once that nothing more of this run is recorded there."""
        if not self.store_gone:
            self.store_gone = True
            self._say(f"{exc}; {claim.task.task_id} keeps running unrecorded")

    async def _renew(self, claim: Claim, limits: Limits, child: Child) -> None:
        while True:
            await asyncio.sleep(limits.heartbeat_interval)
            if child.returncode is not None:
                return
            try:
                await self._renew_once(claim, limits)
            except LeaseLost as exc:
                self.lost = str(exc)
                self._say(f"{exc}; stopping the command so two owners never run")
                await self._stop(child, limits.kill_grace)
                return
            except StoreReplaced as exc:
                self._lose_store(exc, claim)
            except StoreError as exc:
                # A busy store is not a lost lease: try again next interval, the TTL has room.
                self._say(f"could not renew the lease on {claim.task.task_id}: {exc}")
                continue
            if self.unrecorded is not None and child.pid is not None:
                with contextlib.suppress(StoreError):
                    await self._set_process(claim, child.pid, self.unrecorded)

    async def _renew_once(self, claim: Claim, limits: Limits) -> None:
        """Renew the lease once; on success, move ``lease_until`` on."""
        asked_at = time.monotonic()
        self.store.check_path()
        await self.store.renew_lease(
            claim.task.task_id, owner=claim.owner, token=claim.token, ttl=limits.lease_ttl
        )
        self.lease_until = asked_at + limits.lease_ttl

    async def _stop(self, child: Child, grace: float) -> None:
        """TERM the command's group, give it ``grace`` seconds, then KILL it."""
        child.signal_group(signal.SIGTERM)
        try:
            await asyncio.wait_for(child.wait(), timeout=grace)
        except TimeoutError:
            child.signal_group(signal.SIGKILL)

    async def _tail(self, claim: Claim, limits: Limits, tail: HeartbeatTail) -> None:
        interval = self.tail_interval or min(limits.heartbeat_interval / 2, 1.0)
        while True:
            before = time.monotonic()
            await asyncio.sleep(interval)
            await self._beat(claim, tail)
            # A line printed before the sleep had a whole interval to reach the file as well.
            await self._mind_stray_beats(claim, file_used=tail.latest is not None, seen_by=before)

    async def _mind_stray_beats(self, claim: Claim, *, file_used: bool, seen_by: float) -> None:
        """Say once (stderr, and an event for on-call) how to send the beats the command
        printed on its output, while none reached the heartbeat file."""
        if self.stray is None:
            return
        said = self.stray.hint_due(file_used=file_used, seen_by=seen_by)
        if said is None:
            return
        self._say(said)
        if self.store_gone:
            return
        with contextlib.suppress(StoreError):
            await self.store.record_event(
                kind=EventKind.NOTE,
                actor=claim.owner,
                task_id=claim.task.task_id,
                message=said,
            )

    async def _beat(self, claim: Claim, tail: HeartbeatTail) -> None:
        line = tail.last_line()
        if line is not None:
            self.line_at = time.monotonic()
            await self._record_line(claim, line)

    async def _observe(
        self,
        claim: Claim,
        limits: Limits,
        child: Child,
        pipes: Passthrough | None,
    ) -> None:
        """Record an observed heartbeat each interval the command's tree did something while
        the command wrote no heartbeat line (or none for the heartbeat timeout)."""
        assert child.pid is not None
        activity = TreeActivity(child.pid)
        last: tuple[float, int, int] | None = None
        while True:
            await asyncio.sleep(limits.heartbeat_interval)
            if child.returncode is not None:
                return
            lines = 0 if pipes is None else pipes.log.lines
            # On the loop, not a thread: one may not start now (the user's process limit), and
            # a tree costs a few small /proc reads.
            cpu_s, io = activity.read()
            now = (round(cpu_s, 2), io, lines)
            moved = last is not None and now != last
            quiet = (
                self.line_at is None or time.monotonic() - self.line_at > limits.heartbeat_timeout
            )
            # The first look is the baseline: starting a process costs CPU and I/O of its own.
            last = now
            if not (moved and quiet):
                continue
            counters = {"cpu_s": now[0], "io_bytes": float(now[1]), "out_lines": float(now[2])}
            try:
                await self.store.record_observed_heartbeat(
                    claim.task.task_id, counters, owner=claim.owner, token=claim.token
                )
            except LeaseLost:
                return  # the renew loop notices and stops the command
            except StoreReplaced as exc:
                self._lose_store(exc, claim)  # said once, however busy the command is
            except StoreError as exc:
                self._say(f"could not record activity of {claim.task.task_id}: {exc}")

    async def _record_line(self, claim: Claim, line: str) -> None:
        task_id = claim.task.task_id
        try:
            beat = parse_line(line)
        except HeartbeatParseError as exc:
            # A visible reason on the task, never a crash of the wrapper.
            with contextlib.suppress(StoreError):
                await self.store.record_heartbeat_error(task_id, str(exc))
            return
        try:
            await self.store.record_heartbeat(task_id, beat, owner=claim.owner, token=claim.token)
        except LeaseLost:
            pass  # the renew loop notices and stops the command
        except StoreReplaced as exc:
            self._lose_store(exc, claim)
        except StoreError as exc:
            self._say(f"could not record a heartbeat for {task_id}: {exc}")


# For ``zombietop.run.fail_open``: a run claimed, and a command adopted, once the store can be used.


async def claim_for(runner: Runner, spec: RunSpec, owner: str, limits: Limits, cwd: str) -> Claim:
    """Claim the task or the job's run now."""
    return await runner._claim(spec, owner, limits, cwd)


async def adopt(runner: Runner, claim: Claim, child: Child, beat_file: Path) -> int:
    """Watch a command that started before its run could be claimed; its exit status."""
    limits = runner.config.limits_for(claim.task.step_type)
    runner.lease_until = time.monotonic() + limits.lease_ttl
    started = await runner.store.now()
    return await runner._watch(claim, limits, child, beat_file, None, started)
