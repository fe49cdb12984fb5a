"""The confirmation for a destructive key: what will happen to which task; Cancel has focus."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from zombietop.actions import ActionKind, ActionRequest
from zombietop.durations import format_age, format_duration
from zombietop.judge.monitor import TaskView
from zombietop.judge.verdict import format_progress
from zombietop.tui.untrusted import escaped_markup, printable_text


def consequence(kind: ActionKind, view: TaskView) -> Text:
    """One sentence: what the action will do to this task, printable."""
    return printable_text(_consequence(kind, view))


def _consequence(kind: ActionKind, view: TaskView) -> str:
    """One sentence: what the action will do to this task."""
    task = view.task
    if kind is ActionKind.RESUME:
        checkpoint = f"checkpoint {task.checkpoint}" if task.checkpoint else "no checkpoint"
        return (
            f"Resume {task.task_id}: bump the lease token (the current owner can no longer renew "
            f"or commit), keep {checkpoint}, attempt {task.attempt} -> {task.attempt + 1}, "
            "then requeue or relaunch it."
        )
    if kind is ActionKind.DISCARD:
        return (
            f"Discard {task.task_id}: bump the lease token, mark it discarded and keep every "
            "artifact; tasks downstream of it stay blocked."
        )
    if task.pid is None:
        return f"Kill {task.task_id}: no PID is recorded, so there is nothing to signal."
    return (
        f"Kill {task.task_id}: SIGTERM to pid {task.pid}'s process group, then SIGKILL after "
        f"{format_duration(view.limits.kill_grace)} only if the same process is still alive."
    )


def facts(view: TaskView, now: float) -> Text:
    beat = view.heartbeat
    age = view.verdict.heartbeat_age(now)
    owner = view.lease.owner if view.lease is not None and view.lease.owner else "-"
    rows = (
        ("task", view.task_id),
        ("health", str(view.health)),
        ("stage", beat.stage if beat is not None and beat.stage else "-"),
        ("progress", format_progress(beat.progress) if beat is not None else "-"),
        ("heartbeat", f"{format_age(age)} old" if age is not None else "none yet"),
        ("owner", f"{owner} on {view.task.host or '?'}"),
        ("pid", str(view.task.pid) if view.task.pid is not None else "-"),
        ("token", str(view.token) if view.token is not None else "-"),
    )
    text = Text()
    for index, (label, value) in enumerate(rows):
        if index:
            text.append("\n")
        text.append(f"{label:>10}  ", style="dim")
        text.append_text(printable_text(value, style="bold"))
    return text


class ConfirmScreen(ModalScreen[bool]):
    """Ask before a destructive action; the request (task and token) was fixed when this opened."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Yes"),
        Binding("n,escape", "cancel", "No"),
    ]

    DEFAULT_CSS = """
    ConfirmScreen {
        align: center middle;
    }
    ConfirmScreen > Vertical {
        width: 72;
        max-width: 100%;
        height: auto;
        border: thick $error;
        background: $surface;
        padding: 0 1;
    }
    ConfirmScreen #consequence {
        margin-bottom: 1;
        text-style: bold;
    }
    ConfirmScreen Horizontal {
        height: auto;
        align: right middle;
        margin-top: 1;
    }
    ConfirmScreen Button {
        margin-left: 2;
    }
    """

    def __init__(self, request: ActionRequest, view: TaskView, now: float) -> None:
        super().__init__()
        self.request = request
        self.view = view
        self.now = now
        """When the dialog opened: the facts it states are as of then."""

    def compose(self) -> ComposeResult:
        kind = self.request.kind
        with Vertical() as box:
            box.border_title = escaped_markup(f"{kind} {self.request.task_id}?")
            yield Static(consequence(kind, self.view), id="consequence")
            yield Static(facts(self.view, self.now), id="facts")
            with Horizontal():
                yield Button("Cancel (n)", id="cancel", variant="primary")
                yield Button(f"{str(kind).capitalize()} (y)", id="confirm", variant="error")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm")

    def action_confirm(self) -> None:
        self.dismiss(True)

    def action_cancel(self) -> None:
        self.dismiss(False)
