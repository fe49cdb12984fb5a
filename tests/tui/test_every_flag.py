"""Every flag can be drawn on every screen: a flag's mark is one of its traits, so a flag the
dashboard cannot draw cannot exist (``queued_too_long`` once crashed it at the first poll)."""

from __future__ import annotations

import pytest
from rich.console import Console
from textual.pilot import Pilot

from tests.tui.helpers import make_app, settle
from zombietop.health import Flag
from zombietop.tui.cells import columns_for_width, row_cells, row_marks
from zombietop.tui.screens.detail import facts_table
from zombietop.tui.testing import NOW, SampleSource, every_flag_snapshot

FIRST = "etl-0417"
"""The sample fleet's first row, which carries every flag here."""


def _source(*, read_only: bool = False) -> SampleSource:
    return SampleSource([every_flag_snapshot()], read_only=read_only)


def test_every_flag_main_80x24(snap_compare):
    """etl-0417, the first row ('✖ dead', under the cursor), reads 'etl-0417 !!!⧉!!!!!~': one
    glyph per flag, as the words do not fit its TASK column; the rest is the sample fleet."""
    assert snap_compare(make_app(_source()), terminal_size=(80, 24), run_before=settle)


def test_every_flag_main_160x48(snap_compare):
    """Every column; etl-0417's TASK cell reads 'etl-0417 !!!⧉!!!!!~', one glyph per flag (ten
    words would not fit), and the other rows are the sample fleet's."""
    assert snap_compare(make_app(_source()), terminal_size=(160, 48), run_before=settle)


def test_every_flag_has_a_mark_in_the_row() -> None:
    view = every_flag_snapshot().by_id()[FIRST]
    assert set(view.verdict.flags) == set(Flag)
    said = {f"{mark.glyph}{mark.word}" for mark in row_marks(view, NOW, None)}
    assert said >= {f"{flag.traits.glyph}{flag.mark}" for flag in Flag}
    task_cell = row_cells(view, NOW, columns_for_width(160))[1].plain
    assert task_cell.startswith(FIRST)


def test_every_flag_is_named_in_the_detail_view() -> None:
    console = Console(width=200, record=True)
    console.print(facts_table(every_flag_snapshot().by_id()[FIRST], NOW))
    shown = console.export_text()
    for flag in Flag:
        assert flag.value in shown


async def _open_detail(pilot: Pilot[None]) -> None:
    await pilot.press("enter")
    await settle(pilot)


@pytest.mark.parametrize(
    ("read_only", "wall", "detail"),
    [(False, False, False), (True, False, False), (False, True, False), (False, False, True)],
    ids=["dashboard", "read-only", "wall", "detail"],
)
async def test_no_screen_crashes_on_any_flag(read_only: bool, wall: bool, detail: bool) -> None:
    app = make_app(_source(read_only=read_only), read_only=read_only, wall=wall)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        if detail:
            await _open_detail(pilot)
        assert app.is_running
    assert app.return_code in (None, 0)
