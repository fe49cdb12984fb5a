"""Trace context in: `zombietop run` and the SDK join the caller's W3C trace (TRACEPARENT,
TRACESTATE) or start one, and pass it to what they start; the task's trace id shows in
`status --json`, the page line and PagerDuty's custom_details, with a link where
[otel] trace_url is set. Real wrapped runs of `sh` and of a Python job with the SDK."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, wait_for, zombietop
from tests.core.test_watchdog import start, watchdog
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import ConfigError, LeaseLost
from zombietop.page import Page, PageKind
from zombietop.paging.pagerduty import event
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore
from zombietop.trace_context import (
    TRACEPARENT,
    TRACESTATE,
    TraceContext,
    join_or_start,
    parse_traceparent,
    shown_trace,
)

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
CALLER = f"00-{TRACE}-{PARENT}-01"


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (CALLER, (TRACE, PARENT, "01")),
        (f"00-{TRACE.upper()}-{PARENT}-00", (TRACE, PARENT, "00")),
        (f"01-{TRACE}-{PARENT}-01-later-fields", (TRACE, PARENT, "01")),  # a later version
        (f"00-{TRACE}-{PARENT}-01-more", None),  # version 00 has nothing after the flags
        (f"ff-{TRACE}-{PARENT}-01", None),
        (f"00-{'0' * 32}-{PARENT}-01", None),
        (f"00-{TRACE}-{'0' * 16}-01", None),
        (f"00-{TRACE[:-1]}-{PARENT}-01", None),
        ("", None),
        ("\x1b[31m", None),
    ],
)
def test_traceparent_as_the_w3c_writes_it(text: str, parsed: tuple[str, str, str] | None) -> None:
    assert parse_traceparent(text) == parsed


def test_a_run_joins_its_callers_trace_with_a_span_of_its_own() -> None:
    joined = join_or_start({TRACEPARENT: CALLER, TRACESTATE: "vendor=abc"})
    assert (joined.trace_id, joined.parent_id, joined.state) == (TRACE, PARENT, "vendor=abc")
    assert len(joined.span_id) == 16 and joined.span_id != PARENT
    assert joined.child_env() == {
        TRACEPARENT: f"00-{TRACE}-{joined.span_id}-01",
        TRACESTATE: "vendor=abc",
    }


@pytest.mark.parametrize("caller", [{}, {TRACEPARENT: "garbage", TRACESTATE: "x=1"}])
def test_a_run_without_a_caller_starts_a_trace(caller: dict[str, str]) -> None:
    started, other = join_or_start(caller), join_or_start(caller)
    assert started.parent_id is None and started.state == ""
    assert len(started.trace_id) == 32 and started.trace_id != other.trace_id
    assert TRACESTATE not in started.child_env()
    assert parse_traceparent(started.traceparent) == (started.trace_id, started.span_id, "01")


def _run(db: Path, config: Path, env: dict[str, str], *command: str) -> str:
    done = subprocess.run(
        zombietop(db, config, "run", "--job", "traced", "--", *command),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _config(tmp_path: Path, otel: str = "") -> Path:
    path = tmp_path / "traced.toml"
    path.write_text(FAST_CONFIG + otel)
    return path


async def test_sh_under_zombietop_run_sees_the_runs_trace(db: Path, tmp_path: Path) -> None:
    config = _config(tmp_path, '\n[otel]\ntrace_url = "https://tempo.example/trace/{trace_id}"\n')
    env = {**os.environ, TRACEPARENT: CALLER, TRACESTATE: "vendor=abc"}
    said = _run(db, config, env, "sh", "-c", 'echo "$TRACEPARENT $TRACESTATE"')
    traceparent, state = said.split()
    version, trace_id, span_id, flags = traceparent.split("-")
    assert (version, trace_id, flags, state) == ("00", TRACE, "01", "vendor=abc")
    assert span_id != PARENT  # the run's own span is the command's parent

    store = await SQLiteStore.open(db)
    try:
        [run] = await store.job_runs("traced", 5)
    finally:
        await store.close()
    assert run.trace_id == TRACE
    status = subprocess.run(
        zombietop(db, config, "status", "--json", "--all"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    tasks = {task["task_id"]: task for task in json.loads(status.stdout)["tasks"]}
    shown = tasks[run.task_id]
    assert shown["trace_id"] == TRACE
    assert shown["trace_url"] == f"https://tempo.example/trace/{TRACE}"


async def test_a_python_job_with_the_sdk_joins_the_runs_trace(db: Path, tmp_path: Path) -> None:
    config = _config(tmp_path)
    job = (
        "import os\n"
        "from zombietop.sdk import Job\n"
        "with Job(job='traced') as job:\n"
        "    job.beat('work', 50)\n"
        "    print(job.trace.trace_id, job.trace.parent_id, os.environ['TRACEPARENT'])\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in (TRACEPARENT, TRACESTATE)}
    said = _run(db, config, env, "sh", "-c", f'echo "$TRACEPARENT"; {sys.executable} -c "$0"', job)
    wrapper_parent, trace_id, parent_id, job_parent = said.split()
    _, run_trace, run_span, _ = wrapper_parent.split("-")
    assert trace_id == run_trace and parent_id == run_span  # the job's span is below the run's
    _, job_trace, job_span, _ = job_parent.split("-")
    assert job_trace == run_trace and job_span not in (run_span, parent_id)

    store = await SQLiteStore.open(db)
    try:
        [run] = await store.job_runs("traced", 5)
        record = await store.get_record(run.task_id)
    finally:
        await store.close()
    assert run.trace_id == run_trace
    assert record.heartbeat is not None and record.heartbeat.trace_id == run_trace


def test_the_page_carries_the_trace_to_pagerduty() -> None:
    page = Page(
        kind=PageKind.INCIDENT,
        line=f"export-2031 stalled: heartbeat 4m old, {shown_trace(TRACE)} - resume or discard",
        task_id="export-2031",
        at=0.0,
        trace_id=TRACE,
        trace_url=f"https://tempo.example/trace/{TRACE}",
    )
    body = event(page, "k" * 32, source="host")
    details = body["payload"]["custom_details"]
    assert details["trace_id"] == TRACE
    assert details["trace_url"] == f"https://tempo.example/trace/{TRACE}"
    assert body["links"] == [{"href": f"https://tempo.example/trace/{TRACE}", "text": "trace"}]
    assert "trace 4bf92f35..." in details["line"]


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ('"tempo.example/{trace_id}"', "trace_url must be a link template"),
        ('"https://tempo.example/trace"', "it needs {trace_id} once"),
        ('"https://tempo.example/{trace_id}/{span}"', "it needs {trace_id} once"),
        ('"https://tempo.example/{trace_id"', "trace_url must be a link template"),
        ("3", "trace_url must be a link template"),
    ],
)
def test_a_trace_url_is_checked(tmp_path: Path, value: str, error: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f"[otel]\ntrace_url = {value}\n")
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    assert error in str(raised.value) and "[otel]" in str(raised.value)


async def test_a_stalled_runs_page_names_its_trace(
    db: Path, tmp_path: Path, children: Children
) -> None:
    config = _config(tmp_path, '\n[otel]\ntrace_url = "https://tempo.example/trace/{trace_id}"\n')
    wrapper = children.start(
        zombietop(db, config, "run", "--job", "traced", "--", "sleep", "30"),
        env={**os.environ, TRACEPARENT: CALLER},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    async def recorded() -> bool:
        if not db.exists():
            return False
        store = await SQLiteStore.open(db)
        try:
            runs = await store.job_runs("traced", 5)
        finally:
            await store.close()
        return bool(runs) and runs[0].pid is not None and runs[0].trace_id == TRACE

    await wait_for(recorded, timeout=30, what="the run to record its trace", while_running=wrapper)
    store = await SQLiteStore.open(db)
    try:
        clock = FakeClock(await store.now() + 2.5)  # past the 2s start grace
    finally:
        await store.close()
    store = await SQLiteStore.open(db, clock=clock)
    try:
        dog, notifier, _ = watchdog(store, clock, load_config(config))
        await dog.tick()
    finally:
        await store.close()
    [page] = notifier.pages
    assert page.kind == "incident"
    assert page.line.startswith(f"{page.task_id} stalled: no heartbeat yet"), page.line
    assert ", trace 4bf92f35... - resume or discard" in page.line
    assert page.trace_id == TRACE and page.trace_url == f"https://tempo.example/trace/{TRACE}"


async def test_a_command_gone_before_its_process_is_recorded_keeps_its_trace(
    store: Store,
) -> None:
    """A command that ends before `zombietop run` reads its start (``sh -c echo`` on a loaded
    machine) has no process to record, and its trace is recorded alone, fenced on the lease."""
    token = await start(store, "export-2031")
    trace = TraceContext(trace_id=TRACE, span_id="1111111111111111", parent_id=PARENT)
    with pytest.raises(LeaseLost):
        await store.set_trace("export-2031", owner="w1", token=token + 1, trace=trace)
    assert (await store.get_task("export-2031")).trace_id is None
    await store.set_trace("export-2031", owner="w1", token=token, trace=trace)
    task = await store.get_task("export-2031")
    assert (task.trace_id, task.span_id, task.parent_span_id) == (TRACE, trace.span_id, PARENT)
