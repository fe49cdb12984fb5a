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


# Bounded text ------------------------------------------------------------------------------
# A task id of a megabyte made a page of a megabyte: the command channel failed with "Argument
# list too long" (the line travels in the environment too) until the page was dropped, and
# nobody was paged. Every page, and every error zombietop echoes, goes through ``bounded``.

PAGE_LIMIT = 1000
"""The most characters a page line carries (a pager or an SMS cuts it anyway)."""
ERROR_LIMIT = 2000
"""The most characters of an error zombietop prints or hands on."""
WORD_LIMIT = 200
"""The most characters of one word in either (a task id, a path, a stage): cut in its middle,
so the words around it, the verdict and the action, stay."""
LOG_LIMIT = 2000
"""The most characters of one line the watchdog writes to its log."""
ID_LIMIT = 4096
"""The most characters of a task id handed to a channel on its own (``$ZOMBIETOP_TASK``)."""


def _cut(text: str, limit: int) -> str:
    """``text`` cut in its middle to at most ``limit`` characters, saying how many went."""
    if len(text) <= limit:
        return text
    removed = len(text) - limit
    while True:
        marker = f"[...{removed} characters cut...]"
        keep = max(limit - len(marker), 2)
        if len(text) - keep == removed:
            break
        removed = len(text) - keep
    return text[: keep - keep // 2] + marker + text[len(text) - keep // 2 :]


def bounded(text: str, *, limit: int = PAGE_LIMIT, word: int = WORD_LIMIT) -> str:
    """Return ``printable(text)`` in at most ``limit`` characters.

    Each word (split at spaces) longer than ``word`` is cut in its middle first; a line still
    too long is then cut in its middle too, keeping its start (the task and the verdict) and
    its end (the action).
    """
    shown = printable(text)
    if len(shown) > word:
        shown = " ".join(_cut(part, word) for part in shown.split(" "))
    return _cut(shown, limit)
