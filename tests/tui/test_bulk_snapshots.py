"""What marked rows and the bulk dialogs look like: sample fleet, frozen clock."""

from __future__ import annotations

from textual.pilot import Pilot

from tests.tui.helpers import make_app, settle, steady_cursor


async def mark_three(pilot: Pilot[None]) -> None:
    """Mark etl-0417, export-2031 and crawl-0042; the cursor ends on crawl-0042."""
    await settle(pilot)
    await pilot.press("space", "down", "space", "down", "down", "space")
    await settle(pilot)


async def discard_all(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("asterisk", "d")
    await settle(pilot)


def test_marked_rows_80x24(snap_compare):
    """Three rows start with '◆' on a tinted background (etl-0417, export-2031, crawl-0042),
    the cursor on crawl-0042; the header's first line ends with ' 3 marked ' in reverse."""
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=mark_three)


def test_marked_rows_160x48(snap_compare):
    """As at 80x24, with every column: the three marked rows start with '◆' and are tinted
    across the whole width; ' 3 marked ' in the header."""
    assert snap_compare(make_app(), terminal_size=(160, 48), run_before=mark_three)


def test_bulk_confirm_80x24(snap_compare):
    """* then d: 'discard 14 tasks?' with '14 tasks:' and one count per health, the first five
    ids 'and 9 more', what each discard does, then '2 tasks will not be discarded:' with
    backup-0730 (succeeded) and export-2029 (discarded), each 'there is nothing to discard';
    the buttons 'Cancel (n)' (focused) and 'Discard 12 (y)' on screen; a plain background."""
    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=discard_all)


def test_bulk_confirm_160x48(snap_compare):
    """The same confirm on a large screen: the dialog 76 wide in the middle of a plain
    background (the table is not drawn behind a bulk confirm), every line of it unwrapped but
    the health counts."""
    assert snap_compare(make_app(), terminal_size=(160, 48), run_before=discard_all)


def test_bulk_ack_80x24(snap_compare):
    """Three marked, then a: 'ack 3 tasks' with '3 tasks: 1 ✖ dead, 1 ◌ reclaimable,
    1 ↻ spinning' and their ids, the reason box (focused) and the duration '2h', then the
    buttons 'Cancel (Esc)' and 'Ack 3 (Enter)', all within 24 lines."""

    async def run_before(pilot: Pilot[None]) -> None:
        await mark_three(pilot)
        await pilot.press("a")
        await settle(pilot)
        await steady_cursor(pilot)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_kill_confirm_right_after_an_ack_80x24(snap_compare):
    """An ack of etl-0417, then K on it: its notification ('etl-0417 acked for 2h') stays
    under the dialog, at the bottom right of the dimmed table, never over the dialog; the
    kill dialog's 'Cancel (n)' and 'Kill (y)' buttons are whole."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("a", *"on it", "enter")
        await settle(pilot)
        await pilot.press("K")
        await settle(pilot)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)


def test_filter_box_right_after_an_ack_80x24(snap_compare):
    """An ack, then /: the filter box is whole above the footer, its placeholder readable;
    the ack's notification stands above the box, not over it."""

    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("a", *"on it", "enter")
        await settle(pilot)
        await pilot.press("slash")
        await settle(pilot)
        await steady_cursor(pilot)

    assert snap_compare(make_app(), terminal_size=(80, 24), run_before=run_before)
