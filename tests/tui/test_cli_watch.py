"""``zombietop watch --once`` from cron: a real notifier command, once per incident."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from tests.tui.test_cli_status import build_store
from zombietop.clock import FakeClock
from zombietop.heartbeat_line import parse_line
from zombietop.store import open_store
from zombietop.tui.cli.main import main


def test_watch_once_pages_through_a_command_once_per_incident(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db, pages, config = tmp_path / "z.db", tmp_path / "pages.txt", tmp_path / "c.toml"
    build_store(db, ["stalled", "healthy", "spinning"])
    config.write_text(
        '[timeouts]\nstage = "5h"\n'
        "[notify]\n"
        f'command = ["sh", "-c", "cat >> {pages}; echo \\"$ZOMBIETOP_HEALTH\\" >> {pages}.health"]\n'
    )
    argv = ["watch", "--once", "--db", str(db), "--config", str(config)]
    assert main(argv) == 0
    assert main(argv) == 0  # a second cron run remembers the open incident
    lines = pages.read_text().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("stalled-1 stalled: stage=transform p=61% heartbeat 1h00m old")
    assert lines[0].endswith("- resume or discard")
    assert Path(f"{pages}.health").read_text() == "stalled\n"
    out = capsys.readouterr().out
    assert "quarantined stalled-1" in out
    assert "spinning (not paged): spinning-1 spinning" in out
    assert main(["status", "--json", "--db", str(db)]) == 2  # CRITICAL
    assert '"quarantined": true' in capsys.readouterr().out


def test_watch_dry_run_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "z.db"
    build_store(db, ["stalled"])
    assert main(["watch", "--once", "--dry-run", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "PAGE (incident) stalled-1 stalled, stage_overrun:" in out
    assert "would quarantine stalled-1" in out
    main(["status", "--json", "--db", str(db)])
    assert '"quarantined": false' in capsys.readouterr().out


def test_watch_on_a_missing_store_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["watch", "--once", "--db", str(tmp_path / "nope.db")]) == 2
    assert capsys.readouterr().err.startswith("zombietop: no store at")


def test_watch_once_exits_non_zero_when_it_could_not_read_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported fault: cron saw exit 0 from a look that read nothing."""
    import sqlite3

    db = tmp_path / "z.db"
    build_store(db, ["healthy"])
    with sqlite3.connect(db) as raw:  # the file opens, its tasks cannot be read
        raw.execute("ALTER TABLE tasks RENAME TO tasks_moved")
    assert main(["watch", "--once", "--db", str(db)]) == 2
    assert "cannot read store" in capsys.readouterr().out


def test_watch_without_a_notify_channel_prints_its_pages_to_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "z.db"
    build_store(db, ["stalled"])
    config = tmp_path / "c.toml"
    config.write_text('[timeouts]\nstage = "5h"\n')  # no [notify]
    assert main(["watch", "--once", "--db", str(db), "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "no [notify] channel configured: pages are only logged here" in out
    assert "PAGE (incident) stalled-1 stalled: stage=transform p=61%" in out


def test_status_json_carries_each_finished_tasks_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "z.db"
    assert main(["run", "--db", str(db), "--task", "exits-3", "--", "sh", "-c", "exit 3"]) == 3
    capsys.readouterr()
    main(["status", "--json", "--all", "--db", str(db)])
    tasks = {t["task_id"]: t for t in json.loads(capsys.readouterr().out)["tasks"]}
    assert tasks["exits-3"]["state"] == "failed" and tasks["exits-3"]["exit_code"] == 3


def test_watch_once_waits_for_its_deliveries_before_it_exits(tmp_path: Path) -> None:
    """Deliveries run in the background; a cron run still sees its page out before it ends."""
    db, pages, config = tmp_path / "z.db", tmp_path / "pages.txt", tmp_path / "c.toml"
    build_store(db, ["stalled"])
    # The command is slow to take the page: the look is over long before it has.
    config.write_text(
        f'[timeouts]\nstage = "5h"\n[notify]\ncommand = ["sh", "-c", "sleep 1; cat >> {pages}"]\n'
    )
    assert main(["watch", "--once", "--db", str(db), "--config", str(config)]) == 0
    assert pages.read_text().startswith("stalled-1 stalled: ")


def test_watch_bounds_each_log_line_about_a_task_with_a_huge_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported fault: a task id of 100,000 characters made a `would quarantine` line of
    100,000 characters in the log, while the page itself was bounded."""
    db, task_id = tmp_path / "z.db", "x" * 100_000

    async def build() -> None:
        clock = FakeClock(time.time() - 3600)
        async with await open_store(db, create=True, clock=clock) as store:
            await store.create_task(
                task_id=task_id, run_id="r", step="s", step_type="default", actor="test"
            )
            lease = await store.acquire_lease(task_id, owner="w1@box", ttl=6 * 3600)
            await store.record_heartbeat(
                task_id, parse_line("stage=load p=5"), owner="w1@box", token=lease.token
            )

    asyncio.run(build())
    assert main(["watch", "--once", "--dry-run", "--db", str(db)]) == 0
    lines = capsys.readouterr().out.splitlines()
    said = [line for line in lines if "would quarantine" in line]
    assert len(said) == 1
    assert "characters cut" in said[0]
    assert max(len(line) for line in lines) < 2100
