"""The commands of the operator's install, run on the job-side install (no ``[all]``): each one
prints one line naming what is missing and the command that adds it, exits as its failures do,
and starts nothing first.

A package is made missing as Python records one (``sys.modules[name] = None``: the import
fails, ``find_spec`` answers None); scripts/smoke_installed.sh runs the same commands in a real
job-side venv.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from zombietop.extras import Install
from zombietop.tui.cli.main import main

ALL = Install.here().command("all")


def hide(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for name in modules:
        monkeypatch.setitem(sys.modules, name, None)


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    (line,) = captured.err.splitlines()
    return line


def test_the_dashboard_without_textual_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hide(monkeypatch, "textual", "rich")
    db = tmp_path / "zombietop.db"
    assert main(["--db", str(db)]) == 2
    assert error_line(capsys) == (
        f"zombietop: the dashboard needs textual and rich, which are not installed: {ALL}"
    )
    assert not db.exists()


def test_the_demo_without_textual_starts_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hide(monkeypatch, "textual", "rich")
    db = tmp_path / "demo.db"
    assert main(["demo", "--db", str(db)]) == 2
    assert error_line(capsys) == (
        f"zombietop: `zombietop demo` needs textual and rich, which are not installed: {ALL}"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_demo_without_the_dashboard_needs_only_tomli_w(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hide(monkeypatch, "tomli_w")
    assert main(["demo", "--no-tui", "--db", str(tmp_path / "demo.db")]) == 2
    assert error_line(capsys) == (
        f"zombietop: `zombietop demo` needs tomli-w, which is not installed: {ALL}"
    )
    assert list(tmp_path.iterdir()) == []


def test_watch_metrics_without_prometheus_client_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hide(monkeypatch, "prometheus_client")
    db = tmp_path / "zombietop.db"
    assert main(["init", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["watch", "--metrics", "127.0.0.1:0", "--db", str(db)]) == 2
    assert error_line(capsys) == (
        "zombietop: `zombietop watch --metrics` needs prometheus-client, which is not "
        f"installed: {ALL}"
    )


def test_watch_metrics_from_the_config_names_the_config_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hide(monkeypatch, "prometheus_client")
    config = tmp_path / "config.toml"
    config.write_text('[watch]\nmetrics = "127.0.0.1:0"\n')
    db = tmp_path / "zombietop.db"
    assert main(["watch", "--config", str(config), "--db", str(db)]) == 2
    assert error_line(capsys).startswith("zombietop: [watch] metrics needs prometheus-client,")
    assert not db.exists()


def test_watch_with_an_apprise_channel_without_apprise_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hide(monkeypatch, "apprise")
    config = tmp_path / "config.toml"
    config.write_text('[notify]\napprise = ["json://127.0.0.1:9/hook"]\n')
    db = tmp_path / "zombietop.db"
    assert main(["watch", "--once", "--config", str(config), "--db", str(db)]) == 2
    assert error_line(capsys) == (
        f"zombietop: [notify] apprise needs apprise, which is not installed: {ALL}"
    )


def test_status_prometheus_without_prometheus_client_is_unknown(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hide(monkeypatch, "prometheus_client")
    db = tmp_path / "zombietop.db"
    assert main(["init", "--db", str(db)]) == 0
    capsys.readouterr()
    assert main(["status", "--prometheus", "--db", str(db)]) == 3  # UNKNOWN
    assert error_line(capsys) == (
        "zombietop: `zombietop status --prometheus` needs prometheus-client, which is not "
        f"installed: {ALL}"
    )


def test_config_init_without_tomli_w_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hide(monkeypatch, "tomli_w")
    target = tmp_path / "config.toml"
    assert main(["config", "init", str(target)]) == 2
    assert error_line(capsys) == (
        f"zombietop: `zombietop config init` needs tomli-w, which is not installed: {ALL}"
    )
    assert not target.exists()


def test_run_and_status_need_no_extra(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    hide(monkeypatch, "textual", "rich", "apprise", "prometheus_client", "tomli_w", "asyncpg")
    db = tmp_path / "zombietop.db"
    beat = (
        "import os; open(os.environ['ZOMBIETOP_HEARTBEAT_FILE'], 'a').write('stage=load p=50\\n')"
    )
    assert main(["run", "--task", "t-1", "--db", str(db), "--", sys.executable, "-c", beat]) == 0
    capsys.readouterr()
    assert main(["status", "--json", "--all", "--db", str(db)]) == 0
    (task,) = json.loads(capsys.readouterr().out)["tasks"]
    assert (task["task_id"], task["health"], task["stage"]) == ("t-1", "succeeded", "load")
