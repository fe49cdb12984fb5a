"""``zombietop run --after X --wait``: record the task queued behind X, and wait for X to succeed.

The waiter creates its task ``queued`` with its upstream and takes the task's lease without
starting it (the task stays queued). Then, every heartbeat_interval, it renews the lease and
reads each upstream task once; it never loops faster. What it finds decides:

- every upstream succeeded: the lease is let go, and ``zombietop run`` claims the task as
  usual (the token grows by one) and starts the command;
- an upstream was discarded or failed: it will never succeed, so the task ends ``failed``
  with that reason and the command never starts;
- anything else (running, queued, quarantined, interrupted): keep waiting. A quarantined or
  interrupted upstream waits for a human, and the dashboard shows the task blocked behind it.

While it waits the task is ``queued``, not running: no process of its work exists yet, so
there is nothing to beat, to kill or to resume, and the page (if any) belongs to the upstream.
The lease is what tells a live waiter from a dead one: a waiter that dies stops renewing, the
lease expires, and the task shows ``reclaimable`` for its own reason.

An upstream may not have started yet: cron starts ``extract`` and ``publish --after extract
--wait`` at the same minute, and either may come first. A name that is no task yet is waited
for. A job's name means one of its runs: its latest run if that has not finished or started
within ``queue_timeout`` (``lease_ttl`` when that is off) before the waiting task, or else its
next run (``resolve_after``, then ``_look`` each round). A name that never appears is waited
for until a human ends the wait; past ``queue_timeout`` the task is ``queued_too_long``.

SIGTERM, SIGINT and SIGHUP end the wait cleanly: the task ends ``interrupted`` with who
stopped it, and the wrapper exits 128 + the signal's number, as a shell would.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Sequence

from zombietop.config import Limits
from zombietop.errors import LeaseLost, StoreError, TaskNotFound
from zombietop.model import TaskState
from zombietop.run.claim import Claim, job_run_after, upstream_task
from zombietop.store import Store

WAIT_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
EXIT_UPSTREAM_GONE = 1
"""The exit status when an upstream was discarded or failed, so the command never ran."""
EXIT_LEASE_LOST = 2
"""The exit status when someone else took the waiting task (resumed or discarded it)."""

GONE = (TaskState.DISCARDED, TaskState.FAILED)


def after_window(limits: Limits) -> float:
    """How long before a waiting task a job's run may have started and still be the run it
    waits for: ``queue_timeout``, or ``lease_ttl`` when that is off."""
    return limits.queue_timeout or limits.lease_ttl


def _upstream_word(names: Sequence[str]) -> str:
    return ", ".join(names)


async def resolve_after(store: Store, after: Sequence[str], window: float) -> tuple[str, ...]:
    """Name each upstream by its task id where it can be known now: a task's own id, or a
    job's run (``job_run_after``) that started within ``window`` seconds before now. A name
    that is neither stays as given, and ``UpstreamWait`` looks for it each round."""
    now = await store.now()
    names: list[str] = []
    for name in after:
        try:
            await store.get_task(name)
        except TaskNotFound:
            run = await job_run_after(store, name, now - window)
            names.append(name if run is None else run.task_id)
        else:
            names.append(name)
    return tuple(names)


class UpstreamWait:
    """Hold a queued task's lease until its upstream succeeds, ends badly, or a signal comes."""

    def __init__(self, store: Store, say: Callable[[str], None]) -> None:
        self.store = store
        self.say = say
        self.stopped_by: signal.Signals | None = None
        self._stop = asyncio.Event()
        self._not_started: set[str] = set()
        """Upstream names said once to have not started yet."""
        self._since = 0.0
        """A job's run created since then, or not finished, is the run waited for."""

    async def wait(
        self,
        claim: Claim,
        *,
        interval: float,
        ttl: float,
        command: Sequence[str],
        window: float = 0.0,
    ) -> int | None:
        """Wait for the upstream of ``claim``'s task; None: it succeeded, start the command
        (the lease is let go). Otherwise the task has ended and this is the exit status.
        ``window``: as for ``resolve_after``, a job's run that started that long before the
        task is the one it waits for (it may have run between ``resolve_after`` and the claim)."""
        task, upstream = claim.task, claim.task.upstream
        self._since = task.created_at - window
        names = _upstream_word(upstream)
        self.say(f"{task.task_id} waits for {names} (checked every {interval:g}s)")
        loop = asyncio.get_running_loop()
        for sig in WAIT_SIGNALS:
            loop.add_signal_handler(sig, self._on_signal, sig)
        try:
            while True:
                verdict = await self._look(claim, upstream, command)
                if verdict != "wait":
                    return None if verdict == "go" else EXIT_UPSTREAM_GONE
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), timeout=interval)
                if self.stopped_by is not None:
                    return await self._interrupted(claim, upstream)
                try:
                    await self.store.renew_lease(
                        task.task_id, owner=claim.owner, token=claim.token, ttl=ttl
                    )
                except LeaseLost as exc:
                    self.say(f"{exc}; not starting {task.task_id}: it is someone else's now")
                    return EXIT_LEASE_LOST
                except StoreError as exc:
                    # A busy store is not a lost lease: the ttl has room for the next try.
                    self.say(f"could not renew the lease on {task.task_id}: {exc}")
        finally:
            for sig in WAIT_SIGNALS:
                loop.remove_signal_handler(sig)

    def _on_signal(self, sig: signal.Signals) -> None:
        self.stopped_by = sig
        self._stop.set()

    async def _look(self, claim: Claim, upstream: Sequence[str], command: Sequence[str]) -> str:
        """Read each upstream task once: "go", "wait", or "ended" (the task is now failed)."""
        task_id = claim.task.task_id
        waiting = False
        for name in upstream:
            try:
                up = await upstream_task(self.store, name, self._since)
            except StoreError as exc:
                self.say(f"could not read upstream {name} of {task_id}: {exc}")
                return "wait"
            if up is None:
                if name not in self._not_started:
                    self._not_started.add(name)
                    self.say(f"{task_id} waits for {name}: not started yet")
                waiting = True
                continue
            if up.state in GONE:
                why = f" ({up.state_reason})" if up.state_reason else ""
                return await self._fail(claim, f"upstream {name} was {up.state}{why}", command)
            if up.state is not TaskState.SUCCEEDED or up.quarantined:
                waiting = True
        if waiting:
            return "wait"
        await self.store.release_lease(task_id, owner=claim.owner, token=claim.token)
        self.say(f"{_upstream_word(upstream)} succeeded: starting {task_id}")
        return "go"

    async def _fail(self, claim: Claim, why: str, command: Sequence[str]) -> str:
        reason = f"{why}; {command[0]} never started"
        self.say(f"{claim.task.task_id} failed: {reason}")
        await self.store.finish_task(
            claim.task.task_id,
            owner=claim.owner,
            token=claim.token,
            state=TaskState.FAILED,
            reason=reason,
        )
        return "ended"

    async def _interrupted(self, claim: Claim, upstream: Sequence[str]) -> int:
        assert self.stopped_by is not None
        name = self.stopped_by.name
        stopper = f"{name} while waiting for {_upstream_word(upstream)}, before the command started"
        self.say(f"{claim.task.task_id} stopped by {stopper}")
        await self.store.finish_task(
            claim.task.task_id,
            owner=claim.owner,
            token=claim.token,
            state=TaskState.INTERRUPTED,
            exit_code=128 + self.stopped_by.value,
            reason=f"stopped by {stopper}",
            stopped_by=name,
        )
        return 128 + self.stopped_by.value
