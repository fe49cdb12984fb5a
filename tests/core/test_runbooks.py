"""Runbooks: a step type's link template, checked at the config edge (an unknown placeholder is
an error that names it), filled with the task's fields and cleaned, and carried as the last
field of the task's page (never of its all-clear)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.test_watchdog import config, start, watchdog
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import ConfigError
from zombietop.judge.monitor import Monitor
from zombietop.model import TaskState
from zombietop.store import Store
from zombietop.tui.cli.status_json import task_json
from zombietop.watch.metrics import fleet_families

TEMPLATE = "https://wiki/runbooks/{step_type}#{stage}"


def _load(tmp_path: Path, runbook: str) -> str | None:
    path = tmp_path / "zombietop.toml"
    path.write_text(f"[step_types.export]\nrunbook = {runbook}\n")
    return load_config(path).limits_for("export").runbook


def test_a_step_types_runbook_is_read(tmp_path: Path) -> None:
    assert _load(tmp_path, f'"{TEMPLATE}"') == TEMPLATE
    assert load_config(tmp_path / "zombietop.toml").limits_for("other").runbook is None


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ('"https://wiki/{dag}"', "unknown placeholder {dag}; the known ones are {task_id}"),
        ('"https://wiki/{stage"', "is not a template"),
        ('""', "runbook must be a link template"),
        ("3", "runbook must be a link template"),
    ],
)
def test_a_bad_runbook_is_refused_by_name(tmp_path: Path, value: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _load(tmp_path, value)
    assert fragment in str(caught.value)
    assert "[step_types.export]" in str(caught.value)


async def test_the_runbook_is_the_pages_last_field(store: Store, clock: FakeClock) -> None:
    base = config()
    limits = replace(base.defaults, step_type="d", runbook=TEMPLATE + "\x1b[2J")
    cfg = replace(base, step_types={"d": limits})
    token = await start(store)
    clock.advance(200)  # stalled
    dog, notifier, _ = watchdog(store, clock, cfg)
    await dog.tick()
    (page,) = notifier.pages
    assert page.kind == "incident"
    assert page.line.endswith(
        "- resume or discard runbook: https://wiki/runbooks/d#transform\\x1b[2J"
    )
    await store.finish_task("export-2031", owner="w1", token=token, state=TaskState.SUCCEEDED)
    await dog.tick()
    clear = notifier.pages[-1]
    assert clear.kind == "all_clear" and "runbook" not in clear.line


async def test_the_runbook_in_status_json_and_the_task_info_series(
    store: Store, clock: FakeClock
) -> None:
    base = config()
    limits = replace(base.defaults, step_type="d", runbook=TEMPLATE)
    cfg = replace(base, step_types={"d": limits})
    await start(store)
    await start(store, "other-1", step_type="plain")
    snapshot = await Monitor(store, cfg, clock=clock).poll()
    views = {view.task_id: view for view in snapshot.tasks}
    now = clock.now()
    assert task_json(views["export-2031"], snapshot, None, now)["runbook"] == (
        "https://wiki/runbooks/d#transform"
    )
    assert task_json(views["other-1"], snapshot, None, now)["runbook"] is None
    (info,) = [m for m in fleet_families(snapshot, now) if m.name == "zombietop_task"]
    urls = {s.labels["task_id"]: s.labels["runbook_url"] for s in info.samples}
    assert urls == {"export-2031": "https://wiki/runbooks/d#transform", "other-1": ""}
