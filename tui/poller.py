"""The monitor on a thread of its own: polling never runs on the UI's event loop.

``Monitor.poll`` turns rows into records on the loop that awaits it (tens of milliseconds for
a thousand tasks). Here the monitor gets its own event loop on its own thread, with its own
read-only connection, so the UI only ever waits on a future. That thread is free to block, so
a SQLite store's statements run right on it (``inline``) instead of hopping to aiosqlite's.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from zombietop.config import Config, SourceSettings
from zombietop.judge.monitor import Monitor, ProcessProbe, Snapshot
from zombietop.model import Event, HistoryPoint, Task
from zombietop.output import LastOutput
from zombietop.sources import Source, open_or_later, open_source
from zombietop.store import open_store

T = TypeVar("T")


class ThreadedMonitor:
    """A ``SnapshotSource`` that runs a ``Monitor`` on a private thread and event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
        self._loop = loop
        self._thread = thread
        self._monitor: Monitor | None = None
        self._read_only = True

    @classmethod
    async def open(
        cls,
        db: Path | str,
        config: Config,
        *,
        read_only: bool,
        probe: ProcessProbe | None = None,
        sources: Sequence[SourceSettings] = (),
    ) -> ThreadedMonitor:
        """Start the thread and open a read-only connection to ``db`` on it.

        ``probe`` (the process probe) then samples on that thread too, and ``sources`` (engines'
        databases) are opened and read there.
        """
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="zombietop-monitor", daemon=True)
        thread.start()
        poller = cls(loop, thread)
        poller._read_only = read_only

        async def start() -> Monitor:
            store = await open_store(db, read_only=True, inline=True)
            opened: list[Source] = []
            try:
                for entry in sources:
                    source = open_source(entry.url, heartbeat_timeout=entry.heartbeat_timeout)
                    opened.append(source)
                    await open_or_later(source)
            except BaseException:
                for source in opened:
                    await source.close()
                await store.close()
                raise
            # Verdicts carry moments, ages are read with a now: a fleet at rest costs what changed.
            return Monitor(
                store,
                config,
                probe=probe,
                reuse_verdicts=True,
                own_thread=True,
                sources=opened,
            )

        try:
            poller._monitor = await poller._call(start())
        except BaseException:
            poller._stop()
            raise
        return poller

    async def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    @property
    def monitor(self) -> Monitor:
        assert self._monitor is not None, "use ThreadedMonitor.open()"
        return self._monitor

    @property
    def read_only(self) -> bool:
        """The dashboard's mode (this connection is always read-only)."""
        return self._read_only

    async def poll(self) -> Snapshot:
        return await self._call(self.monitor.poll())

    async def glance(self, limit: int) -> Snapshot | None:
        return await self._call(self.monitor.glance(limit))

    def find(self, text: str) -> None:
        # On the monitor's own loop, in order: a poll asked for after this call reads the text.
        self._loop.call_soon_threadsafe(self.monitor.find, text)

    async def history(self, task_id: str) -> list[HistoryPoint]:
        return await self._call(self.monitor.history(task_id))

    async def events(self, task_id: str | None = None, limit: int = 100) -> list[Event]:
        return await self._call(self.monitor.events(task_id, limit))

    async def last_output(self, task: Task) -> LastOutput | None:
        return await self._call(self.monitor.last_output(task))

    async def latest_ended_runs(
        self, per_job: int, changed_after: float | None = None
    ) -> dict[str, list[Task]]:
        return await self._call(self.monitor.latest_ended_runs(per_job, changed_after))

    async def job_runs(self, job: str, limit: int) -> list[Task]:
        return await self._call(self.monitor.job_runs(job, limit))

    async def close(self) -> None:
        if self._monitor is not None:
            for source in self._monitor.sources:
                await self._call(source.close())
            await self._call(self._monitor.store.close())
        self._stop()

    def _stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        if not self._thread.is_alive():
            self._loop.close()
