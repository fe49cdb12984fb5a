"""A throwaway PostgreSQL server for the test suite.

``initdb`` into a temporary directory and run ``postgres`` there on a unix socket only (no TCP
port), with fsync off: nothing in it outlives the session. PostgreSQL refuses to run as root, so
as root it runs as the ``postgres`` user (or ``nobody``). ``ZOMBIETOP_TEST_PG`` may instead name
a server to use (a URL whose user may CREATE DATABASE); ``ZOMBIETOP_PG_BIN`` the binaries.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

PORT = 5432  # only names the socket file inside our own directory; no TCP listener
TEMPLATE = "zombietop_template"


def find_binaries() -> Path | None:
    """The directory holding initdb and postgres, or None when PostgreSQL is not installed."""
    candidates: list[str] = []
    if os.environ.get("ZOMBIETOP_PG_BIN"):
        candidates.append(os.environ["ZOMBIETOP_PG_BIN"])
    on_path = shutil.which("initdb")
    if on_path:
        # Distributions link initdb onto PATH; the real folder also holds pg_isready.
        candidates.append(str(Path(on_path).resolve().parent))
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    candidates += ["/usr/local/pgsql/bin", "/opt/homebrew/bin", "/usr/local/bin"]
    for folder in candidates:
        if (Path(folder) / "initdb").exists() and (Path(folder) / "postgres").exists():
            return Path(folder)
    return None


class ThrowawayServer:
    """One PostgreSQL server for one test session; ``url(name)`` connects to a database."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix="zombietop-pg-"))
        self.data = self.root / "data"
        self.proc: subprocess.Popen[bytes] | None = None
        self._user: str | None = None
        self._names = itertools.count(1)

    def _as_user(self) -> dict[str, object]:
        if self._user is None:
            return {}
        return {"user": self._user, "group": pwd.getpwnam(self._user).pw_gid, "extra_groups": []}

    def start(self) -> None:
        if os.geteuid() == 0:
            # initdb and postgres refuse root: hand the directory to an unprivileged user.
            for name in ("postgres", "nobody"):
                with contextlib.suppress(KeyError):
                    entry = pwd.getpwnam(name)
                    self._user = name
                    os.chown(self.root, entry.pw_uid, entry.pw_gid)
                    break
        log = self.root / "initdb.log"
        with open(log, "wb") as out:
            done = subprocess.run(
                [
                    str(self.bindir / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    "zombietop",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.root,
                check=False,
                **self._as_user(),  # type: ignore[arg-type]
            )
        if done.returncode != 0:
            raise RuntimeError(f"initdb failed: {log.read_text(errors='replace')[-2000:]}")
        self.start_again()

    def restart(self) -> None:
        """Stop the server as ``pg_ctl restart`` does (a fast shutdown: every session is ended)
        and start it again on the same data."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(timeout=30)
        self.start_again()

    def start_again(self) -> None:
        """Start the server on the data it has (after ``restart`` stopped it, or a test did)."""
        server_log = open(self.root / "postgres.log", "ab")
        self.proc = subprocess.Popen(
            [
                str(self.bindir / "postgres"),
                "-D",
                str(self.data),
                "-k",
                str(self.root),
                "-p",
                str(PORT),
                "-c",
                "listen_addresses=",
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
                "-c",
                "max_connections=60",
            ],
            stdout=server_log,
            stderr=subprocess.STDOUT,
            cwd=self.root,
            start_new_session=True,
            **self._as_user(),  # type: ignore[arg-type]
        )
        server_log.close()
        socket = self.root / f".s.PGSQL.{PORT}"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"postgres exited: {self.log_tail()}")
            if socket.exists() and self._ready():
                return
            time.sleep(0.05)
        raise RuntimeError(f"postgres did not start within 30 s: {self.log_tail()}")

    def _ready(self) -> bool:
        check = self.bindir / "pg_isready"
        if not check.exists():
            return True
        return (
            subprocess.run(
                [str(check), "-q", "-h", str(self.root), "-p", str(PORT), "-U", "zombietop"],
                check=False,
            ).returncode
            == 0
        )

    def log_tail(self) -> str:
        with contextlib.suppress(OSError):
            return (self.root / "postgres.log").read_text(errors="replace")[-2000:]
        return ""

    def url(self, database: str) -> str:
        return f"postgresql://zombietop@/{database}?host={self.root}&port={PORT}"

    def new_name(self) -> str:
        return f"zt_{os.getpid()}_{next(self._names)}"

    async def new_database(self) -> str:
        """Create an empty database of a new name on this server; return its URL."""
        import asyncpg  # the suite's PostgreSQL tests and the benches have it; importers may not

        name = self.new_name()
        admin = await asyncpg.connect(self.url("postgres"))
        try:
            await admin.execute(f'CREATE DATABASE "{name}"')
        finally:
            await admin.close()
        return self.url(name)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            # SIGQUIT is PostgreSQL's "immediate shutdown": it skips the shutdown checkpoint
            # that a fast shutdown (SIGINT) writes, which on a busy machine, after a session's
            # hundreds of databases, can run the last test past its timeout. Nothing in this
            # server outlives the session, so there is nothing to keep.
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                # The server leads its own session: its backends go with it.
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def bench_server(program: str) -> Iterator[ThrowawayServer]:
    """A throwaway server for a bench run by hand, stopped at the end; without PostgreSQL the
    bench ``program`` exits saying what to install or set."""
    bindir = find_binaries()
    if bindir is None:
        sys.exit(f"{program}: no initdb and postgres found; set ZOMBIETOP_PG_BIN to their folder")
    server = ThrowawayServer(bindir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def external_url(base: str, database: str) -> str:
    """``base`` (ZOMBIETOP_TEST_PG) pointed at another database on the same server."""
    parts = urlsplit(base)
    return urlunsplit(parts._replace(path=f"/{database}"))
