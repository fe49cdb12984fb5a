"""``zombietop watch --once`` from cron: a real notifier command, once per incident."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tui.test_cli_status import build_store
from zombietop.tui.cli import main


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
    assert "PAGE (incident) stalled-1 stalled:" in out
    assert "would quarantine stalled-1" in out
    main(["status", "--json", "--db", str(db)])
    assert '"quarantined": false' in capsys.readouterr().out


def test_watch_on_a_missing_store_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["watch", "--once", "--db", str(tmp_path / "nope.db")]) == 2
    assert capsys.readouterr().err.startswith("zombietop: no store at")
