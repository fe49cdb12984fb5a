"""``zombietop incident TASK`` and ``zombietop handover`` through the real command, on a store
that real ``watch --once`` passes paged; and untrusted text kept literal in the Markdown."""

from __future__ import annotations

import json
from datetime import UTC, timedelta, timezone
from pathlib import Path

import pytest

from tests.tui.test_oncall_cli import ME, RENOTIFY, Zombietop, age_the_pages, stalled_store
from zombietop.printable import printable
from zombietop.tui.handover_text import when
from zombietop.tui.markdown import md_code, md_text
from zombietop.tui.slack import BACKTICK

WEIRD = "eta-1 `x` <b>"


def test_incident_tells_the_whole_story_and_handover_lists_it(tmp_path: Path) -> None:
    stalled_store(tmp_path / "z.db", WEIRD, "calm-2")
    zt = Zombietop(tmp_path, f'[watch]\nrenotify = "{RENOTIFY:g}s"\n')
    assert len(zt.watch()) == 2
    assert zt("note", WEIRD, "1. called the partner\x1b[2J").returncode == 0
    assert zt("ack", "calm-2", "--for", "2h", "--reason", "on it").returncode == 0
    age_the_pages(zt.db, RENOTIFY)
    (again,) = zt.watch()
    assert again.startswith(WEIRD)

    story = zt("incident", WEIRD)
    assert story.returncode == 0, story.stderr
    head, *lines = story.stdout.splitlines()
    assert head.startswith(f"{WEIRD}: stalled, opened ") and head.endswith("; open")
    steps = [line.split("  ")[2] for line in lines]
    assert steps == ["paged", "note", "renotified"], lines
    assert f"by {ME}: 1. called the partner\\x1b[2J" in lines[1]

    as_json = json.loads(zt("incident", WEIRD, "--json").stdout)
    assert as_json["task_id"] == WEIRD and as_json["closed_at"] is None
    assert [e["step"] for e in as_json["entries"]] == steps
    older = zt("incident", WEIRD, "--back", "1")
    assert older.returncode == 2 and "has had 1 incident: --back goes up to 0" in older.stderr
    never = zt("incident", "no-such-task")
    assert never.returncode == 2 and "no-such-task has had no incident" in never.stderr

    shift = zt("handover", "--since", "1h")
    assert shift.returncode == 0, shift.stderr
    text = shift.stdout
    assert "## Open, nobody on it (1)\n\n- ``eta-1 `x` <b>``: stalled since " in text
    assert "- `calm-2`: stalled since " in text and f"; acked by {ME} until " in text
    assert "  - note by " in text and ": 1. called the partner\\\\x1b\\[2J\n" in text
    slack = zt("handover", "--since", "1h", "--format", "slack")
    assert slack.returncode == 0, slack.stderr
    weird = f"`eta-1 {BACKTICK}x{BACKTICK} &lt;b&gt;`"
    assert f"*Open, nobody on it (1)*\n\n• {weird}: stalled since " in slack.stdout
    assert ": 1. called the partner\\x1b[2J\n" in slack.stdout
    shown = json.loads(zt("handover", "--format", "json").stdout)
    assert [o["task_id"] for o in shown["open_unacked"]] == [WEIRD]
    assert [o["ack"]["reason"] for o in shown["open_acked"]] == ["on it"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# [click](https://x)", r"# \[click\](https://x)"),
        ("1. one", "1. one"),
        ("<script>*a*_b_</script>", r"\<script\>\*a\*\_b\_\</script\>"),
        ("back\\slash\nnew line", r"back\\slash\\nnew line"),
        # Only what Markdown reads: a path, a stage and a time read as themselves.
        ("flaky-report/2026-12-01.csv", "flaky-report/2026-12-01.csv"),
        ("stage_overrun p=61% (budget 15m); a+b!", "stage_overrun p=61% (budget 15m); a+b!"),
        ("__init__ _x_ ~~y~~ a|b &amp;", r"\_\_init\_\_ \_x\_ \~\~y\~\~ a\|b \&amp;"),
    ],
)
def test_md_text_escapes_what_markdown_would_read(text: str, expected: str) -> None:
    assert md_text(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("export-2031", "`export-2031`"),
        ("a`b", "``a`b``"),
        ("`x``", "``` `x`` ```"),
        ("tab\there", "`tab\\there`"),
    ],
)
def test_md_code_fences_longer_than_any_backticks_inside(text: str, expected: str) -> None:
    assert md_code(text) == expected


def test_times_are_in_utc_with_the_readers_zone_and_how_long_ago() -> None:
    at, now = 1_796_094_000.0, 1_796_094_000.0 + 7800  # 03:00 UTC, read at 05:10
    assert when(at, now, UTC) == "2026-12-01 03:00 UTC (2h10m ago)"
    cet = timezone(timedelta(hours=1), "CET")
    assert when(at, now, cet) == "2026-12-01 03:00 UTC, 04:00 CET (2h10m ago)"
    assert when(now + 90, now, UTC, seconds=True) == "2026-12-01 05:11:30 UTC (in 1m30s)"


HOSTILE_TEXTS = (
    "# [click](https://x)",
    "1. one",
    "<script>alert(1)</script> *a* _b_ ~~c~~",
    "`a` ``b`` ` c `",
    "back\\slash \\* [x]: https://y",
    "| a | b |\n---",
    "&amp; &#42; \x1b[2J\u202eevil",
)


@pytest.mark.parametrize("text", HOSTILE_TEXTS)
def test_a_markdown_reader_shows_hostile_text_as_it_is(text: str) -> None:
    """Rendered by a real CommonMark parser (markdown-it, which Rich brings), escaped text and
    code spans are one paragraph of plain text: no link, no HTML, no heading, no emphasis."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    for shown, inline in ((md_text(text), "text"), (md_code(text), "code_inline")):
        tokens = parser.parse(f"- item {shown} end")
        kinds = [t.type for t in tokens]
        assert kinds == [
            "bullet_list_open",
            "list_item_open",
            "paragraph_open",
            "inline",
            "paragraph_close",
            "list_item_close",
            "bullet_list_close",
        ], (shown, kinds)
        children = tokens[3].children or []
        types = {c.type for c in children} if inline == "text" else [c.type for c in children]
        assert types == ({"text"} if inline == "text" else ["text", inline, "text"]), shown
        assert "".join(c.content for c in children) == f"item {printable(text)} end"
