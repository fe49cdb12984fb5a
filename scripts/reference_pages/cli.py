"""docs/reference/cli.md: every command's ``--help``, from the parsers (``zombietop.tui.cli``)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

from reference_pages.markdown import code, header
from zombietop.tui.cli.main import build_parser

WIDTH = "100"
"""The width argparse wraps help at (it reads ``$COLUMNS``), fixed so the page is the same on
every terminal."""


def commands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every subcommand under ``parser``, depth first, by its full name (``config init``)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield f"{prefix}{name}", sub
                yield from commands(sub, f"{prefix}{name} ")


def render() -> str:
    before = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = WIDTH
    try:
        return _render()
    finally:
        if before is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = before


def _render() -> str:
    parser = build_parser()
    found = list(commands(parser))
    lines = header(
        "Command line",
        "a command's parser in tui/cli/",
        "Every command and flag, as `zombietop COMMAND --help` prints it. With no command, "
        "`zombietop` opens the dashboard.",
    )
    lines += ["Commands: " + ", ".join(f"[`{name}`](#{_anchor(name)})" for name, _ in found), ""]
    lines += ["## `zombietop`", "", *code(parser.format_help())]
    for name, sub in found:
        lines += [f"## `zombietop {name}`", "", *code(sub.format_help())]
    return "\n".join(lines)


def _anchor(name: str) -> str:
    """The anchor MkDocs gives the heading ``zombietop NAME``."""
    return "zombietop-" + name.replace(" ", "-")
