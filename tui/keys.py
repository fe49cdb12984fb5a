"""Every dashboard key in one table: the footer, the command palette and the help screen read it;
and the task keys' one read-only check, shared by the dashboard and the detail screen."""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding
from textual.screen import Screen

from zombietop.actions import ActionKind
from zombietop.tui.messages import TaskAction, TaskAsked


@dataclass(frozen=True, slots=True)
class Key:
    key: str
    action: str
    label: str
    """Short, for the footer."""
    description: str
    """One sentence, for the palette and the help screen."""
    mutates: ActionKind | None = None
    """The action this key asks the executor for; such keys vanish in read-only mode."""
    show: bool = True
    writes: bool = False
    """Writes the store without the executor (an ack, a silence): vanishes in read-only too."""

    @property
    def read_only_hides(self) -> bool:
        return self.mutates is not None or self.writes


KEYS: tuple[Key, ...] = (
    # In the order the footer shows them: what on-call needs first (DESIGN.md).
    Key("enter", "detail", "Detail", "Show everything about the selected task"),
    Key(
        "a",
        "ack",
        "Ack",
        "Ack the selected task: say you are on it; no re-notify until it ends",
        writes=True,
    ),
    Key(
        "r",
        "resume",
        "Resume",
        "Resume the selected task: new lease token, keep checkpoint, requeue",
        ActionKind.RESUME,
    ),
    Key(
        "d",
        "discard",
        "Discard",
        "Discard the selected task: new token, mark discarded, keep artifacts",
        ActionKind.DISCARD,
    ),
    Key(
        "K",
        "kill",
        "Kill",
        "Kill the selected task gracefully: SIGTERM, SIGKILL after the grace",
        ActionKind.KILL,
    ),
    Key(
        "u",
        "unack",
        "Unack",
        "Unack the selected task: its incident is re-notified as before the ack",
        show=False,
        writes=True,
    ),
    Key(
        "A",
        "silence",
        "Silence",
        "Silence the selected task or its step type: shown, never paged",
        show=False,
        writes=True,
    ),
    Key("question_mark", "help", "Help", "Show the keys and what each glyph means"),
    Key("slash", "filter", "Filter", "Filter rows by task id, stage or health"),
    Key(
        "s",
        "cycle_sort",
        "Sort",
        "Cycle the sort: urgency, oldest heartbeat, least progress, task id",
    ),
    Key(
        "g",
        "group_rows",
        "Runs",
        "One row per job (its most urgent run), or one row per run",
        show=False,
    ),
    Key(
        "J",
        "jobs_view",
        "Jobs",
        "Switch to the jobs view, one row per job, and back (Enter there: its history)",
        show=False,
    ),
    Key(
        "v", "pick_view", "Views", "Pick a saved view: a views.NAME table of the config", show=False
    ),
    Key("p", "toggle_pause", "Pause", "Pause or resume refreshing"),
    Key("e", "toggle_events", "Events", "Show or hide the events pane", show=False),
    Key(
        "w",
        "wall",
        "Wall",
        "Switch to the wall view: large counts and the worst offenders (w or Esc: back)",
        show=False,
    ),
    Key(
        "W",
        "workers",
        "Workers",
        "List what the tasks run on: zombietop's agents and the engines' workers",
        show=False,
    ),
    Key("q", "quit", "Quit", "Quit zombietop (ctrl+c too)"),
)
MOVE_KEYS: tuple[Key, ...] = (
    Key("j,down", "cursor_down", "Down", "Move down one row", show=False),
    Key("k,up", "cursor_up", "Up", "Move up one row", show=False),
    Key("pagedown", "page_down", "Page down", "Move down one screen", show=False),
    Key("pageup", "page_up", "Page up", "Move up one screen", show=False),
    Key("home", "first", "First", "Go to the first row: the most urgent task", show=False),
    Key("end", "last", "Last", "Go to the last row", show=False),
)
"""The task table's movement keys: k9s' and vim's ``j``/``k``, and the arrows."""
DETAIL_KEYS: tuple[Key, ...] = (
    Key("o", "toggle_output", "Output", "Show or hide the task's last output (scrollable)"),
    Key("n", "note", "Note", "Add a note to the task's incident, with who and when", writes=True),
    Key("R", "runbook", "Runbook", "Open the task's runbook, or show its link to copy"),
)
"""Keys of the detail view beyond the actions and Escape; the help screen lists them too."""
MARK_KEYS: tuple[Key, ...] = (
    Key(
        "space",
        "toggle_mark",
        "Mark",
        "Mark or unmark the selected task; a, A, n, r, d and K then act on every marked task",
        show=False,
    ),
    Key("asterisk", "mark_shown", "Mark all", "Mark every task the filter shows", show=False),
    Key(
        "escape",
        "clear_marks",
        "Clear marks",
        "Clear the marks (with none, clear the filter)",
        show=False,
    ),
    Key(
        "n",
        "note",
        "Note",
        "Add a note to the selected task's incident, or to each marked task's",
        show=False,
        writes=True,
    ),
)
"""The task table's marks, and the note key beside the other on-call keys."""
OUTPUT_KEYS: tuple[Key, ...] = (
    Key("slash", "search", "Search", "Search the output: matches are shown reversed, and counted"),
    Key("n", "next_match", "Next", "Go to the next match (without a search: add a note)"),
    Key("N", "previous_match", "Previous", "Go to the previous match"),
    Key("G", "end", "End", "Go to the end of the output: the latest lines"),
    Key("g", "start", "Start", "Go to the start of the output"),
    Key("c", "copy", "Copy", "Copy the last lines ([monitor] copy_lines) through OSC 52"),
)
"""Keys of the detail view's output pane (``o``), while it has the focus."""
MUTATING_ACTIONS = frozenset(key.action for key in KEYS + MARK_KEYS if key.read_only_hides)
QUIT_KEYS = "ctrl+c"
"""Quits from any screen, as in htop and k9s (``q`` quits from the table and the wall)."""

_SHOWN_AS = {
    "slash": "/",
    "asterisk": "*",
    "space": "Space",
    "question_mark": "?",
    "enter": "Enter",
    "escape": "Esc",
    "down": "↓",
    "up": "↑",
    "pagedown": "PgDn",
    "pageup": "PgUp",
    "home": "Home",
    "end": "End",
}


def display_key(key: str) -> str:
    """How a key reads on screen: ``j,down`` reads ``j ↓``."""
    return " ".join(_SHOWN_AS.get(one, one) for one in key.split(","))


def keys_for(read_only: bool) -> tuple[Key, ...]:
    """The keys that exist in this mode: no action keys when read-only."""
    return tuple(key for key in KEYS if not (read_only and key.read_only_hides))


def bindings(keys: tuple[Key, ...] = KEYS) -> list[Binding]:
    return [Binding(key.key, key.action, key.label, show=key.show) for key in keys]


def digit_bindings() -> list[Binding]:
    """``1``-``9``: switch to the first nine saved views."""
    return [Binding(str(n), f"switch_view({n})", f"View {n}", show=False) for n in range(1, 10)]


class TaskKeys(Screen[None]):
    """A screen whose keys act on one task: each asks the app by message; none when read-only."""

    def __init__(self, *, read_only: bool) -> None:
        super().__init__()
        self.read_only = read_only

    @property
    def key_task_id(self) -> str | None:
        """The task the keys act on (None: no task selected)."""
        raise NotImplementedError

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Hidden from the footer and never run: read-only means no action keys at all.
        return not (self.read_only and action in MUTATING_ACTIONS)

    def _ask(self, action: TaskAction) -> None:
        task_id = self.key_task_id
        if task_id is None:
            self.notify("no task selected", severity="warning")
        else:
            self.post_message(TaskAsked(action, task_id))

    def action_resume(self) -> None:
        self._ask(TaskAction.RESUME)

    def action_discard(self) -> None:
        self._ask(TaskAction.DISCARD)

    def action_kill(self) -> None:
        self._ask(TaskAction.KILL)

    def action_ack(self) -> None:
        self._ask(TaskAction.ACK)

    def action_unack(self) -> None:
        self._ask(TaskAction.UNACK)

    def action_silence(self) -> None:
        self._ask(TaskAction.SILENCE)

    def action_note(self) -> None:
        self._ask(TaskAction.NOTE)
