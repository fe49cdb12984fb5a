"""How a record reads a store row: the column of each field's name, unless its record's table
says otherwise."""

from __future__ import annotations

from typing import Any

import pytest

from zombietop.fleet import StoredSample
from zombietop.model import Ack, Event, Matcher, Silence
from zombietop.rows import read_row


def test_a_field_reads_the_column_of_its_name() -> None:
    row = {"event_id": 3, "at": 1.0, "task_id": "t", "kind": "note", "actor": "ana"}
    event = Event.from_row({**row, "message": "hi", "data": '{"a": 1}'})
    assert (event.event_id, event.actor, event.data) == (3, "ana", {"a": 1})
    assert Event.from_row({**row, "message": "hi", "data": None}).data == {}


def test_a_table_renames_and_converts() -> None:
    row = {"silence_id": 1, "matcher": "host", "pattern": "web-3", "actor": "ana"}
    row |= {"reason": "deploy", "created_at": 1.0, "until_at": 9.0}
    silence = Silence.from_row({**row, "ended_at": None, "ended_by": None})
    assert silence.matcher is Matcher.HOST
    assert (silence.by, silence.until, silence.set_until) == ("ana", 9.0, None)
    ack_row = {"task_id": "t", "actor": "bo", "reason": None, "acked_at": 2.0, "until_at": 5.0}
    ack = Ack.from_row({**ack_row, "source": None})
    assert (ack.by, ack.until, ack.source) == ("bo", 5.0, None)
    assert Ack.from_row({**ack_row, "source": "prod-airflow"}).source == "prod-airflow"


def test_a_field_with_no_column_keeps_its_default() -> None:
    row: dict[str, Any] = dict.fromkeys(
        "pid status cpu_percent rss_bytes threads io_idle_s idle_s create_time".split()
    )
    row |= {"host": "h", "written_at": 4.0, "alive": 1, "identity_ok": 0, "after_finish": 0}
    row |= {"pid": 7, "children": 0, "sampled_at": 3.0}
    stored = StoredSample.from_row(row)
    assert (stored.sample.alive, stored.sample.identity_ok) == (True, False)
    assert stored.sample.read_bytes_delta is None


def test_a_missing_column_is_an_error() -> None:
    with pytest.raises(KeyError):
        read_row(Ack, {"task_id": "t"})
