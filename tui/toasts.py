"""Notifications that never sit over a dialog or the filter box.

A notification raised while a dialog is open waits until the dialog closes, and then shows for
its whole time; one already shown when a dialog opens is hidden under it (``app.tcss``) and
shows again when it closes, if its time is not over. While the filter box is open, the
notifications stand above it (``DashboardScreen``'s CSS), not over it.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.app import App, ScreenStackError
from textual.notifications import SeverityLevel
from textual.screen import ModalScreen, Screen


@dataclass(frozen=True, slots=True)
class Waiting:
    """A notification asked for while a dialog was open."""

    message: str
    title: str
    severity: SeverityLevel
    timeout: float | None
    markup: bool


class ToastsWait(App[None]):
    """An app whose notifications wait while a dialog (a modal screen) is open."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting: list[Waiting] = []
        """The notifications held until the dialog on top closes, oldest first."""

    def on_mount(self) -> None:
        self.screen_change_signal.subscribe(self, self._screen_changed)

    def dialog_open(self) -> bool:
        """True while the screen on top is a dialog."""
        try:
            return isinstance(self.screen, ModalScreen)
        except ScreenStackError:
            return False

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        if self.dialog_open():
            self.waiting.append(Waiting(message, title, severity, timeout, markup))
            return
        super().notify(message, title=title, severity=severity, timeout=timeout, markup=markup)

    def _screen_changed(self, screen: Screen[object]) -> None:
        if self.waiting and not self.dialog_open():
            waiting, self.waiting = self.waiting, []
            for one in waiting:
                super().notify(
                    one.message,
                    title=one.title,
                    severity=one.severity,
                    timeout=one.timeout,
                    markup=one.markup,
                )
