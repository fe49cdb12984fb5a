"""Which task instances one poll reads from Airflow, and what it remembers between polls.

Airflow indexes ``task_instance`` by ``state`` (``ti_state``) and by ``dag_id, task_id, run_id,
state`` (``ti_state_lkp``), never by ``end_date``. "Every unfinished one, and those finished
since ``since``" is therefore a scan of the whole table (300k rows: about 0.25 s of SHARED lock
on a rollback-journal SQLite file, every poll, which Airflow's writers wait behind). So:

- a full read (unfinished, and finished since ``since``) at the first poll, when ``since`` is
  none or earlier than the last full read's, and every ``FULL_READ_EVERY`` seconds after;
- between them, an indexed read: every unfinished task instance (``ti_state``) and the ones
  unfinished at the last read, by their keys (``ti_state_lkp``), which is where the newly
  finished are. The finished ones are remembered, and forgotten once they end before ``since``.

A task instance created and finished between two polls is seen by the next full read only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from zombietop.rows import Row

FINISHED = frozenset({"success", "failed", "skipped", "upstream_failed", "removed"})
"""Airflow's finished states: the SQL's lists (``sql/airflow_*.sql``) say the same."""

FULL_READ_EVERY = 600.0
"""Seconds between full reads: what the indexed reads cannot see (a task instance born and
finished between two polls, a finished one changed in the UI) is seen within this."""

Key = tuple[str, str, str, int]


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

    def forget(self) -> None:
        """Read in full next time (the file was replaced, or the schema read again)."""
        self._finished, self._watched, self._floor, self._full_at = {}, [], None, None

    def next_read(self, since: float | None, now: float) -> str | None:
        """None for a full read; else the keys to read beside the unfinished, as JSON."""
        if (
            since is None
            or self._floor is None
            or self._full_at is None
            or since < self._floor
            or now - self._full_at >= FULL_READ_EVERY
        ):
            return None
        return json.dumps(self._watched)

    def merge(
        self, rows: Sequence[Row], since: float | None, now: float, *, full: bool
    ) -> list[Row]:
        """The rows of this poll: what was read, and the remembered finished ones still
        within ``since``, in key order."""
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
