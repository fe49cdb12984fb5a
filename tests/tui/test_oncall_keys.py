"""The on-call keys with Pilot: a acks (reason, duration from config), A silences the task or
its step type (a reason required), from the table and from the detail view; read-only has
neither. And the events pane's silences, capped by the dashboard's own max_silence."""

from __future__ import annotations

import asyncio
import os
from dataclasses import replace
from pathlib import Path

import pytest
from textual.widgets import Input, RadioButton, Static

from tests.tui.helpers import make_app, notified, settle
from zombietop.model import Matcher, Silence
from zombietop.oncall.acks import current
from zombietop.tui.messages import TaskAction, TaskAsked
from zombietop.tui.screens.oncall import AckScreen, NoteScreen, SilenceScreen
from zombietop.tui.testing import NOW, RecordingDesk, SampleSource, sample_snapshot
from zombietop.tui.widgets.events_pane import EventsPane


async def test_a_acks_the_row_with_a_reason_and_the_default_duration() -> None:
    desk = RecordingDesk()
    app = make_app(desk=desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("down", "down", "a")
        await settle(pilot)
        assert isinstance(app.screen, AckScreen)
        assert app.screen.query_one("#duration", Input).value == "2h"
        await pilot.press(*"on it", "enter")
        await settle(pilot)
    (ack,) = desk.acks
    assert (ack.task_id, ack.reason, ack.until - ack.acked_at) == ("thumbs-7781", "on it", 7200)


async def test_the_ack_duration_can_be_changed_and_a_bad_one_is_explained() -> None:
    desk = RecordingDesk()
    app = make_app(desk=desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        duration = app.screen.query_one("#duration", Input)
        duration.value = "soon"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, AckScreen)
        assert "is not a duration" in str(app.screen.query_one("#problem", Static).render())
        duration.value = "30m"
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, AckScreen)
    (ack,) = desk.acks
    assert (ack.task_id, ack.reason, ack.until - ack.acked_at) == ("etl-0417", None, 1800)


async def test_shift_a_silences_the_step_type_and_needs_a_reason() -> None:
    desk = RecordingDesk()
    app = make_app(desk=desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("A")
        await settle(pilot)
        assert isinstance(app.screen, SilenceScreen)
        await pilot.press("enter")
        await settle(pilot)
        assert "needs a reason" in str(app.screen.query_one("#problem", Static).render())
        app.screen.query_one("#step_type", RadioButton).value = True
        app.screen.query_one("#reason", Input).focus()
        await pilot.press(*"db failover", "enter")
        await settle(pilot)
    (made,) = desk.silences
    assert (made.matcher, made.pattern, made.reason, made.until - made.created_at) == (
        Matcher.STEP_TYPE,
        "batch",
        "db failover",
        3600,
    )


async def test_escape_cancels_and_the_detail_view_acks_its_task() -> None:
    desk = RecordingDesk()
    app = make_app(desk=desk)
    async with app.run_test(size=(110, 40)) as pilot:
        await settle(pilot)
        await pilot.press("A", "escape")
        await settle(pilot)
        assert desk.silences == []
        await pilot.press("down", "enter")
        await settle(pilot)
        await pilot.press("a", "enter")
        await settle(pilot)
    assert [a.task_id for a in desk.acks] == ["export-2031"]


async def test_u_unacks_an_acked_task_and_says_so_of_one_that_is_not() -> None:
    desk = RecordingDesk()
    app = make_app(SampleSource([sample_snapshot(oncall=True)]), desk=desk)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        said = notified(app)
        app.on_task_asked(TaskAsked(TaskAction.UNACK, "etl-0417"))  # not acked: nothing written
        app.on_task_asked(TaskAsked(TaskAction.UNACK, "export-2031"))  # ana's ack
        await settle(pilot)
    assert desk.unacked == ["export-2031"]
    assert "etl-0417 is not acked" in said
    assert "export-2031 unacked: re-notify resumes" in said


async def test_read_only_has_no_ack_or_silence() -> None:
    app = make_app(read_only=True)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        await pilot.press("a", "A", "u")
        await settle(pilot)
        assert not isinstance(app.screen, AckScreen | SilenceScreen)
        titles = app.palette_titles()
    assert "Ack" not in titles and "Unack" not in titles and "Silence" not in titles


async def test_the_palette_offers_ack_and_silence() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        titles = app.palette_titles()
    assert "Ack" in titles and "Unack" in titles and "Silence" in titles


async def test_the_detail_view_offers_u_only_while_its_task_is_acked() -> None:
    desk = RecordingDesk()
    app = make_app(SampleSource([sample_snapshot(oncall=True)]), desk=desk)
    async with app.run_test(size=(110, 40)) as pilot:
        await settle(pilot)
        app.on_task_asked(TaskAsked(TaskAction.DETAIL, "etl-0417"))
        await settle(pilot)
        assert app.screen.check_action("unack", ()) is False
        await pilot.press("escape")
        app.on_task_asked(TaskAsked(TaskAction.DETAIL, "export-2031"))
        await settle(pilot)
        assert app.screen.check_action("unack", ()) is True
        await pilot.press("u")
        await settle(pilot)
    assert desk.unacked == ["export-2031"]


async def test_the_events_pane_says_when_this_dashboard_ends_a_silence_sooner() -> None:
    """Issue N2 #10: a silence set for 100 years under another config is capped by this
    dashboard's [oncall] max_silence, and its line in the events pane says so, and until when."""
    long = Silence(
        silence_id=9,
        matcher=Matcher.TASK,
        pattern="*",
        by="mallory",
        reason="forever",
        created_at=NOW - 3600,
        until=NOW + 36500 * 86400.0,
    )
    snapshot = sample_snapshot(oncall=True)
    snapshot = replace(
        snapshot,
        oncall=current(NOW, [], [long, *snapshot.oncall.silences], max_silence=7 * 86400.0),
    )
    app = make_app(SampleSource([snapshot]))
    async with app.run_test(size=(160, 30)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        text = str(app.screen.query_one(EventsPane).render())
    (line,) = [row for row in text.splitlines() if row.startswith("⊘ silence 9 ")]
    assert line.startswith("⊘ silence 9 task * until ")
    assert line.endswith("""this reader's [oncall] max_silence = "7d" ends it sooner)""")
    assert "(set to end 2126-" in line
    assert "ends it sooner" not in text.replace(line, "")  # bob's 5-hour silence is as set


async def test_n_in_the_detail_view_adds_a_note_and_needs_some_text() -> None:
    desk = RecordingDesk()
    app = make_app(desk=desk)
    async with app.run_test(size=(110, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        said = notified(app)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, NoteScreen)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, NoteScreen)
        assert "needs some text" in str(app.screen.query_one("#problem", Static).render())
        await pilot.press(*"waiting on partner API", "enter")
        await settle(pilot)
        assert not isinstance(app.screen, NoteScreen)
    assert [(n.task_id, n.text) for n in desk.notes] == [("export-2031", "waiting on partner API")]
    assert "note added to export-2031" in said


async def test_read_only_detail_view_has_no_note() -> None:
    app = make_app(read_only=True)
    async with app.run_test(size=(110, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter", "n")
        await settle(pilot)
        assert not isinstance(app.screen, NoteScreen)


async def test_shift_r_shows_the_runbook_to_copy_without_a_display(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    app = make_app()
    async with app.run_test(size=(110, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        said = notified(app)
        await pilot.press("R")
        await settle(pilot)
    assert said == ["https://wiki.example/runbooks/export#transform"]


async def test_shift_r_opens_the_runbook_with_the_system_opener_on_a_display(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    opened = tmp_path / "opened.txt"
    opener = tmp_path / "xdg-open"
    opener.write_text(f'#!/bin/sh\nprintf "%s" "$1" > {opened}.part && mv {opened}.part {opened}\n')
    opener.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    monkeypatch.setenv("DISPLAY", ":0")
    app = make_app()
    async with app.run_test(size=(110, 40)) as pilot:
        await settle(pilot)
        await pilot.press("down", "enter", "R")
        await settle(pilot)
    for _ in range(500):  # the opener runs detached: wait for its file, at most 5 s
        if opened.exists():
            break
        await asyncio.sleep(0.01)
    assert opened.read_text() == "https://wiki.example/runbooks/export#transform"
