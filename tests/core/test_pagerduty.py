"""The PagerDuty channel: an incident triggers, an ack in zombietop acknowledges, the all-clear
resolves, all under one dedup_key, each body checked against PagerDuty's published schema by a
stand-in on loopback (``pagerduty_stand_in``). The first test drives it with a real
``zombietop run``, a real ``zombietop ack`` and a real watchdog on a real SQLite file."""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.pagerduty_stand_in import ROUTING_KEY, StandIn, pagerduty
from tests.core.realprocs import FAST_CONFIG, Children, wait_for, zombietop
from tests.core.test_watchdog import INTERVAL, ListNotifier, config, start
from zombietop.clock import FakeClock
from zombietop.config import (
    Config,
    ConfigError,
    NotifySettings,
    PagerDutySettings,
    WatchSettings,
    load_config,
)
from zombietop.errors import ZombietopError
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind
from zombietop.page import PageKind
from zombietop.paging.notify import CommandNotifier, Notifier, Page
from zombietop.paging.pagerduty import PagerDutyNotifier, dedup_key, event, severity
from zombietop.procs import PsutilProbe
from zombietop.store import Store
from zombietop.store.sqlite import SQLiteStore
from zombietop.trace_context import TraceContext
from zombietop.watch.watchdog import Watchdog

ENV = {"ZOMBIETOP_PAGERDUTY_KEY": ROUTING_KEY}
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
RUNBOOK = "https://wiki.example/runbooks/{step_type}#{stage}"
# Beats until $DIR/stall exists, then blocks on a FIFO, using no CPU, until the test writes to
# it; then beats again until $DIR/exit exists.
EXTRACT = (
    'while [ ! -e "$DIR/stall" ]; do echo "stage=extract p=10" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
    'sleep 0.1; done; read line < "$DIR/finish"; '
    'while [ ! -e "$DIR/exit" ]; do echo "stage=extract p=100" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
    "sleep 0.1; done"
)

SETTLE = 30.0
"""Seconds the deliveries in flight get to land: ``settle`` returns as soon as they have, so
this is long only for a loaded machine (a trigger and its ack behind a store write each)."""


def channel(stand_in: StandIn, timeout: float = 5.0) -> PagerDutyNotifier:
    return PagerDutyNotifier(PagerDutySettings(url=stand_in.url), timeout, environ=ENV)


def watchdog_to(
    store: Store,
    clock: FakeClock,
    *notifiers: Notifier,
    cfg: Config | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> Watchdog:
    """A watchdog on the fake clock that pages ``notifiers``."""
    cfg = cfg or config()
    return Watchdog(
        Monitor(store, cfg, clock=clock, reuse_verdicts=True),
        cfg,
        executor=None,
        notifiers=list(notifiers),
        clock=clock,
        log=log,
    )


async def test_trigger_acknowledge_resolve_reach_pagerduty_under_one_dedup_key(
    real_store: SQLiteStore, db: Path, children: Children, tmp_path: Path, unused_tcp_port: int
) -> None:
    config_path = tmp_path / "fast.toml"
    config_path.write_text(FAST_CONFIG + f'\n[step_types.etl]\nrunbook = "{RUNBOOK}"\n')
    cfg = replace(load_config(config_path), watch=WatchSettings(interval=1.0))
    os.mkfifo(tmp_path / "finish")
    logs: list[str] = []
    with pagerduty(unused_tcp_port) as stand_in:
        dog = Watchdog(
            Monitor(real_store, cfg, probe=PsutilProbe()),
            cfg,
            executor=None,
            notifiers=[channel(stand_in)],
            log=logs.append,
        )
        run = zombietop(db, config_path, "run", "--task", "extract-2031", "--type", "etl")
        extract = children.start(
            [*run, "--", "sh", "-c", EXTRACT],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "DIR": str(tmp_path)},
        )
        monitor = Monitor(real_store, cfg, probe=PsutilProbe())

        async def health_is(health: Health) -> bool:
            view = (await monitor.poll()).by_id().get("extract-2031")
            return view is not None and view.health is health

        await wait_for(lambda: health_is(Health.HEALTHY), while_running=extract, what="healthy")
        (tmp_path / "stall").touch()
        await wait_for(lambda: health_is(Health.STALLED), while_running=extract, what="stalled")
        await dog.tick()
        await asyncio.to_thread(stand_in.wait, 1)

        ack = await asyncio.to_thread(
            subprocess.run,
            zombietop(db, config_path, "ack", "extract-2031", "--reason", "on it"),
            capture_output=True,
            timeout=60,
        )
        assert ack.returncode == 0, ack.stderr
        await dog.tick()
        await dog.tick()  # an ack is passed on once, however many looks see it
        await asyncio.to_thread(stand_in.wait, 2)

        with open(tmp_path / "finish", "w") as fifo:
            fifo.write("done\n")

        async def beats_again() -> bool:
            beat = (await real_store.get_record("extract-2031")).heartbeat
            return beat is not None and beat.progress == 100

        # Held (quarantined) since it stalled: its beats are what lets the watchdog let go.
        await wait_for(beats_again, while_running=extract, what="extract-2031 beating again")
        await dog.tick()
        await asyncio.to_thread(stand_in.wait, 3)
        await dog.outbox.settle(SETTLE)
        (tmp_path / "exit").touch()
        await asyncio.to_thread(extract.wait, 30)

    assert [r.errors for r in stand_in.received] == [[], [], []]
    key = stand_in.events[0]["dedup_key"]
    assert key.startswith("extract-2031:20")
    assert stand_in.actions() == [("trigger", key), ("acknowledge", key), ("resolve", key)]
    trigger = stand_in.events[0]
    assert trigger["payload"]["summary"].startswith("extract-2031 stalled: stage=extract p=10%")
    assert trigger["payload"]["severity"] == "error"
    assert trigger["payload"]["component"] == "extract-2031"
    assert trigger["links"] == [
        {"href": "https://wiki.example/runbooks/etl#extract", "text": "runbook"}
    ]
    assert trigger["payload"]["summary"].endswith(
        "runbook: https://wiki.example/runbooks/etl#extract"
    )
    # The key is a secret: not in an event, not in a log line.
    events = await real_store.events(task_id="extract-2031")
    assert ROUTING_KEY not in repr(events) and ROUTING_KEY not in "\n".join(logs)
    delivered = await real_store.events(task_id="extract-2031", kind=EventKind.DELIVERY)
    assert [e.data["ok"] for e in delivered] == [True, True, True]
    assert delivered[0].data["notifier"] == f"pagerduty http://127.0.0.1:{unused_tcp_port}"


async def test_a_5xx_is_tried_again_and_the_resolve_waits_for_its_trigger(
    store: Store, clock: FakeClock, unused_tcp_port: int
) -> None:
    with pagerduty(unused_tcp_port) as stand_in:
        stand_in.answers = [500]
        cfg = replace(config(), notify=NotifySettings(retry_backoff=10.0, max_attempts=5))
        dog = watchdog_to(store, clock, channel(stand_in), cfg=cfg)
        token = await start(store)
        clock.advance(200)
        await dog.tick()  # stalled: the trigger meets a 500
        assert [d.ok for d in await dog.outbox.settle(SETTLE)] == [False]
        from zombietop.heartbeat_line import parse_line

        await store.record_heartbeat(
            "export-2031", parse_line("stage=load p=80"), owner="w1", token=token
        )
        await dog.tick()  # healthy again: the resolve is queued behind the trigger's retry
        await dog.outbox.settle(1)
        assert len(stand_in.received) == 1, "the resolve overtook the trigger"
        clock.advance(10)
        for _ in range(2):
            await dog.tick()
            await dog.outbox.settle(SETTLE)
            clock.advance(INTERVAL)
    assert [r.status for r in stand_in.received] == [500, 202, 202]
    assert [action for action, _ in stand_in.actions()] == ["trigger", "resolve"]
    assert len({key for _, key in stand_in.actions()}) == 1


async def test_a_400_is_final_at_once_and_the_key_never_shows(
    store: Store, clock: FakeClock, unused_tcp_port: int
) -> None:
    logs: list[str] = []
    with pagerduty(unused_tcp_port) as stand_in:
        stand_in.answers = [400]
        dog = watchdog_to(store, clock, channel(stand_in), log=logs.append)
        await start(store)
        clock.advance(200)
        await dog.tick()
        results = await dog.outbox.settle(SETTLE)
        assert dog.outbox.pending == 0
    assert [(r.ok, r.final, r.attempts) for r in results] == [(False, True, 1)]
    assert results[0].error is not None and "HTTP 400" in results[0].error
    # The stand-in echoed the body, key and all, as a careless proxy might: it is scrubbed.
    assert ROUTING_KEY not in results[0].error and "***" in results[0].error
    events = await store.events(kind=EventKind.DELIVERY)
    assert "giving up" in events[0].message and ROUTING_KEY not in repr(events)
    assert ROUTING_KEY not in "\n".join(logs)
    assert await store.pending_pages() == []


async def test_pagerduty_gets_each_page_and_the_ack_others_get_digests_and_no_ack(
    store: Store, clock: FakeClock, unused_tcp_port: int, tmp_path: Path
) -> None:
    """Past digest_after, a command channel gets one digest; PagerDuty one trigger per task,
    and the ack that only it hears of."""
    line = ListNotifier()
    with pagerduty(unused_tcp_port) as stand_in:
        cfg = replace(config(), notify=NotifySettings(digest_after=2))
        dog = watchdog_to(store, clock, line, channel(stand_in), cfg=cfg)
        for name in ("a", "b", "c"):
            await start(store, name)
        clock.advance(200)
        await dog.tick()
        # The triggers land before the ack: an incident's pages reach PagerDuty in order, so
        # an ack queued while its trigger is still in flight waits for the next look.
        await dog.outbox.settle(SETTLE)
        await store.ack_task("b", by="ana", reason="on it", duration=3600)
        await dog.tick()
        await dog.outbox.settle(SETTLE)
    assert [(page.kind, page.tasks) for page in line.pages] == [("incident", ("a", "b", "c"))]
    actions = stand_in.actions()
    assert sorted(action for action, _ in actions) == ["acknowledge", *["trigger"] * 3]
    acked = next(key for action, key in actions if action == "acknowledge")
    assert acked.startswith("b:")
    said = [event.message for event in await store.events(kind=EventKind.WATCHDOG)]
    assert said.count("b acknowledged in zombietop by ana") == 1


async def test_a_kept_page_resolves_the_same_incident_after_a_restart(
    store: Store, clock: FakeClock, unused_tcp_port: int
) -> None:
    token = await start(store)
    with pagerduty(unused_tcp_port) as stand_in:
        first = watchdog_to(store, clock, channel(stand_in))
        clock.advance(200)
        await first.tick()
        await first.outbox.settle(SETTLE)
    key = stand_in.actions()[0][1]
    from zombietop.heartbeat_line import parse_line

    await store.record_heartbeat("export-2031", parse_line("p=90"), owner="w1", token=token)
    await first.tick()  # the resolve finds nobody listening: kept for the next watchdog
    await first.outbox.close(5)
    kept = await store.pending_pages()
    assert [(page.kind, page.incident) for page in kept] == [("all_clear", key)]
    with pagerduty(unused_tcp_port) as stand_in:
        second = watchdog_to(store, clock, channel(stand_in))
        clock.advance(60)
        await second.tick()
        await second.outbox.settle(SETTLE)
    assert stand_in.actions() == [("resolve", key)]


async def test_a_page_kept_while_pagerduty_is_down_keeps_its_trace(
    store: Store, clock: FakeClock, unused_tcp_port: int
) -> None:
    """The trigger of a traced task finds nobody listening: it waits in the store with its
    trace id and link, and the next watchdog sends them in custom_details and the line."""
    token = await start(store)
    trace = TraceContext(trace_id=TRACE, span_id="1111111111111111", parent_id=None)
    await store.set_trace("export-2031", owner="w1", token=token, trace=trace)
    link = f"https://tempo.example/trace/{TRACE}"
    base = config()
    cfg = replace(base, otel=replace(base.otel, trace_url="https://tempo.example/trace/{trace_id}"))
    down = PagerDutyNotifier(
        PagerDutySettings(url=f"http://127.0.0.1:{unused_tcp_port}"), 5.0, environ=ENV
    )
    first = watchdog_to(store, clock, down, cfg=cfg)
    clock.advance(200)
    await first.tick()
    await first.outbox.settle(SETTLE)
    await first.outbox.close(5)
    [kept] = await store.pending_pages()
    assert (kept.kind, kept.trace_id, kept.trace_url) == ("incident", TRACE, link)
    with pagerduty(unused_tcp_port) as stand_in:
        second = watchdog_to(store, clock, channel(stand_in), cfg=cfg)
        clock.advance(60)
        await second.tick()
        await second.outbox.settle(SETTLE)
    [sent] = stand_in.events
    details = sent["payload"]["custom_details"]
    assert (sent["event_action"], details["trace_id"], details["trace_url"]) == (
        "trigger",
        TRACE,
        link,
    )
    assert "trace 4bf92f35..." in details["line"]
    assert sent["links"][-1] == {"href": link, "text": "trace"}
    assert await store.pending_pages() == []


def test_the_routing_key_never_sits_in_the_config_file(tmp_path: Path) -> None:
    path = tmp_path / "zombietop.toml"
    path.write_text(f'[notify.pagerduty]\nrouting_key = "{ROUTING_KEY}"\n')
    with pytest.raises(ConfigError, match="routing key is a secret") as caught:
        load_config(path)
    assert ROUTING_KEY not in str(caught.value)
    path.write_text('[notify.pagerduty]\nurl = "ftp://x"\n')
    with pytest.raises(ConfigError, match="url must be an http"):
        load_config(path)
    path.write_text('[notify.pagerduty]\nrouting_kee_file = "/k"\n')
    with pytest.raises(ConfigError, match="did you mean 'routing_key_file'"):
        load_config(path)


def test_the_key_file_must_be_private_and_hold_a_routing_key(tmp_path: Path) -> None:
    key_file = tmp_path / "pagerduty.key"
    key_file.write_text(f"# the etl service\n{ROUTING_KEY}\n")
    config_path = tmp_path / "zombietop.toml"
    config_path.write_text(f'[notify.pagerduty]\nrouting_key_file = "{key_file}"\n')
    settings = load_config(config_path).notify
    assert settings.configured and settings.pagerduty is not None
    key_file.chmod(0o644)
    with pytest.raises(ZombietopError, match="chmod 600"):
        PagerDutyNotifier(settings.pagerduty, 5.0, environ={})
    key_file.chmod(0o600)
    assert PagerDutyNotifier(settings.pagerduty, 5.0, environ={}).name == (
        "pagerduty https://events.pagerduty.com"
    )
    key_file.write_text("not-a-key\n")
    with pytest.raises(ZombietopError, match="not a routing key") as caught:
        PagerDutyNotifier(settings.pagerduty, 5.0, environ={})
    assert "not-a-key" not in str(caught.value)
    with pytest.raises(ZombietopError, match="no routing key"):
        PagerDutyNotifier(PagerDutySettings(), 5.0, environ={})


def test_severity_and_a_long_hostile_task_id_make_a_valid_event() -> None:
    hostile = "extract-\x1b[31m" + "x" * 400
    page = Page(kind=PageKind.INCIDENT, line=f"{hostile} dead: pid 7 gone", task_id=hostile,
                health=Health.DEAD, at=0.0, incident=f"{hostile}:20261204T030000Z")  # fmt: skip
    body = event(page, ROUTING_KEY, source="host-a")
    assert len(body["dedup_key"]) == 255 and "\x1b" not in body["dedup_key"]
    assert dedup_key(page) == body["dedup_key"]  # the same page, the same key: every time
    assert body["payload"]["severity"] == "critical"
    assert "\x1b" not in body["payload"]["summary"] and "\x1b" not in body["payload"]["component"]
    assert severity(replace(page, kind=PageKind.STAGE_OVERRUN, health=Health.HEALTHY)) == "warning"
    assert severity(replace(page, kind=PageKind.WATCHDOG, health=None)) == "critical"
    assert severity(replace(page, health=Health.STALLED)) == "error"
    overrun = replace(page, kind=PageKind.STAGE_OVERRUN, incident=None, task_id="t")
    assert dedup_key(overrun) == "stage_overrun:t:19700101T000000Z"


def test_only_pagerduty_keeps_incidents() -> None:
    assert PagerDutyNotifier.keeps_incidents
    assert not CommandNotifier(["true"], 1.0).keeps_incidents


async def test_a_restarted_watchdog_resolves_the_incident_it_did_not_open(
    store: Store, clock: FakeClock, unused_tcp_port: int
) -> None:
    """The next watchdog reads the incident back from the event log: its resolve names the
    alert the first one triggered."""
    from zombietop.heartbeat_line import parse_line

    token = await start(store)
    with pagerduty(unused_tcp_port) as stand_in:
        for step in ("open", "restart"):
            dog = watchdog_to(store, clock, channel(stand_in))
            if step == "open":
                clock.advance(200)
            else:
                clock.advance(7)
                await store.record_heartbeat(
                    "export-2031", parse_line("p=90"), owner="w1", token=token
                )
            await dog.tick()
            await dog.outbox.settle(SETTLE)
    (trigger, first), (resolve, second) = stand_in.actions()
    assert (trigger, resolve) == ("trigger", "resolve") and first == second


def test_the_incidents_name_is_read_back_from_its_page_event_not_recomputed() -> None:
    """The event's time is the store's clock, a little after the look that opened it: the name
    the pages carried is the one in the event's data."""
    from zombietop.oncall.acks import Notices

    notices = Notices()
    data = {"page": "incident", "incident": "export-2031:20261204T030000Z"}
    notices.remember("export-2031", data, 1_796_353_201.4)  # 03:00:01 UTC
    notice = notices.get("export-2031")
    assert notice is not None and notice.incident == "export-2031:20261204T030000Z"
    notices.remember("old-task", {"page": "incident"}, 1_796_353_201.4)  # before names were kept
    old = notices.get("old-task")
    assert old is not None and old.incident == "old-task:20261204T030001Z"
