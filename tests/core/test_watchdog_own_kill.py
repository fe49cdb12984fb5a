"""The watchdog's own kill does not end the incident: a real `zombietop run` job stalls in a
stage, a real watchdog quarantines and pages it, kills it at its second stage overrun, and keeps
the incident open until someone resumes or discards the task."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, wait_for, zombietop
from tests.core.test_root_causes import ListNotifier
from zombietop.config import WatchSettings, load_config
from zombietop.errors import TaskNotFound
from zombietop.executor import Executor
from zombietop.model import TaskState
from zombietop.monitor import Monitor
from zombietop.procs import PsutilProbe
from zombietop.store.sqlite import SQLiteStore
from zombietop.watchdog import Watchdog

# One reported beat in stage "transform", then it sleeps: stalled, and over its stage budget.
STUCK = 'echo "stage=transform p=40" >> "$ZOMBIETOP_HEARTBEAT_FILE"; sleep 60'


@pytest.fixture
def kill_config_path(tmp_path: Path) -> Path:
    path = tmp_path / "kill.toml"
    text = FAST_CONFIG.replace('request = "2s"', 'request = "0.5s"')
    path.write_text(text.replace('stage = "20s"', 'stage = "1.5s"'))
    return path


async def test_the_watchdogs_own_kill_keeps_the_incident_open(
    real_store: SQLiteStore, db: Path, kill_config_path: Path, children: Children
) -> None:
    """The reported fault: quarantined, paged, killed at 2 x its stage budget, and then
    `all clear: now interrupted (still quarantined)` and a PagerDuty resolve."""
    config = load_config(kill_config_path)
    config = replace(config, watch=WatchSettings(interval=0.2, renotify=0.5, stage_kill_factor=2))
    notifier = ListNotifier()
    dog = Watchdog(
        Monitor(real_store, config, probe=PsutilProbe()),
        config,
        executor=Executor(real_store, config),
        notifiers=[notifier],
        log=lambda _: None,
    )
    job = children.start(
        zombietop(db, kill_config_path, "run", "--task", "export-2031", "--", "sh", "-c", STUCK),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )

    async def interrupted() -> bool:
        await dog.tick()
        try:
            task = await real_store.get_task("export-2031")
        except TaskNotFound:
            return False
        return task.state is TaskState.INTERRUPTED

    await wait_for(interrupted, timeout=60, interval=0.2, what="the watchdog's kill")
    assert job.wait(30) != 0
    kinds = [page.kind for page in notifier.pages]
    assert kinds[0] == "incident" and "stalled" in notifier.pages[0].line

    async def renotified() -> bool:
        await dog.tick()
        return any("killed at stage overrun" in page.line for page in notifier.pages)

    await wait_for(renotified, timeout=30, interval=0.2, what="a notice of the kill")
    assert "all_clear" not in [page.kind for page in notifier.pages]
    notice = next(page for page in notifier.pages if "killed at stage overrun" in page.line)
    assert notice.kind == "renotify"
    assert "export-2031 killed at stage overrun (stage=transform, was stalled); not finished" in (
        notice.line
    )
    assert "not finished - resume or discard (" in notice.line
    assert "export-2031" in dog.incidents

    # Discarded by a person: now the incident ends.
    task = await real_store.get_record("export-2031")
    token = task.lease.token if task.lease is not None else 0
    await Executor(real_store, config).discard("export-2031", expected_token=token, actor="ana")
    await dog.tick()
    assert notifier.pages[-1].kind == "all_clear"
    assert "export-2031" not in dog.incidents
