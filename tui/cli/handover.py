"""``zombietop handover`` (what the next person on call needs) and ``zombietop incident TASK``
(one incident's whole story). Both read the store only, and open it read-only."""

from __future__ import annotations

import argparse
import json
from datetime import datetime, tzinfo

from zombietop.errors import ZombietopError
from zombietop.oncall.handover import read_handover
from zombietop.oncall.incident_story import stories
from zombietop.printable import printable
from zombietop.store import open_store
from zombietop.tui.cli.context import EXIT_OK, add_command, context_of, duration
from zombietop.tui.handover_text import (
    FORMATS,
    handover_json,
    handover_text,
    story_json,
    story_text,
)


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Register ``handover`` and ``incident`` on the ``zombietop`` subparsers."""
    handover = add_command(
        sub,
        "handover",
        parents=[common],
        summary="print what the next person on call needs: open, acked, resolved, silences",
        about="Print what a person taking over the pager needs: the incidents open and "
        "nobody on them; those acked, by whom and until when; those that ended in the window, "
        "how and by whom; the silences that end in the next 8 hours; and the schedules missed. "
        "It is read from the store's events, acks and silences. Times are in UTC, with the "
        "machine's own zone beside them when that is not UTC.",
        examples=(
            "zombietop handover --since 12h > handover.md",
            "zombietop handover --format slack",
            "zombietop handover --format json",
        ),
    )
    handover.add_argument(
        "--since",
        type=duration,
        default=8 * 3600.0,
        metavar="DURATION",
        help="how far back the window goes (default: 8h)",
    )
    handover.add_argument(
        "--format",
        choices=(*FORMATS, "json"),
        default="markdown",
        help="markdown (md) to paste into a ticket or a wiki, slack to paste into Slack (its "
        "mrkdwn: nothing in it mentions anyone), or json (default: markdown)",
    )
    handover.set_defaults(handler=cmd_handover)
    incident = add_command(
        sub,
        "incident",
        parents=[common],
        summary="print one incident's whole story: pages, notes, acks, actions, all-clear",
        about="Print the whole story of a task's newest incident, one line for each thing "
        "that happened, with who and when: the page, each notice again, the notes, the acks, "
        "a kill, resume or discard, and the all-clear. --back 1 prints the one before it.",
        examples=("zombietop incident export-2031", "zombietop incident export-2031 --back 1"),
    )
    incident.add_argument(
        "task", metavar="TASK", help="the task id, as `zombietop status` shows it"
    )
    incident.add_argument(
        "--back",
        type=int,
        default=0,
        metavar="N",
        help="the incident N before the newest (default: 0, the newest)",
    )
    incident.add_argument("--json", action="store_true", help="print it as JSON")
    incident.set_defaults(handler=cmd_incident)


def local_zone() -> tzinfo | None:
    """The machine's own time zone, for the times beside UTC."""
    return datetime.now().astimezone().tzinfo


async def cmd_handover(args: argparse.Namespace) -> int:

    ctx = context_of(args)
    async with await open_store(ctx.db, read_only=True) as store:
        now = await store.now()
        found = await read_handover(
            store, now=now, since=now - args.since, max_silence=ctx.config.oncall.max_silence
        )
    if args.format == "json":
        print(json.dumps(handover_json(found), indent=2))
    else:
        print(handover_text(found, local_zone(), FORMATS[args.format]), end="")
    return EXIT_OK


async def cmd_incident(args: argparse.Namespace) -> int:

    ctx = context_of(args)
    if args.back < 0:
        raise ZombietopError("--back counts incidents back from the newest: 0 or more")
    async with await open_store(ctx.db, read_only=True) as store:
        now = await store.now()
        found = await stories(store, args.task)
    task = printable(args.task)
    if not found:
        raise ZombietopError(f"{task} has had no incident (no page in the store's event log)")
    if args.back >= len(found):
        raise ZombietopError(
            f"{task} has had {len(found)} incident{'s' if len(found) > 1 else ''}: "
            f"--back goes up to {len(found) - 1}"
        )
    story = found[-1 - args.back]
    if args.json:
        print(json.dumps(story_json(story), indent=2))
    else:
        print("\n".join(story_text(story, now, local_zone())))
    return EXIT_OK
