"""The jobs view and the saved views, as the app switches between them: ``J``, ``v``, ``1``-``9``
and ``--view NAME``.

A view of runs sets the task table's filter, sort and columns, one row per run; a view of
jobs opens the jobs view with its own. The app composes one ``ViewFlow`` and hands it the
messages the screens post (``zombietop.tui.view_messages``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from textual.screen import Screen, ScreenResultCallbackType

from zombietop.clock import Clock
from zombietop.config import Schedule, View
from zombietop.tui.task_order import SortMode
from zombietop.tui.untrusted import escaped_markup
from zombietop.tui.views import JOBS
from zombietop.tui.widgets.header import StatusHeader

if TYPE_CHECKING:
    from zombietop.tui.screens.jobs import JobsScreen

_Result = TypeVar("_Result")


class ViewsApp(Protocol):
    """What the flow needs of the app that composes it (``ZombietopApp``): the choices it
    sets, and the few Textual calls it makes."""

    wall: bool
    read_only: bool
    refresh_interval: float
    filter_text: str
    sort_mode: SortMode
    per_run: bool
    clock: Clock

    @property
    def main(self) -> Any: ...

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...

    def _reorder(self) -> None:
        """Filter and sort again, and show the app's state on every screen."""

    def _find_in_store(self) -> None:
        """Have the source find the tasks the filter holds that a large store only counts."""

    def notify(self, message: str, *, severity: Any = "information", timeout: float) -> None: ...

    def push_screen(
        self,
        screen: Screen[_Result],
        callback: ScreenResultCallbackType[_Result] | None = None,
    ) -> object: ...

    def pop_screen(self) -> object: ...

    def call_after_refresh(self, callback: Any) -> bool: ...


class ViewFlow:
    """Which saved view is shown, and the jobs view's screen."""

    def __init__(
        self,
        app: ViewsApp,
        views: Sequence[View],
        schedules: Sequence[Schedule],
        start: View | None = None,
    ) -> None:
        self.app = app
        self.views = tuple(views)
        self.schedules = tuple(schedules)
        self.current: View | None = None
        self._start = start
        """The view ``--view`` named, shown once the main screen is ready."""

    def begin(self) -> None:
        """Show the view ``--view`` named (once, as the main screen is first ready)."""
        start, self._start = self._start, None
        if start is not None:
            self.show(start)

    def _jobs_screens(self) -> list[JobsScreen]:
        # The screens are imported when first asked for: the first frame needs none of them.
        from zombietop.tui.screens.jobs import JobsScreen

        return [screen for screen in self.app.screen_stack if isinstance(screen, JobsScreen)]

    def _close_jobs(self) -> None:
        while self._jobs_screens():
            self.app.pop_screen()

    def toggle_jobs(self) -> None:
        """``J``: open the jobs view over the task table, or go back to the table."""
        if self._jobs_screens():
            self._close_jobs()
            if self.current is not None and self.current.rows == JOBS:
                self.current = None
            return
        self._open_jobs(None)

    def _open_jobs(self, view: View | None) -> None:
        from zombietop.tui.screens.jobs import JobsScreen

        app = self.app
        app.push_screen(
            JobsScreen(
                app.main.store_label,
                app.refresh_interval,
                read_only=app.read_only,
                schedules=self.schedules,
                view=view,
            )
        )
        # The screen shows the app's state at once, then at every poll.
        app.call_after_refresh(app._reorder)

    def ask(self, number: int | None, name: str | None) -> None:
        """``1``-``9`` (``number``) or the picker's choice (``name``; ``""``: no view)."""
        if number is not None:
            if number > len(self.views):
                have = f"the config has {len(self.views)}" if self.views else "none is saved"
                self.app.notify(
                    f"no saved view {number}: {have}; add [views.NAME] to the config",
                    severity="warning",
                    timeout=5,
                )
                return
            self.show(self.views[number - 1])
            return
        from zombietop.tui.screens.view_picker import NO_VIEW

        if name == NO_VIEW or name is None:
            self.show(None)
            return
        view = next((view for view in self.views if view.name == name), None)
        if view is not None:
            self.show(view)

    def pick(self) -> None:
        """``v``: the picker; the choice is shown, Esc keeps the screen as it was."""

        def picked(name: str | None) -> None:
            if name is not None:
                self.ask(None, name)

        from zombietop.tui.screens.view_picker import ViewPicker

        current = None if self.current is None else self.current.name
        self.app.push_screen(ViewPicker(self.views, current), picked)

    def show(self, view: View | None) -> None:
        """Show ``view`` (None: the whole task table, as without a view)."""
        app = self.app
        self.current = view
        if app.wall:
            header = app.main.query_one(StatusHeader)
            header.view_label = "" if view is None else view.name
            app._reorder()
            return
        self._close_jobs()
        runs = view if view is not None and view.rows != JOBS else None
        app.filter_text = runs.filter if runs is not None else ""
        app.sort_mode = SortMode(runs.sort) if runs is not None and runs.sort else SortMode.URGENCY
        app.per_run = runs is not None
        main = app.main
        if hasattr(main, "show_view"):
            main.show_view(runs)
        app._reorder()
        app._find_in_store()
        if view is not None and view.rows == JOBS:
            self._open_jobs(view)
        if view is not None:
            app.notify(f"view {escaped_markup(view.name)}", timeout=2)
