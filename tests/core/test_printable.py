"""``printable``: what untrusted text turns into before it reaches a terminal."""

from __future__ import annotations

import pytest

from zombietop.printable import (
    ERROR_LIMIT,
    PAGE_LIMIT,
    WORD_LIMIT,
    bounded,
    is_printable,
    printable,
)


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("export-2031", "export-2031"),
        ("naïve 日本 ✖", "naïve 日本 ✖"),
        ("a\x1b]2;owned\x07b", "a\\x1b]2;owned\\x07b"),  # OSC: retitles the pane
        ("\x1b[2J", "\\x1b[2J"),  # CSI: wipes the screen
        ("x\x9b31mred", "x\\x9b31mred"),  # C1 CSI
        ("del\x7f", "del\\x7f"),
        ("two\nlines\ttab\r", "two\\nlines\\ttab\\r"),
        ("\x00", "\\x00"),
        ("evil\u202egnp.exe", "evil\\u202egnp.exe"),  # right-to-left override
        ("iso\u2066late\u2069", "iso\\u2066late\\u2069"),
        ("line\u2028sep", "line\\u2028sep"),
        ("back\\slash", "back\\slash"),  # left as it is: only controls are escaped
    ],
)
def test_printable(text: str, shown: str) -> None:
    assert printable(text) == shown
    assert is_printable(text) is (text == shown)
    assert is_printable(printable(text))


# ``bounded`` (issue N2 #13): every page and every echoed error fits, and keeps what matters.
MEGA_ID = "export-" + "x" * 1_000_000 + "-2031"
STALLED = f"{MEGA_ID} stalled: stage=transform p=61% heartbeat 4h12m old - resume or discard"


def test_a_megabyte_id_is_cut_in_its_middle_and_the_verdict_and_action_stay() -> None:
    shown = bounded(STALLED)
    assert len(shown) <= PAGE_LIMIT
    head, cut, tail = shown.partition(" characters cut...]")
    assert head.startswith("export-xxx") and cut
    assert tail.endswith(
        "xxx-2031 stalled: stage=transform p=61% heartbeat 4h12m old - resume or discard"
    )
    word = shown[: -len(" stalled: stage=transform p=61% heartbeat 4h12m old - resume or discard")]
    assert len(word) <= WORD_LIMIT


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        pytest.param("short line", PAGE_LIMIT, id="short-unchanged"),
        pytest.param("word " * 1000 + "- resume or discard", PAGE_LIMIT, id="many-words"),
        pytest.param("\x1b" * 5000, PAGE_LIMIT, id="escapes-count-as-shown"),
        pytest.param("a" * 250 + " b", ERROR_LIMIT, id="error"),
        pytest.param("x" * (WORD_LIMIT + 1), PAGE_LIMIT, id="one-over"),
    ],
)
def test_bounded_fits_its_limit_and_is_printable(text: str, limit: int) -> None:
    shown = bounded(text, limit=limit)
    assert len(shown) <= limit
    assert all(len(word) <= WORD_LIMIT for word in shown.split(" "))
    assert is_printable(shown)
    if len(printable(text)) <= WORD_LIMIT:
        assert shown == printable(text)


def test_a_long_line_keeps_its_start_and_its_end() -> None:
    shown = bounded("export-2031 stalled: " + "beat " * 1000 + "- resume or discard")
    assert shown.startswith("export-2031 stalled: beat")
    assert shown.endswith("beat - resume or discard")
    assert "characters cut...]" in shown
