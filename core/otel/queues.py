"""What waits to be sent: one bounded queue per signal, emptied by a thread of its own.

``offer`` never blocks: a full queue drops the item and counts it (``dropped``), which
``/metrics`` reports. The thread hands batches to the exporter; an exporter that hangs (a
collector that accepts and never answers) holds that thread only, until its timeout.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

T = TypeVar("T")
BATCH = 256
"""At most this many items in one export."""
WAKE_EVERY = 1.0
"""Seconds the thread waits for more items before it sends what it has."""


class SignalQueue(Generic[T]):
    """A bounded queue of one signal's items, sent in batches by one thread."""

    def __init__(self, name: str, send: Callable[[Sequence[T]], bool], *, size: int) -> None:
        self.name = name
        self._send = send
        self._size = size
        self._items: deque[T] = deque()
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._closed = False
        self._idle = threading.Event()
        self._idle.set()
        self.dropped = 0
        """Items given up because the queue was full."""
        self.failed = 0
        """Items the collector did not take (the exporter's own retries spent)."""
        self.sent = 0
        self._thread = threading.Thread(
            target=self._run, name=f"zombietop-otel-{name}", daemon=True
        )
        self._thread.start()

    def offer(self, item: T) -> bool:
        """Queue ``item``; False (and one more dropped) when the queue is full or closed."""
        with self._lock:
            if self._closed or len(self._items) >= self._size:
                self.dropped += 1
                return False
            self._items.append(item)
            self._idle.clear()
        self._ready.set()
        return True

    def flush(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the queue to be sent; True when it was."""
        self._ready.set()
        return self._idle.wait(timeout)

    def close(self, timeout: float) -> None:
        """Stop taking items, send what is queued within ``timeout``, then give up the rest."""
        with self._lock:
            self._closed = True
        self._ready.set()
        self._thread.join(timeout)

    def _take(self) -> list[T]:
        with self._lock:
            batch = [self._items.popleft() for _ in range(min(BATCH, len(self._items)))]
            if not batch:
                self._idle.set()
            return batch

    def _run(self) -> None:
        while True:
            self._ready.wait(WAKE_EVERY)
            self._ready.clear()
            while batch := self._take():
                try:
                    ok = self._send(batch)
                except Exception:  # an exporter's failure must not end the thread
                    ok = False
                if ok:
                    self.sent += len(batch)
                else:
                    self.failed += len(batch)
            with self._lock:
                if self._closed and not self._items:
                    self._idle.set()
                    return
