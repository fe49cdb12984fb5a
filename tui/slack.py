"""Untrusted text inside Slack's mrkdwn: shown as it is, never read as a mention or a link.

Slack has no backslash escapes. What it documents is that ``&``, ``<`` and ``>`` are written
``&amp;``, ``&lt;`` and ``&gt;``: with them escaped, ``<!channel>``, ``<@U123>`` and
``<https://evil|click>`` are plain text, neither a mention nor a link. Two more things are
neutralised, since either could reach past the field:

- A backtick is written as U+02CB (a modifier letter that looks the same): a run of three
  would open a code block over the lines that follow, and mrkdwn cannot escape one.
- An ``@`` that starts a word (``@here``, ``@channel``, ``@ana``) is written as U+FF20 (the
  full-width at sign): pasted into Slack's message box, or sent with ``link_names``, the plain
  word would notify people. An address (``ana@example.com``) keeps its ``@``.

``*``, ``_`` and ``~`` are left as they are: mrkdwn reads them only around words and within one
line, which is all a field is (``printable`` makes it one line first).
"""

from __future__ import annotations

import re

from zombietop.printable import printable

BACKTICK = "\u02cb"
"""What a backtick is written as: the modifier letter grave accent, which looks the same."""
AT = "\uff20"
"""What an ``@`` that starts a word is written as: the full-width at sign."""
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "`": BACKTICK}
_SPECIAL = re.compile(r"[&<>`]|(?<![\w.+-])@(?=\w)")


def _neutral(found: re.Match[str]) -> str:
    return _ENTITIES.get(found.group(), AT)


def slack_text(text: str) -> str:
    """``text`` as mrkdwn that Slack shows as ``printable(text)``: no mention, link or block."""
    return _SPECIAL.sub(_neutral, printable(text))


def slack_code(text: str) -> str:
    """``text`` in a code span (a task id reads best so), its backticks written ``BACKTICK``."""
    return f"`{slack_text(text)}`"
