"""``zombietop status``, ``beat``, ``init`` and ``config``: output, exit codes, one-line errors.

``status`` exits by the Nagios plugin API (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN); the other
commands exit 2 on a usage error or a failure.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from zombietop.clock import FakeClock
from zombietop.health import Health
from zombietop.heartbeat_line import parse_line
from zombietop.model import TaskState
from zombietop.procs import read_start, this_host
from zombietop.store import open_store
from zombietop.store.sqlite import SCHEMA_VERSION
from zombietop.tui.cli.main import main

HOUR = 3600.0


def build_store(path: Path, scenarios: list[str]) -> None:
    """Create one task per named scenario through the real store API.

    The store's fake clock is set in the past so that, read by the real clock a moment later,
    each task sits minutes away from any threshold: the verdicts cannot flip during the test.
    """

    async def build() -> None:
        real_now = time.time()
        clock = FakeClock(real_now - 3 * HOUR)
        async with await open_store(path, create=True, clock=clock) as store:

            async def start(
                task_id: str, ttl: float = 6 * HOUR, upstream: tuple[str, ...] = ()
            ) -> int:
                await store.create_task(
                    task_id=task_id,
                    run_id="nightly",
                    step=task_id.split("-")[0],
                    step_type="default",
                    actor="test",
                    upstream=upstream,
                )
                lease = await store.acquire_lease(task_id, owner="w1@box", ttl=ttl)
                await store.record_heartbeat(
                    task_id,
                    parse_line("stage=transform p=61 rows=10"),
                    owner="w1@box",
                    token=lease.token,
                )
                return lease.token

            if "reclaimable" in scenarios:
                await start("reclaimable-1", ttl=60)
            if "succeeded" in scenarios:
                token = await start("succeeded-1")
            if "spinning" in scenarios:
                spin = await start("spinning-1")
            if "overrun" in scenarios:
                overrun = await start("overrun-1")
            if "stalled" in scenarios:
                clock.set(real_now - HOUR)
                await start("stalled-1")
            clock.set(real_now - 20)
            if "succeeded" in scenarios:
                await store.finish_task(
                    "succeeded-1",
                    owner="w1@box",
                    token=token,
                    state=TaskState.SUCCEEDED,
                    exit_code=0,
                )
            if "failed" in scenarios:
                failed = await start("failed-1")
                await store.finish_task(
                    "failed-1", owner="w1@box", token=failed, state=TaskState.FAILED, exit_code=3
                )
            if "interrupted" in scenarios:
                interrupted = await start("interrupted-1")
                await store.finish_task(
                    "interrupted-1",
                    owner="w1@box",
                    token=interrupted,
                    state=TaskState.INTERRUPTED,
                    reason="SIGTERM",
                )
            if "quarantined" in scenarios:
                await start("quarantined-1")
                await store.set_quarantine(
                    "quarantined-1", quarantined=True, actor="watchdog", reason="stalled"
                )
            if "queued" in scenarios:
                await store.create_task(
                    task_id="queued-1",
                    run_id="nightly",
                    step="load",
                    step_type="default",
                    actor="test",
                    upstream=("quarantined-1",),
                )
            if "starting" in scenarios:
                await store.create_task(
                    task_id="starting-1",
                    run_id="nightly",
                    step="x",
                    step_type="default",
                    actor="test",
                )
                await store.acquire_lease("starting-1", owner="w2@box", ttl=6 * HOUR)
            clock.set(real_now - 5)
            if "spinning" in scenarios:
                await store.record_heartbeat(
                    "spinning-1",
                    parse_line("stage=transform p=61 rows=10"),
                    owner="w1@box",
                    token=spin,
                )
            if "overrun" in scenarios:
                # Beating and moving, three hours into a stage whose budget is 15 minutes.
                await store.record_heartbeat(
                    "overrun-1",
                    parse_line("stage=transform p=70 rows=20"),
                    owner="w1@box",
                    token=overrun,
                )
            if "healthy" in scenarios:
                await start("healthy-1")
            if "discarded" in scenarios:
                token = await start("discarded-1")
                await store.discard_task("discarded-1", expected_token=token, actor="oncall")
            if "dead" in scenarios:
                # A real process on this host that has exited: its pid is recorded, then gone.
                gone = subprocess.Popen(["true"])
                started = read_start(gone.pid)
                gone.wait()
                token = await start("dead-1")
                await store.set_process(
                    "dead-1",
                    owner="w1@box",
                    token=token,
                    pid=gone.pid,
                    pid_start_time=started.time if started else real_now,
                    pid_start_identity=started.identity if started else None,
                    host=this_host(),
                )

            if "orphaned" in scenarios:
                # Failed as its wrapper recorded, while the command's process runs on.
                await store.create_task(
                    task_id="orphaned-1",
                    run_id="nightly",
                    step="orphaned",
                    step_type="default",
                    actor="test",
                    command=("sleep", "120"),
                )
                lease = await store.acquire_lease("orphaned-1", owner="w1@box", ttl=6 * HOUR)
                alive = subprocess.Popen(["sleep", "120"])
                atexit.register(alive.kill)
                started = read_start(alive.pid)
                await store.set_process(
                    "orphaned-1",
                    owner="w1@box",
                    token=lease.token,
                    pid=alive.pid,
                    pid_start_time=started.time if started else real_now,
                    pid_start_identity=started.identity if started else None,
                    host=this_host(),
                )
                await store.finish_task(
                    "orphaned-1",
                    owner="w1@box",
                    token=lease.token,
                    state=TaskState.FAILED,
                    exit_code=1,
                )

    asyncio.run(build())


ALL = [
    "healthy",
    "stalled",
    "spinning",
    "reclaimable",
    "quarantined",
    "interrupted",
    "starting",
    "queued",
    "succeeded",
    "failed",
    "discarded",
    "dead",
    "orphaned",
]


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_status_json_reports_each_health(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "z.db"
    build_store(db, ALL)
    code, out, err = run_cli(capsys, "status", "--json", "--db", str(db))
    assert err == ""
    report = json.loads(out)
    healths = {t["task_id"]: t["health"] for t in report["tasks"]}
    assert healths == {f"{name}-1": name for name in ALL}
    assert set(ALL) == {str(health) for health in Health}
    assert code == 2  # CRITICAL: dead, stalled and reclaimable tasks page
    assert set(report) == {
        "generated_at",
        "counts",
        "host",
        "watchdog",
        "agents",
        "tasks",
        "schedules",
        "silences",
        "source_errors",
        "source_notes",
        "pings",
        "counted",
    }
    assert report["counted"] is None  # a store under [monitor] read_at_most is read whole
    dead = next(t for t in report["tasks"] if t["task_id"] == "dead-1")
    assert dead["reasons"][0]["code"] in ("process_gone", "pid_reused")
    assert " gone" in dead["context"] or "reused" in dead["context"]
    assert all(report["counts"][name] == 1 for name in ALL)
    assert report["counts"]["healthy"] == 1 and sum(report["counts"].values()) == len(ALL)
    # Most urgent first.
    assert [t["health"] for t in report["tasks"]][:4] == [
        "dead",
        "orphaned",
        "reclaimable",
        "stalled",
    ]
    stalled = next(t for t in report["tasks"] if t["task_id"] == "stalled-1")
    assert set(stalled) >= {
        "task_id",
        "run_id",
        "step",
        "step_type",
        "health",
        "reasons",
        "flags",
        "stage",
        "progress",
        "heartbeat_age_s",
        "lease_expires_in_s",
        "owner",
        "token",
        "pid",
        "host",
        "attempt",
        "budgets",
        "context",
    }
    assert stalled["stage"] == "transform" and stalled["progress"] == 61
    assert stalled["owner"] == "w1@box" and stalled["token"] == 1 and stalled["attempt"] == 1
    assert 3590 < stalled["heartbeat_age_s"] < 3700
    assert stalled["reasons"][0]["code"] == "heartbeat_stale"
    assert stalled["flags"] == ["stage_overrun"]
    assert stalled["budgets"]["stage"]["limit_s"] == 900
    assert stalled["budgets"]["task"]["source"] == "default"
    assert stalled["context"].startswith(
        "stalled-1 stalled, stage_overrun: stage=transform p=61% heartbeat 1h00m old"
    )
    assert stalled["context"].endswith("- resume or discard")
    queued = next(t for t in report["tasks"] if t["task_id"] == "queued-1")
    assert queued["context"] == "queued-1 queued: waiting on quarantined-1 (quarantined)"


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("healthy", 0),
        ("starting", 0),
        ("queued", 0),
        ("quarantined", 0),
        ("interrupted", 0),
        ("succeeded", 0),
        ("failed", 2),  # a failed run is an incident until a later run of its job succeeds
        ("discarded", 0),
        ("spinning", 1),
        ("overrun", 1),
        ("stalled", 2),
        ("reclaimable", 2),
        ("dead", 2),
    ],
)
def test_status_exit_code_follows_the_nagios_plugin_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], scenario: str, expected: int
) -> None:
    """0 OK, 1 WARNING (spinning, over a budget), 2 CRITICAL (dead, stalled, reclaimable, a
    failed run)."""
    db = tmp_path / "z.db"
    build_store(db, [scenario])
    for form in ([], ["--json"], ["--nagios"]):
        code, out, err = run_cli(capsys, "status", "--db", str(db), *form)
        assert (code, err) == (expected, ""), (form, out)
    state = ["OK", "WARNING", "CRITICAL"][expected]
    assert out.startswith(f"ZOMBIETOP {state} - ")


def test_nagios_output_names_what_is_wrong_with_performance_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "z.db"
    build_store(db, ["stalled", "dead", "spinning", "healthy"])
    code, out, _ = run_cli(capsys, "status", "--nagios", "--db", str(db))
    summary, *details = out.rstrip("\n").split("\n")
    assert code == 2
    text, perfdata = summary.split(" | ")
    assert text == "ZOMBIETOP CRITICAL - 1 dead, 1 stalled, 1 spinning, 2 over budget"
    values = dict(pair.split("=") for pair in perfdata.split())
    assert values == {
        str(h): "1" if str(h) in ("dead", "stalled", "spinning", "healthy") else "0" for h in Health
    } | {"over_budget": "2", "missed": "0", "silenced": "0", "acked": "0"}
    assert [line.split(" ")[0] for line in details] == ["dead-1", "stalled-1", "spinning-1"]
    build_store(tmp_path / "ok.db", ["healthy", "queued"])
    code, out, _ = run_cli(capsys, "status", "--nagios", "--db", str(tmp_path / "ok.db"))
    assert (code, out.split(" | ")[0]) == (0, "ZOMBIETOP OK - 2 tasks, none stuck")


def test_usage_errors_of_status_are_unknown(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["status", "--bogus"])
    assert exited.value.code == 3
    with pytest.raises(SystemExit) as exited:
        main(["status", "--json", "--nagios"])
    assert exited.value.code == 3
    with pytest.raises(SystemExit) as exited:
        main(["beat", "--bogus"])
    assert exited.value.code == 2
    assert "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_an_unknown_option_to_run_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """The reported fault: `run` keeps its command in `args.command`, and the error path took
    that list for the command's name (TypeError: unhashable type: 'list')."""
    with pytest.raises(SystemExit) as exited:
        main(["run", "--job", "j", "--no-such", "--", "true"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "zombietop run: error: unrecognized arguments: --no-such" in err


def test_status_table_with_nothing_paging(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "z.db"
    build_store(db, ["healthy", "spinning", "queued", "quarantined", "succeeded"])
    code, out, _ = run_cli(capsys, "status", "--db", str(db))
    assert code == 1  # WARNING: spinning
    assert out.splitlines()[0].startswith(
        "spinning 1  quarantined 1  queued 1  healthy 1  succeeded 1"
    )
    assert "HEALTH" in out and "spinning-1" in out


def test_status_table_lists_what_to_act_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "z.db"
    build_store(db, ["stalled", "healthy"])
    code, out, _ = run_cli(capsys, "status", "--db", str(db))
    assert code == 2
    assert (
        out.rstrip()
        .splitlines()[-1]
        .startswith("stalled-1 stalled, stage_overrun: stage=transform p=61%")
    )


def test_recent_window_and_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "z.db"
    build_store(db, ["succeeded"])
    config = tmp_path / "c.toml"
    config.write_text('[monitor]\nfinished_window = "1s"\n')
    _, out, _ = run_cli(capsys, "status", "--json", "--db", str(db), "--config", str(config))
    assert json.loads(out)["tasks"] == []
    _, out, _ = run_cli(
        capsys, "status", "--json", "--all", "--db", str(db), "--config", str(config)
    )
    assert [t["task_id"] for t in json.loads(out)["tasks"]] == ["succeeded-1"]


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("missing", "zombietop: no store at {db}: start a job with `zombietop run`"),
        ("not-a-db", "zombietop: {db} is not a readable zombietop store (file is not a database)"),
        (
            "bad-config",
            'zombietop: {cfg} [timeouts]: stage = "7h" must be shorter than task = "6h"',
        ),
        ("broken-toml", "zombietop: {cfg}: not valid TOML"),
        ("missing-config", "zombietop: {cfg}: no such config file"),
    ],
)
def test_errors_are_one_line_and_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str, message: str
) -> None:
    db, cfg = tmp_path / "z.db", tmp_path / "c.toml"
    if setup == "not-a-db":
        db.write_bytes(b"\x00garbage" * 512)
    if setup != "missing":
        build_store(db, ["healthy"]) if setup != "not-a-db" else None
    if setup == "bad-config":
        cfg.write_text('[timeouts]\nstage = "7h"\n')
    elif setup == "broken-toml":
        cfg.write_text("[timeouts\n")
    argv = ["status", "--db", str(db)]
    if setup in ("bad-config", "broken-toml", "missing-config"):
        argv += ["--config", str(cfg)]
    code, out, err = run_cli(capsys, *argv)
    assert code == 3  # UNKNOWN: zombietop cannot say
    assert out == ""
    assert err.startswith(message.format(db=db, cfg=cfg))
    assert err.count("\n") == 1
    code, out, err = run_cli(capsys, *argv, "--nagios")
    assert code == 3 and err == ""
    assert out.startswith("ZOMBIETOP UNKNOWN - ") and out.count("\n") == 1
    assert message.format(db=db, cfg=cfg).removeprefix("zombietop: ") in out


def test_environment_selects_store_and_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "env.db"
    build_store(db, ["healthy"])
    monkeypatch.setenv("ZOMBIETOP_DB", str(db))
    monkeypatch.setenv("ZOMBIETOP_CONFIG", str(tmp_path / "nope.toml"))
    code, _, err = run_cli(capsys, "status")
    assert code == 3 and "nope.toml: no such config file" in err
    monkeypatch.delenv("ZOMBIETOP_CONFIG")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    code, out, _ = run_cli(capsys, "status", "--json")
    assert code == 0 and json.loads(out)["tasks"][0]["task_id"] == "healthy-1"


def test_default_store_lives_in_the_xdg_state_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ZOMBIETOP_DB", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    code, out, _ = run_cli(capsys, "init")
    assert code == 0
    expected = tmp_path / "state" / "zombietop" / "zombietop.db"
    assert out.strip() == f"store ready at {expected} (schema v{SCHEMA_VERSION})"
    assert run_cli(capsys, "status")[0] == 0


def _as_the_run(monkeypatch: pytest.MonkeyPatch, db: Path, task_id: str) -> int:
    """Give this process the lease env a command under ``zombietop run`` gets; return the token."""

    async def token() -> int:
        async with await open_store(db) as store:
            lease = await store.get_lease(task_id)
        assert lease is not None and lease.owner is not None
        monkeypatch.setenv("ZOMBIETOP_LEASE_OWNER", lease.owner)
        monkeypatch.setenv("ZOMBIETOP_LEASE_TOKEN", str(lease.token))
        return lease.token

    return asyncio.run(token())


def _no_lease(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ZOMBIETOP_TASK", "ZOMBIETOP_LEASE_OWNER", "ZOMBIETOP_LEASE_TOKEN"):
        monkeypatch.delenv(name, raising=False)


def test_beat_from_a_shell_script(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "z.db"
    build_store(db, ["healthy"])
    _as_the_run(monkeypatch, db, "healthy-1")
    code, _, err = run_cli(
        capsys,
        "beat",
        "--db",
        str(db),
        "--task",
        "healthy-1",
        "--stage",
        "load files",
        "--progress",
        "75",
        "--counter",
        "rows=9000",
        "--checkpoint",
        "/tmp/ck 1",
        "--eta",
        "5m",
    )
    assert (code, err) == (0, "")
    _, out, _ = run_cli(capsys, "status", "--json", "--db", str(db))
    task = json.loads(out)["tasks"][0]
    assert (task["stage"], task["progress"], task["counters"], task["checkpoint"]) == (
        "load files",
        75,
        {"rows": 9000},
        "/tmp/ck 1",
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--task", "healthy-1", "--line", "p=200"], "p=200 is outside 0..100"),
        (["--task", "nope", "--progress", "5"], "no task 'nope'"),
        (["--progress", "5"], "which task? pass --task ID"),
        (["--task", "healthy-1"], "nothing to beat"),
    ],
)
def test_beat_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    _no_lease(monkeypatch)
    db = tmp_path / "z.db"
    build_store(db, ["healthy"])
    _as_the_run(monkeypatch, db, "healthy-1")
    code, _, err = run_cli(capsys, "beat", "--db", str(db), *argv)
    assert code == 2 and message in err and err.count("\n") == 1


async def _progress(db: Path, task_id: str) -> float | None:
    async with await open_store(db) as store:
        beat = (await store.get_record(task_id)).heartbeat
    return None if beat is None else beat.progress


def test_beat_from_outside_any_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anyone who can write the store must not make a stalled task look alive."""
    _no_lease(monkeypatch)
    db = tmp_path / "z.db"
    build_store(db, ["stalled"])
    code, _, err = run_cli(
        capsys, "beat", "--db", str(db), "--task", "stalled-1", "--progress", "20"
    )
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(
        "zombietop: not recording a heartbeat for stalled-1: a beat must carry the lease of its "
        "run, and ZOMBIETOP_LEASE_OWNER and ZOMBIETOP_LEASE_TOKEN are not set. Call "
        "`zombietop beat` inside the command that `zombietop run` wraps"
    )
    assert asyncio.run(_progress(db, "stalled-1")) == 61  # the old beat, untouched
    monkeypatch.setenv("ZOMBIETOP_LEASE_OWNER", "w1@box")
    monkeypatch.setenv("ZOMBIETOP_LEASE_TOKEN", "latest")
    code, _, err = run_cli(
        capsys, "beat", "--db", str(db), "--task", "stalled-1", "--progress", "20"
    )
    assert code == 2 and "are 'w1@box' and 'latest'" in err


def test_beat_with_the_token_of_a_resumed_run_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _no_lease(monkeypatch)
    db = tmp_path / "z.db"
    build_store(db, ["stalled"])
    old = _as_the_run(monkeypatch, db, "stalled-1")  # what the first attempt's command holds
    code, _, err = run_cli(capsys, "resume", "--db", str(db), "stalled-1", "--yes")
    assert code == 0, err
    code, _, err = run_cli(
        capsys, "beat", "--db", str(db), "--task", "stalled-1", "--progress", "20"
    )
    assert code == 2 and err.count("\n") == 1
    assert f"not recording a heartbeat for stalled-1: w1@box (token {old}) no longer owns" in err
    assert "was resumed, discarded or reclaimed, or has ended" in err
    assert asyncio.run(_progress(db, "stalled-1")) is None  # the new attempt has not beaten


def test_beat_inside_a_real_zombietop_run_needs_no_flags(tmp_path: Path) -> None:
    db = tmp_path / "z.db"
    beat = f"{sys.executable} -m zombietop.tui beat --stage copy --progress 40"
    run = [sys.executable, "-m", "zombietop.tui", "--db", str(db), "run", "--task", "t"]
    ran = subprocess.run(
        [*run, "--", "sh", "-c", beat],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert asyncio.run(_progress(db, "t")) == 40


def test_config_init_and_check(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "config.toml"
    assert run_cli(capsys, "config", "init", str(path))[0] == 0
    code, _, err = run_cli(capsys, "config", "init", str(path))
    assert code == 2 and "already exists; pass --force" in err
    code, out, _ = run_cli(capsys, "config", "check", str(path))
    assert code == 0 and out.startswith(f"{path}: ok")
    path.write_text('[step_types.export]\nstage = "45m"\n')
    code, out, _ = run_cli(capsys, "config", "check", str(path))
    assert code == 0 and "export: valid (1 set in file: stage)" in out
    path.write_text('[step_types.export]\nstage = "7h"\n')
    code, _, err = run_cli(capsys, "config", "check", str(path))
    assert code == 2 and "[step_types.export]: stage" in err


def test_the_installed_command_runs(tmp_path: Path) -> None:
    """The console script itself, as a user runs it: exit codes cross the process boundary."""
    script = Path(sys.executable).with_name("zombietop")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "zombietop.tui"]
    env = {**os.environ, "ZOMBIETOP_DB": str(tmp_path / "z.db"), "XDG_CONFIG_HOME": str(tmp_path)}
    missing = subprocess.run([*command, "status"], capture_output=True, text=True, env=env)
    assert missing.returncode == 3 and missing.stderr.startswith("zombietop: no store at")
    assert subprocess.run([*command, "init"], capture_output=True, env=env).returncode == 0
    ok = subprocess.run([*command, "status"], capture_output=True, text=True, env=env)
    assert (ok.returncode, ok.stdout.strip()) == (0, "no tasks in the store")


def test_config_init_writes_to_the_config_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--config`` names the file every command reads, so ``config init`` writes it there."""
    monkeypatch.delenv("ZOMBIETOP_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    target = tmp_path / "from-the-flag.toml"
    code, out, _ = run_cli(capsys, "config", "--config", str(target), "init")
    assert (code, out) == (0, f"wrote default config to {target}\n")
    assert target.exists() and not (tmp_path / "xdg").exists()
    code, out, _ = run_cli(capsys, "--config", str(target), "config", "check")
    assert code == 0 and out.startswith(f"{target}: ok")
