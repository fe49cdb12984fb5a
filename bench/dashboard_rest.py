"""Dashboard at rest over a terminal: CPU% and bytes written to the terminal per second, with
1,000 live tasks at a 1 s refresh (``--refresh``) in an 80x24 tmux pane, side by side with htop
at the same delay. Target: CPU <= 1%, bytes/s no more than htop's.

    python bench/dashboard_rest.py [--rounds 3] [--seconds 20] [--tasks 1000] [--size 80x24]
                                   [--fleet both|mixed|healthy|local] [--jobs 40,200]
                                   [--vs PYTHON] [--no-wall] [--refresh 1]

``--fleet local`` instead runs real `zombietop run` jobs on this host (``--jobs`` of them, in
turn: one that beats, one that only prints, one idle, one `sh -c` over a child), so the
dashboard's process probe reads their trees every poll, and measures the dashboard (and the
``--vs`` one) and htop only, in turn, then prints the load average. Targets: at 40 jobs CPU no
more than htop's and under 1%; at 200, no more than twice htop's.

scripts/fleet_store.py keeps the tasks beating in a fresh store for the whole run, in one of two
fleets (both by default, one after the other):

- mixed: one task in ten never beats (its worker took a 30 s lease and died). Those sort first;
  measured once settled, when their leases expired over a minute ago, so the rows in view
  change about once a minute and what ticks is the clock.
- healthy: every task beats. The rows in view are the tasks that beat longest ago, and about a
  tenth of the fleet beats every second, so every visible row is replaced every second.

``--vs PYTHON`` also runs the dashboard of another checkout (``PYTHON -m zombietop.tui``, the
interpreter of that checkout's venv) in each round, alternated with this one's: "before" in the
table. It reads a fleet of its own, the same size and kind, written by its own zombietop (the two
checkouts' store schemas may differ); both fleets run for the whole run, so each dashboard is
measured beside the same two.

Each round runs the dashboard (read-only), then the same in wall mode (``--wall``: counts and
the worst offenders, whose ages tick), then bench/textual_clock.py (a bare Textual app
redrawing one line a second: the floor Textual itself sets), then htop, each alone in a private
tmux server. After a warm-up, `tmux pipe-pane` counts the bytes the program writes and psutil its process tree's CPU
(user + system over wall time, 100% = one core). Prints each round and the medians; exits 0.
Not a test: the machine is shared and noisy, so only figures measured in the same run compare.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]

BEAT_EVERY = 10.0
"""fleet_store.py's beat period: after one, every beating task has a heartbeat on record."""

SETTLE_S = {"mixed": 30.0 + 60.0 + 5.0, "healthy": BEAT_EVERY}
"""How long a fresh fleet runs before the first round: the mixed fleet's silent leases
(fleet_store.py's SILENT_TTL_S, 30 s) expire, then read in minutes a minute later."""


def dashboard_args(refresh: float) -> list[str]:
    """After the interpreter: the zombietop installed in that interpreter's venv, read-only."""
    return ["-m", "zombietop.tui", "--read-only", "--refresh", f"{refresh:g}"]


FLEETS = {"mixed": 10, "healthy": 0}
"""fleet_store.py's ``--silent``: one task in N never beats (0: every task beats)."""


def htop_args(refresh: float) -> list[str]:
    """htop's delay is in tenths of a second: the same refresh as the dashboard's."""
    return ["-d", str(round(refresh * 10))]


TMUX_CONF = """\
set -g default-terminal xterm-256color
set -g remain-on-exit on
"""
# tmux sets a pane's TERM from default-terminal (tmux-256color), not from its own environment;
# remain-on-exit keeps a crashed program's last screen for the error message.


LOCAL_JOBS = (
    # Beats every 10 s through its heartbeat file, like a job that reports.
    'i=0; while :; do echo "stage=work p=$((i % 100))" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
    "i=$((i+1)); sleep 10; done",
    # Reports nothing, prints a line every 5 s: judged by its output (observed heartbeats).
    "while :; do echo tick; sleep 5; done",
    # Reports nothing, does nothing: stalled for no activity.
    "exec sleep 3600",
    # Reports nothing, a grandchild does the waiting: sh -c over a child.
    "sh -c 'sleep 3600'; true",
)
"""The local fleet's jobs, in turn: real `zombietop run` wrappers over real commands."""

LOCAL_SETTLE_S = 20.0
"""After the last job started: every job has its lease, a first beat or observation."""


class BenchError(Exception):
    """A program under measurement did not run as it should; the message says what it showed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Sample:
    """One program at rest for one measurement window."""

    cpu_pct: float
    bytes_per_s: float


def tree_cpu(root: psutil.Process) -> float:
    """Seconds of CPU used so far by ``root``, its live descendants and the children it reaped."""
    total = 0.0
    for proc in [root, *root.children(recursive=True)]:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = proc.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


class Tmux:
    """A private tmux server holding one session, ``bench``, at a fixed size."""

    def __init__(self, socket: str, conf: Path, env: dict[str, str]) -> None:
        self.base = ["tmux", "-L", socket, "-f", str(conf)]
        self.env = env  # the server starts with it, so every pane gets it
        self.socket_path: Path | None = None

    def __call__(self, *args: str) -> str:
        done = subprocess.run(
            [*self.base, *args], check=True, capture_output=True, text=True, env=self.env
        )
        return done.stdout.strip()

    def start(self, argv: list[str], size: tuple[int, int]) -> None:
        width, height = size
        where = ["-s", "bench", "-x", str(width), "-y", str(height), "-c", str(REPO)]
        self("new-session", "-d", *where, *argv)
        self.socket_path = Path(self("display-message", "-p", "#{socket_path}"))

    def program(self) -> psutil.Process:
        # More than one argument to new-session: tmux execs the program itself, no shell between.
        return psutil.Process(int(self("display-message", "-p", "-t", "bench", "#{pane_pid}")))

    def check_alive(self, name: str) -> None:
        if self("display-message", "-p", "-t", "bench", "#{pane_dead}") == "1":
            lines = self("capture-pane", "-p", "-S", "-", "-t", "bench").splitlines()
            screen = "\n".join(line for line in lines if line.strip())
            raise BenchError(f"{name} exited before the measurement ended; its screen:\n{screen}")

    def stop(self) -> None:
        subprocess.run([*self.base, "kill-server"], stderr=subprocess.DEVNULL, check=False)
        if self.socket_path is not None:
            self.socket_path.unlink(missing_ok=True)  # tmux leaves it behind when killed


def measure(
    name: str, argv: list[str], tmux: Tmux, capture: Path, args: argparse.Namespace
) -> Sample:
    """Run ``argv`` alone in a fresh tmux server, let it settle, then watch it at rest."""
    capture.unlink(missing_ok=True)
    try:
        tmux.start(argv, args.size)
        time.sleep(args.warmup)
        tmux.check_alive(name)
        proc = tmux.program()
        tmux("pipe-pane", "-o", "-t", "bench", f"cat >> {capture}")
        cpu_before, started = tree_cpu(proc), time.monotonic()
        time.sleep(args.seconds)
        cpu_after, elapsed = tree_cpu(proc), time.monotonic() - started
        tmux("pipe-pane", "-t", "bench")
        tmux.check_alive(name)
    finally:
        tmux.stop()
    time.sleep(0.3)  # let the pipe's cat write what it read before it saw end-of-file
    written = capture.stat().st_size if capture.exists() else 0
    return Sample(cpu_pct=100 * (cpu_after - cpu_before) / elapsed, bytes_per_s=written / elapsed)


@contextlib.contextmanager
def beating_fleet(
    db: Path, tasks: int, silent: int, env: dict[str, str], python: str = sys.executable
) -> Iterator[subprocess.Popen[str]]:
    """Keep ``tasks`` live tasks beating in ``db`` (written by ``python``'s zombietop) until the
    block ends."""
    log = db.with_suffix(".log")
    with log.open("w") as errors:
        fleet = subprocess.Popen(
            [
                python,
                str(REPO / "scripts" / "fleet_store.py"),
                *("--db", str(db), "--tasks", str(tasks), "--beat-every", f"{BEAT_EVERY:g}"),
                *("--silent", str(silent)),
            ],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
            start_new_session=True,  # Ctrl-C reaches only this script, which stops the fleet
        )
    try:
        assert fleet.stdout is not None
        ready = fleet.stdout.readline()  # "1000 tasks in ..." once every task holds a lease
        if not ready.startswith(f"{tasks} tasks in"):
            fleet.kill()
            fleet.wait()
            raise BenchError(f"scripts/fleet_store.py did not start: {ready}{log.read_text()}")
        yield fleet
    finally:
        if fleet.poll() is None:
            fleet.send_signal(signal.SIGINT)
            try:
                fleet.wait(timeout=5)
            except subprocess.TimeoutExpired:
                fleet.kill()
                fleet.wait()


@contextlib.contextmanager
def local_fleet(
    db: Path, jobs: int, env: dict[str, str], python: str = sys.executable
) -> Iterator[list[subprocess.Popen[bytes]]]:
    """Run ``jobs`` real `zombietop run` jobs (``python``'s) on this host until the block ends."""
    wrappers: list[subprocess.Popen[bytes]] = []
    try:
        subprocess.run(
            [python, "-m", "zombietop.tui", "--db", str(db), "init"],
            env=env,
            check=True,
            capture_output=True,
        )
        for number in range(jobs):
            script = LOCAL_JOBS[number % len(LOCAL_JOBS)]
            wrappers.append(
                subprocess.Popen(
                    [
                        *(python, "-m", "zombietop.tui", "--db", str(db), "run"),
                        *("--task", f"local-{number:03d}", "--", "sh", "-c", script),
                    ],
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
            if number % 10 == 9:
                time.sleep(1.0)  # a Python start-up each: do not swamp a small machine
        yield wrappers
    finally:
        for wrapper in wrappers:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(wrapper.pid, signal.SIGTERM)  # the wrapper forwards it to its job
        for wrapper in wrappers:
            try:
                wrapper.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(wrapper.pid, signal.SIGKILL)
                wrapper.wait()


def measure_local(jobs: int, htop: str | None, args: argparse.Namespace) -> dict[str, list[Sample]]:
    """Rounds of the dashboard and htop with ``jobs`` real wrapped jobs on this host."""
    samples: dict[str, list[Sample]] = {"zombietop": []}
    with tempfile.TemporaryDirectory(prefix="zt-bench-") as folder:
        tmp = Path(folder)
        db = tmp / "local.db"
        env = child_env(tmp)
        conf = tmp / "tmux.conf"
        conf.write_text(TMUX_CONF)
        tmux = Tmux(f"zt-bench-{os.getpid()}", conf, env)
        runs = {
            "zombietop": [
                sys.executable,
                *dashboard_args(args.refresh),
                "--db",
                str(db),
            ]
        }
        if args.vs:
            runs["before"] = [args.vs, *dashboard_args(args.refresh), "--db", str(tmp / "vs.db")]
        if htop:
            runs["htop"] = [htop, *htop_args(args.refresh)]
        samples.update({name: [] for name in runs})
        with contextlib.ExitStack() as fleets:
            wrappers = list(fleets.enter_context(local_fleet(db, jobs, env)))
            if args.vs:
                wrappers += fleets.enter_context(local_fleet(tmp / "vs.db", jobs, env, args.vs))
            time.sleep(LOCAL_SETTLE_S)
            for _ in range(args.rounds):
                for name, argv in runs.items():
                    samples[name].append(measure(name, argv, tmux, tmp / f"{name}.bytes", args))
            gone = sum(1 for wrapper in wrappers if wrapper.poll() is not None)
            if gone:
                raise BenchError(f"{gone} of {len(wrappers)} wrapped jobs exited during the run")
            load = " ".join(f"{avg:.2f}" for avg in os.getloadavg())
            print(
                f"\n{jobs} local jobs: {len(psutil.pids())} processes on the host, "
                f"load average at the end: {load}"
            )
    return samples


def report_local(jobs: int, samples: dict[str, list[Sample]]) -> None:
    """Every round, the medians, and the target for this many local jobs."""
    print(row("", "CPU %", "bytes/s"))
    for name, runs in samples.items():
        for number, sample in enumerate(runs, 1):
            print(row(f"{name} #{number}", f"{sample.cpu_pct:.2f}", f"{sample.bytes_per_s:,.0f}"))
    ours = statistics.median(s.cpu_pct for s in samples["zombietop"])
    print(row("zombietop median", f"{ours:.2f}", ""))
    if samples.get("before"):
        before = statistics.median(s.cpu_pct for s in samples["before"])
        print(row("before median", f"{before:.2f}", ""))
        print(row("zombietop/before", f"{ours / before:.2f}x" if before else "-", ""))
    if not samples.get("htop"):
        print(f"target: CPU <= 1% ({'met' if ours <= 1 else 'NOT met'}); htop not measured")
        return
    htop = statistics.median(s.cpu_pct for s in samples["htop"])
    print(row("htop median", f"{htop:.2f}", ""))
    ratio = ours / htop if htop else float("inf")
    print(row("zombietop/htop", f"{ratio:.2f}x", ""))
    if jobs <= 40:
        met = ours <= htop and ours < 1.0
        print(f"target at {jobs} jobs: CPU <= htop's and < 1% ({'met' if met else 'NOT met'})")
    else:
        met = ours <= 2 * htop
        print(f"target at {jobs} jobs: CPU <= 2x htop's ({'met' if met else 'NOT met'})")


def child_env(tmp: Path) -> dict[str, str]:
    """This checkout's code, built-in defaults for zombietop and htop, no store from the caller."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ZOMBIETOP_")}
    # XDG_CONFIG_HOME in the temp dir: neither a user's config.toml nor their htoprc is read, and
    # htop's rewrite of its htoprc on exit lands there too.
    env.update(PYTHONPATH=str(REPO), XDG_CONFIG_HOME=str(tmp), TERM="xterm-256color")
    return env


def parse_size(text: str) -> tuple[int, int]:
    width, sep, height = text.partition("x")
    if not (sep and width.isdigit() and height.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT (e.g. 80x24)")
    return int(width), int(height)


def htop_version(htop: str) -> str:
    done = subprocess.run([htop, "--version"], capture_output=True, text=True, check=False)
    return done.stdout.split("\n", 1)[0].strip() or "htop, version unknown"


def row(label: str, cpu: str, rate: str) -> str:
    return f"{label:>18} {cpu:>8} {rate:>10}"


def report(fleet: str, samples: dict[str, list[Sample]]) -> None:
    """Print every round, then the medians, the ratio and whether the targets are met."""
    print(f"\n{fleet} fleet")
    print(row("", "CPU %", "bytes/s"))
    for name, runs in samples.items():
        for number, sample in enumerate(runs, 1):
            print(row(f"{name} #{number}", f"{sample.cpu_pct:.2f}", f"{sample.bytes_per_s:,.0f}"))
    medians = {
        name: Sample(
            cpu_pct=statistics.median(s.cpu_pct for s in runs),
            bytes_per_s=statistics.median(s.bytes_per_s for s in runs),
        )
        for name, runs in samples.items()
        if runs
    }
    for name, median in medians.items():
        print(row(f"{name} median", f"{median.cpu_pct:.2f}", f"{median.bytes_per_s:,.0f}"))
    ours, htop = medians["zombietop"], medians.get("htop")
    before = medians.get("before")
    if before is not None:
        print(
            row(
                "zombietop/before",
                f"{ours.cpu_pct / before.cpu_pct:.2f}x" if before.cpu_pct else "-",
                f"{ours.bytes_per_s / before.bytes_per_s:.2f}x" if before.bytes_per_s else "-",
            )
        )
    cpu_met = "met" if ours.cpu_pct <= 1.0 else "NOT met"
    if htop is None:
        print(f"target: CPU <= 1% ({cpu_met}); bytes/s against htop not measured")
        return
    floor = medians.get("textual")
    if floor is not None:
        print(row("zombietop-textual", f"{ours.cpu_pct - floor.cpu_pct:.2f}", ""))
    print(
        row(
            "zombietop/htop",
            f"{ours.cpu_pct / htop.cpu_pct:.2f}x" if htop.cpu_pct else "-",
            f"{ours.bytes_per_s / htop.bytes_per_s:.2f}x" if htop.bytes_per_s else "-",
        )
    )
    rate_met = "met" if ours.bytes_per_s <= htop.bytes_per_s else "NOT met"
    print(f"target: CPU <= 1% ({cpu_met}); bytes/s <= htop's ({rate_met})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--refresh",
        type=float,
        default=1.0,
        help="seconds between redraws, the dashboard's and htop's alike (the dashboard's own "
        "default is 2)",
    )
    parser.add_argument("--seconds", type=float, default=20.0, help="measurement window per run")
    parser.add_argument("--warmup", type=float, default=10.0, help="seconds before measuring")
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--size", type=parse_size, default=(80, 24), metavar="WxH")
    parser.add_argument("--fleet", choices=["both", *FLEETS, "local"], default="both")
    parser.add_argument(
        "--vs", metavar="PYTHON", help="also run the dashboard with this interpreter's zombietop"
    )
    parser.add_argument("--no-wall", action="store_true", help="leave out the wall")
    parser.add_argument(
        "--jobs", default="40,200", help="local fleet: real wrapped jobs, comma-separated"
    )
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        print("tmux is not installed (apt-get install tmux); nothing measured")
        return 0
    # A plain `kill` cleans up as Ctrl-C does.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    htop = shutil.which("htop")
    load = " ".join(f"{avg:.2f}" for avg in os.getloadavg())
    print(
        f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"Textual {importlib.metadata.version('textual')}, "
        f"{htop_version(htop) if htop else 'htop not installed (apt-get install htop): zombietop only'}"
    )
    print(f"load average at start: {load}")
    width, height = args.size
    fleet = (
        "real jobs (zombietop run)"
        if args.fleet == "local"
        else f"{args.tasks:,} live tasks (scripts/fleet_store.py)"
    )
    print(
        f"{fleet}, {width}x{height} tmux, "
        f"refresh {args.refresh:g} s (htop -d {round(args.refresh * 10)}); "
        f"{args.warmup:g} s warm-up, median of {args.rounds} rounds "
        f"of {args.seconds:g} s"
    )
    if args.fleet == "local":
        for jobs in (int(n) for n in args.jobs.split(",")):
            try:
                report_local(jobs, measure_local(jobs, htop, args))
            except BenchError as exc:
                print(f"error: {exc}", file=sys.stderr)
                return 1
            except KeyboardInterrupt:
                print("interrupted; cleaned up", file=sys.stderr)
                return 130
        return 0
    fleets = list(FLEETS) if args.fleet == "both" else [args.fleet]
    for fleet in fleets:
        try:
            samples = measure_fleet(fleet, htop, args)
        except BenchError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("interrupted; cleaned up", file=sys.stderr)
            return 130
        report(fleet, samples)
    return 0


def measure_fleet(
    fleet_name: str, htop: str | None, args: argparse.Namespace
) -> dict[str, list[Sample]]:
    """Rounds of the dashboard and htop over one fresh fleet."""
    samples: dict[str, list[Sample]] = {"zombietop": []}
    with tempfile.TemporaryDirectory(prefix="zt-bench-") as folder:
        tmp = Path(folder)
        db = tmp / "fleet.db"
        env = child_env(tmp)
        conf = tmp / "tmux.conf"
        conf.write_text(TMUX_CONF)
        tmux = Tmux(f"zt-bench-{os.getpid()}", conf, env)
        runs = {
            "zombietop": [
                sys.executable,
                *dashboard_args(args.refresh),
                "--db",
                str(db),
            ]
        }
        if args.vs:
            runs["before"] = [args.vs, *dashboard_args(args.refresh), "--db", str(tmp / "vs.db")]
        if not args.no_wall:
            runs["wall"] = [
                sys.executable,
                *dashboard_args(args.refresh),
                "--wall",
                "--db",
                str(db),
            ]
        runs["textual"] = [sys.executable, str(REPO / "bench" / "textual_clock.py")]
        if htop:
            runs["htop"] = [htop, *htop_args(args.refresh)]
        samples.update({name: [] for name in runs})
        with contextlib.ExitStack() as stack:
            fleets = {
                db: stack.enter_context(beating_fleet(db, args.tasks, FLEETS[fleet_name], env))
            }
            if args.vs:
                vs_db = tmp / "vs.db"
                fleets[vs_db] = stack.enter_context(
                    beating_fleet(vs_db, args.tasks, FLEETS[fleet_name], env, args.vs)
                )
            time.sleep(SETTLE_S[fleet_name])
            for _ in range(args.rounds):
                for name, argv in runs.items():
                    sample = measure(name, argv, tmux, tmp / f"{name}.bytes", args)
                    samples[name].append(sample)
                for store, fleet in fleets.items():
                    if fleet.poll() is not None:
                        log = store.with_suffix(".log").read_text()
                        raise BenchError(f"scripts/fleet_store.py stopped: {log}")
    return samples


if __name__ == "__main__":
    sys.exit(main())
