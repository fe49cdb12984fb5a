"""Real Dramatiq workers for the source tests: ``dramatiq`` processes on a throwaway redis-server.

Dramatiq comes with the ``[dramatiq]`` extra, which ``[test]`` pulls. The tests skip, saying how
to install it, where it is missing, and fail instead where ``ZOMBIETOP_REQUIRE_DRAMATIQ`` is set
(in CI).

The actors live in ``zqdram.py``, written into the test's own folder: each message writes its
worker process's pid into a marker file first, then sleeps, fails or returns. Workers run as
``python -m dramatiq zqdram`` (a main process and its worker processes, forks of it), and
messages are sent through Dramatiq's own ``send``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.queues_env import wait_for

ACTORS = r"""
import os, time

import dramatiq
from dramatiq.brokers.redis import RedisBroker

broker = RedisBroker(url=os.environ["ZQ_URL"], namespace=os.environ.get("ZQ_NAMESPACE", "dramatiq"))
dramatiq.set_broker(broker)


def _mark(marker):
    with open(marker, "a") as found:
        found.write(f"{os.getpid()}\n")


@dramatiq.actor(max_retries=0)
def nap(seconds, marker):
    _mark(marker)
    time.sleep(seconds)


@dramatiq.actor(max_retries=0)
def boom(marker):
    _mark(marker)
    raise ValueError("boom")
"""
INSTALL = "pip install -e '.[dramatiq]'"


def missing() -> str | None:
    """Why the Dramatiq tests cannot run here, or None when they can."""
    if importlib.util.find_spec("dramatiq") is None:
        return f"Dramatiq is not installed in this Python (run `{INSTALL}`)"
    return None


def require_dramatiq() -> None:
    """Skip the test, saying why, where Dramatiq cannot run; fail in CI."""
    why = missing()
    if why is None:
        return
    if os.environ.get("ZOMBIETOP_REQUIRE_DRAMATIQ"):
        pytest.fail(f"Dramatiq REQUIRED (ZOMBIETOP_REQUIRE_DRAMATIQ): {why}")
    pytest.skip(f"SKIPPED: {why}; the Dramatiq source tests need it")


class DramatiqWorkers:
    """The Dramatiq workers of one test, on one Redis database; every worker is killed after."""

    def __init__(self, folder: Path, url: str, namespace: str = "dramatiq") -> None:
        self.folder = folder
        (folder / "zqdram.py").write_text(ACTORS)
        self.env = {**os.environ, "ZQ_URL": url, "ZQ_NAMESPACE": namespace}
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, *, threads: int = 1, processes: int = 1) -> subprocess.Popen[bytes]:
        """Start ``dramatiq zqdram`` and wait until each worker process is ready; return its
        main process (the worker processes are its children)."""
        log = self.folder / f"dramatiq-{len(self.procs)}.log"
        with open(log, "wb") as errors:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "dramatiq",
                    "zqdram",
                    "--processes",
                    str(processes),
                    "--threads",
                    str(threads),
                    "--path",
                    str(self.folder),
                ],
                cwd=self.folder,
                env=self.env,
                stdout=errors,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        wait_for(
            f"the Dramatiq worker to start ({log})",
            lambda: (
                proc.poll() is not None
                or log.read_text(errors="replace").count("is ready for action") >= processes
            ),
            timeout=60,
        )
        if proc.poll() is not None:
            raise AssertionError(f"dramatiq exited: {log.read_text(errors='replace')[-2000:]}")
        return proc

    def send(self, actor: str, *args: object, delay_ms: int | None = None) -> str:
        """Send a message through Dramatiq's own ``send``; return its ``message_id``."""
        options = "" if delay_ms is None else f", delay={delay_ms}"
        code = (
            "import zqdram\n"
            f"print(zqdram.{actor}.send_with_options(args={args!r}{options}).message_id)\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", code],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            check=True,
            timeout=60,
        )
        return done.stdout.decode().strip()

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGCONT)
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        self.procs.clear()


def started(marker: Path, count: int = 1) -> int:
    """The pid of the worker process that started the message, as the message wrote it (the
    ``count``-th start, for a message run again)."""
    text = wait_for(
        f"the message to start ({marker})",
        lambda: marker.exists() and marker.read_text().count("\n") >= count and marker.read_text(),
    )
    return int(text.split()[count - 1])
