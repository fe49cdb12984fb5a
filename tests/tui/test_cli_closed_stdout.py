"""A reader that closes stdout early (``zombietop status --nagios | head -1``) ends the command
quietly, as SIGPIPE ends ``cat``: no traceback on stderr, and the exit status a shell expects
of a command its pipe ended (141)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, zombietop
from tests.tui.test_cli_status import build_store

EXIT_PIPE = 141


@pytest.mark.parametrize(
    "command",
    [
        ("status",),
        ("status", "--nagios"),
        ("status", "--json", "--all"),
        ("status", "--prometheus"),
        ("silences",),
        ("watch", "--once", "--dry-run"),
    ],
    ids=" ".join,
)
def test_a_closed_stdout_ends_the_command_quietly(tmp_path: Path, command: tuple[str, ...]) -> None:
    db, config = tmp_path / "z.db", tmp_path / "c.toml"
    config.write_text(FAST_CONFIG)
    build_store(db, ["stalled", "healthy", "succeeded"])
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes its first byte
    try:
        done = subprocess.run(
            zombietop(db, config, *command), stdout=write_end, stderr=subprocess.PIPE, timeout=120
        )
    finally:
        os.close(write_end)
    err = done.stderr.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert done.returncode == EXIT_PIPE, err


@pytest.mark.parametrize("command", [("--help",), ("status", "--help")], ids=" ".join)
def test_help_into_a_closed_stdout_is_quiet(tmp_path: Path, command: tuple[str, ...]) -> None:
    """argparse drops the error of a help it cannot write and exits 0: no traceback either."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            zombietop(tmp_path / "z.db", tmp_path / "c.toml", *command),
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    finally:
        os.close(write_end)
    assert done.stderr == b"" and done.returncode in (0, EXIT_PIPE)
