"""``zombietop run`` whatever the store does: watched when it can be, unwatched when not.

The ``Runner`` watches a command under its lease; ``Unwatched`` runs one whose store cannot be
used, and hands it to a ``Runner`` once the store can be. This module puts the two together, so
that neither has to know the other: a store that does not open, or a run that cannot be
claimed, leads to ``Unwatched`` unless the run needs its lease (``lease_required``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TextIO

from zombietop.config import Config
from zombietop.errors import StoreError, StoreReplaced
from zombietop.locations import printable_url
from zombietop.printable import printable
from zombietop.procs import this_host
from zombietop.run.child import Child
from zombietop.run.claim import Claim, owner_name
from zombietop.run.runner import Runner, RunSpec, adopt, claim_for
from zombietop.run.signal_forwarding import SignalForwarding
from zombietop.run.unwatched import Unwatched, lease_required
from zombietop.store import Store


def needs_lease(config: Config, spec: RunSpec) -> bool:
    """Whether the command must not run while the store cannot be used."""
    return lease_required(
        flag=spec.require_lease,
        limits=config.limits_for(spec.step_type or spec.job),
        job=spec.job,
        after=spec.after,
        wait=spec.wait,
    )


class FailOpen:
    """Run one ``zombietop run`` command against the store at ``store_path``."""

    def __init__(
        self,
        config: Config,
        store_path: Path | str,
        opener: Callable[[], Awaitable[Store]],
        *,
        host: str | None = None,
        err: TextIO | None = None,
    ) -> None:
        self.config = config
        self.store_path = store_path
        self.opener = opener
        self.host = host if host is not None else this_host()
        self.err = err

    async def run(self, spec: RunSpec) -> int:
        """Run ``spec`` watched, or unwatched while its store cannot be used; its exit status."""
        try:
            store = await self.opener()
        except StoreError as exc:
            if isinstance(exc, StoreReplaced) or needs_lease(self.config, spec):
                raise
            return await self._unwatched(spec, exc, None)
        async with store:
            return await self._runner(store).run(spec)

    def _runner(self, store: Store) -> Runner:
        async def unusable(spec: RunSpec, error: StoreError) -> int:
            if needs_lease(self.config, spec):
                raise error
            return await self._unwatched(spec, error, store)

        return Runner(
            store,
            self.config,
            host=self.host,
            store_path=self.store_path,
            err=self.err,
            unusable=unusable,
        )

    async def _unwatched(self, spec: RunSpec, error: StoreError, store: Store | None) -> int:
        cwd = spec.cwd or os.getcwd()
        limits = self.config.limits_for(spec.step_type or spec.job)

        async def claim(opened: Store) -> Claim:
            owner = owner_name("run", self.host)
            return await claim_for(self._runner(opened), spec, owner, limits, cwd)

        async def adopt_on(
            opened: Store, signals: SignalForwarding, claim: Claim, child: Child, beat_file: Path
        ) -> int:
            watcher = self._runner(opened)
            watcher.signals = signals
            return await adopt(watcher, claim, child, beat_file)

        return await Unwatched(
            self.config,
            limits,
            spec.command,
            cwd=cwd,
            opener=self.opener,
            where=store.describe() if store is not None else printable_url(str(self.store_path)),
            store=store,
            claim=claim,
            adopt=adopt_on,
            say=self._say,
        ).run(error)

    def _say(self, text: str) -> None:
        print(printable(f"zombietop: {text}"), file=self.err or sys.stderr, flush=True)
