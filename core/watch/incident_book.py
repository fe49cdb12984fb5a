"""The watchdog's book of incidents: which are open, what was said, what was done once; and
how an incident opens, is paged again, retried and closed.

An incident opens when a task's health pages: the task is quarantined first, then a human is
paged with one line (unless a silence holds the page). While it is open, the on-call loop
(``zombietop.oncall.acks``) says when it is owed another notice. It closes when the task's health
no longer pages, or the task is gone: the hold is let go of, the ack ended, the all-clear paged.
The book judges one task at a time, as each look of the watchdog hands it each task's view.
For the words book, incident, notice, hold and look, see docs/glossary.md.

The book's memory is the event log, so a watchdog that restarts, or runs from cron
(``--once``), pages once per incident too. ``restore`` reads it back through one store query
per concern (every open incident, the one-shot reactions on unfinished tasks), never the
newest N events: a busy log must not make an old open incident look new.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from zombietop.actions import ActionKind
from zombietop.durations import format_age
from zombietop.errors import StoreError
from zombietop.health import Health, ScheduleHealth
from zombietop.judge.monitor import Snapshot, TaskView
from zombietop.model import Ack, EventKind, Silence, TaskState
from zombietop.oncall.acks import FollowUp, Notices, capped_words, notice_line, with_note
from zombietop.output import keeps_output, last_output_of, with_last_output
from zombietop.page import PageKind, incident_key
from zombietop.store import Store
from zombietop.watch.failed_runs import failure_line, failure_open
from zombietop.watch.quarantines import Quarantines
from zombietop.watch.root_causes import blocks_words
from zombietop.watch.watchdog_hands import Hands, Look

SCHEDULE_KEY = "schedule:"
"""An open schedule incident's key in ``Notices``: the prefix, then the schedule's name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Incident:
    task_id: str
    health: Health
    opened_at: float
    job: str | None = None
    """For a failed run, its job: a later success of the job ends the incident."""


def notice_key(task_id: str | None, data: Mapping[str, Any]) -> str | None:
    """The ``Notices`` key of a page event: its schedule's, else its task's."""
    schedule = data.get("schedule")
    if isinstance(schedule, str):
        return SCHEDULE_KEY + schedule
    return task_id


def ended_by_kill(view: TaskView) -> bool:
    """True when the task is dead because a kill (an operator's or ours) ended this very process."""
    kill = view.pending_kill
    return view.health is Health.DEAD and kill is not None and kill.pid == view.task.pid


def failed_by_kill(view: TaskView) -> bool:
    """True for a failed task that failed after a kill was sent to it: the failure is what
    the kill did (an engine records a killed task as failed), not news for a pager."""
    kill, task = view.pending_kill, view.task
    # A kill of an earlier attempt says nothing about how this one ended.
    began = task.claimed_at or task.started_at
    return (
        view.health is Health.FAILED
        and kill is not None
        and task.finished_at is not None
        and (began is None or began <= kill.term_sent_at)
        and kill.term_sent_at <= task.finished_at
    )


def killed_line(view: TaskView, incident: Incident) -> str:
    """``export-2031 killed at stage overrun (stage=transform, was stalled); not finished -
    resume or discard``."""
    beat = view.heartbeat
    stage = f"stage={beat.stage}, " if beat is not None and beat.stage else ""
    return (
        f"{view.task_id} killed at stage overrun ({stage}was {incident.health}); "
        "not finished - resume or discard"
    )


def _still_failing(incident: Incident, snapshot: Snapshot) -> bool:
    """True for a failed run's incident whose job has not succeeded since it opened."""
    if incident.health is not Health.FAILED:
        return False
    summary = snapshot.jobs.get(incident.job or incident.task_id)
    succeeded_at = None if summary is None else summary.last_success_at
    return succeeded_at is None or succeeded_at < incident.opened_at


def _vanished_line(incident: Incident, engine: str | None, now: float) -> str:
    """What closes the incident of a task the snapshot no longer holds. A store's task was
    pruned after it finished; an engine's task that left unfinished is lost, not clear."""
    if engine is None or incident.health.finished:
        return f"{incident.task_id} all clear: no longer active (was {incident.health})"
    took = format_age(max(now - incident.opened_at, 0.0))
    return (
        f"{incident.task_id} lost: {engine} no longer holds it and recorded no end "
        f"(was {incident.health} for {took}); look for it in the engine, this incident is closed"
    )


class IncidentBook:
    """Open incidents (tasks and schedules), their notices, and the one-shot keys taken."""

    def __init__(self, hands: Hands, *, renotify: float) -> None:
        self.hands = hands
        self.quarantines = Quarantines(hands)
        self.renotify = renotify
        """``[watch] renotify``: seconds between the notices of an incident nobody acked."""
        self.incidents: dict[str, Incident] = {}
        self.engines: dict[str, str] = {}
        """By task id, the source an open incident's task was last read from (an engine's)."""
        self.notices = Notices()
        """Pages sent per open incident (tasks and schedules), for re-notify and silences."""
        self.once: set[str] = set()
        """Keys of one-shot reactions already taken (overrun pages, kills, logs)."""
        self.last_digest_at: float | None = None

    async def restore(self, store: Store, log: Callable[[str], None]) -> None:
        """Rebuild the book from the store's event log, in place."""
        self.incidents.clear()
        self.engines.clear()
        self.once.clear()
        self.notices.clear()
        try:
            memory = await store.watchdog_memory()
        except StoreError as exc:
            log(f"cannot read past incidents ({exc}); starting with none")
            return
        self.once.update(memory.keys)
        self.last_digest_at = memory.last_digest_at
        for event in memory.open_events:
            page = event.data.get("page")
            key = notice_key(event.task_id, event.data)
            if key is not None:
                self.notices.remember(key, event.data, event.at)
            if page == PageKind.INCIDENT and event.task_id and not event.data.get("released"):
                self.incidents[event.task_id] = Incident(
                    task_id=event.task_id,
                    health=Health(event.data["health"]),
                    opened_at=event.at,
                    job=event.data.get("job"),
                )
                if isinstance(event.data.get("source"), str):
                    self.engines[event.task_id] = event.data["source"]
            if isinstance(event.data.get("key"), str):
                self.once.add(event.data["key"])

    async def judge(self, view: TaskView, look: Look) -> None:
        """Open, follow up or close the task's incident, as its health says."""
        task_id, health = view.task_id, view.health
        if health.pages and ended_by_kill(view):
            # Between a killed command's exit and its wrapper recording it, the task looks dead
            # for a moment: the kill's outcome is the news, not a new incident (or an all-clear).
            pass
        elif health.pages or failure_open(view, look.jobs):
            if await self._held(view, look):
                return
            incident = self.incidents.get(task_id)
            if incident is not None and incident.health is not health and health.asks_to_kill:
                # Finished while its process lives on (a stalled task its engine failed):
                # what to do changed, so the same incident is paged again with the new line.
                del self.incidents[task_id]
                incident = None
            elif incident is not None and incident.health is not health and not health.pages:
                # A stall that ended in a failure: that stretch is over, the failure is news.
                await self.close(view, look)
                incident = None
            if incident is None and failed_by_kill(view):
                await self.kill_outcome(view, look)
            elif incident is None:
                await self.open(view, look)
            else:
                await self.follow_up(view, look)
            if health.pages:
                await self.auto_retry(view, look)
        elif task_id in self.incidents and self.killed_by_us(view):
            # Our kill stopped the task; it did not finish the work. Until someone resumes or
            # discards it, the incident stays open and the page says what is left to do.
            await self.follow_up(view, look)
        elif task_id in self.incidents:
            await self.close(view, look)

    async def open(self, view: TaskView, look: Look) -> None:
        """Quarantine the task, then page: an incident is open only once its hold is written,
        so a hold that fails (a full disk) is tried again at every look (every poll)."""
        failed = view.health is Health.FAILED  # a failed run: it ended, nothing to hold
        if not failed and not await self.quarantines.place(view, look):
            return
        hands, task_id = self.hands, view.task_id
        context = look.context(view)
        job = view.task.job_name if failed else None
        self.incidents[task_id] = Incident(
            task_id=task_id, health=view.health, opened_at=look.now, job=job
        )
        origin = hands.origin_of(task_id)
        if origin is not None and not view.task.state.finished:
            self.engines[task_id] = origin.source
        else:  # a finished task recorded its end: when it goes, it is no loss
            self.engines.pop(task_id, None)
        page_key = f"incident:{task_id}:{view.task.attempt}:{self.incidents[task_id].opened_at}"
        # The job's last words, and how old they are: "the last log line was at 03:42".
        last = (
            await asyncio.to_thread(last_output_of, hands.store, view.task, hands.monitor.host)
            if keeps_output(view.task, hands.monitor.host)
            else None  # a file read, on a thread: not for each of a fleet's thousand tasks
        )
        if failed:
            line = failure_line(view, last, look.now, self.blocks(task_id, look))
        else:
            line = with_last_output(context + self.blocks(task_id, look), last, look.now)
        silence = look.oncall.silence_for(view.task)
        notice = self.notices.opened(
            task_id, at=self.incidents[task_id].opened_at, paged=silence is None
        )
        if silence is not None:
            await self._held_by(silence, view, context, page_key, notice.incident, look)
            return
        hands.page(look, PageKind.INCIDENT, line, view=view, incident=notice.incident)
        data = {
            "page": PageKind.INCIDENT,
            "key": page_key,
            "health": str(view.health),
            "incident": notice.incident,
        }
        if view.task.host is not None:
            data["host"] = view.task.host  # the handover groups a mass incident by host
        if job is not None:
            data["job"] = job
        if task_id in self.engines:
            # Kept in the log, so a watchdog started later still knows the task is an engine's.
            data["source"] = self.engines[task_id]
        await hands.record(EventKind.PAGE, line, task_id, data)

    async def _held_by(
        self,
        silence: Silence,
        view: TaskView,
        context: str,
        page_key: str,
        incident: str,
        look: Look,
    ) -> None:
        """Detected, shown and counted, never paged: the page goes out if the silence ends
        while the incident is still open (``follow_up``)."""
        look.logs.append(
            f"silenced (not paged: silence {silence.silence_id}, {silence.rule}"
            f"{capped_words(silence)}): {context}"
        )
        await self.hands.record(
            EventKind.WATCHDOG,
            f"held by silence {silence.silence_id}: {context}",
            view.task_id,
            {
                "page": PageKind.INCIDENT,
                "key": page_key,
                "health": str(view.health),
                "held": silence.silence_id,
                "incident": incident,
                **({} if view.task.host is None else {"host": view.task.host}),
            },
        )

    async def follow_up(self, view: TaskView, look: Look) -> None:
        """Page an open incident again when the on-call loop says it is owed a page."""
        oncall = look.oncall
        ack = oncall.ack_for(view.task_id)
        if ack is not None:
            await self._pass_on_ack(view.task_id, ack, look)
        due = self.notices.due(
            view.task_id,
            now=self.hands.clock.now(),
            interval=self.renotify,
            acked=ack is not None,
            silenced=oncall.silence_for(view.task) is not None,
        )
        if due is not None:
            if view.health is Health.FAILED:
                line = failure_line(view, None, look.now, self.blocks(view.task_id, look))
            elif self.killed_by_us(view):
                line = killed_line(view, self.incidents[view.task_id])
            else:
                line = look.context(view) + self.blocks(view.task_id, look)
            line = await self._noted(view.task_id, line, look)
            await self.notice(look, view.task_id, due, line, view=view)

    async def kill_outcome(self, view: TaskView, look: Look) -> None:
        """Record, once, that the task failed because of a kill: the one who asked for the kill
        is told by the kill's outcome, and is not paged for it."""
        task, kill = view.task, view.pending_kill
        assert kill is not None
        key = f"kill-outcome:{task.task_id}:{task.attempt}:{kill.term_sent_at}"
        if key in self.once:
            return
        self.once.add(key)
        line = (
            f"{task.task_id} failed after the kill by {kill.requested_by}: "
            "the kill's outcome, not a new incident (not paged)"
        )
        look.logs.append(line)
        await self.hands.record(EventKind.WATCHDOG, line, task.task_id, {"key": key})

    def killed_by_us(self, view: TaskView) -> bool:
        """True when a watchdog's kill, sent while the task's incident was open, left the
        task interrupted."""
        kill, incident = view.pending_kill, self.incidents.get(view.task_id)
        return (
            view.task.state is TaskState.INTERRUPTED
            and kill is not None
            and incident is not None
            and kill.requested_by == self.hands.actor
            and kill.term_sent_at >= incident.opened_at
        )

    def blocks(self, task_id: str, look: Look) -> str:
        """``; blocks 3: ...``: the waiting tasks held behind this task's incident."""
        return blocks_words(look.causes.blocked_by(task_id, self.incidents))

    def held_behind(self, view: TaskView, look: Look) -> str | None:
        """The upstream whose open incident speaks for this waiting task (None: page it)."""
        return look.causes.behind(view.task_id, self.incidents)

    async def _held(self, view: TaskView, look: Look) -> bool:
        """True for a task that failed before it started (Airflow's upstream_failed) while
        the upstream that held it has an open incident: that page speaks for it (it lists
        it), so it opens none, also once that incident has ended (its all-clear spoke for it
        too). Said once in the log and the task's events; a later try is judged again."""
        if view.health is not Health.FAILED or view.task_id in self.incidents:
            return False
        key = f"held:{view.task_id}:{view.task.attempt}"
        if key in self.once:
            return True
        root = self.held_behind(view, look)
        if root is None:
            return False
        self.once.add(key)
        said = f"failure held behind the incident of {root} (not paged): {view.task_id}"
        look.logs.append(said)
        await self.hands.record(
            EventKind.WATCHDOG, said, view.task_id, {"key": key, "held_behind": root}
        )
        return True

    async def _noted(self, task_id: str, line: str, look: Look) -> str:
        """The line with the newest note on this incident, if someone wrote one."""
        incident = self.incidents.get(task_id)
        try:
            notes = await self.hands.store.notes(task_id, limit=1)
        except StoreError as exc:
            look.logs.append(f"could not read the notes of {task_id}: {exc}")
            return line
        since = incident.opened_at if incident is not None else 0.0
        return with_note(line, notes, since=since, now=look.now)

    async def notice(
        self,
        look: Look,
        key: str,
        due: FollowUp,
        line: str,
        *,
        view: TaskView | None = None,
        schedule: str | None = None,
    ) -> None:
        """Send the next notice of an open incident: the same line, its number, how long open."""
        hands = self.hands
        now = hands.clock.now()
        notice = self.notices.get(key)
        assert notice is not None
        incident = notice.incident
        number = self.notices.sent(key, at=now)
        text = notice_line(line, notice=number, open_for=now - notice.opened_at)
        kind = PageKind.INCIDENT if due is FollowUp.RELEASE else PageKind.RENOTIFY
        data: dict[str, Any] = {"page": kind, "notice": number}
        if due is FollowUp.RELEASE:
            data["released"] = True
        if schedule is not None:
            data.update(schedule=schedule, health=str(ScheduleHealth.MISSED))
            hands.page_schedule(look, kind, text, incident=incident)
        else:
            assert view is not None
            data["health"] = str(view.health)
            hands.page(look, kind, text, view=view, incident=incident)
        await hands.record(EventKind.PAGE, text, None if view is None else view.task_id, data)

    async def close(self, view: TaskView, look: Look) -> None:
        """The task's health no longer pages: let go of the hold, end the ack, page the
        all-clear."""
        task_id, task = view.task_id, view.task
        incident = self.incidents.pop(task_id)
        self.engines.pop(task_id, None)
        name = self.name_of(incident)
        health = await self.quarantines.let_go(view, look)
        if health is Health.QUARANTINED and task.state is not TaskState.INTERRUPTED:
            # Still held, and a human must resolve it: "all clear: now quarantined" would tell
            # the pager that nothing is left to do. The incident stays open.
            self.incidents[task_id] = incident
            await self.follow_up(view, look)
            return
        # A source's own end time, where it has one, ends the incident: the watchdog only
        # looked later (Airflow's end_date of a dead task, not the next poll).
        ended = task.finished_at
        if ended is None or not incident.opened_at <= ended <= look.now:
            ended = look.now
        took = format_age(max(ended - incident.opened_at, 0.0))
        now = str(health)
        if incident.health is Health.FAILED and health is Health.FAILED:
            now = f"a later run of {task.job_name} succeeded"
        if health is Health.QUARANTINED and task.state is TaskState.INTERRUPTED:
            # Killed while held: what ended it is the kill, the hold only stays.
            now = f"{TaskState.INTERRUPTED} (still quarantined)"
            health = Health.INTERRUPTED
        line = f"{task_id} all clear: now {now} (was {incident.health} for {took})"
        await self._end_ack(task_id, look)
        if await self._closed_unpaged(task_id, line, look):
            return
        self.hands.page(look, PageKind.ALL_CLEAR, line, view=view, health=health, incident=name)
        await self.hands.record(
            EventKind.PAGE, line, task_id, {"page": PageKind.ALL_CLEAR, "health": str(health)}
        )

    async def close_vanished(self, snapshot: Snapshot, look: Look) -> None:
        """Close the incidents of tasks the snapshot no longer holds (finished and pruned).

        None is closed while a source cannot be read: its tasks are missing from the snapshot,
        though nothing says they ended, and a watchdog started meanwhile cannot tell them from
        the store's (it never read that source). The store's wait the few looks it takes. Nor
        while a poll left tasks unread past ``[monitor] read_at_most``: a task with an open
        incident may be one of them, still stuck, and an all-clear would be false.
        """
        if snapshot.source_errors or snapshot.left_unread:
            return
        present = {view.task_id for view in snapshot.tasks}
        for task_id in [t for t in self.incidents if t not in present]:
            if _still_failing(self.incidents[task_id], snapshot):
                continue  # a failed run past the finished window: open until its job succeeds
            incident = self.incidents.pop(task_id)
            name = self.name_of(incident)
            line = _vanished_line(incident, self.engines.pop(task_id, None), look.now)
            await self._end_ack(task_id, look)
            if await self._closed_unpaged(task_id, line, look):
                continue
            self.hands.page(look, PageKind.ALL_CLEAR, line, incident=name)
            await self.hands.record(EventKind.PAGE, line, task_id, {"page": PageKind.ALL_CLEAR})

    def name_of(self, incident: Incident) -> str:
        """The name the incident's pages carry (``zombietop.page.incident_key``)."""
        notice = self.notices.get(incident.task_id)
        return notice.incident if notice else incident_key(incident.task_id, incident.opened_at)

    async def _pass_on_ack(self, task_id: str, ack: Ack, look: Look) -> None:
        """Tell the channels that keep incidents (PagerDuty) that a human acked this one, once
        per ack: the pager stops escalating what someone here is already on."""
        notice = self.notices.get(task_id)
        if notice is None or notice.notices == 0 or not self.hands.outbox.passes_on_acks:
            return  # never paged (a silence holds it): there is nothing to acknowledge there
        key = f"ack:{notice.incident}:{ack.acked_at}"
        if key in self.once:
            return
        self.once.add(key)
        line = f"{task_id} acknowledged in zombietop by {ack.by}"
        self.hands.page_ack(look, line, task_id=task_id, incident=notice.incident)
        await self.hands.record(EventKind.WATCHDOG, line, task_id, {"key": key})

    async def _closed_unpaged(self, task_id: str, line: str, look: Look) -> bool:
        """Close the incident's notices; True (and no page) when a silence held every page."""
        notice = self.notices.closed(task_id)
        if notice is None or notice.notices > 0:
            return False
        look.logs.append(f"silenced (not paged): {line}")
        await self.hands.record(
            EventKind.WATCHDOG, line, task_id, {"page": PageKind.ALL_CLEAR, "held": True}
        )
        return True

    async def _end_ack(self, task_id: str, look: Look) -> None:
        """An ack lasts until it expires or its incident ends: this one ended."""
        hands = self.hands
        ack = look.oncall.ack_for(task_id)
        if hands.dry_run or ack is None:
            return
        try:
            await hands.store.unack_task(
                task_id, by=hands.actor, reason="the incident ended", source=ack.source
            )
        except StoreError as exc:
            look.logs.append(f"could not end the ack of {task_id}: {exc}")

    async def auto_retry(self, view: TaskView, look: Look) -> None:
        """Resume a dead or reclaimable task of a step type with ``auto_retry = true``, within
        its retry limit, with a backoff that doubles each attempt."""
        limits = view.limits
        if not limits.auto_retry or not view.health.retryable:
            return
        task, incident = view.task, self.incidents[view.task_id]
        if task.attempt >= limits.max_retries:
            key = f"retry-limit:{task.task_id}:{task.attempt}"
            if key not in self.once:
                self.once.add(key)
                message = (
                    f"{task.task_id}: auto_retry stopped after {task.attempt} attempts; "
                    "a human decides"
                )
                look.logs.append(message)
                await self.hands.record(EventKind.WATCHDOG, message, task.task_id, {"key": key})
            return
        due = incident.opened_at + limits.retry_backoff * 2 ** (task.attempt - 1)
        if look.now < due:
            return
        reason = (
            f"auto_retry: attempt {task.attempt + 1} of {limits.max_retries} after {view.health}"
        )
        outcome = await self.hands.act(view, ActionKind.RESUME, reason, look)
        if outcome is not None:
            await self.hands.record(
                EventKind.WATCHDOG,
                f"{reason}: {outcome.message}",
                task.task_id,
                {"retry": task.attempt + 1},
            )
