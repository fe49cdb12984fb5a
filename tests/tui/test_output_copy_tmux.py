"""A real terminal: ``c`` in the output pane reaches tmux's clipboard through OSC 52 (tmux with
``set-clipboard on`` takes it as a terminal over SSH would), escaped, with no control sequence
that the terminal would obey."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path

import pytest

from tests.tui.test_tmux_escapes import Tmux, tmux  # noqa: F401 - the fixture

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

ROOT = Path(__file__).resolve().parents[2]
APP = """
import sys
sys.path.insert(0, {root!r})
from tests.tui.helpers import make_app
from tests.tui.test_output_pane import source
make_app(source()).run()
"""


def test_c_copies_through_osc_52_to_the_terminal(tmux: Tmux, tmp_path: Path) -> None:  # noqa: F811
    script = tmp_path / "dashboard.py"
    script.write_text(APP.format(root=str(ROOT)))
    tmux._run("set-option", "-g", "set-clipboard", "on")
    tmux.type(f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}")
    tmux.wait_for("reclaimable")
    tmux.keys("j")
    tmux.wait_for("export-2031")
    tmux.keys("Enter")
    tmux.wait_for("progress over the last")
    tmux.keys("o")
    tmux.wait_for("last 120 lines of attempt 2")
    tmux.keys("c")
    tmux.wait_for("OSC 52")
    copied = tmux._run("show-buffer").split("\n")
    assert len(copied) == 50
    assert copied[0] == "12:01:10 loaded batch 70 of 120"
    assert copied[-1] == "done \\x1b]0;pwned\\x07 bye"
    assert tmux.title() == "before"  # the escaped OSC retitled nothing
