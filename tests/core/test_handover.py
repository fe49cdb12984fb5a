"""The handover and an incident's story, over a scripted night shift: a real store, a fake
clock, and every incident made by the real code (the watchdog pages, re-notifies and clears,
the on-call loop acks, notes and silences, the executor kills a real process). The Markdown
and the JSON are each compared whole."""

from __future__ import annotations

import asyncio
import json
import re
import socket
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC
from pathlib import Path

import pytest

from tests.core.realprocs import Children, pid_alive, start_task_process, wait_for
from tests.core.test_watchdog import config, start, watchdog
from zombietop.act.executor import Executor
from zombietop.actions import Outcome
from zombietop.clock import FakeClock
from zombietop.config import Config, OnCallSettings, Schedule
from zombietop.heartbeat_line import parse_line
from zombietop.model import Matcher, TaskState
from zombietop.oncall import acks
from zombietop.oncall.handover import Handover, read_handover
from zombietop.oncall.incident_story import Step, stories, stories_of_tasks
from zombietop.store import Store
from zombietop.store import events as store_events
from zombietop.tui.handover_text import (
    SLACK,
    handover_json,
    handover_markdown,
    handover_text,
    story_json,
    story_text,
)

EXPECTED = Path(__file__).with_name("handover_expected")
HOSTILE = "sync_*9*`[x](y)"
"""A task id that Markdown would read as emphasis, code and a link."""
NIGHTLY = Schedule(name="nightly", step="backup", cron="0 3 * * *", grace=600.0)
TWO_AM = 1_796_094_000.0 - 3600  # 2026-12-01 02:00 UTC
KILLER = "sh -c 'trap \"exit 0\" TERM; : > {ready}; while :; do sleep 0.05; done'"


def cfg() -> Config:
    return replace(config(renotify=600.0), schedules=(NIGHTLY,))


async def once(store: Store, clock: FakeClock) -> None:
    """One pass of a fresh watchdog, as `zombietop watch --once` from cron runs."""
    dog, _, _ = watchdog(store, clock, cfg())
    await dog.tick()


async def night_shift(store: Store, clock: FakeClock, children: Children, tmp: Path) -> int:
    """02:00 to 04:30 UTC: five incidents (one held by a silence), two silences and a missed schedule. Return the
    killed process's group (its pid), which its kill's event names."""
    clock.set(TWO_AM)
    await once(store, clock)  # the schedule is seen before its fire time
    await start(store, "export-2031")
    await start(store, "load-7")
    sync = await start(store, HOSTILE)
    ready = tmp / "ready"
    proc = await start_task_process(
        store,
        children,
        f"trap 'exit 0' TERM; : > {ready}; while :; do sleep 0.05; done",
        ready,
        task_id="clean-3",
    )
    clock.advance(200)  # 02:03:20: the three beating tasks stall
    await once(store, clock)
    settings = OnCallSettings()
    await acks.note(store, "export-2031", "waiting on partner API\x1b[2J # not a heading", by="ana")
    await acks.ack(
        store, settings, "load-7", by="bob", reason="restarting *the* DB", duration=4 * 3600
    )
    clock.advance(600)  # 02:13:20: export-2031 is paged again; load-7 is acked
    await once(store, clock)
    await store.record_heartbeat(HOSTILE, parse_line("stage=copy p=70"), owner="w1", token=sync)
    await store.finish_task(HOSTILE, owner="w1", token=sync, state=TaskState.SUCCEEDED)
    clock.advance(60)  # 02:14:20: the hostile one beat again and ended: all clear by itself
    await once(store, clock)
    clock.advance(900)  # 02:29:20: ana kills clean-3, its wrapper records the end
    executor = Executor(store, cfg(), clock=clock)
    sent = await executor.kill("clean-3", expected_token=1, actor="ana", reason="stuck on a lock")
    assert sent.outcome is Outcome.TERM_SENT, sent.message
    await asyncio.to_thread(proc.wait, 5)
    await wait_for(lambda: not pid_alive(proc.pid), what="clean-3 to end")
    (done,) = await executor.complete_pending_kills()
    assert done.outcome is Outcome.EXITED, done.message
    await store.finish_task("clean-3", owner="test-owner", token=1, state=TaskState.INTERRUPTED)
    await once(store, clock)
    await acks.silence(
        store,
        settings,
        matcher=Matcher.TASK,
        pattern="backup-*",
        by="ana",
        reason="maintenance night",
        duration=3 * 3600,
    )
    await acks.silence(
        store,
        settings,
        matcher=Matcher.HOST,
        pattern="db-2",
        by="bob",
        reason="disk swap",
        duration=24 * 3600,
    )
    await start(store, "backup-1")  # it stalls under the silence: detected, never paged
    clock.set(TWO_AM + 3600 + 660)  # 03:11: the nightly backup did not start
    await once(store, clock)
    clock.set(TWO_AM + 2.5 * 3600)  # 04:30: the handover
    await once(store, clock)
    return proc.pid


def steady(text: str, pgid: int) -> str:
    """The text with what changes from run to run named: this host, the test's pid, the
    killed group and how soon it exited."""
    host = re.escape(socket.gethostname())
    text = re.sub(f"watchdog@{host}", "watchdog@HOST", text)
    text = re.sub(f"zombietop@{host}:[0-9]+", "zombietop@HOST:PID", text)
    text = re.sub(f'"host": "{host}"', '"host": "HOST"', text)
    text = re.sub("pid [0-9]+ exited after TERM in [0-9.]+ s", "pid PID exited after TERM", text)
    return text.replace(f"group {pgid} ", "group PGID ")


async def test_the_handover_of_a_night_shift(
    store: Store, clock: FakeClock, children: Children, tmp_path: Path
) -> None:
    await night_shift(store, clock, children, tmp_path)
    now = clock.now()
    found = await read_handover(store, now=now, since=now - 8 * 3600)
    markdown = handover_markdown(found, UTC)
    print(markdown)
    assert markdown == (EXPECTED / "night.md").read_text()
    # Read by a real CommonMark parser, the hostile id and note make no heading, link or HTML.
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").parse(markdown)
    inline = [child.type for t in tokens for child in t.children or []]
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h1"] + ["h2"] * 5
    assert not {"link_open", "html_inline", "html_block", "em_open"} & set(inline)


@pytest.mark.backends("sqlite")
async def test_the_night_shift_in_slack(
    store: Store, clock: FakeClock, children: Children, tmp_path: Path
) -> None:
    """The same night in Slack's mrkdwn: bold lines for headings, bullets, no backslash."""
    await night_shift(store, clock, children, tmp_path)
    now = clock.now()
    found = await read_handover(store, now=now, since=now - 8 * 3600)
    slack = handover_text(found, UTC, SLACK)
    print(slack)
    assert slack == (EXPECTED / "night.slack").read_text()


@pytest.mark.backends("sqlite")
async def test_the_handover_as_json_and_one_incidents_story(
    store: Store, clock: FakeClock, children: Children, tmp_path: Path
) -> None:
    pgid = await night_shift(store, clock, children, tmp_path)
    now = clock.now()
    found = await read_handover(store, now=now, since=now - 8 * 3600)
    shown = steady(json.dumps(handover_json(found), indent=2) + "\n", pgid)
    print(shown)
    assert shown == (EXPECTED / "night.json").read_text()

    (story,) = await stories(store, "clean-3")
    lines = steady("\n".join(story_text(story, now, UTC)) + "\n", pgid)
    print(lines)
    assert lines == (EXPECTED / "clean-3.txt").read_text()
    assert story_json(story) == handover_json(found)["resolved"][1]


@pytest.mark.backends("sqlite")
async def test_a_long_story_is_read_back_whole_in_batches(
    store: Store,
    clock: FakeClock,
    children: Children,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An incident open for weeks has many notices: its first page (what makes it an incident)
    must still be read. The tasks' events are read together, a batch of tasks at a time, and
    tell the same stories whatever the batch."""
    await night_shift(store, clock, children, tmp_path)
    whole = await stories(store, "export-2031")
    task_ids = sorted({e.task_id for e in await store.events(limit=1000) if e.task_id})
    together = await stories_of_tasks(store, task_ids)
    monkeypatch.setattr(store_events, "TASKS_PER_READ", 1)
    assert await stories_of_tasks(store, task_ids) == together
    assert together["export-2031"] == whole
    assert {task_id: await stories(store, task_id) for task_id in task_ids} == together
    (story,) = whole
    assert [e.step for e in story.entries].count(Step.RENOTIFIED) == 4


def _host_of(n: int) -> str | None:
    if n % 3 == 0:
        return "db-2"
    return None if n >= 50 else "batch-07" if n < 30 else "batch-08"


async def many_pages(
    store: Store, clock: FakeClock, count: int, host: Callable[[int], str | None]
) -> Handover:
    for n in range(count):
        health = "dead" if n % 3 == 0 else "stalled"
        data = {"page": "incident", "health": health, "incident": f"job-{n:03}@1"}
        if host(n) is not None:
            data["host"] = host(n)
        await store.record_event(
            kind="page",
            actor="watchdog",
            message=f"job-{n:03} {health}: heartbeat 4h old - resume or discard",
            task_id=f"job-{n:03}",
            data=data,
        )
        clock.advance(60)
    now = clock.now()
    return await read_handover(store, now=now, since=now - 8 * 3600)


async def test_many_open_incidents_are_summed_up_by_root_cause_and_host(
    store: Store, clock: FakeClock
) -> None:
    """Sixty open incidents: the Markdown lists the oldest few, then one line for each root
    cause and host of the rest, as the watchdog's digests group pages (the pages of an older
    zombietop name no host); the JSON lists every one."""
    found = await many_pages(store, clock, 60, _host_of)
    assert len(found.unacked) == 60
    text = handover_markdown(found, UTC)
    assert "## Open, nobody on it (60)" in text
    listed = re.findall(r"^- `(job-\d+)`: ", text, flags=re.M)
    assert listed == [f"job-{n:03}" for n in range(5)]
    groups = re.findall(
        r"^- (\d+) more (\w+) on ([\w -]+), opened from .*: `(job-\d+)`, .*?(?: and (\d+) more)?$",
        text,
        flags=re.M,
    )
    assert groups == [
        ("18", "dead", "db-2", "job-006", "15"),
        ("17", "stalled", "batch-07", "job-005", "14"),
        ("13", "stalled", "batch-08", "job-031", "10"),
        ("7", "stalled", "an unknown host", "job-050", "4"),
    ]
    assert "The whole list, one by one: `zombietop handover --format json`." in text
    assert len(handover_json(found)["open_unacked"]) == 60


@pytest.mark.backends("sqlite")
async def test_a_fleet_of_small_hosts_is_summed_up_by_root_cause_alone(
    store: Store, clock: FakeClock
) -> None:
    """More root cause and host pairs than a section lists: one line per root cause, which
    says on how many hosts, as the digest does."""
    found = await many_pages(store, clock, 60, lambda n: f"node-{n:02}")
    text = handover_text(found, UTC, SLACK)
    assert "*Open, nobody on it (60)*" in text
    groups = re.findall(r"^• (\d+) more (\w+) on (\d+ hosts), ", text, flags=re.M)
    assert groups == [("37", "stalled", "37 hosts"), ("18", "dead", "18 hosts")]
