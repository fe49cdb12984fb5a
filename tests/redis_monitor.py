"""What zombietop's connections send to Redis, read with ``redis-cli monitor``.

A test opens the monitor, polls, then asks for the write commands that connections named
``zombietop`` (the name the Celery and RQ sources give theirs, in this process or in a
``zombietop status`` of its own) sent meanwhile. A command is a
write when Redis's own ``COMMAND INFO`` flags it ``write``, or when it publishes, or runs a
script (which may write).
"""

from __future__ import annotations

import shlex
import subprocess
import threading
import uuid
from dataclasses import dataclass, field
from typing import Any

ALSO_WRITES = frozenset({"PUBLISH", "SPUBLISH", "EVAL", "EVALSHA", "FCALL"})
"""Commands Redis does not flag ``write`` that still change what other clients see."""


@dataclass(frozen=True, slots=True)
class Sent:
    """One command as the monitor printed it."""

    address: str
    name: str
    args: tuple[str, ...]


@dataclass
class RedisMonitor:
    """``redis-cli monitor`` on one server, for the length of a ``with`` block."""

    port: int
    client_name: str = "zombietop"
    lines: list[str] = field(default_factory=list)
    _proc: subprocess.Popen[str] | None = None
    _reader: threading.Thread | None = None
    _ready: threading.Event = field(default_factory=threading.Event)
    _marker: str = field(default_factory=lambda: f"zombietop-monitor-end-{uuid.uuid4()}")
    _done: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> RedisMonitor:
        self._proc = subprocess.Popen(
            ["redis-cli", "-p", str(self.port), "monitor"],
            stdout=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(10):
            raise AssertionError("redis-cli monitor did not start within 10s")
        return self

    def _read(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            if line.strip() == "OK":
                self._ready.set()
                continue
            if self._marker in line:
                self._done.set()
                continue
            self.lines.append(line.rstrip("\n"))

    def writes(self, client: Any) -> tuple[list[Sent], int]:
        """Every write command that connections named ``client_name`` sent so far, and how
        many commands they sent in all (a test checks that it saw them at all)."""
        client.echo(self._marker)
        if not self._done.wait(10):
            raise AssertionError("redis-cli monitor did not show the end marker within 10s")
        sent = [found for line in self.lines if (found := _parse(line)) is not None]
        # A connection names itself first (redis-py sends CLIENT SETNAME as it connects).
        named = {
            s.address
            for s in sent
            if s.name == "CLIENT"
            and [a.upper() for a in s.args[:1]] == ["SETNAME"]
            and s.args[1:2] == (self.client_name,)
        }
        ours = [s for s in sent if s.address in named]
        flags: dict[str, bool] = {}
        found: list[Sent] = []
        for sent in ours:
            if sent.name not in flags:
                info = client.execute_command("COMMAND", "INFO", sent.name.lower()) or {}
                said = (info.get(sent.name.lower()) or {}).get("flags") or ()
                flags[sent.name] = sent.name in ALSO_WRITES or "write" in {
                    f.decode() if isinstance(f, bytes) else str(f) for f in said
                }
            if flags[sent.name]:
                found.append(sent)
        return found, len(ours)

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
        if self._reader is not None:
            self._reader.join(10)
        if self._proc is not None and self._proc.stdout is not None:
            self._proc.stdout.close()


def _parse(line: str) -> Sent | None:
    """``1733... [3 127.0.0.1:5555] "SADD" "key" "member"`` as a ``Sent``."""
    head, sep, rest = line.partition("] ")
    if not sep or "[" not in head:
        return None
    address = head.rsplit(" ", 1)[-1]
    try:
        words = shlex.split(rest, posix=True)
    except ValueError:
        words = rest.split()
    if not words:
        return None
    return Sent(address=address, name=words[0].upper(), args=tuple(words[1:]))


def outside_pidbox(sent: list[Sent]) -> list[Sent]:
    """The writes that touch something else than Celery's pidbox (its broadcast channel, the
    reply queues and their binding set): a key or channel without ``pidbox`` in its name."""
    return [s for s in sent if not s.args or "pidbox" not in s.args[0]]
