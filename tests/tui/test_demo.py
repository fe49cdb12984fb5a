"""``zombietop demo``: real jobs show every promised health, and quitting leaves nothing running."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from zombietop.act.sweep import find, stop_all
from zombietop.config import load_config
from zombietop.locations import task_file_name
from zombietop.model import EventKind
from zombietop.store import open_store
from zombietop.tui.cli.main import main
from zombietop.tui.demo.command import (
    CHECKPOINTED,
    JOBS,
    STUBBORN,
    DemoPaths,
    demo_limits,
    render_config,
)

SPEED = "10"
DEADLINE_S = 60.0
"""Generous: a noisy two-core machine may start twenty Python processes slowly."""

pytestmark = pytest.mark.slow


def zombietop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zombietop.tui", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[DemoPaths]:
    """A demo started with --no-tui at speed 10; whatever happens, swept away at the end."""
    paths = DemoPaths(db=tmp_path.resolve() / "demo.db")
    try:
        yield paths
    finally:
        stop_all(paths.db, grace=1.0)


def start(paths: DemoPaths) -> str:
    result = zombietop("demo", "--no-tui", "--speed", SPEED, "--db", str(paths.db))
    assert result.returncode == 0, result.stderr
    return result.stdout


def status(paths: DemoPaths, capsys: pytest.CaptureFixture[str]) -> dict[str, dict[str, Any]]:
    capsys.readouterr()
    main(["status", "--json", "--db", str(paths.db), "--config", str(paths.config)])
    return {task["task_id"]: task for task in json.loads(capsys.readouterr().out)["tasks"]}


def wait_until(
    paths: DemoPaths,
    capsys: pytest.CaptureFixture[str],
    checks: dict[str, Callable[[dict[str, dict[str, Any]]], bool]],
) -> dict[str, float]:
    """Poll status until every check has held once; return when each first did (s after start)."""
    started = time.monotonic()
    seen: dict[str, float] = {}
    last: dict[str, dict[str, Any]] = {}
    while len(seen) < len(checks):
        last = status(paths, capsys)
        for name, check in checks.items():
            if name not in seen and check(last):
                seen[name] = round(time.monotonic() - started, 1)
        if time.monotonic() - started > DEADLINE_S:
            missing = sorted(set(checks) - set(seen))
            summary = {t: (v["health"], v["flags"], v["quarantined"]) for t, v in last.items()}
            raise AssertionError(f"never saw {missing} within {DEADLINE_S:g}s; last: {summary}")
        time.sleep(0.2)
    return seen


def health(task_id: str, word: str) -> Callable[[dict[str, dict[str, Any]]], bool]:
    return lambda tasks: tasks[task_id]["health"] == word


def blocked_behind_quarantine(tasks: dict[str, dict[str, Any]]) -> bool:
    dependent, upstream = tasks["publish-2031"], tasks["export-2031"]
    waits = any(
        r["code"] == "waiting_on_upstream" and "export-2031" in r["message"]
        for r in dependent["reasons"]
    )
    return dependent["health"] == "queued" and waits and upstream["quarantined"]


def live_pids(paths: DemoPaths, tasks: dict[str, dict[str, Any]]) -> dict[int, float]:
    """Every process of the demo alive now, found both ways: by the sweep and by task pid."""
    pids = {found.pid: found.create_time for found in find(paths.db)}
    for task in tasks.values():
        if task["pid"]:
            try:
                pids[task["pid"]] = psutil.Process(task["pid"]).create_time()
            except psutil.NoSuchProcess:
                pass
    return pids


def still_alive(pids: dict[int, float]) -> list[str]:
    """Those of ``pids`` that are still the same live process (same start time, not a zombie)."""
    alive = []
    for pid, created in pids.items():
        try:
            proc = psutil.Process(pid)
            if proc.create_time() == created and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{pid} {' '.join(proc.cmdline())}")
        except psutil.NoSuchProcess:
            continue
    return alive


def assert_all_gone(paths: DemoPaths, pids: dict[int, float]) -> None:
    assert still_alive(pids) == []
    assert find(paths.db) == []


def kill_outcomes(paths: DemoPaths, task_id: str) -> list[str]:
    """The outcomes of kill actions on the task, oldest first, as the store recorded them."""

    async def read() -> list[str]:
        async with await open_store(paths.db, read_only=True) as store:
            events = await store.events(task_id=task_id, kind=EventKind.ACTION)
        return [e.data["outcome"] for e in reversed(events) if e.data.get("action") == "kill"]

    return asyncio.run(read())


def stop(paths: DemoPaths) -> str:
    result = zombietop("demo", "--stop", "--db", str(paths.db))
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_demo_shows_every_health_then_stops_every_process(
    demo: DemoPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every health of the issue appears in `status --json`; `--stop` leaves no process behind."""
    out = start(demo)
    assert f"-m tui demo --stop --db {demo.db}" in out
    assert f"--db {demo.db} --config {demo.config}" in out
    seen = wait_until(
        demo,
        capsys,
        {
            "healthy": health("ingest-2041", "healthy"),
            "stalled at 61%": lambda t: (
                health("export-2031", "stalled")(t) and t["export-2031"]["progress"] == 61
            ),
            "spinning": health("reindex-2044", "spinning"),
            "dead": health("thumbnails-2045", "dead"),
            "reclaimable": health("billing-2046", "reclaimable"),
            "queued behind a quarantined upstream": blocked_behind_quarantine,
            "request_overrun": lambda t: "request_overrun" in t["sync-2047"]["flags"],
            "stubborn healthy": health(STUBBORN, "healthy"),
            "checkpointing healthy": health(CHECKPOINTED, "healthy"),
            "paged": lambda t: (
                " export-2031 stalled: stage=transform p=61%" in demo.pages.read_text()
            ),
        },
    )
    with capsys.disabled():
        print(f"\nseconds until each health first showed at speed {SPEED}: {seen}")
    # The stalled process is alive and idle: the seed's incident, not a dead one.
    tasks = status(demo, capsys)
    assert "pid" in tasks["export-2031"]["context"] and "alive" in tasks["export-2031"]["context"]
    # The watchdog paged to the log beside the store, once per incident.
    pages = demo.pages.read_text().splitlines()
    assert sum(" export-2031 stalled: stage=transform p=61%" in line for line in pages) == 1

    pids = live_pids(demo, tasks)
    # The watchdog, a wrapper and a job per wrapped job, the bare SDK job; less the two killed.
    wrapped = sum(job.start and job.wrapped for job in JOBS)
    bare = sum(job.start and not job.wrapped for job in JOBS)
    assert len(pids) >= 1 + 2 * wrapped + bare - 2
    out = stop(demo)
    assert "none left running" in out
    assert_all_gone(demo, pids)
    assert "no demo processes were running" in stop(demo)


def test_demo_kill_escalates_and_resume_continues_from_the_checkpoint(
    demo: DemoPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the CLI: the kill of the SIGTERM-ignoring job escalates; the checkpointed resumes."""
    start(demo)
    store = ("--db", str(demo.db), "--config", str(demo.config))
    wait_until(
        demo,
        capsys,
        {
            "stubborn healthy": health(STUBBORN, "healthy"),
            "some items done": lambda t: t[CHECKPOINTED]["counters"].get("items", 0) >= 5,
        },
    )

    killed = zombietop("kill", STUBBORN, "--yes", *store)
    # Escalated by this command, or by the watchdog if it looked first: either says so.
    assert f"{STUBBORN}: escalated:" in killed.stdout, killed.stdout + killed.stderr
    assert kill_outcomes(demo, STUBBORN) == ["term_sent", "escalated"]
    assert "ignored" in (demo.logs / f"{STUBBORN}.1.log").read_text()

    killed = zombietop("kill", CHECKPOINTED, "--yes", *store)
    assert f"{CHECKPOINTED}: exited:" in killed.stdout, killed.stdout + killed.stderr
    tasks = status(demo, capsys)
    assert tasks[CHECKPOINTED]["health"] == "interrupted"
    assert tasks[STUBBORN]["health"] == "interrupted"
    checkpoint = json.loads(Path(tasks[CHECKPOINTED]["checkpoint"]).read_text())["item"]
    assert checkpoint >= 5

    resumed = zombietop("resume", CHECKPOINTED, "--yes", *store)
    assert f"{CHECKPOINTED}: relaunched:" in resumed.stdout, resumed.stdout + resumed.stderr
    wait_until(
        demo,
        capsys,
        {
            "attempt 2 carries on": lambda t: (
                t[CHECKPOINTED]["attempt"] == 2
                and t[CHECKPOINTED]["health"] == "healthy"
                and t[CHECKPOINTED]["counters"].get("resumed_from") == checkpoint
                and t[CHECKPOINTED]["counters"].get("items", 0) >= checkpoint
            ),
        },
    )
    log = (demo.logs / f"{task_file_name(CHECKPOINTED)}.2.log").read_text()
    assert f"attempt 2: starting at item {checkpoint} of" in log

    pids = live_pids(demo, status(demo, capsys))
    stop(demo)
    assert_all_gone(demo, pids)  # the relaunched attempt included


def test_a_second_demo_on_the_same_path_replaces_the_first(
    demo: DemoPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    start(demo)
    first = live_pids(demo, status(demo, capsys))
    (demo.logs / "left-behind.txt").write_text("from the first demo")
    start(demo)
    assert still_alive(first) == []
    assert not (demo.logs / "left-behind.txt").exists()
    tasks = status(demo, capsys)
    assert sorted(tasks) == sorted(job.task_id for job in JOBS)
    stop(demo)


# Without processes --------------------------------------------------------------------------


@pytest.mark.parametrize("speed", [0.1, 0.5, 1, 3, 7, 10, 20])
def test_the_demo_config_is_valid_at_every_speed(tmp_path: Path, speed: float) -> None:
    path = tmp_path / "config.toml"
    path.write_text(render_config(speed, tmp_path / "pages.log"))
    limits = load_config(path).limits_for("demo")
    assert limits.heartbeat_interval == pytest.approx(2 / speed, abs=0.001)
    # The slowest health (spinning: progress stops after 4 beats) shows within a minute at 1x.
    assert 4 * limits.heartbeat_interval + limits.progress_timeout <= 60 / speed


def test_thresholds_scale_with_speed_but_start_grace_has_a_floor() -> None:
    assert demo_limits(1)["lease_ttl"] == 20
    assert demo_limits(10)["lease_ttl"] == 2
    assert demo_limits(20)["start_grace"] == 5


def test_the_demo_refuses_to_wipe_a_store_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "real.db"
    assert main(["init", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["demo", "--no-tui", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zombietop: {db} is not a demo store") and err.count("\n") == 1
    assert main(["demo", "--stop", "--db", str(db)]) == 2
    assert "--stop only stops demos" in capsys.readouterr().err
    assert db.exists()


def test_the_demo_refuses_a_folder_beside_the_store_that_it_did_not_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "demo.db.d").mkdir()
    (tmp_path / "demo.db.d" / "precious.txt").write_text("mine")
    assert main(["demo", "--no-tui", "--db", str(tmp_path / "demo.db")]) == 2
    assert "is not a demo store" in capsys.readouterr().err
    assert (tmp_path / "demo.db.d" / "precious.txt").exists()


def test_the_dashboard_needs_a_terminal(tmp_path: Path) -> None:
    result = zombietop("demo", "--db", str(tmp_path / "demo.db"))
    assert result.returncode == 2
    assert result.stderr == (
        "zombietop: the dashboard needs a terminal; run `zombietop demo --no-tui` "
        "to start the demo without it\n"
    )
    assert not (tmp_path / "demo.db").exists()


@pytest.mark.parametrize("speed", ["0", "-1", "21", "fast"])
def test_speed_must_be_a_sensible_number(speed: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--speed", speed])
    assert exc.value.code == 2
    assert "--speed" in capsys.readouterr().err


def test_demo_publish_starts_once_its_upstream_is_resumed_and_succeeds(
    demo: DemoPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported fault: publish-2031 stayed `queued` for ever after export-2031 was resumed
    and succeeded, since nothing waited to start it."""
    start(demo)
    store = ("--db", str(demo.db), "--config", str(demo.config))
    wait_until(demo, capsys, {"queued behind a quarantined upstream": blocked_behind_quarantine})
    resumed = zombietop("resume", "export-2031", "--yes", *store)
    assert "export-2031: relaunched:" in resumed.stdout, resumed.stdout + resumed.stderr
    wait_until(
        demo,
        capsys,
        {
            "export succeeded": health("export-2031", "succeeded"),
            "publish succeeded": health("publish-2031", "succeeded"),
        },
    )
    pids = live_pids(demo, status(demo, capsys))
    stop(demo)
    assert_all_gone(demo, pids)
