"""A run that starts while its store cannot be used: the command runs anyway, unwatched.

A broken monitor never stops a job. When ``zombietop run --job`` cannot open its store or
claim its run (a read-only mount, a corrupt file, a server that is down), it says so once on
stderr and runs the command with no lease and no heartbeats. Meanwhile it tries again every
heartbeat_interval to open the store and claim the run; once it can, the run is recorded and
watched from then on like any other (``runner.adopt``). A command that ends first is recorded
as soon as the store takes it, for a few seconds at most; either way the wrapper exits with the
command's status.

A ``--task ID`` run (the lease on that one run is the point) and an ``--after`` run (nothing
else proves its upstream succeeded) refuse instead, unless ``--no-require-lease`` or the step
type's ``require_lease = false`` says otherwise; ``--require-lease`` or ``require_lease =
true`` makes a ``--job`` run refuse too.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from zombietop.config import Config, Limits
from zombietop.durations import format_age
from zombietop.errors import StoreError
from zombietop.locations import clean_env
from zombietop.model import EventKind
from zombietop.run.child import Child, exit_status
from zombietop.run.claim import Claim
from zombietop.run.run_exit import record_exit
from zombietop.run.signal_forwarding import SignalForwarding
from zombietop.store import Store

EXIT_CANNOT_START = 127
AFTER_END_S = 15.0
"""How long a command that ended unwatched waits, at most, for the store to take its run (and
never past lease_ttl): a cron slot is not held long for a monitor that stays broken."""

Adopt = Callable[[Store, SignalForwarding, Claim, Child, Path], Awaitable[int]]
"""Watch a running command from now on under ``Claim`` (``runner.adopt``); its exit status."""


def lease_required(
    *, flag: bool | None, limits: Limits, job: str | None, after: Sequence[str], wait: bool
) -> bool:
    """Whether the command must not run without its lease: the flag, else the step type's
    ``require_lease``, else only for a ``--task`` or ``--after`` run (``--wait`` always)."""
    if wait:
        return True  # waiting for the upstream is done in the store: there is no other way
    if flag is not None:
        return flag
    if limits.require_lease is not None:
        return limits.require_lease
    return job is None or bool(after)


class Unwatched:
    """Run the command without its lease; record the run once the store can be used."""

    def __init__(
        self,
        config: Config,
        limits: Limits,
        command: Sequence[str],
        *,
        cwd: str | None,
        opener: Callable[[], Awaitable[Store]],
        where: str,
        store: Store | None,
        claim: Callable[[Store], Awaitable[Claim]],
        adopt: Adopt,
        say: Callable[[str], None],
    ) -> None:
        self.config = config
        self.limits = limits
        self.command = tuple(command)
        self.cwd = cwd or os.getcwd()
        self.opener = opener
        self.where = where
        self.store = store
        """The store, once it opened (given when it opened and only the claim failed)."""
        self._opened = False
        self.claim = claim
        self.adopt = adopt
        self.say = say
        self.signals = SignalForwarding(say)
        self.last_error: StoreError | None = None

    async def run(self, error: StoreError) -> int:
        """Say why the run is unwatched, run the command, and return its exit status."""
        self.say(
            f"cannot use the store {self.where} ({error}); running the command unwatched, with "
            "no lease and no heartbeats; its run is recorded if the store can be used again"
        )
        self.last_error = error
        folder = Path(tempfile.mkdtemp(prefix="zombietop-"))  # 0700, made for this run alone
        child = Child()
        self.signals.install(child, self.limits.kill_grace)
        try:
            try:
                child.start(
                    self.command,
                    cwd=self.cwd,
                    env=self._env(folder / "heartbeat"),
                    stdout=None,
                    stderr=None,
                )
            except OSError as exc:
                self.say(f"cannot start {self.command[0]!r}: {exc.strerror or exc}")
                return EXIT_CANNOT_START
            self.signals.pass_early(child)
            return await self._supervise(child, folder / "heartbeat")
        finally:
            self.signals.remove()
            child.close()
            shutil.rmtree(folder, ignore_errors=True)
            if self._opened and self.store is not None:
                with contextlib.suppress(StoreError):
                    await self.store.close()

    def _env(self, beat_file: Path) -> dict[str, str]:
        # The command may write heartbeat lines before its run is recorded: they are read
        # from the same file once it is.
        env = clean_env()
        env["ZOMBIETOP_HEARTBEAT_FILE"] = str(beat_file)
        if self.config.path is not None:
            env["ZOMBIETOP_CONFIG"] = str(self.config.path)
        return env

    async def _supervise(self, child: Child, beat_file: Path) -> int:
        began = time.monotonic()
        interval = self.limits.heartbeat_interval
        while child.returncode is None:
            claim = await self._try_claim()
            if claim is not None:
                assert self.store is not None
                await self._note(claim, began, "ran unwatched")
                self.say(
                    f"the store can be used again: {claim.task.task_id} is recorded, and "
                    "watched from now on"
                )
                # The signal forwarding is installed already, and knows who stopped the command.
                return await self.adopt(self.store, self.signals, claim, child, beat_file)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(child.wait(), interval)
        returncode = await child.wait()
        code = exit_status(returncode)
        assert child.pid is not None
        until = time.monotonic() + min(self.limits.lease_ttl, AFTER_END_S)
        while True:
            claim = await self._try_claim()
            if claim is not None:
                assert self.store is not None
                await self._note(claim, began, "ran to its end unwatched")
                try:
                    await record_exit(
                        self.store,
                        claim,
                        pid=child.pid,
                        returncode=returncode,
                        started=await self.store.now(),
                        signals=self.signals,
                    )
                except StoreError as exc:
                    self.last_error = exc
                else:
                    self.say(f"recorded the run {claim.task.task_id} (exit {code})")
                    return code
            if time.monotonic() >= until:
                break
            await asyncio.sleep(min(interval, 1.0))
        self.say(
            f"the run is not recorded: the store {self.where} could not be used for "
            f"{format_age(time.monotonic() - began)} ({self.last_error}); the command ended "
            f"with exit {code}"
        )
        return code

    async def _try_claim(self) -> Claim | None:
        """Open the store if need be and claim the run; None (and the error kept) if not yet."""
        try:
            if self.store is None:
                self.store = await self.opener()
                self._opened = True
            return await self.claim(self.store)
        except StoreError as exc:
            self.last_error = exc
            return None

    async def _note(self, claim: Claim, began: float, what: str) -> None:
        """Leave a note on the run: it was not watched from its start."""
        assert self.store is not None
        with contextlib.suppress(StoreError):
            await self.store.record_event(
                kind=EventKind.NOTE,
                actor=claim.owner,
                task_id=claim.task.task_id,
                message=(
                    f"the command {what} for {format_age(time.monotonic() - began)} before the "
                    f"store could be used ({self.last_error})"
                ),
            )
