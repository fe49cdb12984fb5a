"""A throwaway redis-server for the test session, as ``pg_server`` is for PostgreSQL.

Debian's ``redis-server`` runs on a free loopback port, in a temporary directory, with nothing
saved to disk: nothing in it outlives the session. Each test gets a database number of its own
(``fresh_db``), so the queues of one test never meet another's.
"""

from __future__ import annotations

import contextlib
import itertools
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

NO_REDIS = (
    "SKIPPED: no redis-server on PATH (Debian: apt-get install redis-server); "
    "the Celery and RQ source tests need one"
)
DATABASES = 64
"""Database numbers the server offers, one per test that asks."""


def find_server() -> str | None:
    """The redis-server binary, or None when it is not installed."""
    return shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class ThrowawayRedis:
    """One redis-server for one test session; ``fresh_db()`` gives each test its database."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.root = Path(tempfile.mkdtemp(prefix="zombietop-redis-"))
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._numbers = itertools.count(1)

    def start(self) -> None:
        log = open(self.root / "redis.log", "wb")
        self.proc = subprocess.Popen(
            [
                self.binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.root),
                "--save",
                "",
                "--appendonly",
                "no",
                "--databases",
                str(DATABASES),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.log_tail()}")
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock,
            ):
                sock.sendall(b"PING\r\n")
                if sock.recv(16).startswith(b"+PONG"):
                    return
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer within 20s: {self.log_tail()}")

    def log_tail(self) -> str:
        return (self.root / "redis.log").read_text(errors="replace")[-2000:]

    def fresh_db(self) -> int:
        """A database number no other test of the session has used (flushed, to be sure)."""
        number = next(self._numbers)
        if number >= DATABASES:
            raise RuntimeError(f"more than {DATABASES - 1} Redis tests in one session")
        with socket.create_connection(("127.0.0.1", self.port), timeout=5) as sock:
            sock.sendall(f"SELECT {number}\r\nFLUSHDB\r\n".encode())
            sock.recv(64)
        return number

    def url(self, db: int, scheme: str = "redis") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/{db}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
