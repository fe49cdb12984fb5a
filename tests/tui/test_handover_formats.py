"""The handover in Markdown and in Slack's mrkdwn: hostile text in any field (a task id with
backticks, ``<!channel>``, a newline, ANSI) reads as itself and breaks neither format."""

from __future__ import annotations

import re
from datetime import UTC

import pytest

from zombietop.model import Ack
from zombietop.oncall.handover import Handover, OpenIncident
from zombietop.oncall.incident_story import Entry, Step, Story
from zombietop.printable import printable
from zombietop.tui.handover_text import MARKDOWN, SLACK, handover_text
from zombietop.tui.slack import AT, BACKTICK, slack_code, slack_text

NOW = 1_796_094_000.0

HOSTILE = (
    "plain-id",
    "eta-1 `x` ``y``",
    "```\nblock",
    "<!channel> <!here> <@U024BE7LH> <#C123|ops>",
    "@here @channel @everyone and ana@example.com",
    "<https://evil.example|click here> [x](https://y)",
    "line one\nline two\r\n- a list?",
    "\x1b[31mred\x1b[0m \x1b]0;pwned\x07 \u202eevil",
    "&amp; &lt; & < > *bold* _it_ ~strike~ # not a heading",
)


def _from_slack(shown: str) -> str:
    """What Slack shows for ``shown``: its three entities decoded, the stand-ins read back."""
    for entity, char in (("&lt;", "<"), ("&gt;", ">"), ("&amp;", "&")):
        shown = shown.replace(entity, char)
    return shown.replace(BACKTICK, "`").replace(AT, "@")


@pytest.mark.parametrize("text", HOSTILE)
def test_slack_text_is_shown_as_it_is_and_mentions_nobody(text: str) -> None:
    for shown, inner in ((slack_text(text), slack_text(text)), (slack_code(text), None)):
        if inner is None:
            assert shown.startswith("`") and shown.endswith("`") and shown.count("`") == 2
            inner = shown[1:-1]
        assert "<" not in inner and ">" not in inner and "`" not in inner
        assert re.fullmatch(r"([^&]|&(amp|lt|gt);)*", inner), inner
        assert not re.search(r"(^|[\s(])@\w", inner), inner  # no word-start @: no mention
        assert "\n" not in inner and "\x1b" not in inner
        assert _from_slack(inner) == printable(text)


def _handover(text: str) -> Handover:
    """One open incident and one acked, with ``text`` in every field a person can write."""
    story = Story(
        task_id=text,
        health="stalled",
        opened_at=NOW - 3600,
        host=text,
        entries=(
            Entry(at=NOW - 3600, step=Step.PAGED, by="watchdog", text=text),
            Entry(at=NOW - 600, step=Step.NOTE, by=text, text=text),
        ),
    )
    ack = Ack(task_id=text, by=text, reason=text, acked_at=NOW - 60, until=NOW + 3600)
    return Handover(
        now=NOW,
        since=NOW - 8 * 3600,
        open=(OpenIncident(story=story, ack=None), OpenIncident(story=story, ack=ack)),
        resolved=(),
        silences=(),
        later_silences=0,
        schedules=(),
    )


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_keeps_the_slack_handover_whole(text: str) -> None:
    shown = handover_text(_handover(text), UTC, SLACK)
    clean = handover_text(_handover("plain-id"), UTC, SLACK)
    # As many lines as with a plain id: nothing started a line, a block or a quote.
    assert len(shown.splitlines()) == len(clean.splitlines())
    assert "```" not in shown and "<" not in shown and ">" not in shown
    assert not re.search(r"(^|[\s(])@\w", shown)
    assert _from_slack(shown).count(printable(text)) >= 6


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_keeps_the_markdown_handover_whole(text: str) -> None:
    """Read by a real CommonMark parser: two headings of sections with one item each, no link,
    no HTML, no emphasis, and the text read back as it is."""
    from markdown_it import MarkdownIt

    shown = handover_text(_handover(text), UTC, MARKDOWN)
    assert len(shown.splitlines()) == len(handover_text(_handover("x"), UTC).splitlines())
    tokens = MarkdownIt("commonmark").parse(shown)
    inline = [child for t in tokens for child in t.children or []]
    assert not {"link_open", "html_inline", "html_block", "em_open", "strong_open"} & {
        child.type for child in inline
    }
    assert [t.tag for t in tokens if t.type == "heading_open"] == ["h1"] + ["h2"] * 5
    assert sum(1 for t in tokens if t.type == "bullet_list_open" and t.level == 0) == 2
    read = "".join(child.content for child in inline)
    assert read.count(printable(text)) >= 6
