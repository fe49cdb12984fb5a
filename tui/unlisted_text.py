"""The tasks a poll did not list, as the dashboard's table and the wall end with them.

The words are the judge's (``zombietop.judge.unlisted``); here they get a look that reads
without colour too: the tasks left unread start with ``⚠``, as the banner's warnings do.
"""

from __future__ import annotations

from rich.text import Text

from zombietop.judge.quiet import FOUND_AT_MOST, Counted
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


FIND_HINT = "A filter (/) searches them too, by task id or stage."
"""Under the quiet tasks counted, in the task table: how to find one of them."""
FOUND_MORE = (
    f"Over {FOUND_AT_MOST} of them match: the first {FOUND_AT_MOST} by id are listed; "
    "type more of the id."
)
"""Under the quiet tasks counted, in the task table, when the filter holds too many of them."""


def table_texts(counted: Counted | None) -> list[Text]:
    """What the task table shows under its rows: ``unlisted_texts``, and after the quiet tasks
    counted, that the filter finds them (or that it holds too many to list)."""
    texts = unlisted_texts(counted)
    if counted is None or not any(counted.quiet.values()):
        return texts
    said = Text(FOUND_MORE) if counted.found_more else Text(FIND_HINT, style="dim")
    texts.insert(1, said)
    return texts
