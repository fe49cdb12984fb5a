"""``[monitor] mouse``: the dashboard takes the mouse unless the config (or ``--no-mouse``)
leaves it to the terminal, to select and copy text."""

from __future__ import annotations

from pathlib import Path

import pytest

from zombietop.config import load_config


@pytest.mark.parametrize(
    ("text", "mouse"), [("", True), ("mouse = true\n", True), ("mouse = false\n", False)]
)
def test_monitor_mouse(tmp_path: Path, text: str, mouse: bool) -> None:
    path = tmp_path / "config.toml"
    path.write_text(f'[monitor]\nrefresh = "2s"\n{text}')
    config = load_config(path)
    assert (config.mouse, config.refresh) == (mouse, 2.0)
