"""``zombietop kill`` of an RQ or Celery task signals only the engine's own worker process.

Whoever can write the engine's Redis can name any pid there: a forged ``rq:worker:wB`` whose
``pid`` is an unrelated process, or an answer to Celery's ``inspect active`` with a chosen
``worker_pid``. Here the forged records are written for real: RQ's keys by another unix user
(``nobody``, with Debian's own ``/usr/bin/python3``, which has no Redis client, so by hand over
a socket), Celery's answer by a real worker whose ``inspect active`` is replaced. The kill is
refused, naming the process, and the process lives on; a real RQ work horse and a real Celery
pool child are still killed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.queues_env import RQWorkers, Workers, wait_for
from tests.redis_server import ThrowawayRedis
from zombietop.sources.worker_processes import CELERY_CHILD, RQ_HORSE, engine_child

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]

FORGE = textwrap.dedent(
    """
    import socket, sys

    def command(*words):
        out = b"*%d\\r\\n" % len(words)
        for word in words:
            data = str(word).encode()
            out += b"$%d\\r\\n%s\\r\\n" % (len(data), data)
        return out

    port, db, pid, host, now = sys.argv[1:6]
    commands = [
        ("SELECT", db),
        ("SADD", "rq:queues", "rq:queue:reports"),
        ("ZADD", "rq:wip:reports", "9999999999", "K1"),
        ("HSET", "rq:job:K1", "description", "reports.render()", "worker_name", "wB",
         "status", "started", "started_at", now, "enqueued_at", now, "origin", "reports"),
        ("SADD", "rq:workers", "rq:worker:wB"),
        ("HSET", "rq:worker:wB", "pid", pid, "hostname", host, "state", "busy",
         "last_heartbeat", now),
    ]
    with socket.create_connection(("127.0.0.1", int(port))) as sock:
        sock.sendall(b"".join(command(*each) for each in commands))
        got = b""
        while got.count(b"\\r\\n") < len(commands):
            got += sock.recv(4096)
    assert b"-" not in got.split(b"\\r\\n")[0], got
    """
)
NOBODY = "nobody"


def _can_be_nobody() -> bool:
    return os.geteuid() == 0 and shutil.which("setpriv") is not None


def _rq_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _forge_rq(redis_server: ThrowawayRedis, db: int, pid: int) -> None:
    """Write a forged RQ worker ``wB`` with ``pid`` and its job ``K1``, as user nobody."""
    argv = ["/usr/bin/python3", "-c", FORGE, str(redis_server.port), str(db), str(pid)]
    argv += [socket.gethostname(), _rq_now()]
    if _can_be_nobody():
        argv = ["setpriv", "--reuid", NOBODY, "--regid", "nogroup", "--clear-groups", *argv]
    subprocess.run(argv, check=True, capture_output=True, timeout=30)


@contextlib.contextmanager
def _process(argv: list[str], *, as_nobody: bool = False) -> Iterator[subprocess.Popen[bytes]]:
    """A process of the test's (``as_nobody``: of another unix user), ended after."""
    if as_nobody:
        argv = ["setpriv", "--reuid", NOBODY, "--regid", "nogroup", "--clear-groups", *argv]
    proc = subprocess.Popen(argv, start_new_session=True)
    try:
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def _zombietop(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    store, config = tmp_path / "zombietop.db", tmp_path / "config.toml"
    config.write_text("")
    base = [sys.executable, "-m", "zombietop.tui", "--db", str(store), "--config", str(config)]
    if not store.exists():
        subprocess.run([*base, "init"], check=True, capture_output=True)
    return subprocess.run([*base, *args], capture_output=True, text=True, timeout=90)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.parametrize("form", ["worker pid", "worker's child", "worker's child as nobody"])
def test_a_forged_rq_worker_steers_no_kill(
    form: str, tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> None:
    """``rq:worker:wB``'s pid is a ``sleep`` (RQ's keys give no horse: the worker itself), or a
    shell whose child is the ``sleep`` (taken as the horse); the kill is refused and names it."""
    nobody = form.endswith("as nobody")
    if nobody and not _can_be_nobody():
        pytest.skip("needs root and setpriv to run a process as another user")
    argv = ["sleep", "6666"] if form == "worker pid" else ["sh", "-c", "sleep 6666; true"]
    with _process(argv, as_nobody=nobody) as proc:
        if form == "worker pid":
            target = proc.pid
        else:
            target = wait_for("the sleep", lambda: _child_of(proc.pid))
        _forge_rq(redis_server, redis_db, proc.pid)
        done = _zombietop(
            tmp_path,
            "kill",
            "reports/reports.render/K1",
            "--yes",
            "--source",
            redis_server.url(redis_db, "rq+redis"),
        )
        assert done.returncode != 0, done.stdout
        user = NOBODY if nobody else "root" if os.geteuid() == 0 else os.environ.get("USER", "")
        said = (
            f"reports/reports.render/K1: refused: reports/reports.render/K1 of "
            f"rq+redis://127.0.0.1:{redis_server.port}/{redis_db}: pid {target} is "
            f"`sleep 6666` run by {user}"
        )
        assert said in done.stdout, done.stdout + done.stderr
        assert "not RQ's work horse under `rq worker`; nothing signalled" in done.stdout
        assert _alive(target) and _alive(proc.pid)


def _child_of(pid: int) -> int | None:
    for task in Path(f"/proc/{pid}/task").iterdir():
        children = (task / "children").read_text().split()
        if children:
            return int(children[0])
    return None


def test_a_real_rq_work_horse_is_still_killed(
    rq_workers: RQWorkers, tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> None:
    worker = rq_workers.start("w1")
    marker = tmp_path / "m"
    job = rq_workers.enqueue(60, marker)
    horse = int(wait_for("the job to start", lambda: marker.exists() and marker.read_text()))
    assert engine_child(horse, RQ_HORSE) is None
    done = _zombietop(
        tmp_path,
        "kill",
        f"default/zqrq.spin/{job}",
        "--yes",
        "--source",
        redis_server.url(redis_db, "rq+redis"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"SIGTERM sent to process group {horse}" in done.stdout, done.stdout
    wait_for("the horse to exit", lambda: not _alive(horse))
    assert worker.poll() is None  # the worker lives on


def test_a_forged_celery_answer_steers_no_kill_and_a_pool_child_is_killed(
    celery_workers: Workers, tmp_path: Path, redis_server: ThrowawayRedis, redis_db: int
) -> None:
    """A real worker answers ``inspect active`` with a ``worker_pid`` of the test's ``sleep``:
    the kill is refused, naming it. The real worker's own pool child is Celery's."""
    with _process(["sleep", "7777"]) as sleeper:
        started = time.time()
        worker = celery_workers.start(
            "w1", env={"ZQ_FORGED_PID": str(sleeper.pid), "ZQ_FORGED_START": str(started)}
        )
        url = redis_server.url(redis_db, "celery+redis")
        wait_for("the worker to answer", lambda: _answers(tmp_path, url))
        done = _zombietop(tmp_path, "kill", "celery/zq.spin/forged-1", "--yes", "--source", url)
        assert done.returncode != 0, done.stdout
        assert f"pid {sleeper.pid} is `sleep 7777` run by " in done.stdout, done.stdout
        assert "not Celery's pool child under `celery worker`; nothing signalled" in done.stdout
        assert _alive(sleeper.pid)
        pool = [int(p) for p in _children(worker.pid)]
        assert pool and all(engine_child(pid, CELERY_CHILD) is None for pid in pool)
        refused = engine_child(worker.pid, CELERY_CHILD)  # the main process: not a pool child
        assert refused is not None and "its parent" in refused, refused


def _answers(tmp_path: Path, url: str) -> bool:
    done = _zombietop(tmp_path, "status", "--json", "--source", url)
    return "celery/zq.spin/forged-1" in done.stdout


def _children(pid: int) -> list[str]:
    return (Path(f"/proc/{pid}/task/{pid}/children")).read_text().split()


@pytest.mark.parametrize(
    ("argv", "rq", "celery"),
    [
        (
            ["/usr/bin/python3", "/usr/local/bin/rq", "worker", "-u", "redis://r", "high"],
            True,
            False,
        ),
        (["rq", "worker", "default"], True, False),
        (["python", "-m", "rq.cli", "worker", "default"], True, False),
        (["/usr/local/bin/rqworker", "default"], True, False),
        # With setproctitle installed, RQ and Celery rename their processes.
        (["rq:worker:w1:", "Processing", "zqrq.spin", "from", "default"], True, False),
        (["[celeryd:", "w1@box:ForkPoolWorker-1]"], False, True),
        (["/srv/venv/bin/celery", "-A", "proj", "worker", "-l", "INFO"], False, True),
        (["python", "-m", "celery", "-A", "proj", "worker"], False, True),
        (["celery", "-A", "proj", "beat"], False, False),
        (["rq", "info"], False, False),
        (["sleep", "6666"], False, False),
        (["python", "-c", "print('rq worker celery worker')"], False, False),
        ([], False, False),
    ],
)
def test_which_command_lines_are_the_engines_workers(
    argv: list[str], rq: bool, celery: bool
) -> None:
    assert RQ_HORSE.looks(argv) is rq
    assert CELERY_CHILD.looks(argv) is celery
