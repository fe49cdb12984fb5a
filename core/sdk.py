"""The job SDK: a lease, progress heartbeats and atomic checkpoints for a Python job.

    from zombietop.sdk import Job

    with Job("export-2031", step_type="export") as job:
        start = (job.load_checkpoint() or {}).get("offset", 0)
        for offset in range(start, TOTAL):
            with job.request("fetch"):
                rows = fetch(offset)
            job.checkpoint({"offset": offset + 1})
            job.beat("transform", 100 * (offset + 1) / TOTAL, rows=(offset + 1) * len(rows))

Beat after each piece of work, so that a finished job reads 100% (README.md has the example
whole, and the suite runs it).

Entering takes the lease (refusing while an upstream task is quarantined or not succeeded) and
renews it in the background. Leaving records succeeded, or failed with the exception. SIGTERM
marks the task interrupted, sets an unfinished checkpoint aside as ``<checkpoint>.tmp`` and
exits 143, so the next resume starts from the last complete checkpoint.

Under ``zombietop run`` (``ZOMBIETOP_TASK`` names this task) the job adopts the wrapper's lease:
the wrapper renews it and records the exit; the job only beats and checkpoints.

The job joins the trace in ``TRACEPARENT`` (``zombietop run`` sets it) or starts one, carries
its id in every heartbeat (``trace=``), and sets ``TRACEPARENT`` and ``TRACESTATE`` for what it
starts, with its own span as the parent (``zombietop.trace_context``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Coroutine, Iterator, Sequence
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, Self, TypeVar

from zombietop.config import Config, Limits, load_config, resolve_config_path
from zombietop.errors import (
    LeaseLost,
    RequestTimeout,
    StoreError,
    TaskFinished,
    TaskNotFound,
    ZombietopError,
)
from zombietop.heartbeat_line import BeatLine
from zombietop.locations import (
    TIE_FOLDER,
    adopt_legacy_file,
    default_store_path,
    safe_name,
    state_dir,
    store_location,
    task_file_name,
)
from zombietop.model import Lease, Task, TaskState
from zombietop.private import create_new, open_append, open_read, private_dir, state_subdir
from zombietop.procs import read_start, this_host
from zombietop.run.claim import Claim, claim_task, owner_name
from zombietop.run.job_runs import check_job_name, claim_run
from zombietop.store import Store, open_store
from zombietop.trace_context import join_or_start

T = TypeVar("T")
PARTIAL_SUFFIX = ".partial"
"""A checkpoint being written; renamed over the real one only once it is complete and synced."""
ASIDE_SUFFIX = ".tmp"
"""Where an unfinished checkpoint is set aside after SIGTERM or a crash, for a human to inspect."""
CALL_TIMEOUT = 30.0
EXIT_SIGTERM = 128 + signal.SIGTERM


def _store_path(db: str | Path | None, config: Config) -> Path | str:
    if db is not None:
        return store_location(db)
    env = os.environ.get("ZOMBIETOP_DB")
    if env:
        return store_location(env)
    return config.store_path or default_store_path()


class _LoopThread:
    """An event loop of the job's own, on a daemon thread.

    The job's code is synchronous, but the store is async: running the store (and the lease
    renewal) on a private loop keeps one implementation of fencing, and the renewal keeps going
    while the job's main thread is busy or blocked.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="zombietop-job", daemon=True
        )
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = CALL_TIMEOUT) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self.loop.close()


class Job:
    """Hold a task's lease for the length of a ``with`` block; see the module docstring."""

    def __init__(
        self,
        task_id: str | None = None,
        *,
        job: str | None = None,
        run: str | None = None,
        db: str | Path | None = None,
        config: Config | str | Path | None = None,
        run_id: str | None = None,
        step: str | None = None,
        step_type: str | None = None,
        after: Sequence[str] = (),
        checkpoint_path: str | Path | None = None,
        handle_sigterm: bool = True,
        host: str | None = None,
    ) -> None:
        if (task_id is None) == (job is None):
            raise ZombietopError(
                "Job needs a task id or a job name, not both: Job('export-2031') for one run, "
                "Job(job='nightly-export') for a new run of a job each time"
            )
        self.job = check_job_name(job) if job is not None else None
        self._run = run
        if isinstance(config, Config):
            self.config = config
        else:
            self.config = load_config(Path(config) if config else resolve_config_path(None))
        self.db = _store_path(db, self.config)
        self.limits: Limits = self.config.limits_for(step_type or job)
        self._run_id, self._step, self._step_type, self._after = (
            run_id,
            step,
            step_type,
            tuple(after),
        )
        self.host = host if host is not None else this_host()
        self.task_id = task_id or ""
        """The run's task id; for a run of a job, known once the ``with`` block is entered."""
        self.checkpoint_path = Path(checkpoint_path) if checkpoint_path else Path()
        self._own_checkpoint_dir = not checkpoint_path
        """The default folder is zombietop's, so it must be private; a path given is the job's."""
        self._handle_sigterm = handle_sigterm
        self._loop: _LoopThread | None = None
        self._store: Store | None = None
        self._claim: Claim | None = None
        self._adopted = False
        self._renewer: concurrent.futures.Future[None] | None = None
        self._lost: str | None = None
        self._done = False
        self._sigterm = False
        self._previous_handler: Any = None
        self._stage: str | None = None
        self._progress: float | None = None
        self._counters: dict[str, float] = {}
        self._request: str | None = None
        self._checkpoint_recorded = False
        self._tie_fd: int | None = None
        self.trace = join_or_start(os.environ)
        """The trace the job runs in: its caller's (``TRACEPARENT``, which ``zombietop run``
        sets), joined with a span of its own, or a new one."""
        if task_id is not None:
            self._place_checkpoint()

    def _place_checkpoint(self) -> None:
        """Put the checkpoint in zombietop's folder, named for the task, unless a path was given."""
        if not self._own_checkpoint_dir:
            return
        folder = state_dir(self.db) / "checkpoints"
        self.checkpoint_path = folder / f"{task_file_name(self.task_id)}.json"
        adopt_legacy_file(folder / f"{safe_name(self.task_id)}.json", self.checkpoint_path)

    # Entering and leaving ------------------------------------------------------------------

    def __enter__(self) -> Self:
        self._loop = _LoopThread()
        try:
            self._store = self._loop.call(open_store(self.db, create=True))
            self._claim = self._loop.call(self._take())
        except TaskFinished as exc:
            self._shutdown()
            # The message says what to do; the frames of the store behind it would only hide it.
            raise TaskFinished(str(exc)) from None
        except BaseException:
            self._shutdown()
            raise
        self.limits = self.config.limits_for(self._claim.task.step_type)
        # What the job starts runs in its trace, below its own span.
        os.environ.update(self.trace.child_env())
        self._set_aside_partial()
        if not self._adopted:
            self._renewer = asyncio.run_coroutine_threadsafe(self._renew(), self._loop.loop)
        if self._handle_sigterm and threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    async def _take(self) -> Claim:
        assert self._store is not None
        owner = os.environ.get("ZOMBIETOP_LEASE_OWNER")
        token = os.environ.get("ZOMBIETOP_LEASE_TOKEN", "")
        wrapped = await self._wrapped_task()
        if wrapped is not None and owner and token.isdigit():
            # `zombietop run` holds the lease for us; taking it again would fence out the wrapper.
            self._adopted = True
            self.task_id = wrapped.task_id
            self._place_checkpoint()
            lease = Lease(task_id=self.task_id, owner=owner, token=int(token))
            return Claim(task=wrapped, lease=lease, owner=owner)
        claim = await self._claim_it()
        self.task_id = claim.task.task_id
        self._place_checkpoint()
        # Held open until the job ends: the tie a kill checks (zombietop.procs.tie) for a job
        # started by hand, whose environment and command line name no task.
        tie_file = state_subdir(self.db, TIE_FOLDER) / task_file_name(self.task_id)
        self._tie_fd = open_append(tie_file)
        start = read_start(os.getpid())
        if start is not None:
            await self._store.set_process(
                self.task_id,
                owner=claim.owner,
                token=claim.token,
                pid=os.getpid(),
                pid_start_time=start.time,
                pid_start_identity=start.identity,
                host=self.host,
                trace=self.trace,
            )
        return claim

    async def _wrapped_task(self) -> Task | None:
        """The task ``zombietop run`` started this job as (``ZOMBIETOP_TASK``), when it is
        this task or a run of this job; None otherwise."""
        assert self._store is not None
        name = os.environ.get("ZOMBIETOP_TASK")
        if not name or (self.job is None and name != self.task_id):
            return None
        try:
            task = await self._store.get_task(name)
        except TaskNotFound:
            return None
        if self.job is not None and task.job != self.job:
            return None
        return task

    async def _claim_it(self) -> Claim:
        assert self._store is not None
        owner = owner_name("sdk", self.host)
        ttl = self.config.limits_for(self._step_type or self.job).lease_ttl
        if self.job is not None:
            return await claim_run(
                self._store,
                job=self.job,
                run=self._run,
                owner=owner,
                ttl=ttl,
                step_type=self._step_type,
                after=self._after,
                cwd=os.getcwd(),
                host=self.host,
            )
        return await claim_task(
            self._store,
            task_id=self.task_id,
            owner=owner,
            ttl=ttl,
            run_id=self._run_id,
            step=self._step,
            step_type=self._step_type,
            after=self._after,
            cwd=os.getcwd(),
            host=self.host,
        )

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if not self._done and not self._adopted and self._lost is None:
                code = exc.code if isinstance(exc, SystemExit) else None
                if self._sigterm:
                    where = f" at stage {self._stage}" if self._stage else ""
                    self._finish(TaskState.INTERRUPTED, EXIT_SIGTERM, f"stopped by SIGTERM{where}")
                elif exc is None or (isinstance(exc, SystemExit) and not code):
                    self._finish(TaskState.SUCCEEDED, 0, None)
                elif isinstance(exc, SystemExit):
                    status = code if isinstance(code, int) else 1
                    self._finish(TaskState.FAILED, status, f"exited with {code!r}")
                elif isinstance(exc, KeyboardInterrupt):
                    self._finish(TaskState.INTERRUPTED, 130, "stopped by SIGINT")
                else:
                    self._finish(TaskState.FAILED, 1, f"{type(exc).__name__}: {exc}")
        finally:
            self._shutdown()

    def _finish(self, state: TaskState, code: int, reason: str | None) -> None:
        self._done = True
        assert self._loop is not None and self._store is not None and self._claim is not None
        stopped_by = None
        with contextlib.suppress(LeaseLost, StoreError):
            stopped_by = self._loop.call(self._killed_by())
            if stopped_by is None and state is TaskState.INTERRUPTED:
                stopped_by = "a signal from outside zombietop"
            elif stopped_by is not None and state is not TaskState.INTERRUPTED:
                # A job that handles TERM itself and ends cleanly was still stopped: killed is
                # killed, whatever the exit, so nothing downstream runs on half-done work.
                state, reason = TaskState.INTERRUPTED, f"stopped by {stopped_by} (exit {code})"
            self._loop.call(
                self._store.finish_task(
                    self.task_id,
                    owner=self._claim.owner,
                    token=self._claim.token,
                    state=state,
                    exit_code=code,
                    reason=reason,
                    stopped_by=stopped_by,
                )
            )

    async def _killed_by(self) -> str | None:
        """Who killed this process, if a kill recorded in the store targeted it this attempt."""
        assert self._store is not None and self._claim is not None
        kill = (await self._store.get_record(self.task_id)).pending_kill
        started = self._claim.lease.acquired_at or self._claim.task.claimed_at or 0.0
        if kill is not None and kill.pid == os.getpid() and kill.term_sent_at >= started:
            return f"a kill by {kill.requested_by}"
        return None

    def _shutdown(self) -> None:
        if self._tie_fd is not None:
            os.close(self._tie_fd)
            self._tie_fd = None
        if self._previous_handler is not None:
            signal.signal(signal.SIGTERM, self._previous_handler)
            self._previous_handler = None
        if self._renewer is not None:
            self._renewer.cancel()
        if self._loop is not None:
            if self._store is not None:
                with contextlib.suppress(Exception):
                    self._loop.call(self._store.close(), timeout=5)
            self._loop.stop()
            self._loop = None

    async def _renew(self) -> None:
        assert self._store is not None and self._claim is not None
        while True:
            await asyncio.sleep(self.limits.heartbeat_interval)
            try:
                await self._store.renew_lease(
                    self.task_id,
                    owner=self._claim.owner,
                    token=self._claim.token,
                    ttl=self.limits.lease_ttl,
                )
            except LeaseLost as exc:
                # Not ours any more: beat() and checkpoint() now raise, still_owner() says False.
                self._lost = str(exc)
                return
            except StoreError:
                continue  # a busy store is not a lost lease; the TTL has room for a retry

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        if self._done or self._sigterm:
            return
        self._sigterm = True
        self._set_aside_partial()
        # Record nothing here: the handler may have interrupted the main thread inside a wait on
        # the loop thread, holding a lock that thread needs, and waiting on it again would
        # deadlock. Unwinding to __exit__ releases it; __exit__ records the interruption.
        raise SystemExit(EXIT_SIGTERM)

    # What the job calls --------------------------------------------------------------------

    @property
    def token(self) -> int:
        assert self._claim is not None, "use Job inside a with block"
        return self._claim.token

    @property
    def attempt(self) -> int:
        assert self._claim is not None, "use Job inside a with block"
        return self._claim.task.attempt

    def still_owner(self) -> bool:
        """True while this job holds the lease (nobody resumed, discarded or reclaimed it)."""
        if (
            self._lost is not None
            or self._loop is None
            or self._store is None
            or self._claim is None
        ):
            return False
        claim = self._claim
        return self._loop.call(
            self._store.still_owner(self.task_id, owner=claim.owner, token=claim.token)
        )

    def beat(
        self, stage: str | None = None, progress: float | None = None, **counters: float
    ) -> None:
        """Record progress; raise ``LeaseLost`` once the task is no longer ours."""
        if stage is not None:
            self._stage = stage
        if progress is not None:
            self._progress = progress
        self._counters.update(counters)
        self._send()

    def _send(self) -> None:
        if self._lost is not None:
            raise LeaseLost(self._lost)
        assert self._loop is not None and self._store is not None and self._claim is not None
        checkpoint = str(self.checkpoint_path) if self.checkpoint_path.exists() else None
        line = BeatLine(
            stage=self._stage,
            progress=self._progress,
            counters=dict(self._counters),
            checkpoint=checkpoint,
            request=self._request,
            trace=self.trace.trace_id,
            at=time.time(),  # this host's clock: against the store's, it measures the skew
        )
        self._loop.call(
            self._store.record_heartbeat(
                self.task_id, line, owner=self._claim.owner, token=self._claim.token
            )
        )

    def checkpoint(self, data: Any) -> Path:
        """Write ``data`` (JSON) as the checkpoint, atomically: temp file, fsync, rename."""
        blob = json.dumps(data, sort_keys=True).encode()
        path = self.checkpoint_path
        if self._own_checkpoint_dir:
            private_dir(state_dir(self.db))
            private_dir(path.parent)
        else:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = path.with_name(path.name + PARTIAL_SUFFIX)
        # 0600 and never through a link; the rename replaces a link at ``path``, never follows it.
        with open(create_new(partial), "wb") as handle:
            handle.write(blob)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
        _fsync_dir(path.parent)
        if not self._checkpoint_recorded:
            # The path never changes, so the store needs to hear of it only once.
            self._checkpoint_recorded = True
            self._send()
        return path

    def load_checkpoint(self) -> Any:
        """Return the last complete checkpoint, or None when there is none yet."""
        try:
            with open(open_read(self.checkpoint_path), "rb") as handle:
                return json.loads(handle.read())
        except FileNotFoundError:
            return None

    def _set_aside_partial(self) -> None:
        partial = self.checkpoint_path.with_name(self.checkpoint_path.name + PARTIAL_SUFFIX)
        with contextlib.suppress(FileNotFoundError):
            os.replace(
                partial, self.checkpoint_path.with_name(self.checkpoint_path.name + ASIDE_SUFFIX)
            )

    @contextlib.contextmanager
    def request(self, name: str, timeout: float | None = None) -> Iterator[None]:
        """Record ``name`` as the request in flight; raise ``RequestTimeout`` past the budget.

        In the main thread the budget is enforced with SIGALRM, so a call blocked in a socket
        fails at the deadline; elsewhere the overrun is raised when the block ends.
        """
        budget = self.limits.request if timeout is None else timeout
        self._request = name
        self._send()
        # An outer alarm due sooner (a test runner's timeout, the job's own) keeps priority.
        outer_delay, outer_interval = signal.getitimer(signal.ITIMER_REAL)
        alarm = threading.current_thread() is threading.main_thread() and (
            outer_delay == 0 or outer_delay > budget
        )
        previous: Any = None

        def expire(signum: int, frame: FrameType | None) -> None:
            raise RequestTimeout(
                f"request {name!r} of {self.task_id} ran past its {budget:g} s budget; failed fast"
            )

        if alarm:
            previous = signal.signal(signal.SIGALRM, expire)
            signal.setitimer(signal.ITIMER_REAL, budget)
        started = time.monotonic()
        try:
            yield
        finally:
            if alarm:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, previous)
                if outer_delay:
                    left = max(outer_delay - (time.monotonic() - started), 0.001)
                    signal.setitimer(signal.ITIMER_REAL, left, outer_interval)
            self._request = None
        if time.monotonic() - started > budget:
            raise RequestTimeout(
                f"request {name!r} of {self.task_id} took longer than its {budget:g} s budget"
            )
        self._send()


def _fsync_dir(folder: Path) -> None:
    """Make a rename durable: sync the directory that holds it."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
