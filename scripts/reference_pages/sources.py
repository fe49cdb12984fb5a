"""docs/reference/sources.md: the engines zombietop reads, from the registry."""

from __future__ import annotations

from reference_pages.markdown import header, table
from zombietop.durations import format_duration
from zombietop.sources import registry


def render() -> str:
    lines = header(
        "Sources",
        "core/sources/registry.py or an engine's module",
        "A source is an engine's database or broker that zombietop reads, and never writes. "
        "Give one with `--source URL` (repeatable) or a `[[sources]]` entry in the config. "
        "Acks, notes and holds on a source's tasks live in zombietop's own store.",
    )
    found = registry.engines()
    lines += table(
        ["kind", "engine", "URL forms", "module"],
        [
            (
                f"`{engine.kind}`",
                engine.name,
                ", ".join(f"`{form}`" for form in engine.forms),
                f"`{registry.ENGINES[engine.kind]}`",
            )
            for engine in found
        ],
    )
    for engine in found:
        seconds, why = engine.heartbeat_timeout
        lines += [f"## {engine.name}", ""]
        lines += [f"- Schemes: {', '.join(f'`{scheme}`' for scheme in engine.schemes)}."]
        lines += [f"- One {engine.unit} is one task of zombietop's."]
        lines += [f"- Stalled after {format_duration(seconds)} without a beat ({why}),"]
        lines += ["  unless `heartbeat_timeout` in its `[[sources]]` entry says otherwise."]
        lines += [f"- What an operator can do: {engine.actions}.", ""]
    lines += [
        "## Adding a source",
        "",
        "A source URL reads `KIND+BACKEND://...`. Its kind picks a line of `ENGINES` in "
        "`core/sources/registry.py`, and the module on that line declares its engine "
        "(`ENGINE`). Adding an engine is its module and one line in that table; "
        "[the architecture page](../architecture.md) names every file it touches.",
        "",
    ]
    return "\n".join(lines)
