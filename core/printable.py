"""Untrusted text, made safe to print: the one function every text interface shows it through.

Task ids, hosts, stages, counter names, reasons, agent names, event text and a job's output
come from whoever can write the store or run a job. Printed raw, an ESC or C1 byte is a terminal
command (an OSC retitles the pane, ``ESC [2J`` wipes the screen) and a bidi override reorders
what the operator reads. ``printable`` shows each such character escaped instead, as Python
would spell it (``\\x1b``, ``\\n``, ``\\u202e``), so the text still says what it held. JSON
output keeps the exact text: its encoder escapes control characters itself.
"""

from __future__ import annotations

import re

UNSAFE = re.compile(
    "["
    "\x00-\x1f\x7f-\x9f"  # C0 controls (tab and newline too: every field is one line), DEL, C1
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # bidi marks, embeddings, overrides, isolates
    "\u2028\u2029"  # line and paragraph separators
    "]"
)


SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    if char in SHORT:
        return SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """Return ``text`` with every control, bidi or line-separator character shown escaped."""
    return UNSAFE.sub(_escaped, text)


def is_printable(text: str) -> bool:
    """True when ``printable(text)`` would change nothing."""
    return UNSAFE.search(text) is None
