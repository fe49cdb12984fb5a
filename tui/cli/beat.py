"""``zombietop beat``: one heartbeat from inside a command that ``zombietop run`` wraps."""

from __future__ import annotations

import argparse
import os
import time

from zombietop.errors import HeartbeatParseError, LeaseLost, ZombietopError
from zombietop.heartbeat_line import BeatLine, format_timestamp, parse_line
from zombietop.store import open_store
from zombietop.tui.cli.context import EXIT_OK, add_command, context_of, duration


async def cmd_beat(args: argparse.Namespace) -> int:
    ctx = context_of(args)
    task_id = args.task or os.environ.get("ZOMBIETOP_TASK")
    if not task_id:
        raise ZombietopError(
            "which task? pass --task ID (or run under `zombietop run`, which sets ZOMBIETOP_TASK)"
        )
    try:
        beat = _beat_from_args(args)
    except HeartbeatParseError as exc:
        raise ZombietopError(str(exc)) from None
    owner, token = _lease_of_the_run(task_id)
    async with await open_store(ctx.db) as store:
        try:
            await store.record_heartbeat(task_id, beat, owner=owner, token=token)
        except LeaseLost as exc:
            raise ZombietopError(
                f"not recording a heartbeat for {task_id}: {exc}. The run this beat speaks for "
                "was resumed, discarded or reclaimed, or has ended: only its current attempt "
                "may beat"
            ) from None
    return EXIT_OK


def _lease_of_the_run(task_id: str) -> tuple[str, int]:
    """Return the lease ``zombietop run`` hands its command, which fences every beat.

    A beat without it is refused: anyone who can write the store could otherwise make a
    stalled task look alive.
    """
    owner = os.environ.get("ZOMBIETOP_LEASE_OWNER", "")
    token = os.environ.get("ZOMBIETOP_LEASE_TOKEN", "")
    if owner and token.isdigit():
        return owner, int(token)
    found = "are not set" if not (owner or token) else f"are {owner!r} and {token!r}"
    raise ZombietopError(
        f"not recording a heartbeat for {task_id}: a beat must carry the lease of its run, and "
        f"ZOMBIETOP_LEASE_OWNER and ZOMBIETOP_LEASE_TOKEN {found}. Call `zombietop beat` inside "
        "the command that `zombietop run` wraps (it sets both), or append the line to "
        '"$ZOMBIETOP_HEARTBEAT_FILE" there'
    )


def _beat_from_args(args: argparse.Namespace) -> BeatLine:
    if args.line:
        return parse_line(args.line)
    parts: list[str] = []
    if args.stage:
        parts.append(f'stage="{_escape(args.stage)}"')
    if args.progress is not None:
        parts.append(f"p={args.progress:g}")
    if args.eta:
        parts.append(f"eta={args.eta}")
    for key, value in args.counter or []:
        parts.append(f"{key}={value:g}")
    if args.checkpoint:
        parts.append(f'checkpoint="{_escape(args.checkpoint)}"')
    if args.request:
        parts.append(f'req="{_escape(args.request)}"')
    if not parts:
        raise ZombietopError(
            "nothing to beat: give --stage/--progress (or --line 'stage=... p=...')"
        )
    # This host's clock: against the time the store records the beat, it measures the skew.
    parts.append(f"at={format_timestamp(time.time())}")
    # Through the parser, so a flag beat follows exactly the rules a heartbeat-file line does.
    return parse_line(" ".join(parts))


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def _counter(text: str) -> tuple[str, float]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"{text!r} is not key=value (e.g. rows=8200000)")
    try:
        return key, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"counter {key!r}: {value!r} is not a number") from None


def _eta(text: str) -> str:
    # Checked here, but sent as written: the beat line carries the job's own words.
    duration(text)
    return text


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    beat = add_command(
        sub,
        "beat",
        parents=[common],
        summary="record one heartbeat from inside a command that `zombietop run` wraps",
        about="Record one heartbeat of a task, from a shell script that `zombietop run` wraps. "
        "The task and its lease come from the environment the wrapper sets; a beat without "
        "the run's lease is refused, so nobody outside the run can make a stalled task look "
        "alive.",
        examples=(
            "zombietop beat --stage transform --progress 61",
            "zombietop beat --line 'stage=load p=90 eta=5m'",
        ),
    )
    beat.add_argument("--task", help="task id (default: $ZOMBIETOP_TASK)")
    beat.add_argument("--stage", help="current stage, e.g. transform")
    beat.add_argument("--progress", type=float, help="percent done, 0-100")
    beat.add_argument(
        "--counter",
        type=_counter,
        action="append",
        metavar="KEY=N",
        help="a monotonic counter (repeatable)",
    )
    beat.add_argument("--checkpoint", help="last durable checkpoint")
    beat.add_argument("--eta", type=_eta, help="time left, e.g. 42m")
    beat.add_argument("--request", metavar="NAME", help="the outbound request now in flight")
    beat.add_argument("--line", help="a whole heartbeat line instead of the flags")
    beat.set_defaults(handler=cmd_beat)
