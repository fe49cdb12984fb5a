"""The tasks a poll did not list, as the dashboard's table and the wall end with them.

The words are the judge's (``zombietop.judge.unlisted``); here they get a look that reads
without colour too: the tasks left unread start with ``⚠``, as the banner's warnings do.
"""

from __future__ import annotations

from rich.text import Text

from zombietop.judge.quiet import Counted
from zombietop.judge.unlisted import quiet_line, unread_line

UNREAD_STYLE = "bold yellow"
"""The tasks left unread may need a human: yellow, the colour of what needs attention."""


def unlisted_texts(counted: Counted | None) -> list[Text]:
    """The quiet tasks counted (dimmed: nothing to do), then the tasks left unread; nothing
    when the poll read every task."""
    if counted is None:
        return []
    texts: list[Text] = []
    quiet = quiet_line(counted)
    if quiet is not None:
        texts.append(Text(quiet, style="dim"))
    unread = unread_line(counted)
    if unread is not None:
        texts.append(Text(f"⚠ {unread}", style=UNREAD_STYLE))
    return texts
