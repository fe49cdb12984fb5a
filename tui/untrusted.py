"""Untrusted text as the dashboard shows it: printable, and never read as markup.

Every string that comes from the store or a job (task ids, hosts, stages, counter names,
reasons, lease owners, agent names, event text, error messages) reaches a widget through
``printable_text``: control characters escaped by the engine's ``printable``, inside a
``Text``, so neither an escape sequence nor a ``[link=...]`` in a task id does anything but
read as itself.
"""

from __future__ import annotations

from rich.markup import escape
from rich.style import StyleType
from rich.text import Text

from zombietop.printable import printable


def printable_text(text: str, style: StyleType = "", *, no_wrap: bool | None = None) -> Text:
    """A ``Text`` of ``text`` with every control, bidi or line-separator character escaped."""
    return Text(printable(text), style=style, no_wrap=no_wrap)


def escaped_markup(text: str) -> str:
    """``text`` made printable and markup-escaped, for the few places Textual reads markup
    (notifications, border titles)."""
    return escape(printable(text))
