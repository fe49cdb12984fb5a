"""What a Dagster run's events say, folded one row at a time (``RunEvents.take``), with rows
as Dagster 1.13 writes them (the JSON bodies trimmed to the fields read)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from zombietop.sources.dagster_events import RunEvents, dagster_time


def row(
    row_id: int, kind: str | None, at: str, step: str | None = None, **body: Any
) -> dict[str, Any]:
    event = None
    if body:
        event = json.dumps(
            {
                "timestamp": body.pop("timestamp", None),
                "user_message": body.pop("message", ""),
                "dagster_event": {"event_type_value": kind, "pid": body.pop("pid", None)},
            }
        )
    return {"id": row_id, "type": kind, "timestamp": at, "step_key": step, "event": event}


def test_the_run_start_names_the_run_worker_and_steps_come_and_go() -> None:
    found = RunEvents()
    for one in [
        row(1, "PIPELINE_START", "2026-12-06 19:32:36.706774", pid=27628, timestamp=1.5),
        row(2, "STEP_START", "2026-12-06 19:32:38.148376", "first", pid=27704, timestamp=2.0),
        row(3, None, "2026-12-06 19:32:38.156461", "first"),  # a log line of the op
        row(4, "STEP_SUCCESS", "2026-12-06 19:32:38.172240", "first"),
        row(5, "STEP_START", "2026-12-06 19:32:39.457146", "slow", pid=27762, timestamp=3.0),
    ]:
        found.take(one)
    assert (found.worker_pid, found.worker_named_at) == (27628, 1.5)
    assert found.steps == {"slow": (27762, 3.0)}
    assert found.last_id == 5 and not found.ended
    assert found.last_event_at == dagster_time("2026-12-06 19:32:39.457146")


@pytest.mark.parametrize(
    ("kind", "failure"),
    [
        ("PIPELINE_SUCCESS", None),
        ("RUN_SUCCESS", None),
        ("PIPELINE_CANCELED", None),
        ("PIPELINE_FAILURE", 'Execution of run for "failer" failed.'),
        ("RUN_FAILURE", 'Execution of run for "failer" failed.'),
    ],
)
def test_the_runs_end_is_seen_with_the_failures_message(kind: str, failure: str | None) -> None:
    found = RunEvents()
    found.take(row(1, "PIPELINE_START", "2026-12-06 19:32:36", pid=5, timestamp=1.0))
    body: dict[str, Any] = {"pid": 5, "timestamp": 2.0, "message": failure or ""}
    found.take(row(2, kind, "2026-12-06 19:32:40", **body))
    assert found.ended and found.failure == failure


@pytest.mark.parametrize(
    "event",
    [
        "not json",
        "[1, 2]",
        json.dumps({"dagster_event": {"pid": "7"}}),
        json.dumps({"dagster_event": {"pid": True}}),
    ],
)
def test_a_start_event_that_does_not_read_names_no_run_worker(event: str) -> None:
    found = RunEvents()
    found.take({"id": 1, "type": "RUN_START", "timestamp": "x", "step_key": None, "event": event})
    assert found.worker_pid is None and found.last_event_at is None and found.last_id == 1
