"""The dialogs of a bulk action on the marked rows: one confirm for resume, discard and kill,
and the ack, silence and note dialogs for many tasks. Each says how many tasks, of which
healths, names the first few and counts the rest, and says what will not be done and why."""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet, Static

from zombietop.act.bulk import BulkPlan
from zombietop.actions import ActionKind
from zombietop.durations import format_duration
from zombietop.model import Matcher
from zombietop.tui.cells import ACKED, MARKS, SILENCED
from zombietop.tui.healths import health_label
from zombietop.tui.screens.oncall import (
    SILENCE_DEFAULT,
    AckAsk,
    AckScreen,
    NoteAsk,
    NoteScreen,
    SilenceAsk,
    SilenceScreen,
)
from zombietop.tui.untrusted import printable_text

DONE_WORDS = {
    ActionKind.RESUME: "resumed",
    ActionKind.DISCARD: "discarded",
    ActionKind.KILL: "killed",
}

WHAT_EACH = {
    ActionKind.RESUME: "Each task asked: bump its lease token (its owner can no longer renew or "
    "commit), keep its checkpoint, count one more attempt, then requeue or relaunch it.",
    ActionKind.DISCARD: "Each task asked: bump its lease token, mark it discarded and keep "
    "every artifact; tasks downstream of it stay blocked.",
    ActionKind.KILL: "Each task asked: SIGTERM to its process group, then SIGKILL after its "
    "kill grace only if the same process is still alive.",
}


def tasks_word(count: int) -> str:
    return f"{count} task{'s' if count != 1 else ''}"


def plan_text(plan: BulkPlan) -> Text:
    """How many marked tasks, of which healths (``30 tasks: 28 ✗ failed, 2 ✖ dead``), then the
    first ids and how many more."""
    text = Text(f"{tasks_word(len(plan.views))}: ", style="bold")
    for index, (health, count) in enumerate(plan.healths()):
        if index:
            text.append(", ")
        text.append(f"{count} ")
        text.append_text(health_label(health))
    ids, more = plan.shown_ids()
    text.append("\n")
    text.append_text(printable_text(", ".join(ids), style="bold"))
    if more:
        text.append(f" and {more} more")
    return text


def skipped_text(plan: BulkPlan, verb: str) -> Text:
    """What will not be done and why, one task a line (empty when all will be asked)."""
    if not plan.skipped:
        return Text()
    text = Text(f"{tasks_word(len(plan.skipped))} will not be {verb}:", style="bold")
    for one in plan.skipped:
        text.append("\n· ")
        text.append_text(printable_text(one.why))
    return text


class BulkConfirmScreen(ModalScreen[bool]):
    """Ask once before a resume, discard or kill of every marked task; the tasks and their
    tokens were fixed when this opened. Cancel has focus; the buttons stay in view however many
    tasks are skipped (that list scrolls)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Yes"),
        Binding("n,escape", "cancel", "No"),
    ]

    DEFAULT_CSS = """
    /* Opaque: the table behind, thousands of marked rows, is not drawn again dimmed (that
       drawing was most of the first frame in bench/bulk_marks.py); the dialog names them. */
    BulkConfirmScreen {
        align: center middle;
        background: $background;
    }
    BulkConfirmScreen > Vertical {
        width: 76;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $error;
        background: $surface;
        padding: 0 1;
    }
    BulkConfirmScreen #what {
        margin-top: 1;
    }
    BulkConfirmScreen #skipped {
        height: auto;
        max-height: 6;
        margin-top: 1;
    }
    BulkConfirmScreen Horizontal {
        height: auto;
        align: right middle;
        margin-top: 1;
    }
    BulkConfirmScreen Button {
        margin-left: 2;
    }
    """

    def __init__(self, plan: BulkPlan, kind: ActionKind) -> None:
        super().__init__()
        self.plan = plan
        self.kind = kind

    def compose(self) -> ComposeResult:
        plan, kind = self.plan, self.kind
        asked = len(plan.asked)
        with Vertical() as box:
            box.border_title = f"{kind} {tasks_word(len(plan.views))}?"
            yield Static(plan_text(plan), id="summary")
            yield Static(
                f"{WHAT_EACH[kind]} {asked} of them, one after another, each with the lease "
                "token on screen now.",
                id="what",
            )
            if plan.skipped:
                with VerticalScroll(id="skipped"):
                    yield Static(skipped_text(plan, DONE_WORDS[kind]))
            with Horizontal():
                yield Button("Cancel (n)", id="cancel", variant="primary")
                yield Button(
                    f"{str(kind).capitalize()} {asked} (y)",
                    id="confirm",
                    variant="error",
                    disabled=not asked,
                )

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm")

    def action_confirm(self) -> None:
        self.dismiss(bool(self.plan.asked))

    def action_cancel(self) -> None:
        self.dismiss(False)


BULK_DIALOG_CSS = """
    {name} Label {{
        margin-top: 0;
    }}
    {name} #summary {{
        margin-bottom: 1;
    }}
"""
"""The bulk dialogs hold more lines than one task's: their labels sit right on their inputs,
so that the buttons stay on an 80x24 screen."""


class BulkAckScreen(AckScreen):
    """Ack every marked task (a job's row: its open incident), with one reason and duration."""

    DEFAULT_CSS = BULK_DIALOG_CSS.format(name="BulkAckScreen")

    def __init__(self, plan: BulkPlan, default: float) -> None:
        super().__init__(plan.asked[0], default)
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"ack {tasks_word(len(self.plan.asked))}"
            yield Static(plan_text(self.plan), id="summary")
            yield Static(
                Text.assemble(
                    (f"{MARKS[ACKED].glyph} ", MARKS[ACKED].style),
                    "No re-notify for any of them until its ack ends or its incident does.",
                )
            )
            yield Label("reason (optional): what you are doing about them")
            yield Input(placeholder="e.g. the warehouse is down, on it", id="reason")
            yield Label("for how long")
            yield Input(format_duration(self.default), id="duration")
            yield Static(id="problem")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button(f"Ack {len(self.plan.asked)} (Enter)", id="send", variant="primary")


class BulkNoteScreen(NoteScreen):
    """Add the same note to every marked task's incident."""

    DEFAULT_CSS = BULK_DIALOG_CSS.format(name="BulkNoteScreen")

    def __init__(self, plan: BulkPlan) -> None:
        super().__init__(plan.asked[0])
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical() as box:
            box.border_title = f"note on {tasks_word(len(self.plan.asked))}"
            yield Static(plan_text(self.plan), id="summary")
            yield Label("note: what you found, did or wait on (the same for each)")
            yield Input(placeholder="e.g. waiting on the warehouse", id="text")
            yield Static(id="problem")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button(f"Add {len(self.plan.asked)} (Enter)", id="send", variant="primary")


class BulkSilenceScreen(SilenceScreen):
    """Silence every marked task, or every task of their step types."""

    DEFAULT_CSS = BULK_DIALOG_CSS.format(name="BulkSilenceScreen")

    def __init__(self, plan: BulkPlan) -> None:
        super().__init__(plan.asked[0])
        self.plan = plan

    def step_types(self) -> list[str]:
        """The marked tasks' step types, each once, in the order of the tasks."""
        return list(dict.fromkeys(view.task.step_type for view in self.plan.asked))

    def compose(self) -> ComposeResult:
        count = len(self.plan.asked)
        types = self.step_types()
        with Vertical() as box:
            box.border_title = f"silence {tasks_word(count)}"
            yield Static(plan_text(self.plan), id="summary")
            with RadioSet(id="rule"):
                yield RadioButton(f"these {tasks_word(count)}, one silence each", value=True)
                yield RadioButton(
                    printable_text(
                        f"every task of step type{'s' if len(types) > 1 else ''} "
                        + ", ".join(types)
                    ),
                    id="step_type",
                )
            yield Static(
                Text.assemble(
                    (f"{MARKS[SILENCED].glyph} ", MARKS[SILENCED].style),
                    "Still detected and shown, never paged, until the silence ends.",
                )
            )
            yield Label("reason (required): whoever is paged next asks why")
            yield Input(placeholder="e.g. maintenance night on the warehouse", id="reason")
            yield Label("for how long")
            yield Input(format_duration(SILENCE_DEFAULT), id="duration")
            yield Static(id="problem")
            with Horizontal():
                yield Button("Cancel (Esc)", id="cancel")
                yield Button("Silence (Enter)", id="send", variant="warning")


def each_ask(
    plan: BulkPlan, asked: AckAsk | SilenceAsk | NoteAsk
) -> list[AckAsk | SilenceAsk | NoteAsk]:
    """What a bulk dialog was told, once for each task it names (a silence by step type: once
    for each step type)."""
    if isinstance(asked, SilenceAsk):
        if asked.matcher is Matcher.STEP_TYPE:
            types = dict.fromkeys(view.task.step_type for view in plan.asked)
            return [replace(asked, pattern=step_type) for step_type in types]
        return [replace(asked, pattern=view.task_id) for view in plan.asked]
    return [replace(asked, task_id=view.task_id) for view in plan.asked]
