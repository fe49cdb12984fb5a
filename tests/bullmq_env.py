"""Real BullMQ workers for the source tests: Node processes on a throwaway redis-server.

BullMQ is a Node library, installed with npm outside the repository: in
``$ZOMBIETOP_BULLMQ_DIR`` or, by default, ``~/.cache/zombietop/bullmq`` (``.ci/run`` runs
``npm install bullmq ioredis`` there). The tests skip, saying how to install it, where node or
BullMQ is missing, and fail instead where ``ZOMBIETOP_REQUIRE_BULLMQ`` is set (in CI).

Each worker is one ``node`` process running ``zqbull.js``: a real ``bullmq`` Worker with a short
lock (``ZQ_LOCK_MS``), whose jobs write their worker's pid into a marker file first. Jobs are
added by ``node zqbull.js add ...``, through BullMQ's own ``Queue.add``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

WORKER = r"""
const { Queue, Worker } = require("bullmq");
const fs = require("fs");

const connection = { host: "127.0.0.1", port: Number(process.env.ZQ_PORT), db: Number(process.env.ZQ_DB) };
const prefix = process.env.ZQ_PREFIX || "bull";
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

async function work(job) {
  fs.appendFileSync(job.data.marker, `${process.pid} ${job.id}\n`);
  const end = Date.now() + job.data.seconds * 1000;
  if (job.data.kind === "boom") throw new Error(`boom in ${job.id}`);
  if (job.data.kind === "block") { while (Date.now() < end) {} return "blocked"; }  // no renewal
  while (Date.now() < end) {
    if (job.data.kind === "nap") { await sleep(Math.min(1000, end - Date.now())); continue; }
    const slice = Date.now() + 20;  // burn CPU in slices, so the lock is still renewed
    while (Date.now() < slice) {}
    await new Promise((done) => setImmediate(done));
  }
  return "done";
}

async function main() {
  const [command, queue, ...rest] = process.argv.slice(2);
  if (command === "bulk") {
    const [name, count, data] = rest;
    const q = new Queue(queue, { connection, prefix });
    const jobs = Array.from({ length: Number(count) }, () => ({ name, data: JSON.parse(data) }));
    for (let at = 0; at < jobs.length; at += 500) await q.addBulk(jobs.slice(at, at + 500));
    await q.close();
    return;
  }
  if (command === "add") {
    const [name, data, opts] = rest;
    const q = new Queue(queue, { connection, prefix });
    const job = await q.add(name, JSON.parse(data), JSON.parse(opts || "{}"));
    console.log(job.id);
    await q.close();
    return;
  }
  const worker = new Worker(queue, work, {
    connection, prefix,
    name: process.env.ZQ_NAME || undefined,
    concurrency: Number(process.env.ZQ_CONCURRENCY || 1),
    lockDuration: Number(process.env.ZQ_LOCK_MS || 30000),
    stalledInterval: Number(process.env.ZQ_STALLED_MS || 30000),
  });
  worker.on("error", (err) => console.error(err));
  await worker.waitUntilReady();
  console.log("ready");
}

main().catch((err) => { console.error(err); process.exit(1); });
"""
INSTALL = "npm install bullmq ioredis"


def bullmq_dir() -> Path:
    """Where BullMQ is installed for the tests."""
    found = os.environ.get("ZOMBIETOP_BULLMQ_DIR")
    return Path(found) if found else Path.home() / ".cache" / "zombietop" / "bullmq"


def missing() -> str | None:
    """Why the BullMQ tests cannot run here, or None when they can."""
    if shutil.which("node") is None:
        return "no node on PATH (Debian: apt-get install nodejs npm)"
    folder = bullmq_dir()
    for package in ("bullmq", "ioredis"):
        if not (folder / "node_modules" / package / "package.json").exists():
            return f"{package} is not installed in {folder} (run `{INSTALL}` there)"
    return None


def require_bullmq() -> None:
    """Skip the test, saying why, where BullMQ cannot run; fail in CI."""
    why = missing()
    if why is None:
        return
    if os.environ.get("ZOMBIETOP_REQUIRE_BULLMQ"):
        pytest.fail(f"BullMQ REQUIRED (ZOMBIETOP_REQUIRE_BULLMQ): {why}")
    pytest.skip(f"SKIPPED: {why}; the BullMQ source tests need it")


def bullmq_version() -> str:
    package = bullmq_dir() / "node_modules" / "bullmq" / "package.json"
    return str(json.loads(package.read_text())["version"])


class BullWorkers:
    """The BullMQ workers of one test, on one Redis database; every worker is killed after."""

    def __init__(self, folder: Path, port: int, db: int, prefix: str = "bull") -> None:
        self.folder = folder
        self.script = folder / "zqbull.js"
        self.script.write_text(WORKER)
        self.env = {
            **os.environ,
            "NODE_PATH": str(bullmq_dir() / "node_modules"),
            "ZQ_PORT": str(port),
            "ZQ_DB": str(db),
            "ZQ_PREFIX": prefix,
        }
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(
        self,
        queue: str,
        *,
        name: str | None = None,
        lock_ms: int = 3000,
        stalled_ms: int = 1000,
        concurrency: int = 1,
    ) -> subprocess.Popen[bytes]:
        """Start one worker on ``queue`` (named ``name`` when given) and wait until it is
        connected; the lock is short, so that a killed worker's lock expires in seconds."""
        env = {
            **self.env,
            "ZQ_NAME": name or "",
            "ZQ_LOCK_MS": str(lock_ms),
            "ZQ_STALLED_MS": str(stalled_ms),
            "ZQ_CONCURRENCY": str(concurrency),
        }
        log = self.folder / f"worker-{len(self.procs)}.log"
        with open(log, "wb") as errors:
            proc = subprocess.Popen(
                ["node", str(self.script), "work", queue],
                cwd=self.folder,
                env=env,
                stdout=subprocess.PIPE,
                stderr=errors,
                start_new_session=True,
            )
        self.procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if line.strip() != b"ready":
            raise AssertionError(f"the BullMQ worker did not start: {log.read_text()[-2000:]}")
        return proc

    def add(self, queue: str, name: str, data: dict[str, object], **opts: object) -> str:
        """Add a job through BullMQ's ``Queue.add``; return its id."""
        done = subprocess.run(
            ["node", str(self.script), "add", queue, name, json.dumps(data), json.dumps(opts)],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            check=True,
            timeout=60,
        )
        return done.stdout.decode().strip()

    def add_many(self, queue: str, name: str, count: int, data: dict[str, object]) -> None:
        """Add ``count`` jobs at once, through BullMQ's ``Queue.addBulk``."""
        subprocess.run(
            ["node", str(self.script), "bulk", queue, name, str(count), json.dumps(data)],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            check=True,
            timeout=120,
        )

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGCONT)
                    os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            if proc.stdout is not None:
                proc.stdout.close()
        self.procs.clear()
