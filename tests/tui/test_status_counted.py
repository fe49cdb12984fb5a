"""``zombietop status`` of a poll past ``[monitor] read_at_most``: the table ends with what was
counted and what was left unread, ``--json`` has ``counted``, and tasks left unread are never
OK."""

from __future__ import annotations

import json

from zombietop.health import Health
from zombietop.judge.monitor import build_snapshot
from zombietop.tui.cli.status import Level, level, nagios_output, render_table
from zombietop.tui.cli.status_json import snapshot_to_json
from zombietop.tui.testing import NOW, counted_snapshot, sample_config, synthetic_records

QUIET = (
    "921,635 healthy and 3,012 queued tasks counted by the store, not listed "
    "(more than 20,000 active; [monitor] read_at_most)"
)
UNREAD = (
    "12,000 more tasks were not read and may need attention: the 20,000 silent longest are listed"
)


def _calm(n: int = 3):  # type: ignore[no-untyped-def]
    """A poll of ``n`` healthy tasks, every one read."""
    return build_snapshot(NOW, synthetic_records(n), sample_config(), {})


def test_the_table_ends_with_what_was_not_listed() -> None:
    """The two lines come after the rows and before what to act on; counts include the quiet."""
    out = render_table(counted_snapshot(_calm()))
    lines = out.splitlines()
    assert lines[0] == "queued 3012  healthy 921638"
    rows_end = lines.index(QUIET)
    assert lines[rows_end - 1] == "" and lines[rows_end - 2].startswith("healthy")
    assert lines[rows_end + 1] == UNREAD


def test_quiet_alone_and_nothing_counted() -> None:
    """No unread line when every loud task was read; no line at all for a store read whole."""
    out = render_table(counted_snapshot(_calm(), unread=0, queued=0))
    assert "921,635 healthy tasks counted by the store, not listed" in out
    assert "not read" not in out
    assert "counted by the store" not in render_table(_calm())


def test_every_task_quiet_prints_the_line_without_rows() -> None:
    """A poll that counted every active task quiet has no row: the line is still printed."""
    empty = build_snapshot(NOW, [], sample_config(), {})
    out = render_table(counted_snapshot(empty, unread=0))
    assert "HEALTH" not in out and QUIET in out.splitlines()


def test_tasks_left_unread_are_a_warning_never_ok() -> None:
    """Every task read is healthy: OK when nothing is unread, WARNING (exit 1) when some are;
    the Nagios summary says how many were not read instead of 'none stuck'."""
    assert level(counted_snapshot(_calm(), unread=0)) is Level.OK
    unread = counted_snapshot(_calm())
    assert level(unread) is Level.WARNING
    summary = nagios_output(unread).splitlines()[0]
    assert summary.startswith("ZOMBIETOP WARNING - 12,000 not read ([monitor] read_at_most) | ")
    critical = counted_snapshot()  # the sample fleet has dead and stalled tasks
    assert level(critical) is Level.CRITICAL


def test_json_has_counted() -> None:
    """``counted``: the quiet by health, the unread and the limit; null for a store read
    whole. ``counts`` holds the quiet tasks too."""
    report = json.loads(json.dumps(snapshot_to_json(counted_snapshot(_calm()))))
    assert report["counted"] == {
        "quiet": {"healthy": 921_635, "queued": 3_012},
        "unread": 12_000,
        "read_at_most": 20_000,
    }
    assert report["counts"][str(Health.HEALTHY)] == 921_638
    assert snapshot_to_json(_calm())["counted"] is None
