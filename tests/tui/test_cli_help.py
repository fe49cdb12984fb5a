"""Every subcommand's ``--help``, as a new user reads it: a line in the command list, a
description with an example, and only the flags the command reads."""

from __future__ import annotations

import re

import pytest

from zombietop.health import Health, NagiosLevel
from zombietop.tui.cli.main import main

COMMANDS = [
    "status",
    "init",
    "beat",
    "watch",
    "agent",
    "config",
    "config init",
    "config check",
    "run",
    "resume",
    "discard",
    "kill",
    "ack",
    "unack",
    "note",
    "silence",
    "silences",
    "unsilence",
    "demo",
]
READ_SOURCES = {
    "status",
    "watch",
    "agent",
    "resume",
    "discard",
    "kill",
    "silence",
    "ack",
    "unack",
    "note",
}
"""The commands that read engines' databases, so the only ones that offer ``--source``."""


def help_of(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as exited:
        main([*argv, "--help"])
    out, err = capsys.readouterr()
    assert (exited.value.code, err) == (0, "")
    return out


def description(text: str) -> str:
    """What ``--help`` prints between its usage and its first list of arguments."""
    after_usage = text.split("\n\n", 1)[1]
    return re.split(r"^(?:options|positional arguments):$", after_usage, flags=re.M)[0].strip()


def test_the_command_list_has_a_line_for_every_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    listed = help_of(capsys)
    for name in [c for c in COMMANDS if " " not in c]:
        line = re.search(rf"^    {name}\b(.*)$", listed, flags=re.M)
        assert line is not None and line.group(1).strip(), f"{name} has no line in the list"
    config = help_of(capsys, "config")
    for name in ("init", "check"):
        line = re.search(rf"^    {name}\b(.*)$", config, flags=re.M)
        assert line is not None and line.group(1).strip(), f"config {name} has no line"


@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_says_what_it_does_with_an_example(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    text = description(help_of(capsys, *command.split()))
    assert text, f"`zombietop {command} --help` has no description"
    assert re.search(rf"^  zombietop {command}\b", text, flags=re.M), text


@pytest.mark.parametrize("command", COMMANDS)
def test_source_is_offered_only_where_it_is_read(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    text = help_of(capsys, *command.split())
    assert ("--source URL" in text) == (command in READ_SOURCES), text


def test_the_dashboard_reads_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert "--source URL" in help_of(capsys)


def test_the_demo_names_its_own_store(capsys: pytest.CaptureFixture[str]) -> None:
    """The demo never opens $ZOMBIETOP_DB or [store] path, so its --help must not say it does."""
    text = " ".join(help_of(capsys, "demo").split())
    assert "$ZOMBIETOP_DB" not in text
    assert "--db PATH a demo store (default: $XDG_STATE_HOME/zombietop/demo/demo.db" in text
    assert "--config" not in text


def test_status_help_names_each_health_under_the_exit_status_it_gives(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The exit statuses are read from the traits: a health that pages is named under
    CRITICAL (``orphaned`` was left out when the words were written by hand)."""
    text = " ".join(help_of(capsys, "status").split())
    # The words of the task's clause only: "a task dead, orphaned ... or stalled, a schedule ..."
    warning = set(re.findall(r"\w+", text.split("1 WARNING (", 1)[1].split(", a ", 1)[0]))
    critical = set(re.findall(r"\w+", text.split("2 CRITICAL (", 1)[1].split(", a ", 1)[0]))
    for health in Health:
        assert (health in warning) is (health.nagios_level is NagiosLevel.WARNING), health
        assert (health in critical) is (health.nagios_level is NagiosLevel.CRITICAL), health
