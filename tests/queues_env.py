"""Real Celery workers for the source tests: started from the test venv on a throwaway
redis-server (``redis_server``), each a real ``celery worker`` process with real tasks.

The tasks module is written into the test's own folder; its broker settings come from the
environment, so one module serves workers with and without ``acks_late``. The heartbeat, the
visibility timeout and the transport's restore interval are short, so a test takes seconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

TASKS = textwrap.dedent(
    '''
    import os
    import time

    from celery import Celery

    app = Celery("zqtasks", broker=os.environ["ZQ_BROKER"])
    app.conf.update(
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,
        task_acks_late=os.environ.get("ZQ_ACKS_LATE") == "1",
        worker_prefetch_multiplier=1,
        broker_transport_options={
            "visibility_timeout": float(os.environ.get("ZQ_VISIBILITY", "3600")),
            # Look for messages past their visibility timeout every second, not every 100 s.
            "unacked_restore_interval": 1,
            "unacked_restore_throttle": 1,
        },
    )


    @app.task(name="zq.spin")
    def spin(seconds, marker):
        """Burn CPU for ``seconds``; write ``marker`` with the child's pid first."""
        with open(marker, "a") as out:
            out.write(f"{os.getpid()}\\n")
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            n += 1
        return n


    if os.environ.get("ZQ_FORGED_PID"):
        from celery.worker.control import inspect_command

        @inspect_command()
        def active(state, **kwargs):
            """Answer ``inspect active`` with a task whose ``worker_pid`` is ZQ_FORGED_PID, as
            any client of the broker can: a forged answer, from a real worker."""
            return [
                {
                    "id": "forged-1",
                    "name": "zq.spin",
                    "type": "zq.spin",
                    "args": [],
                    "kwargs": {},
                    "hostname": state.consumer.hostname,
                    "time_start": float(os.environ["ZQ_FORGED_START"]),
                    "acknowledged": True,
                    "delivery_info": {"exchange": "", "routing_key": "celery"},
                    "worker_pid": int(os.environ["ZQ_FORGED_PID"]),
                }
            ]


    @app.task(name="zq.nap")
    def nap(seconds, marker):
        """Sleep for ``seconds`` (no CPU, no I/O); write ``marker`` with the child's pid first."""
        with open(marker, "a") as out:
            out.write(f"{os.getpid()}\\n")
        time.sleep(seconds)
    '''
)


class Workers:
    """The Celery workers of one test, on one Redis database; every worker is stopped after."""

    def __init__(self, folder: Path, broker: str) -> None:
        self.folder = folder
        self.broker = broker
        (folder / "zqtasks.py").write_text(TASKS)
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        name: str,
        *,
        acks_late: bool = False,
        visibility: float = 3600.0,
        host: str = "%h",
        pool: str = "prefork",
        concurrency: int = 1,
        env: dict[str, str] | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``celery worker`` named ``name@HOST`` (this host's name unless told) with one
        prefork child, unless told another pool and concurrency; ``env`` adds to its
        environment."""
        env = {
            **os.environ,
            **(env or {}),
            "ZQ_BROKER": self.broker,
            "ZQ_ACKS_LATE": "1" if acks_late else "0",
            "ZQ_VISIBILITY": str(visibility),
            "PYTHONPATH": str(self.folder),
        }
        log = open(self.folder / f"{name}.log", "wb")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "zqtasks",
                "worker",
                "-n",
                f"{name}@{host}",
                "-c",
                str(concurrency),
                "-P",
                pool,
                "-l",
                "INFO",
                "--without-mingle",
                "--without-gossip",
                "--heartbeat-interval",
                "1",
            ],
            cwd=self.folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own group: a SIGKILL takes the children with it
        )
        log.close()
        self.procs.append(proc)
        return proc

    def app(self) -> Any:
        """A client of the same broker, to send tasks (not a worker)."""
        import celery

        app = celery.Celery("zqclient", broker=self.broker, set_as_current=False)
        app.conf.broker_connection_retry_on_startup = True
        return app

    def log(self, name: str) -> str:
        return (self.folder / f"{name}.log").read_text(errors="replace")

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGCONT)
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        self.procs.clear()


def wait_for(what: str, check: Callable[[], Any], *, timeout: float = 30.0) -> Any:
    """Poll ``check`` until it returns something true; fail naming ``what`` after ``timeout``.

    The workers are other processes that say nothing to the test: their state is read, again
    and again, until it shows what the test waits for.
    """
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g}s for {what}")
        time.sleep(0.1)


RQ_TASKS = textwrap.dedent(
    '''
    import os
    import time

    from rq import Worker


    def spin(seconds, marker):
        """Burn CPU for ``seconds``; write ``marker`` with the horse's pid first."""
        with open(marker, "a") as out:
            out.write(f"{os.getpid()}\\n")
        end = time.monotonic() + seconds
        n = 0
        while time.monotonic() < end:
            n += 1
        return n


    def boom(marker):
        """Fail at once, as a job that raises does; write ``marker`` with the horse's pid."""
        with open(marker, "a") as out:
            out.write(f"{os.getpid()}\\n")
        raise ValueError(f"boom in {os.path.basename(marker)}")


    class ElsewhereWorker(Worker):
        """RQ's worker, with the host name it registers set from ``ZQ_RQ_HOST``: a worker on
        "another host" that runs on this machine."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.hostname = os.environ["ZQ_RQ_HOST"]
    '''
)


class RQWorkers:
    """The RQ workers of one test, on one Redis database; every worker is stopped after."""

    def __init__(self, folder: Path, url: str) -> None:
        self.folder = folder
        self.url = url
        (folder / "zqrq.py").write_text(RQ_TASKS)
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, name: str, *, host: str | None = None) -> subprocess.Popen[bytes]:
        """Start ``rq worker`` named ``name`` on the queue ``default``; with ``host``, the
        worker registers that host name instead of this machine's."""
        log = open(self.folder / f"{name}.log", "wb")
        argv = [sys.executable, "-m", "rq.cli", "worker", "-u", self.url, "-n", name]
        env = {**os.environ, "PYTHONPATH": str(self.folder)}
        if host is not None:
            argv += ["-w", "zqrq.ElsewhereWorker"]
            env["ZQ_RQ_HOST"] = host
        proc = subprocess.Popen(
            [*argv, "default"],
            cwd=self.folder,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs.append(proc)
        return proc

    def enqueue(self, seconds: float, marker: Path, *, depends_on: str | None = None) -> str:
        """A ``zqrq.spin`` job on ``default``; with ``depends_on``, deferred until that job
        succeeds (RQ's DeferredJobRegistry)."""
        return self.enqueue_call("zqrq.spin", seconds, str(marker), depends_on=depends_on)

    def enqueue_call(self, function: str, *args: Any, depends_on: str | None = None) -> str:
        """A job that calls ``function`` (``zqrq.boom``) with ``args`` on ``default``."""
        import redis
        import rq

        with redis.Redis.from_url(self.url) as conn:
            job = rq.Queue("default", connection=conn).enqueue(
                function, *args, job_timeout=600, depends_on=depends_on
            )
            return str(job.id)

    def stop(self) -> None:
        """Kill each worker and its work horse: the horse runs in a session of its own
        (setsid), so a signal to the worker's group leaves it running, re-parented to init."""
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    for horse in _children(proc.pid):
                        os.kill(horse, signal.SIGKILL)
                    os.killpg(proc.pid, signal.SIGCONT)
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        self.procs.clear()


def _children(pid: int) -> list[int]:
    """The children of ``pid``, as the kernel lists them; none once it is gone."""
    try:
        threads = list(Path(f"/proc/{pid}/task").iterdir())
    except FileNotFoundError:
        return []
    found: list[int] = []
    for thread in threads:
        with contextlib.suppress(FileNotFoundError):
            found += [int(child) for child in (thread / "children").read_text().split()]
    return found
