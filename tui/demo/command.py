"""``zombietop demo``: a fresh store, real jobs showing every kind of zombie, and the dashboard.

The demo store is a normal store, marked as a demo by ``demo.json`` in the folder beside it
(``<store>.d/``), which also holds its config, the watchdog's log, the jobs' logs and
``pages.log``, where the watchdog's pages go instead of any network. Only a marked store is
ever wiped or swept.

Everything the demo starts carries ``ZOMBIETOP_STARTED_FOR`` (see ``zombietop.act.sweep``), and so
does everything those start, relaunched resumes included: that is how quitting finds them all.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

from zombietop.act.sweep import Found, SweepReport, stop_all, store_key, tag_env
from zombietop.bounds import BOUNDS
from zombietop.config import load_config
from zombietop.durations import format_duration
from zombietop.errors import ZombietopError
from zombietop.extras import require
from zombietop.locations import clean_env, default_store_path, state_dir
from zombietop.private import private_dir, write_new
from zombietop.procs import spawn_detached, this_host
from zombietop.store import open_store

STEP_TYPE = "demo"
MAX_SPEED = 20.0
STOP_GRACE_S = 2.0
"""How long quitting waits for SIGTERM before it sends SIGKILL (the stubborn job needs it)."""
START_TIMEOUT_S = 30.0
"""How long the demo waits for every job's first heartbeat before it calls a start failed."""
MARKER_FORMAT = "zombietop-demo/1"

# Thresholds at speed 1, in seconds: every health shows within about a minute.
BASE_LIMITS: dict[str, float] = {
    "heartbeat_interval": 2,
    "heartbeat_timeout": 10,
    "lease_ttl": 20,
    "progress_timeout": 30,
    "start_grace": 20,
    "request": 15,
    "stage": 600,
    "task": 7200,
    "kill_grace": 5,
}
# Floors that keep a fast demo from calling a busy machine's slow start a zombie.
FLOORS: dict[str, float] = {"start_grace": 5.0}
WATCH_INTERVAL_S, WATCH_FLOOR_S = 2.0, BOUNDS["watch"]["interval"].low
REFRESH_S, REFRESH_FLOOR_S = 1.0, 0.5


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoJob:
    """One task of the demo: which worker runs it and what it shows."""

    task_id: str
    run_id: str
    step: str
    kind: str
    """The worker in ``zombietop.tui.demo.jobs``."""
    shows: str
    wrapped: bool = True
    """Started through ``zombietop run``; False: the SDK takes the lease itself."""
    after: tuple[str, ...] = ()
    """Its upstream: ``zombietop run --after ... --wait`` starts it once they succeed."""
    start: bool = True
    """False: created queued, then waits for its upstream (it has no heartbeat to wait for)."""


JOBS: tuple[DemoJob, ...] = (
    DemoJob(
        task_id="ingest-2041",
        run_id="nightly-2041",
        step="ingest",
        kind="healthy",
        shows="healthy: beating and moving along",
    ),
    DemoJob(
        task_id="export-2031",
        run_id="nightly-2031",
        step="export",
        kind="stalled",
        shows="stalled at 61%: alive, idle, no heartbeat; the watchdog pages, quarantines it",
    ),
    DemoJob(
        task_id="publish-2031",
        run_id="nightly-2031",
        step="publish",
        kind="publish",
        shows="queued: blocked by export-2031 until someone resumes or discards it",
        after=("export-2031",),
        start=False,
    ),
    DemoJob(
        task_id="reindex-2044",
        run_id="nightly-2044",
        step="reindex",
        kind="spinning",
        shows="spinning: beating, but stuck at 37%",
    ),
    DemoJob(
        task_id="thumbnails-2045",
        run_id="nightly-2045",
        step="thumbnails",
        kind="dies",
        shows="dead: killed outright (as by the OOM killer), its task still says running",
        wrapped=False,
    ),
    DemoJob(
        task_id="billing-2046",
        run_id="nightly-2046",
        step="billing",
        kind="orphaned",
        shows="reclaimable: its wrapper was killed, the lease expired",
    ),
    DemoJob(
        task_id="sync-2047",
        run_id="nightly-2047",
        step="sync",
        kind="hung-request",
        shows="!request beside its id: a call to a partner API hangs past its time budget",
    ),
    DemoJob(
        task_id="compact-2048",
        run_id="nightly-2048",
        step="compact",
        kind="stubborn",
        shows="ignores SIGTERM: kill it (K) and the kill escalates to SIGKILL",
    ),
    DemoJob(
        task_id="render-2049",
        run_id="nightly-2049",
        step="render",
        kind="checkpointed",
        shows="saves checkpoints: kill it (K), resume it (r): it carries on from there",
    ),
)
STUBBORN, CHECKPOINTED = "compact-2048", "render-2049"


@dataclass(frozen=True, slots=True, kw_only=True)
class DemoPaths:
    """Where a demo keeps its store and everything beside it."""

    db: Path

    @property
    def folder(self) -> Path:
        return state_dir(self.db)

    @property
    def marker(self) -> Path:
        return self.folder / "demo.json"

    @property
    def config(self) -> Path:
        return self.folder / "config.toml"

    @property
    def pages(self) -> Path:
        return self.folder / "pages.log"

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    @property
    def watch_log(self) -> Path:
        return self.logs / "watch.log"

    def job_log(self, task_id: str) -> Path:
        return self.logs / f"{task_id}.1.log"


def default_demo_path() -> Path:
    """``$XDG_STATE_HOME/zombietop/demo/demo.db``, beside (never in) the user's own store."""
    return default_store_path().parent / "demo" / "demo.db"


def demo_paths(flag: str | None) -> DemoPaths:
    return DemoPaths(db=Path(store_key(Path(flag) if flag else default_demo_path())))


def is_demo_store(paths: DemoPaths) -> bool:
    try:
        marker = json.loads(paths.marker.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(marker, dict) and marker.get("format") == MARKER_FORMAT


# The config ------------------------------------------------------------------------------


def demo_limits(speed: float) -> dict[str, float]:
    """The demo step type's thresholds at ``speed`` (seconds)."""
    return {key: max(value / speed, FLOORS.get(key, 0.0)) for key, value in BASE_LIMITS.items()}


def render_config(speed: float, pages: Path) -> str:
    """The demo's config.toml: the defaults, plus a fast step type and a pages log."""
    step = {key: format_duration(round(value, 3)) for key, value in demo_limits(speed).items()}
    page_to_file = 'printf "%s %s\\n" "$(date -u +%H:%M:%SZ)" "$ZOMBIETOP_PAGE" >> "$1"'
    data: dict[str, Any] = {
        "monitor": {"refresh": format_duration(max(REFRESH_S / speed, REFRESH_FLOOR_S))},
        # stage_kill_factor 0: the demo leaves every kill to you.
        "watch": {
            "interval": format_duration(max(WATCH_INTERVAL_S / speed, WATCH_FLOOR_S)),
            "stage_kill_factor": 0,
        },
        "notify": {"command": ["sh", "-c", page_to_file, "page", str(pages)]},
        "step_types": {STEP_TYPE: step},
    }
    head = (
        f"# Written by `zombietop demo --speed {speed:g}`: every health shows within about "
        f"{60 / speed:.0f} s.\n"
        '# The demo\'s jobs run as step type "demo"; pages are appended to pages.log here.\n\n'
    )
    import tomli_w  # of zombietop[all], which cmd_demo checks first

    return head + tomli_w.dumps(data)


# Setting up ------------------------------------------------------------------------------


def worker_argv(job: DemoJob, paths: DemoPaths) -> list[str]:
    """The job's own command (what a resume relaunches)."""
    return [
        sys.executable,
        "-m",
        "zombietop.tui.demo.jobs",
        job.kind,
        "--task",
        job.task_id,
        "--db",
        str(paths.db),
        "--config",
        str(paths.config),
    ]


def zombietop_argv(paths: DemoPaths, *args: str) -> list[str]:
    """A ``zombietop`` command against the demo store, with this interpreter (venv and all)."""
    store = ["--db", str(paths.db), "--config", str(paths.config)]
    return [sys.executable, "-m", "zombietop.tui", *store, *args]


def child_env(paths: DemoPaths) -> dict[str, str]:
    """The environment of everything the demo starts: tagged, without the caller's store."""
    env = clean_env()
    for name in ("ZOMBIETOP_DB", "ZOMBIETOP_CONFIG"):
        env.pop(name, None)
    return tag_env(paths.db, env)


def wipe(paths: DemoPaths, log: Callable[[str], None]) -> None:
    """Stop and remove an earlier demo at this path; refuse anything that is not a demo."""
    if not paths.db.exists() and not paths.folder.exists():
        return
    if not is_demo_store(paths):
        raise ZombietopError(
            f"{paths.db} is not a demo store (no {paths.marker.name} in {paths.folder}); "
            "the demo wipes only its own stores: pass another --db"
        )
    report = stop_all(paths.db, grace=STOP_GRACE_S)
    if report.terminated:
        log(f"stopped {len(report.terminated)} processes of the previous demo at {paths.db}")
    _require_clean(report)
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            paths.db.with_name(paths.db.name + suffix).unlink()
    shutil.rmtree(paths.folder, ignore_errors=True)


def write_files(paths: DemoPaths, speed: float) -> None:
    # The marker first: a demo cut short here must still be one the next demo may wipe.
    # Private like every state directory: 0700, each file 0600 and never written through a link.
    private_dir(paths.folder)
    marker = {"format": MARKER_FORMAT, "speed": speed, "created_at": time.time()}
    write_new(paths.marker, (json.dumps(marker, indent=2) + "\n").encode())
    private_dir(paths.logs)
    write_new(paths.config, render_config(speed, paths.pages).encode())
    load_config(paths.config)  # a demo that writes an invalid config should say so now
    write_new(paths.pages)


async def create_tasks(paths: DemoPaths, jobs: Sequence[DemoJob]) -> None:
    """Create every task queued, with its command, as a scheduler would before starting it."""
    async with await open_store(paths.db, create=True) as store:
        for job in jobs:
            await store.create_task(
                task_id=job.task_id,
                run_id=job.run_id,
                step=job.step,
                step_type=STEP_TYPE,
                actor="zombietop demo",
                upstream=job.after,
                command=worker_argv(job, paths),
                cwd=str(paths.folder),
                host=this_host(),
            )


class Launched:
    """The processes the demo started itself, each reaped by a thread so none lingers a zombie."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, argv: list[str], env: dict[str, str], log: Path, cwd: Path) -> None:
        # A session of its own: Ctrl+C is for the dashboard, not the demo's jobs.
        self.procs[name] = spawn_detached(argv, log=log, env=env, cwd=cwd)


def launch(paths: DemoPaths, jobs: Sequence[DemoJob]) -> Launched:
    """Start the watchdog and every job that starts on its own."""
    env = child_env(paths)
    launched = Launched()
    launched.start("watchdog", zombietop_argv(paths, "watch"), env, paths.watch_log, paths.folder)
    for job in jobs:
        if not job.start and not job.after:
            continue
        argv = worker_argv(job, paths)
        if job.wrapped:
            # A job with upstream waits for it: without a waiter, nothing would start it.
            wait = [word for name in job.after for word in ("--after", name)]
            wait += ["--wait"] if wait else []
            argv = zombietop_argv(
                paths, "run", "--task", job.task_id, "--type", STEP_TYPE, *wait, "--", *argv
            )
        launched.start(job.task_id, argv, env, paths.job_log(job.task_id), paths.folder)
    return launched


async def await_started(paths: DemoPaths, jobs: Sequence[DemoJob], launched: Launched) -> None:
    """Wait for every started job's first heartbeat; say why (its log's last line) if one died."""
    waiting = {job.task_id for job in jobs if job.start}
    deadline = time.monotonic() + START_TIMEOUT_S
    async with await open_store(paths.db, read_only=True) as store:
        while waiting:
            for task_id in sorted(waiting):
                record = await store.get_record(task_id)
                if record.heartbeat is not None:
                    waiting.discard(task_id)
                    continue
                proc = launched.procs[task_id]
                if proc.poll() is not None:
                    raise ZombietopError(
                        f"demo job {task_id} exited with status {proc.returncode} before its "
                        f"first heartbeat: {_last_line(paths.job_log(task_id))} "
                        f"(log: {paths.job_log(task_id)})"
                    )
            watchdog = launched.procs["watchdog"]
            if watchdog.poll() is not None:
                raise ZombietopError(
                    f"the demo's watchdog exited with status {watchdog.returncode}: "
                    f"{_last_line(paths.watch_log)} (log: {paths.watch_log})"
                )
            if waiting and time.monotonic() > deadline:
                raise ZombietopError(
                    f"no first heartbeat from {', '.join(sorted(waiting))} after "
                    f"{START_TIMEOUT_S:g}s; see their logs in {paths.logs}"
                )
            await asyncio.sleep(0.1)


def _last_line(path: Path) -> str:
    with contextlib.suppress(OSError):
        lines = path.read_text(errors="replace").strip().splitlines()
        if lines:
            return lines[-1]
    return "(no output)"


# Stopping --------------------------------------------------------------------------------


def _is_watchdog(found: Found) -> bool:
    return "watch" in found.cmdline and "zombietop.tui" in found.cmdline


def stop(paths: DemoPaths) -> SweepReport:
    """Stop every process of the demo at ``paths``: the watchdog first, then jobs and wrappers."""
    report = stop_all(paths.db, grace=STOP_GRACE_S, first=_is_watchdog)
    _require_clean(report)
    return report


def stopped(report: SweepReport) -> str:
    forced = f" ({len(report.killed)} needed SIGKILL)" if report.killed else ""
    return f"stopped {len(report.terminated)} demo processes{forced}; none left running"


def _require_clean(report: SweepReport) -> None:
    if not report.clean:
        left = "; ".join(found.words() for found in report.survivors)
        raise ZombietopError(f"could not stop every demo process, still alive: {left}")


# The command -----------------------------------------------------------------------------


def _me() -> str:
    """How the user ran zombietop, so the commands we print can be pasted as they are."""
    argv0 = sys.argv[0] if sys.argv else ""
    if os.path.basename(argv0) == "zombietop":
        return shlex.quote(argv0)
    return f"{shlex.quote(sys.executable)} -m tui"


def _store_args(paths: DemoPaths) -> str:
    return f"--db {shlex.quote(str(paths.db))} --config {shlex.quote(str(paths.config))}"


def demo_guide(paths: DemoPaths, speed: float, *, dashboard: bool) -> str:
    """What runs and what each job shows; then how to act, watch and stop."""
    me, store = _me(), _store_args(paths)
    width = max(len(job.task_id) for job in JOBS)
    lines = [
        f"zombietop demo: {sum(j.start for j in JOBS)} jobs and the watchdog run against "
        f"{paths.db} (speed {speed:g}).",
        f"Within about {max(60 / speed, 10):.0f} s every kind of zombie shows:",
        *(f"  {job.task_id.ljust(width)}  {job.shows}" for job in JOBS),
        "",
    ]
    if dashboard:
        lines.append(
            "Move with j and k or the arrows, / filters; K kills, r resumes, ? shows every key."
        )
        lines.append("q or ctrl+c quits the dashboard and stops every job of the demo.")
        return "\n".join(lines)
    lines += [
        f"  watch it:  {me} {store}",
        f"  status:    {me} status {store}",
        f"  pages:     {paths.pages}",
        f"  try:       {me} kill {STUBBORN} --yes {store}",
        f"             {me} kill {CHECKPOINTED} --yes {store}, then",
        f"             {me} resume {CHECKPOINTED} --yes {store}",
        f"  stop it:   {me} demo --stop --db {shlex.quote(str(paths.db))}",
    ]
    return "\n".join(lines)


class _Quit(Exception):
    """SIGTERM or SIGHUP while the dashboard ran: stop everything on the way out."""


def _quit(signum: int, frame: FrameType | None) -> None:
    raise _Quit(signal.Signals(signum).name)


def run_demo_dashboard(paths: DemoPaths) -> int:
    """Run the dashboard on the demo's store in the foreground and return its exit status."""
    # Like a shell: the dashboard owns the terminal; we wait, deaf to the keys meant for it.
    previous = {
        sig: signal.signal(sig, handler)
        for sig, handler in (
            (signal.SIGINT, signal.SIG_IGN),
            (signal.SIGQUIT, signal.SIG_IGN),
            (signal.SIGTERM, _quit),
            (signal.SIGHUP, _quit),
        )
    }
    proc = None
    try:
        proc = subprocess.Popen(zombietop_argv(paths), env=child_env(paths))
        return proc.wait()
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _say(text: str) -> None:
    # The terminal may be gone (SIGHUP): saying so must not stop the cleanup.
    with contextlib.suppress(OSError):
        print(text, flush=True)


def cmd_demo(args: argparse.Namespace) -> int:
    if getattr(args, "config", None):
        raise ZombietopError("the demo writes its own config beside its store; drop --config")
    paths = demo_paths(getattr(args, "db", None))
    if args.stop:
        return stop_demo(paths)
    # Before anything starts: the dashboard's toolkit, and tomli-w for the demo's config.
    require("`zombietop demo`", *([] if args.no_tui else ["textual", "rich"]), "tomli_w")
    speed = args.speed
    if not args.no_tui and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise ZombietopError(
            "the dashboard needs a terminal; run `zombietop demo --no-tui` to start the demo "
            "without it"
        )
    wipe(paths, _say)
    _say("zombietop demo: starting the jobs and the watchdog...")
    write_files(paths, speed)
    asyncio.run(create_tasks(paths, JOBS))
    launched = launch(paths, JOBS)
    try:
        asyncio.run(await_started(paths, JOBS, launched))
    except BaseException:
        stop(paths)
        raise
    # Printed before the dashboard too: it is what the screen shows again once the dashboard ends.
    print(demo_guide(paths, speed, dashboard=not args.no_tui), flush=True)
    if args.no_tui:
        return 0
    status = None
    try:
        status = run_demo_dashboard(paths)
    except _Quit as exc:
        _say(f"zombietop demo: {exc}; stopping the demo")
    finally:
        report = stop(paths)
        _say(f"zombietop demo: {stopped(report)}.")
        _say(f"The store stays for a look: {_me()} status {_store_args(paths)}")
    if status:
        _say(f"zombietop demo: the dashboard exited with status {status}")
    return status or 0


def stop_demo(paths: DemoPaths) -> int:
    if not is_demo_store(paths):
        raise ZombietopError(
            f"{paths.db} is not a demo store (no {paths.marker.name} in {paths.folder}); "
            "--stop only stops demos"
        )
    report = stop(paths)
    print(
        stopped(report) if report.terminated else f"no demo processes were running for {paths.db}"
    )
    return 0


def _speed(text: str) -> float:
    try:
        speed = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < speed <= MAX_SPEED:
        raise argparse.ArgumentTypeError(
            f"speed must be above 0 and at most {MAX_SPEED:g}, not {text}"
        )
    return speed


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``zombietop demo`` on the ``zombietop`` subparsers. Its store is its own: it
    never takes ``$ZOMBIETOP_DB``, ``[store] path`` or a config file, so not ``common``."""
    del common
    demo = sub.add_parser(
        "demo",
        help="start real jobs that show every kind of zombie, and open the dashboard on them",
        description=textwrap.fill(
            "Create a fresh demo store, start real jobs that show every kind of zombie and the "
            "watchdog against it, and open the dashboard. Quitting the dashboard stops every "
            "process the demo started.",
            width=79,
        )
        + "\n\nexamples:\n  zombietop demo\n  zombietop demo --speed 10 --no-tui\n"
        "  zombietop demo --stop",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument(
        "--db",
        default=argparse.SUPPRESS,
        metavar="PATH",
        help="a demo store (default: $XDG_STATE_HOME/zombietop/demo/demo.db, which is "
        "~/.local/state/zombietop/demo/demo.db when XDG_STATE_HOME is unset); the demo wipes "
        "only stores it made itself",
    )
    # Taken only to say why it is refused: the demo writes its own config beside its store.
    demo.add_argument("--config", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    demo.add_argument(
        "--no-tui",
        action="store_true",
        help="leave the jobs running and print how to watch and stop them",
    )
    demo.add_argument(
        "--speed",
        type=_speed,
        default=1.0,
        metavar="N",
        help="run N times faster (default 1: every health within about a minute)",
    )
    demo.add_argument("--stop", action="store_true", help="stop every process of the demo at --db")
    demo.set_defaults(handler=cmd_demo)
