"""A task on another host says so in its row: an action waiting for that host's agent, or no
agent to see its process."""

from __future__ import annotations

from dataclasses import replace

from zombietop.fleet import HostRequest
from zombietop.tui.cells import BY_KEY, RowNote, task_column
from zombietop.tui.testing import NOW, sample_snapshot


def _view(task_id: str = "resize-9001"):  # type: ignore[no-untyped-def]
    return sample_snapshot().by_id()[task_id]


def test_a_remote_action_waits_for_its_agent_in_the_health_cell() -> None:
    request = HostRequest(
        request_id=1,
        task_id="resize-9001",
        host="batch-02",
        kind="kill",
        expected_token=1,
        actor="alice@laptop",
        reason=None,
        requested_at=NOW - 5,
    )
    waiting = replace(
        _view(),
        host_request=request,
        agent_note="waiting for agent on batch-02: kill requested 5s ago",
    )
    assert BY_KEY["health"].render(waiting, NOW, None).plain == "↯ wait agent"
    missing = replace(
        waiting, agent_note="no agent on batch-02: kill requested 5s ago waits for one"
    )
    assert BY_KEY["health"].render(missing, NOW, None).plain == "↯ no agent!"


def test_no_agent_shows_where_the_pid_would() -> None:
    view = replace(
        _view(), process=None, remote=True, agent_note="no agent on batch-02: last seen 2m00s ago"
    )
    assert BY_KEY["pid"].render(view, NOW, None).plain == "no agent"
    assert (
        BY_KEY["pid"].render(replace(view, agent_note=None), NOW, None).plain
        == f"{view.task.pid} ?"
    )


def test_a_kill_finished_elsewhere_replaces_the_term_sent_note() -> None:
    """The watchdog (or another zombietop) may finish a kill this dashboard started."""
    from zombietop.model import PendingKill

    kill = PendingKill(
        task_id="resize-9001",
        pid=8422,
        pid_start_time=None,
        host="batch-01",
        requested_by="alice",
        term_sent_at=NOW - 40,
        deadline=NOW - 10,
        outcome="escalated",
        finished_at=NOW - 9,
    )
    view = replace(_view(), pending_kill=kill)
    task = task_column(40)
    assert (
        task.render(view, NOW, RowNote(outcome="term sent")).plain
        == "resize-9001 ↯escalated !request"
    )
    assert (
        task.render(view, NOW, RowNote(outcome="relaunched")).plain
        == "resize-9001 ↯relaunched !request"
    )
    assert BY_KEY["health"].render(view, NOW, RowNote(outcome="term sent")).plain == "● healthy"


def test_a_stopped_process_says_so_where_its_cpu_would() -> None:
    """A SIGSTOPped process reads 'stop' in the PID CPU cell, not the CPU of before the stop."""
    view = _view()
    assert view.process is not None
    stopped = replace(view, process=replace(view.process, status="stopped", cpu_percent=0.0))
    cell = BY_KEY["pid"].render(stopped, NOW, None)
    assert cell.plain == "8422 stop" and cell.cell_len <= 10
    assert BY_KEY["pid"].render(view, NOW, None).plain == "8422 0%"
