"""The jobs view and the saved views with Pilot: J switches to one row per job and back, Enter
opens a job's history, a acks its open incident, s sorts; v picks a saved view, 1-9 switch,
the header names the view, and the app starts in one (--view, the wall too). Snapshots of the
jobs view and the picker at 80x24 and 160x48."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from textual.pilot import Pilot
from textual.widgets import DataTable, Input, OptionList, Static

from tests.tui.helpers import help_text, notified, settle
from zombietop.clock import FakeClock
from zombietop.config import View
from zombietop.judge.snapshot import build_snapshot
from zombietop.model import TaskRecord, TaskState
from zombietop.tui.app import ZombietopApp
from zombietop.tui.cli.job_list import jobs_lines
from zombietop.tui.job_rows import rows_of
from zombietop.tui.screens.job_history import JobHistoryScreen
from zombietop.tui.screens.jobs import JobsScreen
from zombietop.tui.screens.oncall import AckScreen
from zombietop.tui.screens.view_picker import ViewPicker
from zombietop.tui.screens.wall import WallScreen
from zombietop.tui.task_order import SortMode
from zombietop.tui.testing import (
    NOW,
    RecordingDesk,
    RecordingExecutor,
    SampleSource,
    make_task,
    sample_config,
)
from zombietop.tui.testing.jobs import (
    SAMPLE_VIEWS,
    SCHEDULES,
    sample_job_runs,
    sample_jobs_snapshot,
)
from zombietop.tui.textual_compat import install_cropped_updates
from zombietop.tui.widgets.header import StatusHeader
from zombietop.tui.widgets.task_list import TaskList


def _app(
    *,
    views: Sequence[View] = SAMPLE_VIEWS,
    view: View | None = None,
    wall: bool = False,
    read_only: bool = False,
    desk: RecordingDesk | None = None,
) -> ZombietopApp:
    install_cropped_updates()
    source = SampleSource([sample_jobs_snapshot()], read_only=read_only, job_runs=sample_job_runs())
    return ZombietopApp(
        source,
        executor=None if read_only else RecordingExecutor(),
        clock=FakeClock(NOW),
        refresh=3600,
        wall=wall,
        store_label="/var/lib/zombietop/zombietop.db",
        actor="alice@laptop",
        desk=None if read_only else desk or RecordingDesk(),
        views=views,
        schedules=SCHEDULES,
        view=view,
    )


def _names(app: ZombietopApp) -> list[str]:
    screen = app.screen
    assert isinstance(screen, JobsScreen)
    return [row.name for row in screen.rows]


def _header(app: ZombietopApp) -> str:
    return app.screen.query_one(StatusHeader).render_line(0).text


async def _jobs(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("J")
    await settle(pilot)


async def test_J_switches_to_one_row_per_job_and_back() -> None:
    app = _app()
    async with app.run_test(size=(120, 30)) as pilot:
        await _jobs(pilot)
        assert isinstance(app.screen, JobsScreen)
        # The job with an open incident leads, then the one whose last run failed, by name.
        assert _names(app) == ["report-daily", "billing-close", "hourly-sync", "nightly-export"]
        assert "view: jobs" in _header(app)
        table = app.screen.query_one(DataTable)
        assert [str(c.label) for c in table.columns.values()] == [
            "JOB",
            "RUNS",
            "OK",
            "MEDIAN",
            "P95",
            "LAST 20",
            "LAST RUN",
            "NEXT",
        ]
        first = [cell.plain for cell in table.get_row_at(0)]
        assert first[0] == "▲ report-daily" and first[5] == "▇▇█xx"
        assert first[6] == "failed 25m ago"
        hourly = [cell.plain for cell in table.get_row_at(2)]
        assert hourly[1] == "22" and len(hourly[5]) == 20 and hourly[7] == "in 6m"
        await pilot.press("J")
        await settle(pilot)
        assert app.screen is app.main and "view:" not in _header(app)
        await pilot.press("J", "escape")  # Esc goes back too
        await settle(pilot)
        assert app.screen is app.main


async def test_the_jobs_view_reads_again_only_the_runs_of_jobs_that_changed() -> None:
    first = sample_jobs_snapshot()
    newest = max(summary.updated_at for summary in first.jobs.values())
    jobs = dict(first.jobs)
    jobs["hourly-sync"] = replace(jobs["hourly-sync"], updated_at=newest + 60)
    later = replace(first, jobs=jobs)
    install_cropped_updates()
    source = SampleSource([first, first, later], job_runs=sample_job_runs())
    app = ZombietopApp(source, clock=FakeClock(NOW), refresh=3600, store_label="s")
    async with app.run_test(size=(120, 30)) as pilot:
        await _jobs(pilot)
        assert source.read_after == [None]  # every job's runs, once
        app.poll()  # the same summaries: nothing to read
        await settle(pilot)
        assert source.read_after == [None]
        app.poll()  # a run of hourly-sync ended: the runs of the jobs changed since
        await settle(pilot)
        assert source.read_after == [None, newest]
        assert _names(app) == ["report-daily", "billing-close", "hourly-sync", "nightly-export"]


async def test_enter_opens_the_jobs_history() -> None:
    app = _app()
    async with app.run_test(size=(120, 30)) as pilot:
        await _jobs(pilot)
        await pilot.press("down", "down", "enter")
        await settle(pilot)
        assert isinstance(app.screen, JobHistoryScreen)
        text = str(app.screen.query_one("#runs", Static).render())
        assert text.startswith("hourly-sync: 22 runs, 100% succeeded, median 3m30s, p95 5m00s")
        assert "#22" in text and "#3 " in text and "#2 " not in text  # the latest 20
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen)


async def test_a_acks_the_jobs_open_incident_and_says_when_there_is_none() -> None:
    desk = RecordingDesk()
    app = _app(desk=desk)
    async with app.run_test(size=(120, 30)) as pilot:
        said = notified(app)
        await _jobs(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, AckScreen)
        await pilot.press(*"rerunning", "enter")
        await settle(pilot)
        (ack,) = desk.acks
        assert (ack.task_id, ack.reason) == ("report-daily/5", "rerunning")
        await pilot.press("down", "a")
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen) and len(desk.acks) == 1
        assert said[-1] == "billing-close has no open incident to ack"


async def test_read_only_has_no_ack_in_the_jobs_view() -> None:
    app = _app(read_only=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await _jobs(pilot)
        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen)


async def test_s_cycles_the_jobs_sort_and_the_cursor_stays_on_its_job() -> None:
    app = _app()
    async with app.run_test(size=(120, 30)) as pilot:
        await _jobs(pilot)
        await pilot.press("down", "down", "down")  # nightly-export, the last row
        await pilot.press("s")
        await settle(pilot)
        assert _names(app) == ["billing-close", "hourly-sync", "nightly-export", "report-daily"]
        assert "sort: name" in _header(app)
        screen = app.screen
        assert isinstance(screen, JobsScreen)
        assert screen.selected_job == "nightly-export"  # the cursor follows its job
        await pilot.press("s")
        await settle(pilot)
        assert _names(app)[0] == "report-daily"  # success rate: the lowest first


async def test_v_picks_a_view_of_runs_and_the_header_names_it() -> None:
    app = _app()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        assert isinstance(app.screen, ViewPicker)
        options = app.screen.query_one(OptionList)
        assert options.option_count == 1 + len(SAMPLE_VIEWS)
        await pilot.press("down", "down", "enter")  # the second view: exports
        await settle(pilot)
        assert app.screen is app.main
        assert (app.filter_text, app.sort_mode, app.per_run) == (
            "export",
            SortMode.HEARTBEAT,
            True,
        )
        table = app.main.query_one(TaskList)
        assert [c.key for c in table.shown_columns] == [
            "health",
            "task",
            "progress",
            "heartbeat",
            "stage",
        ]
        assert all("export" in view.task_id for view in app.rows.views)
        assert "view: exports (" in _header(app)
        # The first line of the picker leaves the view.
        await pilot.press("v", "home", "enter")
        await settle(pilot)
        assert (app.filter_text, app.per_run, app.view_flow.current) == ("", False, None)
        assert "view:" not in _header(app) and len(table.shown_columns) > 5


async def test_escape_leaves_the_picker_and_the_screen_as_they_were() -> None:
    app = _app()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v", "down", "escape")
        await settle(pilot)
        assert app.screen is app.main and app.view_flow.current is None


async def test_digits_switch_to_the_first_nine_views() -> None:
    app = _app()
    async with app.run_test(size=(120, 30)) as pilot:
        said = notified(app)
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen)
        assert "view: failing-jobs" in _header(app) and "sort: success rate" in _header(app)
        table = app.screen.query_one(DataTable)
        assert [str(c.label) for c in table.columns.values()] == [
            "JOB",
            "RUNS",
            "OK",
            "LAST 20",
            "LAST RUN",
        ]
        await pilot.press("2")  # a view of runs closes the jobs view
        await settle(pilot)
        assert app.screen is app.main and app.filter_text == "export"
        await pilot.press("3")
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen) and "view: all-jobs" in _header(app)
        await pilot.press("9")
        await settle(pilot)
        assert said[-1].startswith("no saved view 9: the config has 3")
        assert "view: all-jobs" in _header(app)


async def test_a_digit_typed_in_the_filter_is_text_not_a_view() -> None:
    app = _app()
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("/", "2", "0")
        await settle(pilot)
        assert app.main.query_one("#filter", Input).value == "20"
        assert app.view_flow.current is None


async def test_the_app_starts_in_a_view() -> None:
    app = _app(view=SAMPLE_VIEWS[0])
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, JobsScreen)
        assert _names(app)[0] == "report-daily" and "view: failing-jobs" in _header(app)


async def test_the_wall_starts_in_a_view_and_counts_only_its_tasks() -> None:
    view = View(name="exports", rows="runs", filter="export")
    app = _app(view=view, wall=True)
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, WallScreen)
        assert "view: exports" in _header(app)
        shown = app.screen.query_one(StatusHeader).snapshot
        assert shown.tasks and all("export" in task.task_id for task in shown.tasks)
        assert sum(shown.counts.values()) == len(shown.tasks)


async def test_without_views_the_picker_says_how_to_add_one() -> None:
    app = _app(views=())
    async with app.run_test(size=(120, 30)) as pilot:
        await settle(pilot)
        await pilot.press("v")
        await settle(pilot)
        hint = str(app.screen.query_one("#hint", Static).render())
        assert hint.startswith("No saved view yet: add [views.NAME] to the config")


def test_jobs_view_80x24(snap_compare):
    """J on the sample fleet: 'view: jobs' in the header; 'report-daily' first with '▲' (its
    failed run is open), 60%, a trend '▇▇█xx' and 'failed 25m ago', then billing-close,
    hourly-sync (22 runs, 20 bars) and nightly-export (one x among its bars). At 80 columns
    NEXT and MEDIAN drop off: JOB, RUNS, OK, P95, LAST 20 and LAST RUN fit, no scrollbar."""
    app = _app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=_jobs)


def test_jobs_view_160x48(snap_compare):
    """The same jobs view at 160x48: every column, MEDIAN among them, NEXT 'in 6m' for
    hourly-sync, 'in 1h36m' for nightly-export and '-' for the jobs with no schedule; the
    footer lists History, Ack, Sort, Tasks, Views, Help, Quit."""
    app = _app()
    assert snap_compare(app, terminal_size=(160, 48), run_before=_jobs)


async def _picker(pilot: Pilot[None]) -> None:
    await settle(pilot)
    await pilot.press("v")
    await settle(pilot)


def test_view_picker_80x24(snap_compare):
    """v: a 'saved views' box over the table with 'everything: no saved view' highlighted,
    then '1 failing-jobs jobs, sort success rate, 5 columns', '2 exports runs, filter
    'export', sort oldest heartbeat, 5 columns' and '3 all-jobs jobs'."""
    app = _app()
    assert snap_compare(app, terminal_size=(80, 24), run_before=_picker)


def test_view_picker_160x48(snap_compare):
    """The same picker at 160x48, centred over the whole task table."""
    app = _app()
    assert snap_compare(app, terminal_size=(160, 48), run_before=_picker)


async def test_the_help_lists_the_view_keys_and_the_trend() -> None:
    app = _app()
    async with app.run_test(size=(120, 40)) as pilot:
        await _jobs(pilot)
        await pilot.press("question_mark")
        await settle(pilot)
        text = help_text(app.screen)
        assert "Switch to the jobs view, one row per job" in text
        assert "Pick a saved view: a views.NAME table of the config" in text
        assert "1-9" in text and "Switch to saved view 1 to 9" in text
        assert "▂▅█x" in text and "a bar per successful run" in text


async def test_a_hostile_job_name_reads_escaped_in_the_jobs_view_and_the_command() -> None:
    evil = "evil-\x1b[2J\x1b]0;pwned\x07[link=x]-job"
    runs = sample_job_runs()
    runs[evil] = [replace(run, job=evil) for run in runs.pop("billing-close")]
    snapshot = sample_jobs_snapshot()
    jobs = dict(snapshot.jobs)
    jobs[evil] = replace(jobs.pop("billing-close"), name=evil)
    install_cropped_updates()
    app = ZombietopApp(
        SampleSource([replace(snapshot, jobs=jobs)], job_runs=runs),
        clock=FakeClock(NOW),
        refresh=3600,
        store_label="s",
    )
    async with app.run_test(size=(120, 30)) as pilot:
        await _jobs(pilot)
        table = app.screen.query_one(DataTable)
        names = [table.get_row_at(i)[0].plain for i in range(table.row_count)]
        (shown,) = [name for name in names if name.startswith("evil")]
        assert "\x1b" not in shown and "\x07" not in shown and "[link=x]" in shown
        await pilot.press(*["down"] * names.index(shown), "enter")
        await settle(pilot)
        history = str(app.screen.query_one("#runs", Static).render())
        assert history.startswith("evil-\\x1b[2J") and "\x1b" not in history
    rows = rows_of(snapshot, runs, ())
    lines = "\n".join(jobs_lines(rows, NOW))
    assert "evil-\\x1b[2J\\x1b]0;pwned\\x07[link=x]-job" in lines and "\x1b" not in lines


async def test_the_jobs_view_says_why_it_has_no_row() -> None:
    """Tasks started with ``--task ID`` (the demo's) are runs of no job: the jobs view says so
    in place of an empty table, and a view's filter that keeps no job says that instead."""
    task = make_task("export-2031", TaskState.RUNNING, started_ago=60.0)
    record = TaskRecord(task=task, lease=None, heartbeat=None)
    snapshot = build_snapshot(NOW, [record], sample_config(), {})
    app = ZombietopApp(
        SampleSource([snapshot]), clock=FakeClock(NOW), refresh=3600, store_label="demo.db"
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await _jobs(pilot)
        note = app.screen.query_one("#no-jobs", Static)
        assert note.display and not app.screen.query_one(DataTable).display
        assert "A job is a name that runs again and again" in str(note.render())
    nothing = View(name="none", rows="jobs", filter="no-such-job")
    async with _app(view=nothing).run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        note = pilot.app.screen.query_one("#no-jobs", Static)
        assert note.display
        assert "No job matches the view's filter 'no-such-job'." in str(note.render())
