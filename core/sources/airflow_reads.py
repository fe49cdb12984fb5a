"""Which task instances one poll reads from Airflow, and what it remembers between polls.

Airflow indexes ``task_instance`` by ``state`` (``ti_state``) and by ``dag_id, task_id, run_id,
state`` (``ti_state_lkp``), never by ``end_date``. "Every unfinished one, and those finished
since ``since``" is therefore a scan of the whole table (300k rows: about 0.25 s of SHARED lock
on a rollback-journal SQLite file, every poll, which Airflow's writers wait behind). So:

- a full read (unfinished, and finished since ``since``) at the first poll, when ``since`` is
  none or earlier than the last full read's, and every ``FULL_READ_EVERY`` seconds after;
- between them, an indexed read: every unfinished task instance (``ti_state``) and the ones
  unfinished at the last read, by their keys (``ti_state_lkp``), which is where the newly
  finished are; and the finished ones of the DAG runs made since the last read (the runs after
  the newest run id it saw, by dag_run's primary key) or running (``ti_dag_run``). The
  finished ones are remembered, and forgotten once they end before ``since``.

The runs matter: a task that fails within a second of its run's start (a watchdog looks every
30 s) is made and finished between two polls. Read by key only, it would wait for the next
full read, up to ``FULL_READ_EVERY`` later, and its page with it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from zombietop.rows import Row

FINISHED = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})
"""Airflow's finished states: the SQL's lists (``sql/airflow_*.sql``) say the same."""

FULL_READ_EVERY = 600.0
"""Seconds between full reads: what the indexed reads cannot see (a task instance born and
finished between two polls, a finished one changed in the UI) is seen within this."""

Key = tuple[str, str, str, int]


@dataclass(frozen=True, slots=True)
class IndexedRead:
    """What an indexed read reads beside the unfinished task instances."""

    keys: str
    """The keys unfinished at the last read, as a JSON list."""
    runs_after: int
    """The newest DAG run's row id at the last read: the runs after it are new."""


def key_of(row: Row) -> Key:
    """A task instance's key in Airflow: DAG, task, run, map index."""
    return (row["dag_id"], row["task_id"], row["run_id"], int(row["map_index"]))


class ReadPlan:
    """What the next poll reads (``next_read``), and the rows it answers with (``merge``)."""

    def __init__(self, ended_at: Callable[[Row], float | None]) -> None:
        self._ended_at = ended_at
        self._finished: dict[Key, Row] = {}
        """The finished rows seen, by key, as last read."""
        self._watched: list[Key] = []
        """The keys unfinished at the last read: where the newly finished are."""
        self._floor: float | None = None
        """The ``since`` of the last full read: the memory holds what finished from then."""
        self._full_at: float | None = None
        self._newest_run: int | None = None
        """The newest DAG run's row id when the last read began."""

    def forget(self) -> None:
        """Read in full next time (the file was replaced, or the schema read again)."""
        self._finished, self._watched, self._floor, self._full_at = {}, [], None, None
        self._newest_run = None

    def next_read(self, since: float | None, now: float) -> IndexedRead | None:
        """None for a full read; else what the indexed read reads beside the unfinished."""
        if (
            since is None
            or self._floor is None
            or self._full_at is None
            or self._newest_run is None
            or since < self._floor
            or now - self._full_at >= FULL_READ_EVERY
        ):
            return None
        return IndexedRead(keys=json.dumps(self._watched), runs_after=self._newest_run)

    def merge(
        self,
        rows: Sequence[Row],
        since: float | None,
        now: float,
        *,
        full: bool,
        newest_run: int,
    ) -> list[Row]:
        """The rows of this poll: what was read, and the remembered finished ones still
        within ``since``, in key order. ``newest_run`` is the newest DAG run's row id, read
        before the rows were."""
        self._newest_run = newest_run
        if full:
            self._finished, self._floor, self._full_at = {}, since, now
        unfinished: dict[Key, Row] = {}
        for row in rows:
            key = key_of(row)
            if row["state"] in FINISHED:
                self._finished[key] = row
            else:
                unfinished[key] = row
                self._finished.pop(key, None)
        if since is not None:
            self._finished = {
                key: row for key, row in self._finished.items() if self._within(row, since)
            }
        self._watched = list(unfinished)
        found: dict[Key, Any] = {**self._finished, **unfinished}
        return [found[key] for key in sorted(found)]

    def _within(self, row: Row, since: float) -> bool:
        ended = self._ended_at(row)
        return ended is not None and ended >= since
