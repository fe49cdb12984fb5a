"""docs/reference/healths.md: every health and flag, from their traits (``zombietop.health``)."""

from __future__ import annotations

import dataclasses

from reference_pages.markdown import attribute_docs, first_paragraph, header, table
from zombietop.health import (
    FLAG_TRAITS,
    HEALTH_TRAITS,
    Flag,
    Health,
    HealthTraits,
    NagiosLevel,
    RowOrder,
    ScheduleHealth,
    WatchReaction,
)
from zombietop.tui.healths import GLYPHS

TRAITS = tuple(f.name for f in dataclasses.fields(HealthTraits) if f.type == "bool")
"""Every yes-or-no trait of a health, in the order ``HealthTraits`` declares them."""


def yes(value: bool) -> str:
    return "yes" if value else ""


def render() -> str:
    lines = header(
        "Healths and flags",
        "core/health.py, core/judge/schedules.py or tui/healths.py",
        "The verdict on a task is one health, the first that applies in the order below "
        "(most urgent first); the others still appear as reasons. A flag is shown beside the "
        "health, never instead of it. Acks and silences change who is paged, never the health.",
    )
    docs = attribute_docs(Health)
    lines += ["## Healths", ""]
    lines += table(
        ["glyph", "health", "means", "watchdog", "`status` exits"],
        [
            (
                GLYPHS[health],
                f"`{health}`",
                docs[health.name],
                health.watch,
                f"{health.nagios_level.value} {health.nagios_level.name}",
            )
            for health in Health
        ],
    )
    trait_docs = attribute_docs(HealthTraits)
    lines += ["## What each health does", ""]
    lines += ["Each column is a trait of the health (`Health.traits`):", ""]
    lines += [f"- **{name}**: {trait_docs[name]}" for name in TRAITS]
    lines += [f"- **order**: {trait_docs['order']}", ""]
    lines += table(
        ["health", *TRAITS, "order"],
        [
            (
                f"`{health}`",
                *(yes(getattr(HEALTH_TRAITS[health], name)) for name in TRAITS),
                HEALTH_TRAITS[health].order,
            )
            for health in Health
        ],
    )
    lines += _orders() + _reactions() + _flags() + _schedules() + _levels()
    return "\n".join(lines)


def _orders() -> list[str]:
    docs = attribute_docs(RowOrder)
    lines = ["## Row order", "", first_paragraph(RowOrder.__doc__), ""]
    return lines + table(["order", "means"], [(f"`{o}`", docs[o.name]) for o in RowOrder])


def _reactions() -> list[str]:
    docs = attribute_docs(WatchReaction)
    lines = ["## What the watchdog does", "", first_paragraph(WatchReaction.__doc__), ""]
    return lines + table(["reaction", "means"], [(f"`{r}`", docs[r.name]) for r in WatchReaction])


def _flags() -> list[str]:
    docs = attribute_docs(Flag)
    lines = ["## Flags", "", first_paragraph(Flag.__doc__), ""]
    return lines + table(
        ["flag", "mark", "means", "pages once"],
        [
            (
                f"`{flag}`",
                f"`{FLAG_TRAITS[flag].glyph}{FLAG_TRAITS[flag].mark}`",
                docs[flag.name],
                yes(FLAG_TRAITS[flag].pages_once),
            )
            for flag in Flag
        ],
    )


def _schedules() -> list[str]:
    docs = attribute_docs(ScheduleHealth)
    lines = ["## Schedules", "", first_paragraph(ScheduleHealth.__doc__), ""]
    return lines + table(
        ["health", "means", "pages"],
        [(f"`{s}`", docs[s.name], yes(s.pages)) for s in ScheduleHealth],
    )


def _levels() -> list[str]:
    docs = attribute_docs(NagiosLevel)
    lines = ["## Nagios levels", "", first_paragraph(NagiosLevel.__doc__), ""]
    return lines + table(
        ["exit status", "level", "means"],
        [(level.value, level.name, docs[level.name]) for level in NagiosLevel],
    )
