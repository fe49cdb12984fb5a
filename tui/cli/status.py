"""``zombietop status``: one snapshot as a readable table, one JSON object, or a Nagios plugin
line, with the plugin API's exit status."""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import textwrap
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from zombietop.config import Config
from zombietop.durations import format_age
from zombietop.errors import MissingExtra, ZombietopError
from zombietop.extras import require
from zombietop.fleet import AgentPresence, WatchdogLease
from zombietop.health import Health, NagiosLevel, ScheduleHealth
from zombietop.judge.monitor import Monitor, Snapshot, TaskView
from zombietop.judge.snapshot import finished_view
from zombietop.judge.unlisted import unlisted_lines
from zombietop.judge.verdict import format_progress
from zombietop.model import HeartbeatSource, Note, ProcessSample, TaskState
from zombietop.oncall.acks import capped_words, recent_notes
from zombietop.output import LastOutput, last_outputs, with_last_output
from zombietop.printable import ERROR_LIMIT, bounded, printable
from zombietop.procs import PsutilProbe
from zombietop.sources import open_sources
from zombietop.store import Store, open_store
from zombietop.store.interface import FinishedKey
from zombietop.tui.cli.context import (
    EXIT_UNKNOWN,
    Parser,
    add_command,
    context_of,
    source_flags,
)
from zombietop.watch.failed_runs import failure_line, older_failures, open_failures

Level = NagiosLevel
"""How ``status`` exits: the Nagios plugin API, which every monitoring system reads."""


def level(snapshot: Snapshot) -> Level:
    """The worst of the snapshot's tasks and schedules, as a plugin state.

    Acks and silences change who is paged, never the state: a silenced stall is still CRITICAL,
    as a Nagios downtime leaves a host DOWN. A source that cannot be read is UNKNOWN, unless
    what could be read is CRITICAL: a known "act now" is said before a "cannot say". Tasks
    left unread past ``[monitor] read_at_most`` are a WARNING: all is not known to be well.
    """
    levels = [_level_of(view) for view in snapshot.tasks]
    if snapshot.left_unread:
        levels.append(Level.WARNING)
    if open_failures(snapshot):
        levels.append(Level.CRITICAL)  # a failed run, until a later run of its job succeeds
    if snapshot.missed:
        levels.append(Level.CRITICAL)
    if any(view.health is ScheduleHealth.RUNNING_LONG for view in snapshot.schedules):
        levels.append(Level.WARNING)
    worst = max(levels, default=Level.OK)
    if snapshot.source_errors and worst is not Level.CRITICAL:
        return Level.UNKNOWN
    return worst


def source_error_lines(snapshot: Snapshot) -> list[str]:
    """One line per source that could not be read (its tasks are missing from the rest), and
    one per source whose read skipped something."""
    return [
        *(
            f"UNKNOWN {error} (its tasks are not shown)"
            for _, error in sorted(snapshot.source_errors.items())
        ),
        *(f"NOTE {note}" for _, note in sorted(snapshot.source_notes.items())),
    ]


def _level_of(view: TaskView) -> Level:
    """The task's health's level; a task over one of its budgets is at least a WARNING."""
    health_level = view.health.nagios_level
    return max(health_level, Level.WARNING) if view.verdict.flags else health_level


def _human_lines(
    views: Iterable[TaskView],
    outputs: Mapping[str, LastOutput],
    now: float,
    failures: Iterable[TaskView] = (),
) -> list[str]:
    """The page lines of ``views`` at ``now``; those that need a human end with their last
    output. The open ``failures`` among them read as their page does."""
    failed = {view.task_id for view in failures}
    lines = []
    for view in views:
        last = outputs.get(view.task_id)
        if view.task_id in failed:
            lines.append(failure_line(view, last, now))
            continue
        line = view.verdict.context(now)
        if view.health.asks_a_human:
            line = with_last_output(line, last, now)
        lines.append(line)
    return lines


def _urgent(snapshot: Snapshot) -> list[TaskView]:
    """The tasks to act on now: those that page, then the failed runs still open (the older
    ones after the snapshot's, as ``open_failures`` gives them)."""
    paging = [view for view in snapshot.tasks if view.health.pages]
    return [*paging, *open_failures(snapshot)]


def nagios_output(snapshot: Snapshot, outputs: Mapping[str, LastOutput] | None = None) -> str:
    """The plugin output: a summary line with performance data, then one line per task to act on.

    ``ZOMBIETOP CRITICAL - 1 dead, 2 stalled | dead=1 reclaimable=0 stalled=2 ... over_budget=0``
    """
    state = level(snapshot)
    urgent = _urgent(snapshot)
    warned = [view for view in snapshot.tasks if _level_of(view) is Level.WARNING]
    over = sum(1 for view in snapshot.tasks if view.verdict.flags)
    found = [f"{snapshot.counts[h]} {h}" for h in Health if h.pages and snapshot.counts[h]]
    if snapshot.missed:
        found.append(f"{snapshot.missed} schedule{'s' if snapshot.missed > 1 else ''} missed")
    failing = len(open_failures(snapshot))
    if failing:
        found.append(f"{failing} failed run{'s' if failing > 1 else ''}")
    if snapshot.silenced:
        found.append(f"{snapshot.silenced} silenced")
    found.extend(f"{snapshot.counts[h]} {h}" for h in Health if h.warns and snapshot.counts[h])
    if over:
        found.append(f"{over} over budget")
    unread = len(snapshot.source_errors)
    if unread:
        found.append(f"{unread} source{'s' if unread > 1 else ''} cannot be read")
    if snapshot.left_unread:
        found.append(f"{snapshot.left_unread:,} not read ([monitor] read_at_most)")
    summary = ", ".join(found) or f"{len(snapshot.tasks)} tasks, none stuck"
    perfdata = " ".join(
        [
            *(f"{health}={snapshot.counts[health]}" for health in Health),
            f"over_budget={over}",
            f"missed={snapshot.missed}",
            f"silenced={snapshot.silenced}",
            f"acked={len(snapshot.oncall.acks)}",
        ]
    )
    lines = [f"ZOMBIETOP {state.name} - {summary} | {perfdata}", *source_error_lines(snapshot)]
    lines.extend(printable(view.line) for view in snapshot.schedules if view.health.pages)
    failures = open_failures(snapshot)
    lines.extend(_human_lines([*urgent, *warned], outputs or {}, snapshot.read_at, failures))
    return printable_lines(lines)


def nagios_unknown(reason: str) -> str:
    """The plugin output when zombietop cannot look: the reason, and no performance data."""
    return bounded(f"ZOMBIETOP UNKNOWN - {reason}", limit=ERROR_LIMIT)


def watchdog_words(lease: WatchdogLease | None, now: float | None) -> str:
    """``watchdog: watchdog@db1 pid 4121 active (renewed 3s ago)``, or that none is."""
    if lease is None or now is None:
        return "watchdog: none has run on this store"
    ago = format_age(max(now - lease.renewed_at, 0.0))
    if lease.active(now):
        return f"watchdog: {lease.owner} active (renewed {ago} ago)"
    return f"watchdog: none active; {lease.owner} last renewed its lease {ago} ago"


def _progress_words(view: TaskView) -> str:
    """The percent, ``?`` when the job has not said it, ``-`` when its engine never does."""
    beat = view.heartbeat
    if beat is None or (beat.progress is None and beat.source is HeartbeatSource.SUPERVISOR):
        return "-"
    return format_progress(beat.progress)


def _heartbeat_words(view: TaskView, now: float) -> str:
    age = view.verdict.heartbeat_age(now)
    if age is None:
        return "-"
    observed = " (observed)" if view.heartbeat is not None and view.heartbeat.observed else ""
    return f"{format_age(age)}{observed}"


def _lease_words(view: TaskView, now: float) -> str:
    left = view.verdict.lease_expires_in(now)
    if left is None:
        return "-"
    return f"in {format_age(left)}" if left >= 0 else f"{format_age(left)} ago"


def render_table(
    snapshot: Snapshot,
    width: int | None = None,
    outputs: Mapping[str, LastOutput] | None = None,
    *,
    watchdog: str | None = None,
) -> str:
    """Render the snapshot as plain text: counts (and the ``watchdog`` line when given, from
    ``watchdog_words``), one row per task cut at ``width`` (None: whole rows), then what to
    act on."""
    table = Table(snapshot, width, outputs or {}, watchdog=watchdog)
    return printable_lines([*table.head(), *table.tail()])


HEADER = (
    "HEALTH",
    "TASK",
    "STAGE",
    "PROGRESS",
    "HEARTBEAT",
    "LEASE",
    "ATTEMPT",
    "FLAGS",
    "ON-CALL",
)


class Table:
    """The readable ``status``: the head (counts and the snapshot's rows), rows added after it
    as they are read (``status --all``'s older tasks), and the tail (what to act on)."""

    def __init__(
        self,
        snapshot: Snapshot,
        width: int | None,
        outputs: Mapping[str, LastOutput],
        *,
        watchdog: str | None = None,
        more: bool = False,
    ) -> None:
        """``more``: rows will follow the snapshot's, so the header is due even without any."""
        self.snapshot, self.width, self.outputs, self.watchdog = snapshot, width, outputs, watchdog
        self.now = snapshot.read_at
        self.rows = [self.cells(view) for view in snapshot.tasks]
        self.has_rows = bool(self.rows) or more
        self.widths = [max(len(row[i]) for row in [HEADER, *self.rows]) for i in range(len(HEADER))]

    def cells(self, view: TaskView) -> tuple[str, ...]:
        now = self.now
        return tuple(
            printable(cell)
            for cell in (
                str(view.health),
                view.task_id,
                (view.heartbeat.stage if view.heartbeat and view.heartbeat.stage else "-"),
                _progress_words(view),
                _heartbeat_words(view, now),
                _lease_words(view, now),
                str(view.task.attempt),
                ",".join(str(f) for f in view.verdict.flags) or "-",
                _oncall_words(view, self.snapshot),
            )
        )

    def line(self, row: tuple[str, ...]) -> str:
        """One row, padded to the widths so far; a wider cell widens its column from here on
        (rows read as they come cannot be measured before they are printed)."""
        self.widths = [max(w, len(cell)) for w, cell in zip(self.widths, row, strict=True)]
        return self._padded(row)

    def _padded(self, row: tuple[str, ...]) -> str:
        cells = (cell.ljust(w) for cell, w in zip(row, self.widths, strict=True))
        return "  ".join(cells).rstrip()[: self.width]

    def head(self) -> list[str]:
        counts = "  ".join(f"{health} {n}" for health, n in self.snapshot.counts.items() if n)
        lines = [counts or "no tasks in the store", *source_error_lines(self.snapshot)]
        if self.watchdog is not None:
            lines.append(self.watchdog)
        if self.has_rows:
            lines.append("")
            # The widths were measured over these rows already.
            lines.extend(self._padded(row) for row in [HEADER, *self.rows])
        return lines

    def tail(self) -> list[str]:
        snapshot = self.snapshot
        unlisted = unlisted_lines(snapshot.counted)
        lines = ["", *unlisted] if unlisted else []
        if not self.has_rows:
            return lines + _oncall_lines(snapshot)
        return lines + _tail_lines(snapshot, self.outputs, self.now)


def _tail_lines(snapshot: Snapshot, outputs: Mapping[str, LastOutput], now: float) -> list[str]:
    lines: list[str] = []
    urgent = _urgent(snapshot)
    if urgent:
        lines.append("")
        lines.extend(_human_lines(urgent, outputs, now, open_failures(snapshot)))
    lines.extend(_oncall_lines(snapshot))
    notes = [f"{view.task_id}: {view.agent_note}" for view in snapshot.tasks if view.agent_note]
    if notes:
        lines.append("")
        lines.extend(notes)
    if snapshot.agents and snapshot.taken_at is not None:
        lines.append("")
        lines.append("agents: " + ", ".join(_agent_words(a, now) for a in snapshot.agents))
    return lines


def printable_lines(lines: list[str]) -> str:
    """Join ``lines`` for a terminal, each made printable: the text comes from the store."""
    return "\n".join(printable(line) for line in lines)


def _oncall_words(view: TaskView, snapshot: Snapshot) -> str:
    """``acked:ana``, ``silenced:#3``, both, or ``-``: a word, so it reads without colour."""
    words = []
    ack = snapshot.oncall.ack_for(view.task_id)
    if ack is not None:
        words.append(f"acked:{printable(ack.by)}")
    silence = snapshot.oncall.silence_for(view.task)
    if silence is not None:
        words.append(f"silenced:#{silence.silence_id}")
    return ",".join(words) or "-"


def _oncall_lines(snapshot: Snapshot) -> list[str]:
    """The schedules, acks and silences under the table, one line each."""
    lines: list[str] = []
    now = snapshot.read_at
    if snapshot.schedules:
        lines.append("")
        lines.extend(f"schedule {printable(view.line)}" for view in snapshot.schedules)
    acked = [
        f"{printable(ack.task_id)} {printable(ack.words(now))}"
        for ack in snapshot.oncall.acks.values()
    ]
    silences = [
        f"silence {s.silence_id} ({s.matcher} {printable(s.pattern)}) by {printable(s.by)}, "
        f"ends in {format_age(max(s.until - now, 0))}{capped_words(s)}: {printable(s.reason)}"
        for s in snapshot.oncall.silences
    ]
    if acked or silences:
        lines.append("")
        lines.extend([*acked, *silences])
    return lines


def _agent_words(agent: AgentPresence, now: float) -> str:
    if not agent.present(now):
        return f"{agent.host} no agent (last seen {format_age(max(now - agent.seen_at, 0))} ago)"
    skew = agent.clock_skew_s
    return f"{agent.host} ok" + ("" if skew is None else f" (clock {skew:+.1f}s)")


# The command ----------------------------------------------------------------------------


STATUS_SAMPLE_GAP = 0.5
"""Seconds between the two process samples ``status`` takes, so CPU% is never unknown."""


async def cmd_status(args: argparse.Namespace) -> int:
    """One snapshot; the exit status follows the Nagios plugin API (``status.Level``)."""
    if args.output is not None and not args.prometheus:
        print("zombietop: status: --output PATH writes --prometheus only", file=sys.stderr)
        return Level.UNKNOWN
    if args.prometheus:
        try:
            require("`zombietop status --prometheus`", "prometheus_client")
        except MissingExtra as exc:
            print(bounded(f"zombietop: {exc}", limit=ERROR_LIMIT), file=sys.stderr)
            return Level.UNKNOWN
    try:
        ctx = context_of(args)
        async with (
            await open_store(ctx.db, read_only=True) as store,
            open_sources(ctx.sources) as sources,
        ):
            # --all streams the store's older finished tasks; an engine's are read whole.
            stream = args.all and not sources
            probe = PsutilProbe()  # so a task whose process died shows as dead
            monitor = Monitor(
                store,
                ctx.config,
                probe=probe,
                include_finished=args.all and not stream,
                sources=sources,
            )
            snapshot = await monitor.poll()
            if any(_first_sight(view.process) for view in snapshot.tasks):
                # CPU% is a delta: as top -n 1 does, sample twice a moment apart.
                await asyncio.sleep(STATUS_SAMPLE_GAP)
                snapshot = await monitor.poll()
            if snapshot.error:
                raise ZombietopError(snapshot.error)
            # A failed run past the finished window is still open: the jobs table says which.
            snapshot = await older_failures(store, ctx.config, snapshot)
            older = None
            if stream and snapshot.taken_at is not None:
                older = await Older.count(store, ctx.config, snapshot.taken_at)
                snapshot = older.counted_in(snapshot)
            outputs = last_outputs(store, (view.task for view in snapshot.tasks), monitor.host)
            watchdog = await store.watchdog_lease()
            pings = await _last_pings(store) if args.json else []
            notes = await recent_notes(store) if args.json else {}
            if not args.prometheus:
                await _print_snapshot(args, snapshot, outputs, watchdog, older, pings, notes)
    except ZombietopError as exc:
        if args.nagios:
            print(nagios_unknown(str(exc)))
        else:
            print(bounded(f"zombietop: {exc}", limit=ERROR_LIMIT), file=sys.stderr)
        if args.prometheus:
            # node_exporter still learns something: zombietop_store_up 0.
            return _prometheus_exit(Snapshot(taken_at=None, error=str(exc)), args.output)
        return Level.UNKNOWN
    if args.prometheus:
        return _prometheus_exit(snapshot, args.output)
    return level(snapshot)


async def _last_pings(store: Store) -> list[dict[str, Any]]:
    """The last ping of each pinged task, for ``--json`` (the ping server's module loads only
    for it)."""
    from zombietop.serve.pings import last_pings

    return await last_pings(store)


async def _print_snapshot(
    args: argparse.Namespace,
    snapshot: Snapshot,
    outputs: Mapping[str, LastOutput],
    watchdog: WatchdogLease | None,
    older: Older | None,
    pings: list[dict[str, Any]],
    notes: Mapping[str, Sequence[Note]],
) -> None:
    """Print the snapshot as asked, then (``--all``) the older tasks as they are read."""
    if args.json:
        # Only --json loads its writer: plain `status` starts without it.
        from zombietop.tui.cli.status_json import (
            JsonStream,
            snapshot_to_json,
            task_json,
            tasks_json,
        )

        stream = JsonStream(
            snapshot_to_json(snapshot, None, watchdog, pings, tasks=[]), sys.stdout.write
        )
        for item in tasks_json(snapshot, outputs, notes):
            stream.task(item)
        if older is not None:
            now = snapshot.read_at
            async for view in older.views():
                stream.task(task_json(view, snapshot, None, now))
        stream.close()
    elif args.nagios:
        print(nagios_output(snapshot, outputs))
    else:
        # Said once a watchdog has held the store; a store never watched stays as it was.
        words = None if watchdog is None else watchdog_words(watchdog, snapshot.taken_at)
        more = older is not None and older.total > 0
        table = Table(snapshot, _table_width(), outputs, watchdog=words, more=more)
        print(printable_lines(table.head()))
        if older is not None:
            async for view in older.views():
                print(printable(table.line(table.cells(view))))
        tail = table.tail()
        if tail:
            print(printable_lines(tail))


FINISHED_PAGE = 500
"""Finished tasks ``status --all`` reads at a time: its memory is one page's, whatever the
store holds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Older:
    """The tasks finished before the finished window, for ``status --all``: counted first, then
    read a page at a time, newest first, and judged as they come."""

    store: Store
    config: Config
    now: float
    since: float
    counts: Mapping[TaskState, int]

    @classmethod
    async def count(cls, store: Store, config: Config, now: float) -> Older:
        """Count them; ``now`` is the snapshot's moment (its window ends there)."""
        since = now - config.finished_window
        counts = await store.finished_counts(since)
        return cls(store=store, config=config, now=now, since=since, counts=counts)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def counted_in(self, snapshot: Snapshot) -> Snapshot:
        """The snapshot with these tasks in its counts."""
        counts = dict(snapshot.counts)
        for state, n in self.counts.items():
            health = Health.of_finished(state)
            counts[health] = counts.get(health, 0) + n
        return replace(snapshot, counts=counts)

    async def views(self) -> AsyncIterator[TaskView]:
        after: FinishedKey = (self.since, "")
        while True:
            page = await self.store.finished_page(after, limit=FINISHED_PAGE)
            for record in page:
                yield finished_view(self.now, record, self.config)
            if len(page) < FINISHED_PAGE:
                return
            last = page[-1].task
            assert last.finished_at is not None
            after = (last.finished_at, last.task_id)


def _table_width() -> int | None:
    """A terminal's width; None (whole rows) in a pipe or a file, where a cut loses columns
    nobody can scroll to (cron mail, a ticket, a grep)."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def _first_sight(process: ProcessSample | None) -> bool:
    """True for a live process sampled once: its CPU% needs a second look."""
    return process is not None and not process.gone and process.cpu_percent is None


def _prometheus_exit(snapshot: Snapshot, output: Path | None) -> int:
    """Print or write the metrics; exit 0 once they are out, whatever the tasks' state: the
    textfile idiom (``status --prometheus > f.tmp && mv f.tmp f.prom``) must update while
    something is critical, and while the store is down (``zombietop_store_up 0``)."""
    return Level.OK if _print_prometheus(snapshot, output) else Level.UNKNOWN


def _print_prometheus(snapshot: Snapshot, output: Path | None) -> bool:
    """The watchdog's metrics, once: to ``output`` atomically, or to stdout. False (and the
    reason on stderr) when ``output`` cannot be written."""
    from zombietop.watch.metrics import Metrics

    metrics = Metrics()
    # No watchdog here: every task that pages, and every failed run still open, has (or is
    # about to have) an incident.
    metrics.update(snapshot, incidents_open=snapshot.paging + len(open_failures(snapshot)))
    if output is not None:
        try:
            metrics.write_textfile(output)
        except ZombietopError as exc:
            print(bounded(f"zombietop: {exc}", limit=ERROR_LIMIT), file=sys.stderr)
            return False
        return True
    text = metrics.render().decode()
    if sys.stdout.isatty():
        # Label values hold untrusted text verbatim (the format escapes only \\, " and
        # newlines): a person reading it on a terminal gets its control characters escaped.
        text = "\n".join(printable(line) for line in text.splitlines()) + "\n"
    sys.stdout.write(text)
    return True


def _one_of(words: Sequence[str]) -> str:
    """``a, b or c``."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def status_epilog() -> str:
    """The exit statuses, with the healths of each level read from their traits, so a new
    health is named where it belongs."""
    warning = [str(h) for h in Health if h.nagios_level is Level.WARNING]
    critical = [str(h) for h in Health if h.nagios_level is Level.CRITICAL]
    text = (
        "exit status (the Nagios plugin API): 0 OK; "
        f"1 WARNING (a task {_one_of(warning)} or over a budget, a schedule running long, "
        "tasks left unread past [monitor] read_at_most); "
        f"2 CRITICAL (a task {_one_of(critical)}, a failed run with no later good run of "
        "its job, a schedule missed); "
        "3 UNKNOWN (the store or config cannot be read, or a usage error; or a --source "
        "cannot be read and nothing is CRITICAL: the rest is printed all the same). "
        "With --prometheus: 0 once the metrics are written (the store's state is in them), "
        "3 when they cannot be."
    )
    return textwrap.fill(text, width=79)


def add_parser(sub: argparse._SubParsersAction[Parser], common: argparse.ArgumentParser) -> None:
    status = add_command(
        sub,
        "status",
        parents=[common, source_flags()],
        summary="print one snapshot; exit 0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN (Nagios)",
        about="Print one snapshot of the store, for scripts and monitoring systems: a table "
        "(cut to the terminal's width on a terminal, whole rows in a pipe or a file), then the "
        "page line of every task that needs a human.",
        examples=(
            "zombietop status",
            "zombietop status --nagios",
            "zombietop status --json --all",
        ),
        epilog=status_epilog(),
    )
    status.usage_exit = EXIT_UNKNOWN
    form = status.add_mutually_exclusive_group()
    form.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    form.add_argument(
        "--nagios",
        action="store_true",
        help="the Nagios plugin output: a summary line with performance data",
    )
    form.add_argument(
        "--prometheus",
        action="store_true",
        help="the Prometheus text format, as `watch --metrics` serves it "
        "(for node_exporter's textfile collector); exits 0 once written",
    )
    status.add_argument(
        "--output",
        type=Path,
        metavar="PATH",
        help="with --prometheus: write to PATH atomically (e.g. "
        "/var/lib/prometheus/node-exporter/zombietop.prom) instead of stdout",
    )
    status.add_argument(
        "--all",
        action="store_true",
        help="include every finished task, not just those of the last [monitor] "
        "finished_window (1h by default): the older ones follow, newest first, as read",
    )
    status.set_defaults(handler=cmd_status)
