"""Prometheus metrics: ``watch --metrics`` over real HTTP on loopback, ``status --prometheus``,
read back with prometheus-client's own parser (and promtool and Prometheus, where installed)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from tests import docs_pages
from tests.tui.test_cli_status import ALL, build_store
from zombietop.config import default_config, parse_listen
from zombietop.errors import ZombietopError
from zombietop.health import Health
from zombietop.heartbeat_line import BeatLine
from zombietop.judge.monitor import Monitor
from zombietop.model import TaskState
from zombietop.page import PageKind
from zombietop.procs import PsutilProbe
from zombietop.store import Store, open_store, sqlite
from zombietop.tui.cli.main import main
from zombietop.tui.testing import sample_snapshot
from zombietop.watch.metrics import Metrics
from zombietop.watch.metrics_endpoint import MetricsEndpoint, MetricsUpdate
from zombietop.watch.watchdog import Watchdog

REPO = Path(__file__).resolve().parents[2]
FINISHED = {"succeeded", "failed", "discarded", "orphaned"}
UNFINISHED = [name for name in ALL if name not in FINISHED]
EVIL = 'evil"\\task\nnext line\x1b]0;owned\x07\x1b[2J'
"""A task id with a double quote, a backslash, a newline and terminal escapes."""
EVIL_STAGE = 'stage "two"\\\x1b[31m'
TASK_FAMILIES = (
    "zombietop_task_heartbeat_age_seconds",
    "zombietop_task_lease_remaining_seconds",
    "zombietop_task_progress_ratio",
    "zombietop_task_info",
)


def parse(text: str) -> dict[str, list[Sample]]:
    """Every sample by its name, as prometheus-client's parser reads the text format."""
    samples: dict[str, list[Sample]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append(sample)
    return samples


def scrape(url: str) -> tuple[str, dict[str, list[Sample]]]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.status == 200
        text = response.read().decode()
    return text, parse(text)


def value(samples: dict[str, list[Sample]], name: str, **labels: str) -> float:
    found = [s.value for s in samples.get(name, []) if labels.items() <= s.labels.items()]
    assert len(found) == 1, (name, labels, found)
    return found[0]


def task_ids(samples: dict[str, list[Sample]], name: str) -> set[str]:
    return {s.labels["task_id"] for s in samples.get(name, [])}


def add_evil_task(db: Path) -> None:
    """A running, beating task whose id and stage are hostile text."""

    async def add() -> None:
        async with await open_store(db) as store:
            await store.create_task(
                task_id=EVIL, run_id="r", step="s", step_type="odd\\type", actor="test"
            )
            lease = await store.acquire_lease(EVIL, owner="w@box", ttl=3600)
            await store.record_heartbeat(
                EVIL, BeatLine(stage=EVIL_STAGE, progress=25.0), owner="w@box", token=lease.token
            )

    asyncio.run(add())


@pytest.fixture
def fleet_db(tmp_path: Path) -> Path:
    """A store with one task of each health (and one with a hostile id)."""
    db = tmp_path / "z.db"
    build_store(db, ALL)
    add_evil_task(db)
    return db


@dataclass
class Served:
    store: Store
    dog: Watchdog
    metrics: Metrics
    endpoint: MetricsEndpoint
    update: MetricsUpdate

    async def tick(self) -> None:
        self.update(await self.dog.tick())
        await self.endpoint.published()  # the body every scrape gets until the next round

    async def scrape(self) -> tuple[str, dict[str, list[Sample]]]:
        return await asyncio.to_thread(scrape, self.endpoint.url)


@contextlib.asynccontextmanager
async def serve(db: Path) -> AsyncIterator[Served]:
    """The watchdog over ``db`` with its endpoint on a free loopback port, as `watch --metrics
    0` wires them; each ``tick`` is one round."""
    async with await open_store(db) as store:
        config = default_config()
        monitor = Monitor(store, config, probe=PsutilProbe(), reuse_verdicts=True)
        dog = Watchdog(monitor, config, executor=None, notifiers=[], log=lambda _: None)
        metrics = Metrics()
        endpoint = await MetricsEndpoint.start(metrics, parse_listen("0"))
        update = MetricsUpdate(dog, endpoint, then=lambda _: None)
        try:
            yield Served(store, dog, metrics, endpoint, update)
        finally:
            await endpoint.close()


@pytest.fixture
async def served(fleet_db: Path) -> AsyncIterator[Served]:
    async with serve(fleet_db) as served:
        yield served


async def test_the_endpoint_serves_every_health_over_http(served: Served) -> None:
    assert served.endpoint.address.host == "127.0.0.1"  # a bare port listens on loopback only
    assert served.endpoint.address.port != 0
    assert served.endpoint.url == f"http://127.0.0.1:{served.endpoint.address.port}/metrics"
    await served.tick()
    _, samples = await served.scrape()

    assert value(samples, "zombietop_store_up") == 1
    # Every health word has its gauge; the hostile task is the second healthy one.
    for health in Health:
        expected = 2 if health is Health.HEALTHY else 1
        assert value(samples, "zombietop_tasks", health=str(health)) == expected
    assert value(samples, "zombietop_tasks", health="missed") == 0  # no schedule configured
    # dead, orphaned, reclaimable, stalled, and the failed run
    assert value(samples, "zombietop_incidents_open") == 5
    assert value(samples, "zombietop_poll_seconds_count") == 1
    assert value(samples, "zombietop_poll_seconds_bucket", le="+Inf") == 1

    # Per-task series for unfinished tasks only, with the health and stage in the info series.
    live = {f"{name}-1" for name in UNFINISHED} | {EVIL}
    assert task_ids(samples, "zombietop_task_info") == live
    for sample in samples["zombietop_task_info"]:
        assert sample.value == 1
        if sample.labels["task_id"] != EVIL:
            assert sample.labels["health"] == sample.labels["task_id"].removesuffix("-1")
    info = {s.labels["task_id"]: s.labels for s in samples["zombietop_task_info"]}
    assert info["stalled-1"]["stage"] == "transform" and info["queued-1"]["stage"] == ""
    assert info["stalled-1"]["step_type"] == "default"
    assert info["dead-1"]["host"] != "" and info["stalled-1"]["host"] == ""
    assert 3590 < value(samples, "zombietop_task_heartbeat_age_seconds", task_id="stalled-1") < 3700
    assert value(samples, "zombietop_task_progress_ratio", task_id="stalled-1") == 0.61
    assert value(samples, "zombietop_task_lease_remaining_seconds", task_id="reclaimable-1") < 0
    assert value(samples, "zombietop_task_lease_remaining_seconds", task_id="healthy-1") > 0
    # No heartbeat, no age; no lease, no countdown: absent, not zero.
    assert "starting-1" not in task_ids(samples, "zombietop_task_heartbeat_age_seconds")
    assert "queued-1" not in task_ids(samples, "zombietop_task_lease_remaining_seconds")

    # This round quarantined the three and paged them: no channel configured, none delivered.
    assert "zombietop_pages_total" not in samples


async def test_hostile_label_values_round_trip_exactly(served: Served) -> None:
    """The exposition format escapes backslash, quote and newline itself; the parser reads the
    task id and the stage back to the very character, ESC included."""
    await served.tick()
    text, samples = await served.scrape()
    assert "\nnext line" not in text  # the newline in the id is escaped, not a line break
    info = next(s for s in samples["zombietop_task_info"] if s.labels["task_id"] == EVIL)
    assert info.labels == {
        "task_id": EVIL,
        "step_type": "odd\\type",
        "host": "",
        "health": "healthy",
        "stage": EVIL_STAGE,
        "runbook_url": "",
    }
    assert value(samples, "zombietop_task_progress_ratio", task_id=EVIL) == 0.25


async def test_a_finished_tasks_series_disappear(served: Served) -> None:
    await served.tick()
    _, before = await served.scrape()
    for name in TASK_FAMILIES[:2]:
        assert "healthy-1" in task_ids(before, name)
    await served.store.finish_task(
        "healthy-1", owner="w1@box", token=1, state=TaskState.SUCCEEDED, exit_code=0
    )
    await served.tick()
    _, after = await served.scrape()
    for name in TASK_FAMILIES:
        assert "healthy-1" not in task_ids(after, name), name
        assert "spinning-1" in task_ids(after, name), name
    assert value(after, "zombietop_tasks", health="succeeded") == 2
    assert value(after, "zombietop_tasks", health="healthy") == 1


async def test_the_endpoint_answers_while_a_round_waits_on_a_locked_store(
    fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process holds the store's write lock: the round is stuck in SQLite's busy wait
    on its first write, and a scrape is answered at once, with the round before it."""
    # Long enough that the round is still waiting whatever the load, never reached.
    monkeypatch.setattr(sqlite, "BUSY_TIMEOUT_MS", 120_000)
    async with serve(fleet_db) as served:
        await served.tick()
        # healthy-1 finishes: the next round's view of it is new, once it gets past its lock.
        await served.store.finish_task(
            "healthy-1", owner="w1@box", token=1, state=TaskState.SUCCEEDED, exit_code=0
        )
        writing = asyncio.Event()
        # A round's first write is the renewal of the watchdog's own lease.
        hold_lease = served.store.hold_watchdog_lease

        async def hold(**asked: Any) -> Any:
            writing.set()
            return await hold_lease(**asked)

        served.store.hold_watchdog_lease = hold  # type: ignore[method-assign]
        locker = sqlite3.connect(fleet_db, isolation_level=None)
        locker.execute("BEGIN EXCLUSIVE")
        try:
            round_ = asyncio.create_task(served.tick())
            await writing.wait()
            started = time.monotonic()
            _, during = await served.scrape()
            took = time.monotonic() - started
            assert not round_.done()  # the round still waits for the lock
        finally:
            locker.execute("ROLLBACK")
            locker.close()
        await round_
        _, after = await served.scrape()
    assert took < 10, took
    # The scrape read the last finished round: store up, healthy-1 still live.
    assert value(during, "zombietop_store_up") == 1
    assert "healthy-1" in task_ids(during, "zombietop_task_info")
    assert value(during, "zombietop_poll_seconds_count") == 1
    assert "healthy-1" not in task_ids(after, "zombietop_task_info")
    assert value(after, "zombietop_poll_seconds_count") == 2


async def test_the_endpoint_answers_with_store_up_0_once_the_store_is_gone(
    served: Served, fleet_db: Path
) -> None:
    await served.tick()
    for path in fleet_db.parent.glob(fleet_db.name + "*"):
        path.unlink()
    await served.tick()
    _, samples = await served.scrape()
    assert value(samples, "zombietop_store_up") == 0
    # No verdicts on data that can no longer be read...
    assert "zombietop_tasks" not in samples
    for name in TASK_FAMILIES:
        assert name not in samples
    # ...but what the watchdog itself knows stays: its incidents and its polls.
    # dead, orphaned, reclaimable, stalled, and the failed run
    assert value(samples, "zombietop_incidents_open") == 5
    assert value(samples, "zombietop_poll_seconds_count") == 1


def test_pages_are_counted_by_channel_kind_and_result() -> None:
    """The channel label is the notifier's kind, never its URL or command."""
    from zombietop.judge.monitor import Snapshot
    from zombietop.paging.notify import DeliveryResult, Page

    page = Page(kind=PageKind.INCIDENT, line="x", at=0.0)

    def result(ok: bool, final: bool = True) -> DeliveryResult:
        return DeliveryResult(
            page=page,
            notifier="webhook https://hooks.example/secret-token",
            channel="webhook",
            ok=ok,
            attempts=1,
            final=final,
        )

    metrics = Metrics(["webhook", "command"])
    down = Snapshot(taken_at=None, error="gone")
    metrics.update(down, incidents_open=1, deliveries=[result(True), result(False, final=False)])
    metrics.update(down, incidents_open=1, deliveries=[result(False), result(True)])
    text = metrics.render().decode()
    assert "secret-token" not in text and "https" not in text
    samples = parse(text)
    assert value(samples, "zombietop_pages_total", channel="webhook", result="delivered") == 2
    assert value(samples, "zombietop_pages_total", channel="webhook", result="retrying") == 1
    assert value(samples, "zombietop_pages_total", channel="webhook", result="failed") == 1
    # A configured channel that never paged still has its series, at zero.
    assert value(samples, "zombietop_pages_total", channel="command", result="failed") == 0
    assert value(samples, "zombietop_store_up") == 0
    assert value(samples, "zombietop_poll_seconds_count") == 0  # failed polls are not timed


# status --prometheus ---------------------------------------------------------------------


def test_status_prometheus_prints_the_same_metrics_once(
    fleet_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["status", "--prometheus", "--db", str(fleet_db)])
    out = capsys.readouterr().out
    assert code == 0  # written: what is critical is in the metrics, not the exit status
    samples = parse(out)
    assert value(samples, "zombietop_store_up") == 1
    for health in Health:
        assert value(samples, "zombietop_tasks", health=str(health)) >= 1
    assert task_ids(samples, "zombietop_task_info") == {f"{n}-1" for n in UNFINISHED} | {EVIL}
    # the tasks that page, and the failed run (an open incident until a later run succeeds)
    assert value(samples, "zombietop_incidents_open") == 5
    assert value(samples, "zombietop_poll_seconds_count") == 1


def test_status_prometheus_writes_a_textfile_atomically(
    fleet_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    textfiles = tmp_path / "textfile"
    textfiles.mkdir()
    target = textfiles / "zombietop.prom"
    target.write_text("# an older run's file\n")
    assert main(["status", "--prometheus", "--output", str(target), "--db", str(fleet_db)]) == 0
    assert capsys.readouterr().out == ""
    assert [p.name for p in textfiles.iterdir()] == ["zombietop.prom"]  # no temporary left
    assert value(parse(target.read_text()), "zombietop_store_up") == 1
    # node_exporter reads it as a user of its own; only we write it, whatever the umask.
    assert stat.S_IMODE(target.stat().st_mode) == 0o644

    # The store gone: the textfile says so for node_exporter, and it was written: exit 0.
    code = main(["status", "--prometheus", "--output", str(target), "--db", str(tmp_path / "no")])
    assert code == 0
    assert "no store at" in capsys.readouterr().err
    samples = parse(target.read_text())
    assert value(samples, "zombietop_store_up") == 0 and "zombietop_tasks" not in samples


@pytest.mark.parametrize(
    "argv",
    [
        ["--output", "x.prom"],  # --output without --prometheus
        ["--prometheus", "--json"],
        ["--prometheus", "--nagios"],
    ],
)
def test_status_prometheus_usage_errors_are_unknown(
    fleet_db: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    try:
        code = main(["status", *argv, "--db", str(fleet_db)])
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    assert code == 3
    assert capsys.readouterr().err.strip()


def test_the_textfile_idiom_updates_while_something_is_critical(
    fleet_db: Path, tmp_path: Path
) -> None:
    """``status --prometheus > f.tmp && mv f.tmp f.prom``, in a real shell, on a store whose
    tasks are critical (the Nagios code would be 2): the file is updated."""
    target = tmp_path / "zombietop.prom"
    command = " ".join(
        f"'{part}'" for part in (sys.executable, "-m", "zombietop.tui", "status", "--prometheus")
    )
    done = subprocess.run(
        ["sh", "-c", f"{command} --db '{fleet_db}' > f.tmp && mv f.tmp '{target}'"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    samples = parse(target.read_text())
    assert value(samples, "zombietop_store_up") == 1
    assert value(samples, "zombietop_tasks", health="stalled") >= 1


def test_the_textfile_is_never_written_through_a_planted_link(
    fleet_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another user of node_exporter's folder plants links where a temporary file would go
    (prometheus-client's name is ``<file>.<pid>.<thread>``) and at the file itself: every
    link stays a link to an untouched victim, and the textfile is a plain file of ours."""
    folder = tmp_path / "textfile"
    folder.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    target = folder / "zombietop.prom"
    planted = folder / f"zombietop.prom.{os.getpid()}.{threading.current_thread().ident}"
    planted.symlink_to(victim)
    target.symlink_to(victim)
    code = main(["status", "--prometheus", "--output", str(target), "--db", str(fleet_db)])
    assert victim.read_bytes() == b"precious\n"
    assert planted.is_symlink() and not target.is_symlink()
    assert code == 0, capsys.readouterr().err
    assert stat.S_ISREG(os.lstat(target).st_mode) and os.lstat(target).st_nlink == 1
    assert value(parse(target.read_text()), "zombietop_store_up") == 1
    assert sorted(p.name for p in folder.iterdir()) == sorted([planted.name, target.name])


def test_status_prometheus_cannot_write_is_unknown(
    fleet_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing-dir" / "zombietop.prom"
    code = main(["status", "--prometheus", "--output", str(target), "--db", str(fleet_db)])
    assert code == 3
    err = capsys.readouterr().err
    assert err.startswith(f"zombietop: cannot write metrics to {target}")
    assert err.count("\n") == 1


def test_status_prometheus_on_a_terminal_escapes_control_characters(fleet_db: Path) -> None:
    """Piped, the text is exact; shown on a terminal, an ESC in a task id reaches it escaped."""
    primary, secondary = os.openpty()
    try:
        process = subprocess.run(
            [
                sys.executable,
                "-m",
                "zombietop.tui",
                "status",
                "--prometheus",
                "--db",
                str(fleet_db),
            ],
            stdout=secondary,
            stderr=subprocess.PIPE,
            timeout=60,
            check=False,
        )
        os.close(secondary)
        shown = b""
        while chunk := _read_pty(primary):
            shown += chunk
    finally:
        os.close(primary)
    assert process.returncode == 0, process.stderr
    assert b"zombietop_task_info" in shown
    assert b"\x1b" not in shown and b"\\x1b]0;owned" in shown


def _read_pty(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # EIO: the other end is closed and everything was read
        return b""


# watch --metrics on the command line ---------------------------------------------------

WATCH = (sys.executable, "-m", "zombietop.tui", "watch", "--dry-run")


def _lines(stream: Any) -> Iterator[str]:
    yield from iter(stream.readline, "")


@pytest.mark.parametrize("given", ["flag", "config"])
def test_watch_metrics_says_where_it_listens_and_serves_until_stopped(
    fleet_db: Path, tmp_path: Path, given: str
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[watch]\nmetrics = "127.0.0.1:0"\n' if given == "config" else "")
    where = ["--metrics", "127.0.0.1:0"] if given == "flag" else []
    process = subprocess.Popen(
        [*WATCH, "--interval", "0.5", *where, "--db", str(fleet_db), "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = None
        for line in _lines(process.stdout):
            if "serving Prometheus metrics at " in line:
                url = line.split(" at ", 1)[1].strip()
                break
        assert url is not None and url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        # The first round may still be under way: read until it has been taken in.
        deadline = time.monotonic() + 30
        while True:
            _, samples = scrape(url)
            if value(samples, "zombietop_store_up") == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert value(samples, "zombietop_store_up") == 1
        assert value(samples, "zombietop_pages_total", channel="dry-run", result="delivered") >= 3
        process.terminate()
        assert process.wait(timeout=30) == 0
        # A daemon thread left serving would still answer (and hold the port).
        with pytest.raises(OSError):
            scrape(url)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--metrics", ":9464"], "give the host too, e.g. 127.0.0.1:9464"),
        (["--metrics", "127.0.0.1:70000"], "the port must be a number from 0 to 65535"),
        (["--metrics", "127.0.0.1:0", "--once"], "--metrics serves while the watchdog runs"),
    ],
)
def test_watch_metrics_errors(
    fleet_db: Path, capsys: pytest.CaptureFixture[str], argv: list[str], error: str
) -> None:
    try:
        code = main(["watch", "--dry-run", *argv, "--db", str(fleet_db)])
    except SystemExit as exc:
        code = int(exc.code or 0)
    assert code == 2
    assert error in capsys.readouterr().err


async def test_a_port_in_use_is_one_line(fleet_db: Path) -> None:
    metrics = Metrics()
    first = await MetricsEndpoint.start(metrics, parse_listen("0"))
    try:
        with pytest.raises(ZombietopError, match=r"cannot serve metrics on 127\.0\.0\.1:\d+: "):
            await MetricsEndpoint.start(metrics, first.address)
    finally:
        await first.close()


# promtool and Prometheus, where installed ----------------------------------------------


def _installed(tool: str) -> str:
    """The tool's path. Without it the test skips, or fails where CI asks for these tests to
    run (``ZOMBIETOP_REQUIRE_PROMETHEUS``: .ci/run installs Prometheus)."""
    path = shutil.which(tool)
    if path is None:
        missing = f"{tool} not installed (apt-get install prometheus)"
        if os.environ.get("ZOMBIETOP_REQUIRE_PROMETHEUS"):
            pytest.fail(f"{missing}, and ZOMBIETOP_REQUIRE_PROMETHEUS asks for it")
        pytest.skip(missing)
    return path


def test_promtool_accepts_the_metrics(fleet_db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    promtool = _installed("promtool")
    main(["status", "--prometheus", "--db", str(fleet_db)])
    text = capsys.readouterr().out
    checked = subprocess.run(
        [promtool, "check", "metrics"],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout + checked.stderr == ""  # no lint warnings either


def test_promtool_accepts_the_documented_rules() -> None:
    promtool = _installed("promtool")
    rules = REPO / "docs" / "prometheus" / "zombietop-rules.yml"
    assert rules.read_text() in docs_pages.text(), "the docs no longer show the rules as they are"
    checked = subprocess.run(
        [promtool, "check", "rules", str(rules)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 3 rules found" in checked.stdout


@pytest.mark.slow
def test_a_real_prometheus_scrapes_the_endpoint(fleet_db: Path, tmp_path: Path) -> None:
    """Prometheus itself scrapes `watch --metrics`, keeps the hostile task id exactly, and
    evaluates the documented alert rules without an error."""
    prometheus_bin = _installed("prometheus")
    port = _free_port()
    watch = subprocess.Popen(
        [*WATCH, "--interval", "1", "--metrics", f"127.0.0.1:{port}", "--db", str(fleet_db)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    web = _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        f"rule_files: [{REPO / 'docs' / 'prometheus' / 'zombietop-rules.yml'}]\n"
        "scrape_configs:\n"
        "  - job_name: zombietop\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{port}']}}]\n"
    )
    prometheus = subprocess.Popen(
        [
            prometheus_bin,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{web}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    api = f"http://127.0.0.1:{web}/api/v1"
    try:
        deadline = time.monotonic() + 60
        found: list[dict[str, Any]] = []
        while not found and time.monotonic() < deadline:
            time.sleep(0.5)
            found = _query(api, 'zombietop_task_info{health="healthy"}')
        ids = {series["metric"]["task_id"] for series in found}
        assert ids == {"healthy-1", EVIL}
        assert _query(api, 'zombietop_tasks{health="stalled"}')[0]["value"][1] == "1"
        rules: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            groups = _get(f"{api}/rules")["data"]["groups"]
            rules = [rule for group in groups for rule in group["rules"]]
            if rules and all(rule["health"] != "unknown" for rule in rules):
                break  # each rule has been evaluated at least once
            time.sleep(0.5)
        assert [rule["health"] for rule in rules] == ["ok"] * 3, rules
    finally:
        for process in (prometheus, watch):
            process.terminate()
        for process in (prometheus, watch):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return dict(json.load(response))
    except OSError:
        return {"data": {"result": [], "groups": []}}


def _query(api: str, expr: str) -> list[dict[str, Any]]:
    from urllib.parse import quote

    return list(_get(f"{api}/query?query={quote(expr)}")["data"]["result"])


def test_a_missed_schedule_is_counted_beside_the_task_healths() -> None:
    """The sample fleet with the on-call loop has nightly-ledger missed."""
    metrics = Metrics()
    metrics.update(sample_snapshot(oncall=True), incidents_open=4)
    samples = parse(metrics.render().decode())
    assert value(samples, "zombietop_tasks", health="missed") == 1
