"""The count line and the wall's cards: quarantined counts every held task, and "all clear"
says so when nothing needs a human."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.tui.helpers import make_app, settle
from zombietop.health import Health
from zombietop.judge.monitor import Snapshot, build_snapshot
from zombietop.tui import healths
from zombietop.tui.testing import (
    NOW,
    SampleSource,
    sample_config,
    sample_records,
    sample_samples,
    synthetic_records,
)
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.health_card import HealthCard


def _stalled_and_quarantined() -> Snapshot:
    """The sample fleet, with thumbs-7781 (stalled) quarantined by the watchdog."""
    records = []
    for record in sample_records():
        if record.task.task_id == "thumbs-7781":
            held = replace(record.task, quarantined_at=NOW - 60, quarantined_by="watchdog")
            record = replace(record, task=held)
        records.append(record)
    return build_snapshot(NOW, records, sample_config(), sample_samples())


def _header_text(app) -> str:  # type: ignore[no-untyped-def]
    header = app.screen.query_one(StatusHeader)
    return "\n".join(line.plain for line in header._build())


async def test_a_stalled_task_the_watchdog_quarantined_counts_as_quarantined() -> None:
    snapshot = _stalled_and_quarantined()
    assert snapshot.by_id()["thumbs-7781"].health is Health.STALLED
    assert snapshot.quarantined == 2  # thumbs-7781 and billing-0901
    app = make_app(SampleSource([snapshot]))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert "⊠ quarantined 2" in _header_text(app)
        assert "■ stalled 1" in _header_text(app)
    wall = make_app(SampleSource([snapshot]), wall=True)
    async with wall.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert wall.screen.query_one("#card-quarantined", HealthCard).count == 2


def _all_clear() -> Snapshot:
    return build_snapshot(NOW, synthetic_records(6), sample_config(), {})


async def test_all_clear_in_the_header_instead_of_a_row_of_zeros() -> None:
    app = make_app(SampleSource([_all_clear()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        text = _header_text(app)
    counts = text.splitlines()[1:]
    assert counts == [f"{healths.ALL_CLEAR}  ● healthy 6"]  # no "dead 0", "stalled 0", ...


async def test_trouble_brings_the_counts_back() -> None:
    app = make_app(SampleSource([_all_clear(), _stalled_and_quarantined()]))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.poll()
        await settle(pilot)
        text = _header_text(app)
    assert healths.ALL_CLEAR not in text and "✖ dead 1" in text


async def test_all_clear_on_the_wall() -> None:
    """A band says all clear, and the six cards of zeros give way to it."""
    app = make_app(SampleSource([_all_clear()]), wall=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert screen.query_one("#all-clear").display
        shown = {card.health for card in screen.query(HealthCard) if card.display}
        assert not any(health.needs_attention for health in shown)
        assert Health.HEALTHY in shown


async def test_no_all_clear_before_the_first_snapshot() -> None:
    """Nothing read yet is not "nothing wrong"."""
    app = make_app(SampleSource([Snapshot(taken_at=None)]))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert healths.ALL_CLEAR not in _header_text(app)


async def test_the_header_asks_all_clear_once_a_snapshot_not_once_a_tick(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``all_clear`` looks at every task (100,000 on a big fleet): the clock's tick, once a
    second, must not ask it again."""
    from zombietop.tui.widgets import header as header_module

    asked: list[object] = []
    real = header_module.all_clear

    def counted(snapshot: object) -> bool:
        asked.append(snapshot)
        return real(snapshot)  # type: ignore[arg-type]

    monkeypatch.setattr(header_module, "all_clear", counted)
    app = make_app(SampleSource([_stalled_and_quarantined()]))
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        header = app.screen.query_one(StatusHeader)
        before = len(asked)
        for second in range(5):
            header.now = NOW + second
        await pilot.pause()
        assert len(asked) == before


async def test_a_long_filter_never_pushes_a_line_of_counts_out_of_the_header() -> None:
    """At 80 columns, read-only, a filter's label made the first line wrap, and the header's
    last line of counts (healthy, failed, succeeded) was no longer shown: the first line is cut
    instead, and every count line is still there."""
    snapshot = _stalled_and_quarantined()
    app = make_app(SampleSource([snapshot]), read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        whole = _header_text(app).splitlines()
        header = app.screen.query_one(StatusHeader)
        header.filter_label = "'backup-0731-and-more' (1 of 40)"
        await pilot.pause()
        lines = _header_text(app).splitlines()
    assert len(lines) == len(whole)
    assert all(len(line) <= 78 for line in lines)
    assert lines[1:] == whole[1:]
    assert lines[0].endswith("…")
