"""What the jobs view and the saved views' keys ask the app for (``zombietop.tui.view_flow``)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message


class JobsToggled(Message):
    """``J``: switch between the task table and the jobs view."""


@dataclass
class ViewAsked(Message):
    """``1``-``9`` (``number``) or the picker (``name``): show a saved view; both None: show
    everything, as without a view."""

    number: int | None = None
    name: str | None = None


class ViewPickerAsked(Message):
    """``v``: open the picker of saved views."""
