"""The on-call dialogs: ``a`` acks a task (an optional reason, a duration), ``A`` silences it or
its step type (a required reason, a duration). Nothing is destructive; Enter in the last field
or the button sends, Escape cancels."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static

from zombietop.durations import format_duration, parse_duration
from zombietop.judge.monitor import TaskView
from zombietop.model import Matcher
from zombietop.printable import printable
from zombietop.tui.cells import ACKED, MARKS, SILENCED
from zombietop.tui.untrusted import escaped_markup, printable_text

SILENCE_DEFAULT = 3600.0
"""What the silence dialog offers: an hour; longer is a choice someone makes on purpose."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AckAsk:
    """What the ack dialog was told."""

    task_id: str
    reason: str | None
    duration: float


@dataclass(frozen=True, slots=True, kw_only=True)
class SilenceAsk:
    """What the silence dialog was told."""

    matcher: Matcher
    pattern: str
    reason: str
    duration: float


@dataclass(frozen=True, slots=True, kw_only=True)
class NoteAsk:
    """What the note dialog was told."""

    task_id: str
    text: str


class _OnCallDialog(ModalScreen[AckAsk | SilenceAsk | NoteAsk | None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    _OnCallDialog {
        align: center middle;
    }
    _OnCallDialog > Vertical {
        width: 72;
        max-width: 100%;
        height: auto;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    _OnCallDialog Label {
        margin-top: 1;
    }
    _OnCallDialog #problem {
        color: $error;
        text-style: bold;
        height: auto;
    }
    _OnCallDialog Horizontal {
        height: auto;
        align: right middle;
        margin-top: 1;
    }
    _OnCallDialog Button {
        margin-left: 2;
    }
    _OnCallDialog RadioSet {
        width: 100%;
    }
    """

    def _duration(self) -> float | None:
        text = self.query_one("#duration", Input).value.strip()
        try:
            seconds = parse_duration(text)
        except ValueError as exc:
            self._problem(str(exc))
            return None
        if seconds <= 0:
            self._problem("the duration must be longer than zero")
            return None
        return seconds

    def _problem(self, text: str) -> None:
        self.query_one("#problem", Static).update(text)

    def _send(self) -> None:
        raise NotImplementedError

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self._send()

    @on(Button.Pressed, "#send")
    def _pressed(self) -> None:
        self._send()

    @on(Button.Pressed, "#cancel")
    def _cancelled(self) -> None:
        self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class AckScreen(_OnCallDialog):
    """Ack one task: say you are on it; the watchdog stops re-paging it until the ack ends."""

    def __init__(self, view: TaskView, default: float) -> None:
        super().__init__()
        self.view = view
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"ack {escaped_markup(self.view.task_id)}"
            yield Static(
                Text.assemble(
                    (f"{MARKS[ACKED].glyph} ", MARKS[ACKED].style),
                    f"{printable(self.view.task_id)} is {self.view.health}: no re-notify until "
                    "the ack ends or the incident does; the all-clear still goes out.",
                )
            )
            yield Label("reason (optional): what you are doing about it")
            yield Input(placeholder="e.g. restarting the partner API", id="reason")
            yield Label("for how long")
            yield Input(format_duration(self.default), id="duration")
            yield Static(id="problem")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button("Ack (Enter)", id="send", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#reason", Input).focus()

    def _send(self) -> None:
        duration = self._duration()
        if duration is None:
            return
        reason = self.query_one("#reason", Input).value.strip() or None
        self.dismiss(AckAsk(task_id=self.view.task_id, reason=reason, duration=duration))


class NoteScreen(_OnCallDialog):
    """Add a note to one task's incident: for the next person, and the next re-notify."""

    def __init__(self, view: TaskView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"note on {escaped_markup(self.view.task_id)}"
            yield Static(
                f"{printable(self.view.task_id)} is {self.view.health}: the note shows in the "
                "detail view and rides in the incident's next re-notify."
            )
            yield Label("note: what you found, did or wait on")
            yield Input(placeholder="e.g. waiting on partner API", id="text")
            yield Static(id="problem")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button("Add (Enter)", id="send", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#text", Input).focus()

    def _send(self) -> None:
        text = self.query_one("#text", Input).value.strip()
        if not text:
            self._problem("a note needs some text")
            return
        self.dismiss(NoteAsk(task_id=self.view.task_id, text=text))


class SilenceScreen(_OnCallDialog):
    """Silence a task or its step type: detected and shown, never paged, until it ends."""

    def __init__(self, view: TaskView) -> None:
        super().__init__()
        self.view = view

    def compose(self) -> ComposeResult:
        task = self.view.task
        with Vertical() as box:
            box.border_title = f"silence {escaped_markup(task.task_id)}"
            yield Static(
                Text.assemble(
                    (f"{MARKS[SILENCED].glyph} ", MARKS[SILENCED].style),
                    "Silenced tasks are still detected, quarantined and shown, never paged; "
                    "if one is still bad when the silence ends, its page goes out.",
                )
            )
            with RadioSet(id="rule"):
                yield RadioButton(
                    printable_text(f"this task: {task.task_id}"), value=True, id="task"
                )
                yield RadioButton(
                    printable_text(f"every task of step type {task.step_type}"), id="step_type"
                )
            yield Label("reason (required): whoever is paged next asks why")
            yield Input(placeholder="e.g. maintenance night on the partner API", id="reason")
            yield Label("for how long")
            yield Input(format_duration(SILENCE_DEFAULT), id="duration")
            yield Static(id="problem")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button("Silence (Enter)", id="send", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#reason", Input).focus()

    def _send(self) -> None:
        reason = self.query_one("#reason", Input).value.strip()
        if not reason:
            self._problem("a silence needs a reason")
            return
        duration = self._duration()
        if duration is None:
            return
        pressed = self.query_one(RadioSet).pressed_button
        by_type = pressed is not None and pressed.id == "step_type"
        task = self.view.task
        self.dismiss(
            SilenceAsk(
                matcher=Matcher.STEP_TYPE if by_type else Matcher.TASK,
                pattern=task.step_type if by_type else task.task_id,
                reason=reason,
                duration=duration,
            )
        )
