"""The page that closes the incident of a task gone from the snapshot: an all-clear for a task
that ended (or the store's own, pruned after it finished), ``lost`` for an engine's task that
left unfinished. The whole path runs against real Celery workers in
tests/core/test_source_celery_field.py; these are its words."""

from __future__ import annotations

from zombietop.health import Health
from zombietop.watch.incident_book import Incident, _vanished_line

URL = "celery+redis://127.0.0.1:6379/0"


def test_an_engines_unfinished_task_that_left_is_lost_with_how_long_it_was_open() -> None:
    incident = Incident(task_id="celery/t/1", health=Health.DEAD, opened_at=100.0)
    assert _vanished_line(incident, URL, now=135.0) == (
        f"celery/t/1 lost: {URL} no longer holds it and recorded no end (was dead for 35s); "
        "look for it in the engine, this incident is closed"
    )


def test_the_stores_task_and_a_finished_one_close_with_an_all_clear() -> None:
    stalled = Incident(task_id="export-2031", health=Health.STALLED, opened_at=100.0)
    assert _vanished_line(stalled, None, now=135.0) == (
        "export-2031 all clear: no longer active (was stalled)"
    )
    failed = Incident(task_id="dag/t/run", health=Health.FAILED, opened_at=100.0)
    assert _vanished_line(failed, URL, now=135.0).startswith("dag/t/run all clear: ")
