"""The layered timeouts, applied: a stage overrun pages, the second overrun kills, a task
overrun is only logged; a request overrun pages. Any other flag whose traits say
``pages_once`` (``queued_too_long``) is paged once per task attempt, or once a day per job for
a flag about the job (``per_job``: ``failing_more``).

Budgets are not a health: a healthy task can be over its stage budget. Each reaction is taken
once (its one-shot key goes into the incident book's ``once``), and an overrun is not paged
while the task's incident is open: the incident's page spoke for the task already. The watch
is asked about each task at each look of the watchdog (see docs/glossary.md).
"""

from __future__ import annotations

from zombietop.actions import ActionKind
from zombietop.bounds import DAY
from zombietop.durations import format_age, format_duration
from zombietop.health import Flag
from zombietop.judge.budgets import Budget
from zombietop.judge.monitor import TaskView
from zombietop.model import EventKind
from zombietop.page import PageKind
from zombietop.watch.clock_watch import ClockWatch
from zombietop.watch.incident_book import IncidentBook
from zombietop.watch.watchdog_hands import Hands, Look


class BudgetWatch:
    """React to a task's budget flags: page, kill or log, each once."""

    def __init__(
        self, hands: Hands, book: IncidentBook, clocks: ClockWatch, *, stage_kill_factor: float
    ) -> None:
        self.hands = hands
        self.book = book
        self.clocks = clocks
        """Jumps of the store's clock: a stage that began before one has run that much less."""
        self.stage_kill_factor = stage_kill_factor
        """``[watch] stage_kill_factor``: kill at this many times the stage budget (0: never)."""

    async def check(self, view: TaskView, look: Look) -> None:
        """Take the reactions the task's flags call for and that were not taken yet."""
        verdict, task = view.verdict, view.task
        flags = verdict.flags
        if not flags:
            return
        # Flags hold until the verdict's stable_until; the times used and the page line are read
        # as of this look.
        once = self.book.once
        for flag in flags:
            # The flags that page once per task (FLAG_TRAITS); the budgets' own are below.
            key = f"flag:{flag}:{task.task_id}:{task.attempt}"
            if flag.per_job and task.job is not None:
                # A job's trend, whichever run carries it: once a day per job.
                key = f"flag:{flag}:job:{task.job}:{int(look.now // DAY)}"
            if flag.pages_once and key not in once:
                await self._overrun(look, PageKind.of_flag(flag), look.context(view), key, view)
        budgets = verdict.budgets(look.now)
        beat = view.heartbeat
        if Flag.STAGE_OVERRUN in flags and budgets.stage.used_s is not None:
            await self._stage(view, budgets.stage, look)
        if Flag.REQUEST_OVERRUN in flags and beat is not None:
            key = f"request:{task.task_id}:{beat.request_name}:{beat.request_started_at}"
            if key not in once:
                await self._overrun(look, PageKind.REQUEST_OVERRUN, look.context(view), key, view)
        if Flag.TASK_OVERRUN in flags:
            key = f"task:{task.task_id}:{task.attempt}"
            if key not in once:
                once.add(key)
                message = f"task overrun (logged, not killed): {look.context(view)}"
                look.logs.append(message)
                await self.hands.record(EventKind.WATCHDOG, message, task.task_id, {"key": key})

    async def _stage(self, view: TaskView, budget: Budget, look: Look) -> None:
        """Page the first overrun of a stage; kill at ``stage_kill_factor`` times its budget."""
        assert budget.used_s is not None
        task, beat, once = view.task, view.heartbeat, self.book.once
        stage = beat.stage if beat and beat.stage else "-"
        stage_start = beat.stage_started_at if beat else task.started_at
        # A jump of the store's clock since the stage began is no time the stage ran.
        jumped = 0.0 if stage_start is None else self.clocks.jumped_since(stage_start)
        used = budget.used_s - jumped
        if used <= budget.limit_s:
            return
        key = f"stage:{task.task_id}:{task.attempt}:{stage}:{stage_start}"
        origin = self.hands.origin_of(task.task_id)
        # The watchdog never acts on an engine's task on its own (``Hands.act``): for one, the
        # page says so, and who can kill it, rather than promise a kill nobody sends.
        factor = self.stage_kill_factor if origin is None else 0.0
        kill_at = factor * budget.limit_s
        if key not in once:
            if origin is not None and self.stage_kill_factor:
                then = (
                    f" - zombietop does not kill {origin.kind}'s tasks on its own; kill it from "
                    "the dashboard"
                )
            elif factor:
                then = f" - killed gracefully at {format_duration(kill_at)} in this stage"
            else:
                then = ""
            line = look.context(view) + then
            await self._overrun(look, PageKind.STAGE_OVERRUN, line, key, view)
        kill_key = "kill:" + key
        if factor and used >= kill_at and kill_key not in once and task.pid is not None:
            once.add(kill_key)
            reason = (
                f"stage {stage} ran {format_age(used)}, "
                f"{factor:g} x its {format_duration(budget.limit_s)} budget"
            )
            await self.hands.record(
                EventKind.WATCHDOG,
                f"second stage overrun: killing {task.task_id}",
                task.task_id,
                {"key": kill_key},
            )
            await self.hands.act(view, ActionKind.KILL, reason, look)

    async def _overrun(
        self, look: Look, kind: PageKind, line: str, key: str, view: TaskView
    ) -> None:
        """Page an overrun once; while the task's incident is open, or an upstream's incident
        it waits behind, that page already spoke."""
        self.book.once.add(key)
        if view.task_id in self.book.incidents:
            look.logs.append(f"{kind} during an open incident (not paged again): {line}")
            await self.hands.record(
                EventKind.WATCHDOG, f"{kind}: {line}", view.task_id, {"key": key}
            )
            return
        root = self.book.held_behind(view, look)
        if root is not None:
            # One page per root cause: the upstream's page lists this task ("blocks 3: ...").
            said = f"{kind} held behind the incident of {root} (not paged): {line}"
            look.logs.append(said)
            await self.hands.record(
                EventKind.WATCHDOG, said, view.task_id, {"key": key, "held_behind": root}
            )
            return
        self.hands.page(look, kind, line, view=view)
        await self.hands.record(
            EventKind.PAGE,
            line,
            view.task_id,
            {"page": kind, "key": key, "health": str(view.health)},
        )
