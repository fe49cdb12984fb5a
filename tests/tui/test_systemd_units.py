"""The systemd user units in docs/systemd/: valid to systemd itself, and set as
docs/howto/systemd.md says."""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

UNITS = Path(__file__).resolve().parents[2] / "docs" / "systemd"


def service(name: str) -> configparser.SectionProxy:
    unit = configparser.ConfigParser(strict=True, interpolation=None)
    unit.optionxform = str  # keys keep their case: ExecStart, not execstart
    unit.read(UNITS / name)
    return unit["Service"]


def test_the_watchdog_unit_is_notify_with_a_watchdog_and_restarts() -> None:
    watch = service("zombietop-watch.service")
    assert (watch["Type"], watch["Restart"]) == ("notify", "on-failure")
    assert watch["ExecStart"].endswith("zombietop watch") and "WatchdogSec" in watch


def test_restarting_the_agent_signals_the_agent_alone() -> None:
    agent = service("zombietop-agent.service")
    assert (agent["KillMode"], agent["Restart"]) == ("process", "on-failure")
    assert agent["ExecStart"].endswith("zombietop agent")


def test_the_ping_server_unit_runs_serve_and_restarts() -> None:
    serve = service("zombietop-serve.service")
    assert (serve["Type"], serve["Restart"]) == ("exec", "on-failure")
    assert serve["ExecStart"].endswith("zombietop serve")


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_analyze_verifies_every_unit(tmp_path: Path) -> None:
    # ExecStart names where pipx puts the command; verify checks it exists, so use this venv's.
    command = Path(sys.executable).with_name("zombietop")
    for unit in UNITS.glob("*.service"):
        text = unit.read_text().replace("%h/.local/bin/zombietop", str(command))
        (tmp_path / unit.name).write_text(text)
    units = sorted(str(p) for p in tmp_path.glob("*.service"))
    assert len(units) == 3
    result = subprocess.run(
        ["systemd-analyze", "verify", *units], capture_output=True, text=True, cwd=tmp_path
    )
    assert (result.returncode, result.stderr) == (0, "")
