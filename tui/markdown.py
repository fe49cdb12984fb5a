"""Untrusted text inside Markdown: shown as it is, never read as Markdown.

A task id like ``# [click](https://evil)`` or a note that starts with ``1.`` or holds
``<script>`` must not become a heading, a link, a list or HTML in the rendered handover. Every
field first goes through ``printable`` (so it is one line, with no control or bidi character),
then ``md_text`` puts a backslash before each ASCII punctuation mark (CommonMark lets any of
them be escaped, and an escaped one is always a literal), or ``md_code`` puts it in a code
span whose fence is longer than any run of backticks inside it.
"""

from __future__ import annotations

import re
import string

from zombietop.printable import printable

_PUNCTUATION = re.compile("([" + re.escape(string.punctuation) + "])")
_TICKS = re.compile("`+")


def md_text(text: str) -> str:
    """``text`` as Markdown that renders to exactly ``printable(text)``."""
    return _PUNCTUATION.sub(r"\\\1", printable(text))


def md_code(text: str) -> str:
    """``text`` in a code span (a task id reads best so), safe whatever backticks it holds."""
    shown = printable(text)
    longest = max((len(run) for run in _TICKS.findall(shown)), default=0)
    fence = "`" * (longest + 1)
    # A span that starts or ends with a backtick, or a space, needs a space inside its fence:
    # CommonMark strips one space each side.
    pad = " " if shown[:1] in ("`", " ") or shown[-1:] in ("`", " ") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"
