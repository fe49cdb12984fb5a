"""``zombietop ack``, ``unack``, ``silence``, ``silences`` and ``unsilence``: the on-call loop
from a shell. Every name, reason and glob printed here is untrusted text: it goes through
``printable``."""

from __future__ import annotations

import argparse
import glob
import json
import math
from typing import Any

from zombietop.durations import format_age, format_duration
from zombietop.errors import TaskNotFound, ZombietopError
from zombietop.heartbeat_line import format_timestamp
from zombietop.judge.monitor import Monitor, Snapshot
from zombietop.model import Ack, Matcher, Silence, Task, TaskState
from zombietop.oncall import acks
from zombietop.oncall.acks import operator_name
from zombietop.printable import printable
from zombietop.procs import PsutilProbe
from zombietop.sources import open_sources
from zombietop.store import Store, open_store
from zombietop.tui.cli.context import (
    EXIT_OK,
    Context,
    add_command,
    context_of,
    duration,
    source_flags,
)
from zombietop.watch.failed_runs import job_incident, older_failures, open_failures


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register the on-call commands on the ``zombietop`` subparsers."""
    _add_ack(sub, common)
    _add_unack(sub, common)
    _add_note(sub, common)
    _add_silence(sub, common)
    _add_silences(sub, common)
    _add_unsilence(sub, common)


def _add_ack(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``zombietop ack TASK``: someone is on the task's incident."""
    ack = add_command(
        sub,
        "ack",
        parents=[common, source_flags()],
        summary="say you are on a task's incident: no re-notify until the ack ends",
        about="Say you are on a task's incident: the watchdog does not page it again until "
        "the ack ends (--for) or the incident does. A job's name acks the job's open incident "
        "(its latest failed or stuck run). A finished task takes an ack while its incident is "
        "open (a failed run not yet followed by a success, or a process that runs on: "
        "orphaned); any other finished task pages nobody, so an ack of it is refused (exit 2). "
        "A task of a read-only source (--source, [[sources]]) is acked too: the ack is kept "
        "in zombietop's store, never in the engine's database.",
        examples=(
            'zombietop ack export-2031 --for 2h --reason "restarting the partner API"',
            "zombietop ack --source airflow+sqlite:///srv/airflow/airflow.db 'etl/load/run1'",
        ),
    )
    ack.add_argument(
        "task", metavar="TASK", help="the task id, as `zombietop status` shows it, or a job's name"
    )
    ack.add_argument(
        "--for",
        dest="duration",
        type=duration,
        metavar="DURATION",
        help="how long, e.g. 2h (default: [oncall] ack_for)",
    )
    ack.add_argument("--reason", help="what you are doing about it, for the event log")
    ack.set_defaults(handler=cmd_ack)


def _add_unack(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``zombietop unack TASK``: end the task's ack."""
    unack = add_command(
        sub,
        "unack",
        parents=[common, source_flags()],
        summary="end a task's ack",
        about="End a task's ack now: its incident is paged again from [watch] renotify after "
        "its last notice. A task with no ack is nothing to do: that is said, and the exit "
        "status is 0.",
        examples=("zombietop unack export-2031",),
    )
    unack.add_argument("task", metavar="TASK", help="the task id")
    unack.set_defaults(handler=cmd_unack)


def _add_note(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``zombietop note TASK TEXT``: a note on the task's incident."""
    note = add_command(
        sub,
        "note",
        parents=[common, source_flags()],
        summary="add a note to a task's incident, for the next person and the next re-notify",
        about="Add a note to a task's incident, with who and when: the detail view and "
        "`status --json` show it, and the next re-notify of the incident carries the newest "
        "one. A task of a read-only source (--source, [[sources]]) takes notes too: they are "
        "kept in zombietop's store.",
        examples=('zombietop note export-2031 "waiting on partner API"',),
    )
    note.add_argument(
        "task", metavar="TASK", help="the task id, as `zombietop status` shows it, or a job's name"
    )
    note.add_argument("text", metavar="TEXT", help="what you found, did or wait on")
    note.set_defaults(handler=cmd_note)


def _add_silence(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``zombietop silence``: hold the pages of the tasks a rule matches."""
    silence = add_command(
        sub,
        "silence",
        parents=[common, source_flags()],
        summary="hold the pages of matching tasks until the silence ends (shown, never paged)",
        about="Hold the pages of every task a rule matches (a task id glob, a step type or a "
        "host) until the silence ends. Silenced tasks are still judged, quarantined and "
        "shown; a task still bad when the silence ends is paged then. The answer says how "
        "many unfinished tasks the rule matches now (with the tasks of --source and "
        "[[sources]]); a rule that matches none is kept for the tasks that match later.",
        examples=(
            "zombietop silence --task 'export-*' --for 8h --reason \"partner API maintenance\"",
            'zombietop silence --host batch-07 --for 2h --reason "rack move"',
        ),
    )
    rule = silence.add_mutually_exclusive_group(required=True)
    rule.add_argument("--task", metavar="GLOB", help="task ids matching a glob, e.g. 'export-*'")
    rule.add_argument("--step-type", metavar="TYPE", help="every task of one step type")
    rule.add_argument("--host", metavar="HOST", help="every task on one host")
    rule.add_argument(
        "--job", metavar="JOB", help="the open incident of a job (its latest failed or stuck run)"
    )
    silence.add_argument(
        "--for",
        dest="duration",
        type=duration,
        required=True,
        metavar="DURATION",
        help="how long, e.g. 8h (at most [oncall] max_silence)",
    )
    silence.add_argument("--reason", required=True, help="why: whoever is paged next asks")
    silence.set_defaults(handler=cmd_silence)


def _add_silences(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``zombietop silences``: list the silences in force."""
    silences = add_command(
        sub,
        "silences",
        parents=[common],
        summary="list the silences in force",
        about="List the silences in force: each one's id, rule, who set it, when it ends and why. "
        "A silence set for longer than this config's [oncall] max_silence ends sooner here, as "
        "it does for a watchdog with this config: the line says so, and when it was set to end.",
        examples=("zombietop silences", "zombietop silences --json"),
    )
    silences.add_argument("--json", action="store_true", help="one JSON list, for scripts")
    silences.set_defaults(handler=cmd_silences)


def _add_unsilence(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``zombietop unsilence ID``: end a silence now."""
    unsilence = add_command(
        sub,
        "unsilence",
        parents=[common],
        summary="end a silence now",
        about="End a silence now, by the id `zombietop silences` shows. The tasks it held that "
        "are still bad are paged at the watchdog's next look.",
        examples=("zombietop unsilence 3",),
    )
    unsilence.add_argument(
        "silence_id",
        metavar="ID",
        type=int,
        help="the silence's id, as `zombietop silences` shows it",
    )
    unsilence.set_defaults(handler=cmd_unsilence)


def moment_words(when: float) -> str:
    """``2026-12-01T21:23:51Z``: a moment as a person reads it, to the second (JSON keeps the
    store's precision)."""
    return format_timestamp(math.floor(when))


def ack_words(ack: Ack) -> str:
    """``acked by ana until 2026-12-01T11:00:00Z (2h): restarting the partner API``."""
    why = f": {printable(ack.reason)}" if ack.reason else ""
    span = format_age(ack.until - ack.acked_at)
    return f"acked by {printable(ack.by)} until {moment_words(ack.until)} ({span}){why}"


def silence_words(silence: Silence, now: float | None = None) -> str:
    """``silence 3 (task export-*) by ana, ends ...: maintenance night``; a silence this
    reader's max_silence ends sooner than it was set to says so (``acks.capped_words``)."""
    left = "" if now is None else f" (in {format_age(max(silence.until - now, 0))})"
    return (
        f"silence {silence.silence_id} ({silence.matcher} {printable(silence.pattern)}) by "
        f"{printable(silence.by)}, ends {moment_words(silence.until)}{left}"
        f"{acks.capped_words(silence)}: {printable(silence.reason)}"
    )


async def cmd_ack(args: argparse.Namespace) -> int:

    ctx = context_of(args)
    async with await open_store(ctx.db) as store:
        task: Task | None
        try:
            task, source = await _incident_of(store, ctx, args.task)
        except TaskNotFound:
            # Gone from its engine while its incident is open: the page recorded whose it was.
            source = await _incident_source(store, args.task)
            if source is None:
                raise
            task = None
        if task is not None and task.state.finished and not await _incident_open(store, ctx, task):
            # Its incident is over; an ack kept now would only quiet a later run's re-notify.
            raise ZombietopError(
                f"{printable(task.task_id)} has finished ({task.state}): it pages nobody, so "
                "there is nothing to ack; no ack was set"
            )
        done = await acks.ack(
            store,
            ctx.config.oncall,
            args.task if task is None else task.task_id,
            by=operator_name(),
            reason=args.reason,
            duration=args.duration,
            source=source,
        )
    print(f"{printable(done.task_id)}: {ack_words(done)}")
    return EXIT_OK


async def cmd_note(args: argparse.Namespace) -> int:

    ctx = context_of(args)
    async with await open_store(ctx.db) as store:
        task, source = await _incident_of(store, ctx, args.task)
        done = await acks.note(store, task.task_id, args.text, by=operator_name(), source=source)
    print(f"{printable(done.task_id)}: note by {printable(done.by)}: {printable(done.text)}")
    return EXIT_OK


async def cmd_unack(args: argparse.Namespace) -> int:

    ctx = context_of(args)
    async with await open_store(ctx.db) as store:
        source = await _acked_source(store, ctx, args.task)
        ended = await acks.unack(store, args.task, by=operator_name(), source=source)
        now = await store.now()
    task = printable(args.task)
    if ended is None:
        print(f"{task} has no ack: nothing to end")
        return EXIT_OK
    if not ended.active(now):
        print(
            f"{task} has no ack: the last one, by {printable(ended.by)}, ended at "
            f"{moment_words(ended.until)}; nothing to end"
        )
        return EXIT_OK
    print(f"{task}: ack by {printable(ended.by)} ended")
    return EXIT_OK


async def _whose(store: Store, ctx: Context, task_id: str) -> tuple[Task, str | None]:
    """The task, from the store or else from the sources the command reads, with the name of
    its source (None for the store's own task)."""
    try:
        return await store.get_task(task_id), None
    except TaskNotFound as exc:
        if not ctx.sources:
            raise TaskNotFound(
                f"{exc}; a task of an engine (Airflow) is found with --source URL or "
                "[[sources]] in the config"
            ) from None
        missing = str(exc)
    async with open_sources(ctx.sources) as sources:
        monitor = Monitor(store, ctx.config, sources=sources)
        snapshot = await monitor.poll()
        owner = monitor.source_of.get(task_id)
    view = snapshot.by_id().get(task_id)
    if owner is not None and view is not None:
        return view.task, owner.name
    names = ", ".join(source.name for source in sources)
    unread = "".join(f"; {error}" for error in snapshot.source_errors.values())
    raise TaskNotFound(printable(f"{missing}, nor among the recent tasks of {names}{unread}"))


async def _snapshot(store: Store, ctx: Context) -> Snapshot:
    """The store's tasks now, with the failed runs still open that left the finished window."""
    snapshot = await Monitor(store, ctx.config).poll()
    if snapshot.error:
        raise ZombietopError(snapshot.error)
    return await older_failures(store, ctx.config, snapshot)


async def _incident_open(store: Store, ctx: Context, task: Task) -> bool:
    """True when the finished ``task`` still has an open incident, as the dashboard's ``a``
    sees it on this host: its process runs on (orphaned), or it is a failed run that no later
    run of its job has made good."""
    async with open_sources(ctx.sources) as sources:
        monitor = Monitor(store, ctx.config, probe=PsutilProbe(), sources=sources)
        snapshot = await monitor.poll()
    if snapshot.error:
        raise ZombietopError(snapshot.error)
    view = snapshot.by_id().get(task.task_id)
    if view is not None and view.health.pages:
        return True
    if task.state is not TaskState.FAILED:
        return False
    snapshot = await older_failures(store, ctx.config, snapshot)
    return any(view.task_id == task.task_id for view in open_failures(snapshot))


async def _incident_of(store: Store, ctx: Context, name: str) -> tuple[Task, str | None]:
    """The task ``name`` names, or else the open incident of the job ``name`` names (its
    latest failed or stuck run), with the name of its source (None for the store's own)."""
    try:
        return await store.get_task(name), None
    except TaskNotFound:
        pass
    if await store.job_runs(name, 1):
        view = job_incident(await _snapshot(store, ctx), name)
        if view is None:
            raise ZombietopError(
                f"job {printable(name)} has no open incident (no run of it is failed or stuck "
                "now); name one run by its task id, as `zombietop history` shows it"
            )
        return view.task, None
    return await _whose(store, ctx, name)


async def _incident_source(store: Store, task_id: str) -> str | None:
    """The engine source that the open incident of ``task_id`` recorded, or None."""
    memory = await store.watchdog_memory()
    for event in reversed(memory.open_events):
        source = event.data.get("source")
        if event.task_id == task_id and isinstance(source, str):
            return source
    return None


async def _acked_source(store: Store, ctx: Context, task_id: str) -> str | None:
    """Whose ack an unack ends: the store's own task's, else the one source's whose task
    holds an ack in force by that id (asking the sources only when two do)."""
    try:
        await store.get_task(task_id)
        return None
    except TaskNotFound:
        pass
    sources = {ack.source for ack in await store.acks() if ack.task_id == task_id}
    sources.discard(None)
    if len(sources) == 1:
        return sources.pop()
    if not sources:
        return None
    _, source = await _whose(store, ctx, task_id)
    return source


async def cmd_silence(args: argparse.Namespace) -> int:

    ctx = context_of(args)
    if args.task is not None:
        matcher, pattern = Matcher.TASK, args.task
    elif args.step_type is not None:
        matcher, pattern = Matcher.STEP_TYPE, args.step_type
    elif args.host is not None:
        matcher, pattern = Matcher.HOST, args.host
    async with await open_store(ctx.db) as store:
        if args.job is not None:
            # The job's open incident: its run's task id, matched exactly.
            matcher, pattern = (
                Matcher.TASK,
                glob.escape(await _job_incident_id(store, ctx, args.job)),
            )
        made = await acks.silence(
            store,
            ctx.config.oncall,
            matcher=matcher,
            pattern=pattern,
            by=operator_name(),
            reason=args.reason,
            duration=args.duration,
        )
        matched = await _matched(made, store, ctx)
    print(f"{silence_words(made)} ({format_duration(args.duration)}); {matched}")
    return EXIT_OK


async def _job_incident_id(store: Store, ctx: Context, job: str) -> str:
    view = job_incident(await _snapshot(store, ctx), job)
    if view is not None:
        return view.task_id
    if await store.job_runs(job, 1):
        raise ZombietopError(
            f"job {printable(job)} has no open incident (no run of it is failed or stuck now); "
            "to hold its future runs, use --task with a glob, e.g. --task 'JOB/*'"
        )
    raise TaskNotFound(f"no run of job {printable(job)}")


async def _matched(silence: Silence, store: Store, ctx: Context) -> str:
    """How many tasks the new silence holds now (only unfinished ones can page), the sources'
    included. The silence is set already: a source that cannot be read is only said."""
    try:
        async with open_sources(ctx.sources) as sources:
            snapshot = await Monitor(store, ctx.config, sources=sources).poll()
    except ZombietopError as exc:
        snapshot = Snapshot(taken_at=None, error=str(exc))
    if snapshot.error:
        return printable(f"the tasks it matches now could not be read: {snapshot.error}")
    # Unfinished tasks can page, and so can failed runs whose incident is open.
    failing = {view.task_id for view in open_failures(snapshot)}
    n = sum(
        1
        for v in snapshot.tasks
        if (not v.task.state.finished or v.task_id in failing) and silence.matches(v.task)
    )
    if n == 0:
        return "it matches 0 tasks now, and will hold any that match later"
    return f"it matches {n} task{'s' if n > 1 else ''} now"


async def cmd_silences(args: argparse.Namespace) -> int:

    ctx = context_of(args)
    async with await open_store(ctx.db, read_only=True) as store:
        now = await store.now()
        found = await store.silences()
    # This reader's max_silence caps each one: it is what this host's watchdog honours.
    found = list(acks.current(now, [], found, max_silence=ctx.config.oncall.max_silence).silences)
    if args.json:
        print(json.dumps([silence_json(s) for s in found], indent=2))
    elif not found:
        print("no silences in force")
    else:
        for silence in found:
            print(silence_words(silence, now))
    return EXIT_OK


async def cmd_unsilence(args: argparse.Namespace) -> int:

    ctx = context_of(args)
    async with await open_store(ctx.db) as store:
        ended = await acks.unsilence(store, args.silence_id, by=operator_name())
    print(f"silence {ended.silence_id} ({ended.matcher} {printable(ended.pattern)}) ended")
    return EXIT_OK


def silence_json(silence: Silence, *, created: bool = True) -> dict[str, Any]:
    """A silence as ``silences --json`` lists it. ``status --json`` shows it without when it
    was created (``created=False``), as it always has."""
    made = {"created_at": format_timestamp(silence.created_at)} if created else {}
    return {
        "id": silence.silence_id,
        "matcher": str(silence.matcher),
        "pattern": silence.pattern,
        "by": silence.by,
        "reason": silence.reason,
        **made,
        "until": format_timestamp(silence.until),
        "set_until": None if silence.set_until is None else format_timestamp(silence.set_until),
    }
