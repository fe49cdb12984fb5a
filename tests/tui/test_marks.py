"""What a row says beside its health: the flags, the last action's outcome, the on-call marks,
what a waiting task waits behind; and how the glyphs and colours read."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.tui.helpers import make_app, settle
from zombietop.health import Health
from zombietop.judge.monitor import build_snapshot
from zombietop.model import PendingKill
from zombietop.tui.cells import (
    ACKED,
    BY_KEY,
    MARKS,
    SILENCED,
    RowNote,
    RowNotes,
    columns_for_width,
    row_cells,
)
from zombietop.tui.healths import GLYPHS, STYLES
from zombietop.tui.testing import (
    NOW,
    SampleSource,
    sample_config,
    sample_records,
    sample_samples,
    sample_snapshot,
)
from zombietop.tui.widgets.task_list import TaskList


def _cells(task_id: str, width: int, outcomes: dict[str, str] | None = None) -> list[str]:
    snapshot = sample_snapshot(oncall=True)
    columns = columns_for_width(width - 1)
    view = snapshot.by_id()[task_id]
    note = RowNotes(outcomes or {}, snapshot.oncall).of(view)
    return [cell.plain for cell in row_cells(view, NOW, columns, note)]


@pytest.mark.parametrize("width", [80, 120, 160])
def test_a_request_overrun_shows_on_its_row_beside_the_health_word(width: int) -> None:
    """resize-9001 is healthy with a request past its budget: the row says both."""
    health, task = _cells("resize-9001", width)[:2]
    assert health == "● healthy"
    assert task == "resize-9001 !request"


async def test_every_flag_and_mark_reaches_the_screen_at_80x24() -> None:
    """The ids come first and whole; the marks follow in words where they fit."""
    app = make_app(SampleSource([sample_snapshot(oncall=True)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.main.query_one(TaskList)
        rows = {
            task_id: table.render_line(table.index_of(task_id) + 1).text  # type: ignore[operator]
            for task_id in ("export-2031", "thumbs-7781", "resize-9001", "publish-2032")
        }
    assert "export-2031 !stage ⚑acked" in rows["export-2031"]
    assert "thumbs-7781 ⊘silenced" in rows["thumbs-7781"]
    assert "● healthy" in rows["resize-9001"] and "resize-9001 !request" in rows["resize-9001"]
    assert "blocked by export-2031" in rows["publish-2032"]


def test_marks_never_crop_the_id_they_stand_beside() -> None:
    """Where the words do not fit, the glyphs do; where not even they fit, the id wins."""
    snapshot = sample_snapshot(oncall=True)
    view = snapshot.by_id()["thumbs-7781"]
    note = RowNote(outcome="escalated", oncall=(MARKS[SILENCED],))
    task = BY_KEY["task"]  # 18 cells: "thumbs-7781 ↯escalated ⊘silenced" does not fit
    assert task.render(view, NOW, note).plain == "thumbs-7781 ↯⊘"
    long = replace(view, task=replace(view.task, task_id="t" * 17))
    assert task.render(long, NOW, note).plain == "t" * 17


def test_a_rows_note_keeps_the_outcome_and_the_oncall_marks_apart() -> None:
    """The app's outcomes and the snapshot's acks and silences meet in one typed note per row,
    which the task cell reads as it is: nothing is joined into a string and parsed back."""
    snapshot = sample_snapshot(oncall=True)
    notes = RowNotes({"export-2031": "resumed", "etl-0417": "term sent"}, snapshot.oncall)
    views = snapshot.by_id()
    assert notes.of(views["export-2031"]) == RowNote(outcome="resumed", oncall=(MARKS[ACKED],))
    assert notes.of(views["etl-0417"]) == RowNote(outcome="term sent")
    assert notes.of(views["thumbs-7781"]) == RowNote(oncall=(MARKS[SILENCED],))
    assert notes.of(views["resize-9001"]) is None


def test_a_waiting_row_says_what_it_waits_behind() -> None:
    """publish-2032 waits on export-2031, which is reclaimable: blocked, and the words run on
    over the empty heartbeat and lease cells instead of an empty bar."""
    columns = columns_for_width(79)
    view = sample_snapshot().by_id()["publish-2032"]
    cells = row_cells(view, NOW, columns)
    assert cells[2].plain == "blocked by export-2031 (reclaimable)"
    assert [cell.plain for cell in cells[3:5]] == ["-", "-"]


def test_a_task_behind_a_healthy_upstream_waits_and_is_not_called_blocked() -> None:
    records = []
    for record in sample_records():
        if record.task.task_id == "publish-2032":
            record = replace(record, task=replace(record.task, upstream=("ingest-5119",)))
        records.append(record)
    snapshot = build_snapshot(NOW, records, sample_config(), sample_samples())
    cell = BY_KEY["progress"].render(snapshot.by_id()["publish-2032"], NOW, None)
    assert cell.plain == "after ingest-5119 (healthy)"


def test_an_outcome_goes_beside_the_id_and_the_health_word_stays() -> None:
    view = sample_snapshot().by_id()["etl-0417"]
    kill = PendingKill(
        task_id="etl-0417",
        pid=3907,
        pid_start_time=None,
        host="batch-01",
        requested_by="alice",
        term_sent_at=NOW - 40,
        deadline=NOW - 10,
        outcome="escalated",
        finished_at=NOW - 9,
    )
    killed = replace(view, pending_kill=kill)
    cells = row_cells(killed, NOW, columns_for_width(99))
    assert cells[0].plain == "✖ dead"
    assert cells[1].plain == "etl-0417 ↯escalated"


def test_every_glyph_means_one_thing() -> None:
    """A health, an on-call mark and the outcome mark each have a glyph of their own."""
    from zombietop.tui.cells import FLAG_MARKS, OUTCOME_GLYPH

    healths = list(GLYPHS.values())
    marks = [mark.glyph for mark in MARKS.values()]
    assert len(set(healths)) == len(healths)
    assert not set(marks) & set(healths)
    assert OUTCOME_GLYPH not in healths and OUTCOME_GLYPH not in marks
    flags = {mark.glyph for mark in FLAG_MARKS.values()}
    assert not flags & {*healths, *marks, OUTCOME_GLYPH}


def test_colour_says_how_severe_and_bars_are_one_colour() -> None:
    """Red only for the healths that page; a progress bar has the same colour whatever the
    health (a red 61% bar read '61% bad')."""
    paging = {STYLES[h] for h in Health if h.pages}
    assert paging == {"bold red"}
    assert not {STYLES[h] for h in Health if not h.pages} & paging
    snapshot = sample_snapshot()
    progress = BY_KEY["progress"]
    bar_styles = set()
    for view in snapshot.tasks:
        if view.heartbeat is None or view.heartbeat.progress is None or view.waiting_on:
            continue
        cell = progress.render(view, NOW, None)
        bar_styles |= {str(span.style) for span in cell.spans} | ({cell.style} - {""})
    assert len(bar_styles) == 1
