"""``printable``: what untrusted text turns into before it reaches a terminal."""

from __future__ import annotations

import pytest

from zombietop.printable import is_printable, printable


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
