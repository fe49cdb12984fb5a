"""``zombietop run`` and the action commands ``resume``, ``discard`` and ``kill``.

Kept apart from ``zombietop.tui.cli.main`` so that the parser there only registers them.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import replace
from typing import Any

from zombietop.act.executor import Executor
from zombietop.act.source_actions import SourceActions
from zombietop.actions import ActionKind, ActionOutcome, ActionRequest, Outcome
from zombietop.durations import format_age
from zombietop.errors import ZombietopError
from zombietop.identity import real_user
from zombietop.judge.monitor import Monitor
from zombietop.model import EventKind
from zombietop.printable import printable
from zombietop.procs import PsutilProbe, this_host
from zombietop.run.fail_open import FailOpen
from zombietop.run.runner import RunSpec
from zombietop.sources import open_sources
from zombietop.store import open_store
from zombietop.tui.cli.context import (
    EXIT_NOT_DONE,
    EXIT_OK,
    add_command,
    context_of,
    open_or_create,
    source_flags,
)

KILL_POLL_S = 0.1


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register run, resume, discard and kill on the ``zombietop`` subparsers."""
    _add_run(sub, common)
    _add_actions(sub, common)


def _add_run(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    run = add_command(
        sub,
        "run",
        parents=[common],
        summary="run a command under a lease, with heartbeats from a file",
        about="Run a command as a task: take its lease and renew it while the command lives, "
        "turn each line the command appends to $ZOMBIETOP_HEARTBEAT_FILE into a heartbeat, "
        "forward SIGTERM, SIGINT and SIGHUP to it, record how it ended, and exit with its "
        "status. When the store cannot take the end (a full disk), keep trying, also past the "
        "lease's end while nobody takes the lease over. When the store cannot be used at the "
        "start, a --job run says "
        "so and runs the command unwatched, and records the run if the store comes back; a "
        "--task or --after run refuses (exit 2); --require-lease and --no-require-lease, or "
        "the step type's require_lease, decide otherwise. Refuse to start (exit 2) while an "
        "--after task has not "
        "succeeded; with --wait, record the task queued behind it instead, hold its lease, "
        "check every heartbeat_interval, and start the command once every --after task has "
        "succeeded. A discarded or failed --after task ends the waiting task failed (exit 1); "
        "a quarantined or interrupted one keeps it waiting, shown blocked; one that has not "
        "started yet is waited for. --after may name a job: its latest run if unfinished or "
        "recent, else its next run. SIGTERM, SIGINT or "
        "SIGHUP while waiting ends it interrupted (exit 128 + the signal).",
        examples=(
            "zombietop run --job nightly-export -- ./export.sh",
            "zombietop run --task export-2031 --type export -- ./export.sh",
            "zombietop run --task load-2031 --after export-2031 -- ./load.sh",
            "zombietop run --task publish-2031 --after load-2031 --wait -- ./publish.sh",
            "zombietop run --job publish --after extract --wait -- ./publish.sh",
        ),
        usage="zombietop run [--job NAME | --task ID] [--run RUN] [--type TYPE] [--after TASK ...] "
        "[--wait] [--[no-]require-lease] [--db PATH|URL] [--config PATH] -- CMD ARGS...",
    )
    named = run.add_mutually_exclusive_group()
    named.add_argument(
        "--job",
        help="start a new run of this job each time: its task id is JOB/RUN, its step type "
        "defaults to JOB",
    )
    named.add_argument(
        "--task",
        help="the exact task id of a single run (task ids are single-use; default: the "
        "command's name and a random suffix)",
    )
    run.add_argument(
        "--run",
        dest="run_id",
        help="with --job, the run's name (default: its start time in UTC, e.g. "
        "20261201T023000Z); with --task, the workflow run this task belongs to",
    )
    run.add_argument("--type", dest="step_type", help="step type, which selects thresholds")
    run.add_argument(
        "--after",
        action="extend",
        nargs="+",
        default=[],
        metavar="TASK",
        help="refuse to start until these tasks (or a job's latest run) have succeeded (with "
        "--wait: wait for them)",
    )
    run.add_argument(
        "--wait",
        action="store_true",
        help="record the task queued, blocked by its --after tasks (also those not started "
        "yet), and start the command when they have all succeeded (a resume relaunches a "
        "waiting task so)",
    )
    run.add_argument(
        "--require-lease",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="refuse to run the command when the store cannot be used (exit 2); with "
        "--no-require-lease, run it unwatched and record the run if the store comes back "
        "(default: the step type's require_lease, else refuse only for --task and --after)",
    )
    run.add_argument("command", nargs=argparse.REMAINDER, help="the command, after --")
    run.set_defaults(handler=cmd_run)


def _add_actions(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    for kind, summary, about, why in (
        (
            ActionKind.RESUME,
            "bump the token, keep the checkpoint, requeue or relaunch",
            "Resume a task: give it a new lease token (its old owner can no longer renew or "
            "finish), keep its checkpoint, count one more attempt, and relaunch it (a task of "
            "`zombietop run`), run its step type's resume_command, or leave it queued for its "
            "engine. A copy of it still alive on this host is stopped first.",
            "the partner API is back",
        ),
        (
            ActionKind.DISCARD,
            "bump the token and mark discarded; artifacts kept",
            "Discard a task: give it a new lease token and mark it discarded. Its checkpoint "
            "and files are kept, and the tasks that wait on it stay blocked.",
            "superseded by the next run",
        ),
        (
            ActionKind.KILL,
            "SIGTERM the task's processes, SIGKILL after kill_grace",
            "Kill a task gracefully: SIGTERM to its process group and to the processes of its "
            "attempt that left the group (setsid), then SIGKILL after kill_grace to those that "
            "are still the same processes (pid and start time). A task on another host is "
            "killed by that host's agent.",
            "hung on the partner API",
        ),
    ):
        action = add_command(
            sub,
            str(kind),
            parents=[common, source_flags()],
            summary=summary,
            about=f"{about} Ask on a terminal (or pass --yes); refuse when the task changed "
            "since you looked. Exit 0 when done, 1 when not done (refused, not confirmed, or "
            "left for another host's agent), 2 on an error.",
            examples=(f'zombietop {kind} export-2031 --reason "{why}"',),
        )
        action.add_argument(
            "task", metavar="TASK", help="the task id, as `zombietop status` shows it"
        )
        action.add_argument("--reason", help="why, for the event log")
        action.add_argument("--yes", action="store_true", help="do not ask for confirmation")
        action.set_defaults(handler=cmd_action, kind=kind)


async def cmd_run(args: argparse.Namespace) -> int:

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise ZombietopError(
            "nothing to run: give a command after --, e.g. zombietop run -- ./job.sh"
        )
    ctx = context_of(args)
    return await FailOpen(ctx.config, ctx.db, lambda: open_or_create(ctx.db)).run(
        RunSpec(
            command=tuple(command),
            task_id=args.task,
            run_id=args.run_id,
            step_type=args.step_type,
            after=tuple(args.after),
            job=args.job,
            wait=args.wait,
            require_lease=args.require_lease,
        )
    )


def _actor() -> str:
    """Who acts from this command: the real uid's name, never ``$USER``."""
    return f"{real_user()}@{this_host()} (cli)"


def _confirm(kind: ActionKind, task_id: str, summary: str) -> bool:
    if not sys.stdin.isatty():
        raise ZombietopError(
            f"refusing to {kind} {task_id} without confirmation: stdin is not a terminal; "
            "pass --yes to confirm"
        )
    answer = input(printable(f"{kind} {task_id} ({summary})? [y/N] "))
    return answer.strip().lower() in ("y", "yes")


async def cmd_action(args: argparse.Namespace) -> int:

    ctx = context_of(args)
    kind: ActionKind = args.kind
    if ctx.sources:
        outcome = await _source_action(args, ctx)
        if outcome is not None:
            _print(outcome)
            done = outcome.ok and outcome.outcome is not Outcome.REQUESTED
            return EXIT_OK if done else EXIT_NOT_DONE
    async with await open_store(ctx.db) as store:
        executor = Executor(store, ctx.config, store_path=ctx.db)
        record = await store.get_record(args.task)
        token = None if record.lease is None else record.lease.token
        if not args.yes:
            beat = record.heartbeat
            where = f", stage {beat.stage}" if beat and beat.stage else ""
            pid = f", pid {record.task.pid}" if record.task.pid else ""
            summary = f"{record.task.state}{where}{pid}, token {token}"
            if not _confirm(kind, args.task, summary):
                print("nothing done")
                return EXIT_NOT_DONE
        request = ActionRequest(
            kind=kind, task_id=args.task, expected_token=token, actor=_actor(), reason=args.reason
        )
        outcome = await executor.run(request)
        _print(outcome)
        if outcome.outcome is Outcome.REQUESTED and outcome.request_id is not None:
            outcome = await _wait_for_agent(executor, outcome)
            _print(outcome)
        if outcome.outcome is Outcome.TERM_SENT:
            outcome = await _wait_for_kill(executor, args.task)
            _print(outcome)
    done = outcome.ok and outcome.outcome is not Outcome.REQUESTED
    return EXIT_OK if done else EXIT_NOT_DONE


async def _source_action(args: argparse.Namespace, ctx: Any) -> ActionOutcome | None:
    """Act on a task of a read-only source (``--source``); None when the task is the store's."""
    async with await open_store(ctx.db) as store, open_sources(ctx.sources) as sources:
        monitor = Monitor(
            store, ctx.config, probe=PsutilProbe(), include_finished=True, sources=sources
        )
        snapshot = await monitor.poll()
        if snapshot.error:
            raise ZombietopError(snapshot.error)
        view = snapshot.by_id().get(args.task)
        origin = snapshot.origins.get(args.task)
        if view is None or origin is None:
            return None
        if not args.yes:
            pid = f", pid {view.task.pid} on {view.task.host}" if view.task.pid else ""
            summary = f"{origin.kind} task, {view.health}{pid}"
            if not _confirm(args.kind, args.task, summary):
                print("nothing done")
                return ActionOutcome(
                    request=ActionRequest(
                        kind=args.kind, task_id=args.task, expected_token=None, actor=_actor()
                    ),
                    outcome=Outcome.REFUSED,
                    message="not confirmed",
                )
        executor = Executor(store, ctx.config, store_path=ctx.db)
        request = ActionRequest(
            kind=args.kind,
            task_id=args.task,
            expected_token=view.token,
            actor=_actor(),
            reason=args.reason,
        )
        actions = SourceActions(monitor, executor)
        outcome = await actions.run(request)
        if outcome.outcome is Outcome.REQUESTED and outcome.request_id is not None:
            _print(outcome)
            outcome = await _wait_for_agent(executor, outcome)
        if outcome.outcome is Outcome.TERM_SENT:
            _print(outcome)
            return await _wait_for_kill(executor, args.task, actions)
        return outcome


async def _closed_elsewhere(executor: Executor, task_id: str) -> ActionOutcome:
    """What the zombietop that closed a source task's kill recorded (the store holds no record
    of the task itself, only the events of what was done to it)."""
    request = ActionRequest(
        kind=ActionKind.KILL, task_id=task_id, expected_token=None, actor=_actor()
    )
    for event in await executor.store.events(task_id=task_id, kind=EventKind.ACTION, limit=20):
        said = event.data.get("outcome")
        if event.data.get("action") == "kill" and said not in (None, str(Outcome.TERM_SENT)):
            return ActionOutcome(
                request=request,
                outcome=Outcome(str(said)),
                message=f"finished by {event.actor}: {event.message}",
            )
    return ActionOutcome(
        request=request, outcome=Outcome.GONE, message="finished by another zombietop"
    )


def _print(outcome: ActionOutcome) -> None:
    print(printable(f"{outcome.request.task_id}: {outcome.outcome}: {outcome.message}"), flush=True)


async def _wait_for_agent(executor: Executor, asked: ActionOutcome) -> ActionOutcome:
    """Wait while the task's host agent carries the action out; stop waiting if it is gone."""
    assert asked.request_id is not None
    store = executor.store
    shown = None
    while True:
        request = await store.get_host_request(asked.request_id)
        if request.finished_at is not None:
            outcome = Outcome(request.outcome) if request.outcome else Outcome.REFUSED
            return replace(asked, outcome=outcome, message=f"on {request.host}: {request.message}")
        now = await store.now()
        agent = next((a for a in await store.agents() if a.host == request.host), None)
        if agent is None or not agent.present(now):
            return replace(
                asked,
                message=f"no agent on {request.host}: the {request.kind} stays queued until "
                f"`zombietop agent` runs there",
            )
        text = printable(f"waiting for agent on {request.host} to {request.kind} {request.task_id}")
        if text != shown:
            print(text, file=sys.stderr, flush=True)
            shown = text
        await asyncio.sleep(KILL_POLL_S)


async def _wait_for_kill(
    executor: Executor, task_id: str, actions: SourceActions | None = None
) -> ActionOutcome:
    """Finish the kill through the grace, counting down on a terminal. A source's task
    (``actions``) is read from its source again before its SIGKILL, which the source vouches."""
    shown = None
    tty = sys.stderr.isatty()
    due = False
    while True:
        if actions is not None and due:
            await actions.monitor.poll()
        finishing = executor if actions is None else actions
        for done in await finishing.complete_pending_kills():
            if done.request.task_id == task_id:
                if tty:
                    print(file=sys.stderr)
                return done
        kill = await executor.store.get_open_kill(task_id)
        if kill is None and actions is not None:
            return await _closed_elsewhere(executor, task_id)
        if kill is None:
            # Another zombietop finished it; report what the store says.
            record = await executor.store.get_record(task_id)
            closed = record.pending_kill
            outcome = Outcome(closed.outcome) if closed and closed.outcome else Outcome.GONE
            return ActionOutcome(
                request=ActionRequest(
                    kind=ActionKind.KILL, task_id=task_id, expected_token=None, actor=_actor()
                ),
                outcome=outcome,
                message=(
                    f"finished by the agent on {closed.host}"
                    if closed and closed.host and closed.host != executor.host
                    else "finished by another zombietop"
                ),
            )
        left = max(0.0, kill.deadline - await executor.store.now())
        due = left == 0.0
        text = printable(
            f"waiting for {task_id} (pid {kill.pid}) to exit: SIGKILL in {format_age(left)}"
        )
        if tty:
            print(f"\r{text}   ", end="", file=sys.stderr, flush=True)
        elif text != shown:
            print(text, file=sys.stderr, flush=True)
        shown = text
        await asyncio.sleep(KILL_POLL_S)
