"""The dashboard's on-call keys: ack, unack, silence and note, each asked on its screen and
written through the on-call desk (never through the executor, which kills and resumes)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from textual.notifications import SeverityLevel
from textual.screen import Screen, ScreenResultCallbackType
from textual.worker import Worker

from zombietop.config import OnCallSettings
from zombietop.durations import format_duration
from zombietop.errors import ZombietopError
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.oncall.acks import OnCallDesk
from zombietop.tui.untrusted import escaped_markup
from zombietop.watch.failed_runs import incident_of_row

if TYPE_CHECKING:
    from zombietop.tui.screens.oncall import AckAsk, NoteAsk, SilenceAsk

_Result = TypeVar("_Result")


class OnCallApp(Protocol):
    """What the flow needs of the app that composes it (``ZombietopApp``): its state, and the
    few Textual calls the flow makes."""

    read_only: bool
    per_run: bool

    @property
    def snapshot(self) -> Snapshot: ...

    @property
    def main(self) -> Screen[Any]: ...

    @property
    def screen(self) -> Screen[object]: ...

    def show_effect(self) -> None: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
    ) -> None: ...

    def run_worker(
        self,
        work: Callable[[], Coroutine[None, None, None]],
        name: str | None = "",
        group: str = "default",
        *,
        exit_on_error: bool = True,
    ) -> Worker[None]: ...

    def push_screen(
        self,
        screen: Screen[_Result],
        callback: ScreenResultCallbackType[_Result] | None = None,
    ) -> object: ...


class OnCallFlow:
    """Ask on a screen, write through the desk, and say the outcome; the app sends the keys."""

    def __init__(self, app: OnCallApp, desk: OnCallDesk | None, settings: OnCallSettings) -> None:
        self.app = app
        self.desk = desk
        """Acks and silences go here (None: the keys say they cannot)."""
        self.settings = settings

    def _view(self, verb: str, task_id: str) -> TaskView | None:
        app = self.app
        if app.read_only or self.desk is None or self.desk.read_only:
            app.notify(f"{verb} refused: zombietop is read-only", severity="error")
            return None
        view = app.snapshot.by_id().get(task_id)
        if view is None:
            app.notify(f"{escaped_markup(task_id)} is no longer on screen", severity="warning")
        return view

    def _run(self, name: str, job: Callable[[], Coroutine[None, None, None]]) -> Worker[None]:
        # As Textual's @work would, in the group of the executor's actions: the app reports a
        # failed one the same way.
        return self.app.run_worker(job, name=name, group="action", exit_on_error=False)

    def request_ack(self, task_id: str) -> None:
        """Ask for a reason and a duration (default ``[oncall] ack_for``), then ack."""
        # The dialogs are imported when first asked for: the first frame needs none of them.
        from zombietop.tui.screens.oncall import AckScreen

        view = self._view("ack", task_id)
        if view is not None:
            app = self.app
            if not app.per_run and app.screen is app.main:
                # A job's row acks the job's open incident, as `zombietop ack JOB` does.
                view = incident_of_row(app.snapshot, view)
            app.push_screen(AckScreen(view, self.settings.ack_for), self._decided)

    def request_unack(self, task_id: str) -> None:
        """End the task's ack at once (no dialog: an unack only lets re-notify resume)."""
        view = self._view("unack", task_id)
        if view is None:
            return
        if self.app.snapshot.oncall.ack_for(task_id) is None:
            self.app.notify(
                f"{escaped_markup(task_id)} is not acked", severity="warning", timeout=5
            )
        else:
            self._run("run_unack", partial(self.run_unack, task_id))

    async def run_unack(self, task_id: str) -> None:
        assert self.desk is not None
        try:
            ended = await self.desk.unack(task_id)
        except ZombietopError as exc:
            self.app.notify(escaped_markup(str(exc)), title="refused", severity="error", timeout=15)
            return
        said = "was no longer acked" if ended is None else "unacked: re-notify resumes"
        self.app.notify(f"{escaped_markup(task_id)} {said}", title="done", timeout=10)
        self.app.show_effect()

    def request_silence(self, task_id: str) -> None:
        """Ask for the rule (this task or its step type), a reason and a duration; silence."""
        from zombietop.tui.screens.oncall import SilenceScreen

        view = self._view("silence", task_id)
        if view is not None:
            self.app.push_screen(SilenceScreen(view), self._decided)

    def request_note(self, task_id: str) -> None:
        """Ask for the note's text, then add it to the task's incident."""
        from zombietop.tui.screens.oncall import NoteScreen

        view = self._view("note", task_id)
        if view is not None:
            self.app.push_screen(NoteScreen(view), self._decided)

    def _decided(self, asked: AckAsk | SilenceAsk | NoteAsk | None) -> None:
        if asked is None:
            self.app.notify("nothing done", timeout=3)
        else:
            self._run("run_oncall", partial(self.run_oncall, asked))

    async def run_oncall(self, asked: AckAsk | SilenceAsk | NoteAsk) -> None:
        assert self.desk is not None
        try:
            said = await self.write(self.desk, asked)
        except ZombietopError as exc:
            self.app.notify(escaped_markup(str(exc)), title="refused", severity="error", timeout=15)
            return
        self.app.notify(said, title="done", timeout=10)
        self.app.show_effect()

    @staticmethod
    async def write(desk: OnCallDesk, asked: AckAsk | SilenceAsk | NoteAsk) -> str:
        """Write what was asked; return what was done, as markup."""
        from zombietop.tui.screens.oncall import AckAsk, NoteAsk

        if isinstance(asked, NoteAsk):
            noted = await desk.note(asked.task_id, asked.text)
            return f"note added to {escaped_markup(noted.task_id)}"
        if isinstance(asked, AckAsk):
            ack = await desk.ack(asked.task_id, reason=asked.reason, duration=asked.duration)
            return f"{escaped_markup(ack.task_id)} acked for {format_duration(asked.duration)}"
        made = await desk.silence(
            matcher=asked.matcher,
            pattern=asked.pattern,
            reason=asked.reason,
            duration=asked.duration,
        )
        return (
            f"silence {made.silence_id} ({made.matcher} {escaped_markup(made.pattern)}) "
            f"for {format_duration(asked.duration)}"
        )
