"""Real Prefect 3 for the source tests: its own venv, a server on SQLite, a process worker.

Prefect (about 200 MB) lives in a venv of its own beside zombietop's: ``.prefect-venv`` by
default, ``$ZOMBIETOP_PREFECT_VENV`` to point elsewhere, made by ``.ci/run`` from pyproject's
``[prefect]`` group or by hand. The tests skip, saying how to make it, where it is missing, and
fail instead where ``ZOMBIETOP_REQUIRE_PREFECT`` is set (in CI).

``PrefectServer`` runs ``prefect server start`` on a free port with a throwaway
``PREFECT_HOME`` (its SQLite database inside), once per test module: the server takes seconds
to start, and its readiness is awaited on ``/api/health``. ``deploy`` makes a process work pool
and a deployment of ``FLOWS``; ``worker`` starts ``prefect worker start`` in a process group of
its own; ``run`` asks for a flow run of a deployment and returns its id.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import psutil
import pytest

ROOT = Path(__file__).resolve().parent.parent
INSTALL = (
    "python3 -m venv .prefect-venv && .prefect-venv/bin/pip install 'prefect>=3.9,<4' "
    "(pyproject's [prefect] group)"
)
FLOWS = '''
import os
import time

from prefect import flow


@flow(log_prints=False)
def nap(seconds: float, marker: str, fail: bool = False, hang: bool = False) -> str:
    """Write this process's pid into ``marker``, then sleep ``seconds`` in short naps, or in
    one (``hang``: a flow stuck on a call that never returns), or fail."""
    with open(marker, "a") as out:
        out.write(f"{os.getpid()}\\n")
    if fail:
        raise RuntimeError("boom in nap")
    if hang:
        time.sleep(seconds)
    end = time.time() + seconds
    while time.time() < end:
        time.sleep(0.2)
    return "done"
'''
DEPLOY = """
import sys
from prefect import flow

folder, pool = sys.argv[1], sys.argv[2]
flow.from_source(source=folder, entrypoint="flows.py:nap").deploy(
    name="naps", work_pool_name=pool, print_next_steps=False
)
"""
RUN = """
import json, sys
from prefect.deployments import run_deployment

found = run_deployment(sys.argv[1], parameters=json.loads(sys.argv[2]), timeout=0)
print(found.id)
"""


def venv() -> Path | None:
    """The venv with Prefect installed, or None."""
    where = Path(os.environ.get("ZOMBIETOP_PREFECT_VENV") or ROOT / ".prefect-venv")
    return where if (where / "bin" / "prefect").exists() else None


def need_venv() -> Path:
    found = venv()
    if found is None:
        if os.environ.get("ZOMBIETOP_REQUIRE_PREFECT"):
            pytest.fail(f"Prefect REQUIRED (ZOMBIETOP_REQUIRE_PREFECT): {INSTALL}")
        pytest.skip(f"Prefect tests SKIPPED: no Prefect venv; make one: {INSTALL}")
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PrefectServer:
    """One ``prefect server start`` on SQLite, in a folder of its own."""

    def __init__(self, prefect_venv: Path) -> None:
        self.venv = prefect_venv
        self.home = Path(tempfile.mkdtemp(prefix="zombietop-prefect-"))
        self.port = free_port()
        self.api = f"http://127.0.0.1:{self.port}/api"
        self.process: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self.log = self.home / "server.log"

    def env(self, **more: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
        env.update(
            PREFECT_HOME=str(self.home),
            PREFECT_API_URL=self.api,
            PREFECT_SERVER_ANALYTICS_ENABLED="false",
            PREFECT_SERVER_UI_ENABLED="false",
            PREFECT_UI_ENABLED="false",
            PREFECT_LOGGING_LEVEL="WARNING",
            **more,
        )
        return env

    def start(self, deadline: float = 180.0) -> None:
        """Start the server and wait until ``/api/health`` answers, for ``deadline`` at most."""
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [str(self.venv / "bin" / "prefect"), "server", "start", "--host", "127.0.0.1",
                 "--port", str(self.port)],
                env=self.env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        ends = time.monotonic() + deadline
        while time.monotonic() < ends:
            if self.process.poll() is not None:
                raise RuntimeError(f"prefect server exited:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.api + "/health", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(
            f"prefect server not ready in {deadline:g}s:\n{self.log.read_text()[-3000:]}"
        )

    def python(self, script: str, *args: str, **env: str) -> str:
        done = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", script, *args],
            env=self.env(**env),
            capture_output=True,
            text=True,
            timeout=180,
        )
        if done.returncode != 0:
            raise RuntimeError(
                f"prefect script failed:\n{done.stdout[-2000:]}{done.stderr[-3000:]}"
            )
        return done.stdout.strip()

    def deploy(self, pool: str) -> str:
        """A process work pool ``pool`` and the deployment ``nap/naps`` of ``FLOWS`` in it."""
        folder = self.home / f"flows-{pool}"
        folder.mkdir()
        (folder / "flows.py").write_text(FLOWS)
        subprocess.run(
            [str(self.venv / "bin" / "prefect"), "work-pool", "create", pool, "--type", "process"],
            env=self.env(),
            capture_output=True,
            check=True,
            timeout=120,
        )
        self.python(DEPLOY, str(folder), pool)
        return "nap/naps"

    def worker(self, pool: str, **env: str) -> subprocess.Popen[bytes]:
        """``prefect worker start`` on ``pool``, in a process group of its own."""
        log = (self.home / f"worker-{pool}-{len(self.workers)}.log").open("wb")
        found = subprocess.Popen(
            [str(self.venv / "bin" / "prefect"), "worker", "start", "--pool", pool],
            env=self.env(**env),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.workers.append(found)
        return found

    def run(self, deployment: str, **parameters: Any) -> str:
        """A new flow run of ``deployment``; its id."""
        return self.python(RUN, deployment, json.dumps(parameters)).splitlines()[-1]

    def flow_run(self, run_id: str) -> dict[str, Any]:
        """The flow run as Prefect's API has it (read straight from the server)."""
        with urllib.request.urlopen(f"{self.api}/flow_runs/{run_id}", timeout=10) as answer:
            found: dict[str, Any] = json.loads(answer.read())
            return found

    def set_state(self, run_id: str, state: str) -> None:
        """Force the flow run into ``state`` through Prefect's API, as a person could (the
        test writes to Prefect here; zombietop never does)."""
        body = json.dumps({"state": {"type": state}, "force": True}).encode()
        request = urllib.request.Request(
            f"{self.api}/flow_runs/{run_id}/set_state",
            data=body,
            headers={"content-type": "application/json"},
            method="POST",
        )
        with _send(request) as answer:
            assert answer.status in (200, 201), answer.status

    def post(self, path: str, body: Any) -> Any:
        """POST ``body`` to Prefect's API (the test writes to Prefect; zombietop never does)."""
        request = urllib.request.Request(
            self.api + path,
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
            method="POST",
        )
        with _send(request) as answer:
            return json.loads(answer.read())

    def stop(self) -> None:
        for process in [*self.workers, self.process]:
            if process is None or process.poll() is not None:
                continue
            try:
                os.killpg(process.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        # The flow run processes a test left behind (it failed before it killed them): each
        # carries this server's PREFECT_HOME, which no other process has.
        for leftover in psutil.process_iter():
            try:
                if leftover.environ().get("PREFECT_HOME") == str(self.home):
                    leftover.kill()
            except psutil.Error:
                continue
        shutil.rmtree(self.home, ignore_errors=True)


def _send(request: urllib.request.Request, attempts: int = 6) -> Any:
    """Send a write of the test's, again on 503 as Prefect's own client does: a server on
    SQLite answers 503 while one of its services holds the database's lock."""
    for attempt in range(attempts):
        try:
            return urllib.request.urlopen(request, timeout=10)
        except urllib.error.HTTPError as error:
            if error.code != 503 or attempt == attempts - 1:
                raise
            time.sleep(0.2 * 2**attempt)
    raise AssertionError("unreachable")
