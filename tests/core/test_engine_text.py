"""Engine text is bounded as each source reads it, by one function (``bounded_id``)."""

from __future__ import annotations

import json

from zombietop.sources.airflow import airflow_task_id
from zombietop.sources.celery_reports import ACTIVE, sightings_of, unacked_of
from zombietop.sources.engine_text import ID_PART_LIMIT, bounded_id
from zombietop.sources.rq import job_name, rq_task_id

LONG = "x" * 1_000_000


def test_a_short_name_is_kept_and_a_long_one_is_cut_to_the_limit() -> None:
    assert bounded_id("tasks.export") == "tasks.export"
    cut = bounded_id(LONG)
    assert len(cut) <= ID_PART_LIMIT
    assert cut.startswith("xxx") and cut.endswith("xxx") and "[...1000000 characters" in cut


def test_two_long_names_with_the_same_ends_stay_apart() -> None:
    one, two = "a" * 500 + "1" + "a" * 500, "a" * 500 + "2" + "a" * 500
    assert bounded_id(one) != bounded_id(two)
    assert bounded_id(one) == bounded_id(one)


def test_every_source_bounds_the_parts_of_its_ids() -> None:
    limit = 3 * ID_PART_LIMIT + 2
    assert len(rq_task_id(LONG, job_name(LONG + "(1)"), LONG)) <= limit
    assert len(airflow_task_id(LONG, LONG, LONG, 3)) <= limit + len("[3]")
    [seen] = sightings_of(
        LONG, ACTIVE, [{"id": LONG, "name": LONG, "delivery_info": {"routing_key": LONG}}]
    )
    assert max(map(len, (seen.task_id, seen.name, seen.queue, seen.worker))) <= ID_PART_LIMIT
    raw = json.dumps([{"headers": {"id": LONG, "task": LONG}}, "", LONG]).encode()
    [lost] = unacked_of({b"1": raw}, {b"1": 1.0})
    assert max(map(len, (lost.task_id, lost.name, lost.queue))) <= ID_PART_LIMIT
