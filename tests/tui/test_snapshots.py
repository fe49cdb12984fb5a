"""What the dashboard looks like, frozen clock, sample fleet (tui/testing/)."""

from __future__ import annotations

from textual.pilot import Pilot

from tests.tui.helpers import make_app, settle, steady_cursor
from zombietop.clock import FakeClock
from zombietop.judge.monitor import build_snapshot
from zombietop.tui.testing import (
    NOW,
    SampleSource,
    sample_config,
    sample_snapshot,
    synthetic_records,
    untrusted_outputs,
    untrusted_snapshot,
)


def test_main_80x24(snap_compare):
    """Header with store, 'every 3600s', 00:53:20 UTC and a word+number for every health
    ('⊠ quarantined 1'); the table most urgent first (dead, reclaimable, stalled, spinning, ...
    discarded) with only HEALTH, TASK, PROGRESS, BEAT and LEASE columns, the task column wider
    with the room left; resize-9001 reads 'resize-9001 !request' beside '● healthy';
    publish-2032's progress reads 'blocked by export-2031 (reclaimable)' over the empty BEAT and
    LEASE cells; every bar is one neutral colour; the footer lists Open, a Ack, r Resume,
    d Discard, K Kill, ? Help, / Filter, s Sort, p Pause, q Quit."""
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=settle)


def test_main_160x48(snap_compare):
    """Every column: stage, stage and task budget bars with used/limit (export-2031 4h40m/45m!,
    limit from its step type; the bars blue, the '!' red), PID with CPU% (etl-0417 '3907
    gone'), owner@host and, last, the attempt (#2 for train-0008); export-2031 reads
    'export-2031 !stage' and resize-9001 'resize-9001 !request'."""
    assert snap_compare(make_app(), terminal_size=(160, 48), run_before=settle)


def test_detail_view(snap_compare):
    """Enter on export-2031: its context line exactly as paged, a progress sparkline that climbs
    then flattens at 61%, counters rows=8200000, checkpoint, lease owner/token 7/expired 3h50m
    ago, process pid 4121 alive, three budgets with 'limit from' (stage from config.toml
    [step_types.export]), and its two events."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=(110, 40), run_before=run_before)


def test_kill_confirmation(snap_compare):
    """k on thumbs-7781: a dialog 'kill thumbs-7781?' saying SIGTERM to pid 5230's process group
    then SIGKILL after 30s, with task, health, stage resize, progress 61%, heartbeat 6m05s old,
    owner, pid 5230 and token 2; the Cancel button has focus."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("down", "down", "K")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_kill_countdown(snap_compare):
    """thumbs-7781 has a pending kill: its health cell reads '↯ TERM 23s' (reverse red), the
    countdown of what is happening to it now."""
    source = SampleSource([sample_snapshot(kill_pending={"thumbs-7781"})])
    assert snap_compare(make_app(source), terminal_size=(80, 24), run_before=settle)


def test_read_only_main(snap_compare):
    """A READ-ONLY badge in the header; the footer has no Ack, Resume, Discard or Kill."""
    assert snap_compare(make_app(read_only=True), terminal_size=(80, 24), run_before=settle)


def test_wall_120x40(snap_compare):
    """Wall: no table, no footer; big digits in a card per health (dead, reclaimable and stalled
    on red, spinning, quarantined and interrupted on yellow), finished counts, then the worst
    offenders' context lines (export-2031's leads 'export-2031 reclaimable, stage_overrun:'),
    the last 'backup-0731 failed: exit 3 after 35m00s ... - rerun, resume or discard'."""
    assert snap_compare(make_app(wall=True), terminal_size=(120, 40), run_before=settle)


def test_wall_80x24(snap_compare):
    """The same wall at 80x24: every card still shows its word and number; offender lines are
    cropped, not wrapped into each other."""
    assert snap_compare(make_app(wall=True), terminal_size=(80, 24), run_before=settle)


def test_active_filter(snap_compare):
    """'/export': only export-2031 and export-2029 remain; the header says filter 'export'
    (2 of 14); the filter box stays open at the bottom."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("slash", *"export", "enter")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_error_banner(snap_compare):
    """After a failed poll, a red banner 'data 14s old: store ... locked ...' under the header,
    and the last good table still on screen."""
    source = SampleSource()
    clock = FakeClock(NOW)

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        source.fail_with = (
            "store /var/lib/zombietop/zombietop.db stayed locked by another writer for over 5s"
        )
        clock.advance(14)
        pilot.app.poll()  # type: ignore[attr-defined]
        await settle(pilot)

    assert snap_compare(
        make_app(source, clock=clock), terminal_size=(80, 24), run_before=run_before
    )


def _hostile_app():  # type: ignore[no-untyped-def]
    from zombietop.tui.testing import hostile_events, hostile_snapshot

    return make_app(SampleSource([hostile_snapshot()], events=hostile_events()))


def test_hostile_task_main_and_events_shown_escaped(snap_compare):
    """A task whose id, stage, owner, host and events hold OSC/CSI/C1 controls: every one reads
    escaped ('evil\\x1b]2;owned\\x07\\x1b[2J-1', 'load\\x1b[2J', 'run\\x1b]2;owned\\x07@...'),
    the screen is not wiped, and the events pane (e) shows the actor and message escaped."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)

    assert snap_compare(_hostile_app(), terminal_size=(160, 24), run_before=run_before)


def test_hostile_task_detail_shown_escaped(snap_compare):
    """Enter on the hostile task: its page line, run, step, stage, counters ('rows\\x1b[31m'),
    request, checkpoint ('\\u202e' shown, not obeyed), owner and host, all escaped."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(_hostile_app(), terminal_size=(120, 40), run_before=run_before)


def test_hostile_task_kill_dialog_shown_escaped(snap_compare):
    """k on the hostile task: the dialog's title, sentence and facts read escaped."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("K")
        await settle(pilot)

    assert snap_compare(_hostile_app(), terminal_size=(100, 30), run_before=run_before)


def _oncall_app(**kwargs: object) -> object:
    return make_app(SampleSource([sample_snapshot(oncall=True)]), **kwargs)  # type: ignore[arg-type]


def test_oncall_main_100x30(snap_compare):
    """The on-call loop on the dashboard: under the first header line, a reverse-red
    '▲ MISSED nightly-ledger missed: no ledger run started within 10m of 2026-11-30 00:30 UTC
    ...', then '◷ late hourly-crawl  ⊘ 1 silence  ⚑ 1 acked'; in the table the ids come first
    and whole: 'export-2031 ⚑acked !stage' and 'thumbs-7781 ⊘silenced' (glyph and word, not
    colour)."""
    assert snap_compare(_oncall_app(), terminal_size=(100, 30), run_before=settle)


def test_oncall_detail(snap_compare):
    """Enter on export-2031: an 'ack' row '⚑ acked by ana 12m00s ago: restarting the
    partner API (until 2026-11-30 02:41:20 UTC)'; the footer offers a Ack and A Silence."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)

    assert snap_compare(_oncall_app(), terminal_size=(110, 40), run_before=run_before)


def test_oncall_wall_120x40(snap_compare):
    """The wall with the on-call loop: the header's MISSED line and its summary line; the
    offenders start with '▲ nightly-ledger missed: ...', export-2031's line carries '⚑acked'
    and thumbs-7781's '⊘silenced'."""
    assert snap_compare(_oncall_app(wall=True), terminal_size=(120, 40), run_before=settle)


def test_oncall_events_pane(snap_compare):
    """e opens the events pane: the silence in force on top ('⊘ silence 3 task thumbs-* until
    05:53:20 by bob: resize cluster maintenance night'), then the events, newest first."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)

    assert snap_compare(_oncall_app(), terminal_size=(120, 30), run_before=run_before)


def test_ack_dialog(snap_compare):
    """a on thumbs-7781: an 'ack thumbs-7781' dialog saying it is stalled and no re-notify
    until the ack or the incident ends, a reason box (focused, with a placeholder) and a
    duration box holding the default '2h'."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("down", "down", "a")
        await settle(pilot)
        await steady_cursor(pilot)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def _untrusted() -> SampleSource:
    return SampleSource([untrusted_snapshot()], outputs=untrusted_outputs())


def test_untrusted_text_main(snap_compare):
    """The stalled task's id reads evil-\\x1b[2J\\x1b]0;pwned\\x07-01, escaped: no wiped
    screen, no retitle; tar-0099, which reports nothing, is healthy with an observed heartbeat
    (its BEAT cell reads '~5s')."""
    assert snap_compare(make_app(_untrusted()), terminal_size=(80, 24), run_before=settle)


def test_untrusted_text_detail_with_last_output(snap_compare):
    """Enter then o on the hostile task: its id, stage (load\\x1b[31m\\u202eRED) and reasons
    escaped; the context line ends 'last output 3h12m ago: retrying POST /orders (attempt 37)
    \\x1b]0;pwned\\x07\\u202egnirts'; the output pane, open, shows its three lines escaped."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("o")
        await settle(pilot)

    assert snap_compare(make_app(_untrusted()), terminal_size=(110, 40), run_before=run_before)


def test_observed_detail(snap_compare):
    """Enter on tar-0099: no stage or progress, counters cpu_s, io_bytes, out_lines, and the
    heartbeat row says it was observed (activity, not progress); pid 5120 + 3 children."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)

    assert snap_compare(make_app(_untrusted()), terminal_size=(110, 40), run_before=run_before)


def test_help_80x24(snap_compare):
    """? at 80x24: a box titled 'zombietop keys' with 'Esc, q or ?: close' on its bottom
    border; the keys in the footer's order (Enter, a, r, d, K, u, A, ?, /, s, p, e, w, q),
    then ctrl+p and the movement keys 'j ↓', 'k ↑', PgDn, PgUp, Home, End, then the marks'
    keys Space, *, Esc and n, and 'click'; it scrolls to the glyph legend below."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def _all_clear_app(**kwargs: object) -> object:
    healthy = build_snapshot(NOW, synthetic_records(6), sample_config(), {})
    return make_app(SampleSource([healthy]), **kwargs)  # type: ignore[arg-type]


def test_all_clear_main_80x24(snap_compare):
    """Six healthy tasks: the count line reads '✓ all clear: nothing needs a human  ● healthy 6'
    in place of a row of zeros."""
    assert snap_compare(_all_clear_app(), terminal_size=(80, 24), run_before=settle)


def test_all_clear_wall_80x24(snap_compare):
    """The wall of six healthy tasks: a green band '✓ all clear: nothing needs a human', the
    cards of what runs (starting, queued, healthy 6) without the six cards of zeros, the
    finished counts, and the offenders pane saying all clear."""
    assert snap_compare(_all_clear_app(wall=True), terminal_size=(80, 24), run_before=settle)


def test_wall_from_the_dashboard_100x30(snap_compare):
    """w on the dashboard: the wall's cards and offenders, no READ-ONLY badge (the dashboard
    under it may act), and a footer 'w Table' to go back."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("w")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=(100, 30), run_before=run_before)
