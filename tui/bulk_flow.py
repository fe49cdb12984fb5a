"""The dashboard's marks and what the action keys do with them.

``space`` marks the row under the cursor, ``*`` every row the filter shows, ``esc`` clears.
The marks are task ids, so they follow their tasks through a re-sort and a poll; a mark on a
task that leaves the snapshot goes with it, and a notification says how many went. While
there are marks, ``a A n r d K`` on the table act on every marked task: one dialog (the plan
of ``zombietop.act.bulk``), then each task on its own, through the executor (resume, discard,
kill, each with the token the operator saw) or the on-call desk (ack, silence, note), and one
notification with the counts.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol

from textual.notifications import SeverityLevel
from textual.worker import Worker

from zombietop.act.bulk import BulkPlan, plan_action, plan_all, tally
from zombietop.actions import ActionExecutor, ActionKind, ActionOutcome, ActionRequest
from zombietop.errors import ZombietopError
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.printable import printable
from zombietop.tui.messages import MarkAction, TaskAction
from zombietop.tui.oncall_flow import OnCallApp, OnCallFlow
from zombietop.tui.screen_state import Rows
from zombietop.watch.failed_runs import incident_of_row

if TYPE_CHECKING:
    from zombietop.tui.screens.oncall import AckAsk, NoteAsk, SilenceAsk

    OnCallAsk = AckAsk | SilenceAsk | NoteAsk


class BulkApp(OnCallApp, Protocol):
    """What the flow needs of the app that composes it (``ZombietopApp``), beyond what the
    on-call flow needs."""

    rows: Rows
    executor: ActionExecutor | None
    actor: str
    oncall_flow: OnCallFlow

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def remember_outcome(self, outcome: ActionOutcome) -> str: ...

    def show_marks(self) -> None: ...


ACTION_KINDS = {
    TaskAction.RESUME: ActionKind.RESUME,
    TaskAction.DISCARD: ActionKind.DISCARD,
    TaskAction.KILL: ActionKind.KILL,
}
ONCALL_ACTIONS = frozenset({TaskAction.ACK, TaskAction.SILENCE, TaskAction.NOTE})
DONE_WORD = {TaskAction.ACK: "acked", TaskAction.SILENCE: "silenced", TaskAction.NOTE: "noted"}


def incidents_of(snapshot: Snapshot, views: Sequence[TaskView]) -> list[TaskView]:
    """Each job row's open incident (``incident_of_row``), each task once."""
    found = (incident_of_row(snapshot, view) for view in views)
    return list({view.task_id: view for view in found}.values())


class BulkFlow:
    """The marks, and the bulk path of the action keys; the app composes it."""

    def __init__(self, app: BulkApp) -> None:
        self.app = app
        self.marked: frozenset[str] = frozenset()
        """The marked tasks' ids."""

    # Marks -----------------------------------------------------------------------------------

    def change(self, action: MarkAction, task_id: str | None = None) -> None:
        """Mark or unmark one task, mark every row shown, or clear the marks."""
        if action is MarkAction.TOGGLE and task_id is not None:
            self.marked ^= {task_id}
        elif action is MarkAction.SHOWN:
            self.marked |= {view.task_id for view in self.app.rows.views}
        elif action is MarkAction.CLEAR:
            self.marked = frozenset()

    def follow(self, snapshot: Snapshot) -> None:
        """Drop the marks of tasks this snapshot no longer holds, and say how many went."""
        if not self.marked or snapshot.glance_of is not None or snapshot.taken_at is None:
            return  # a first glance holds only some of the tasks
        present = {view.task_id for view in snapshot.tasks}
        kept = self.marked & present
        gone = len(self.marked) - len(kept)
        if gone:
            self.marked = kept
            self.app.notify(
                f"{gone} marked task{'s' if gone != 1 else ''} left the dashboard (finished "
                f"long ago or gone from the store); {len(kept)} marked",
                severity="warning",
                timeout=8,
            )

    def marked_views(self) -> list[TaskView]:
        """The marked tasks as the snapshot has them: those shown in the table's order, then
        the ones the filter hides, by id."""
        views = [view for view in self.app.rows.views if view.task_id in self.marked]
        hidden = self.marked - {view.task_id for view in views}
        if hidden:
            by_id = self.app.snapshot.by_id()
            views += [by_id[task_id] for task_id in sorted(hidden) if task_id in by_id]
        return views

    # The action keys -------------------------------------------------------------------------

    def takes(self, action: TaskAction) -> bool:
        """True when ``action`` acts on the marks: there are some, and the key was pressed on
        the table (a detail screen's keys act on its own task)."""
        app = self.app
        wanted = action in ACTION_KINDS or action in ONCALL_ACTIONS
        return wanted and bool(self.marked) and app.screen is app.main

    def request(self, action: TaskAction) -> None:
        """Open the one dialog of a bulk ``action``; act when it is confirmed."""
        # The dialogs are imported when first asked for: the first frame needs none of them.
        from zombietop.tui.screens.bulk import (
            BulkAckScreen,
            BulkConfirmScreen,
            BulkNoteScreen,
            BulkSilenceScreen,
        )

        app = self.app
        kind = ACTION_KINDS.get(action)
        desk = app.oncall_flow.desk
        if (
            app.read_only
            or (kind is not None and app.executor is None)
            or (kind is None and (desk is None or desk.read_only))
        ):
            app.notify(f"{action} refused: zombietop is read-only", severity="error")
            return
        views = self.marked_views()
        if not views:
            return
        if kind is not None:
            plan = plan_action(kind, views, app.snapshot.origins)
            app.push_screen(BulkConfirmScreen(plan, kind), partial(self._confirmed, plan, kind))
            return
        if action is TaskAction.ACK:
            if not app.per_run:
                # A job's row acks the job's open incident, as one row's ack does.
                views = incidents_of(app.snapshot, views)
            plan = plan_all("ack", views)
            screen: BulkAckScreen | BulkSilenceScreen | BulkNoteScreen = BulkAckScreen(
                plan, app.oncall_flow.settings.ack_for
            )
        elif action is TaskAction.SILENCE:
            plan = plan_all("silence", views)
            screen = BulkSilenceScreen(plan)
        else:
            plan = plan_all("note", views)
            screen = BulkNoteScreen(plan)
        app.push_screen(screen, partial(self._oncall_decided, plan, action))

    def _confirmed(self, plan: BulkPlan, kind: ActionKind, confirmed: bool | None) -> None:
        from zombietop.tui.screens.bulk import DONE_WORDS

        app = self.app
        if not confirmed:
            said = "cancelled" if plan.asked else f"none of them can be {DONE_WORDS[kind]} here"
            app.notify(f"{kind} of {len(plan.views)} marked tasks: {said}", timeout=5)
            return
        requests = plan.requests(kind, app.actor)
        self._clear()
        self._work("bulk_actions", partial(self.run_actions, plan, requests))

    async def run_actions(self, plan: BulkPlan, requests: Sequence[ActionRequest]) -> None:
        """Ask the executor for each request in turn (a kill: each graceful kill as one key's
        would be), then say the counts once."""
        app = self.app
        assert app.executor is not None
        words: list[str] = []
        refused: str | None = None
        for request in requests:
            outcome = await app.executor.run(request)
            words.append(app.remember_outcome(outcome))
            if not outcome.ok and refused is None:
                refused = f"{request.task_id}: {outcome.message}"
        self._say(tally(plan.verb, words, len(plan.skipped)), refused)

    def _oncall_decided(self, plan: BulkPlan, action: TaskAction, asked: OnCallAsk | None) -> None:
        app = self.app
        if asked is None:
            app.notify("nothing done", timeout=3)
            return
        self._clear()
        self._work("bulk_oncall", partial(self.run_oncall, plan, action, asked))

    async def run_oncall(self, plan: BulkPlan, action: TaskAction, asked: OnCallAsk) -> None:
        """Write what the dialog was told for each task (a silence by step type: for each
        step type) through the desk, then say the counts once."""
        from zombietop.tui.screens.bulk import each_ask

        desk = self.app.oncall_flow.desk
        assert desk is not None
        words: list[str] = []
        refused: str | None = None
        for one in each_ask(plan, asked):
            try:
                await OnCallFlow.write(desk, one)
            except ZombietopError as exc:
                words.append("refused")
                refused = refused or str(exc)
            else:
                words.append(DONE_WORD[action])
        self._say(tally(plan.verb, words), refused)

    def _say(self, line: str, refused: str | None) -> None:
        """The one notification of a bulk action, with the first refusal's reason."""
        if refused is not None:
            line += f"; first refusal: {refused}"
        self.app.notify(
            printable(line),
            title="done" if refused is None else "some refused",
            severity="information" if refused is None else "warning",
            timeout=12,
            markup=False,
        )
        self.app.show_effect()

    def _work(self, name: str, job: Callable[[], Coroutine[None, None, None]]) -> Worker[None]:
        # In the group of the executor's actions: the app reports a failed one.
        return self.app.run_worker(job, name=name, group="action", exit_on_error=False)

    def _clear(self) -> None:
        """Acted on: the marks go, so that the next key acts on one row again."""
        self.marked = frozenset()
        self.app.show_marks()
