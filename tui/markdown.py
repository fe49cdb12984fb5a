"""Untrusted text inside Markdown: shown as it is, never read as Markdown.

A task id like ``# [click](https://evil)`` or a note that holds ``<script>`` must not become a
link, HTML or emphasis in the rendered handover, and a path like ``flaky-report/2026-12-01``
must still read as itself in the Markdown source, where people paste it. Every field first goes
through ``printable`` (so it is one line, with no control or bidi character), then ``md_text``
puts a backslash before only the characters that Markdown reads inside a line (CommonMark
lets any ASCII punctuation be escaped, and an escaped one is always a literal), or ``md_code``
puts it in a code span whose fence is longer than any run of backticks inside it.

Both are for text inside a line, after a bullet or a label: at the start of a line, ``#``,
``1.``, ``-`` and ``>`` would begin a heading, a list or a quote, and the handover never puts a
field there.
"""

from __future__ import annotations

import re

from zombietop.printable import printable

_READ_INLINE = re.compile(
    r"[\\`*\[\]<>&~|]"  # escapes, code, emphasis, links, HTML and entities, GFM's ~~ and tables
    r"|_(?![^\W_])|(?<![^\W_])_"  # an underscore, unless inside a word (never emphasis there)
)
_TICKS = re.compile("`+")


def md_text(text: str) -> str:
    """``text`` as Markdown that renders to exactly ``printable(text)``."""
    return _READ_INLINE.sub(lambda found: "\\" + found.group(), printable(text))


def md_code(text: str) -> str:
    """``text`` in a code span (a task id reads best so), safe whatever backticks it holds."""
    shown = printable(text)
    longest = max((len(run) for run in _TICKS.findall(shown)), default=0)
    fence = "`" * (longest + 1)
    # A span that starts or ends with a backtick, or a space, needs a space inside its fence:
    # CommonMark strips one space each side.
    pad = " " if shown[:1] in ("`", " ") or shown[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"
