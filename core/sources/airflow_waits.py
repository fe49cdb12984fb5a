"""What a waiting Airflow task instance waits on: a slot of its pool, and its upstream task
instances, read from Airflow's DAG shapes.

A task instance waits for a slot of its pool in ``scheduled`` and ``queued``: ``pool_words``
says how many are open, from ``slot_pool`` (``airflow_waiting_pools``).

Airflow keeps each DAG as its scheduler parsed it in ``serialized_dag``: the column ``data``
(JSON), or ``data_compressed`` (the same JSON, zlib-compressed) under ``[core]
compress_serialized_dags``. Each task of ``dag.tasks`` (``{"__type": "operator", "__var":
{...}}`` in what Airflow 2.10 and 3 write) names its ``downstream_task_ids``; Airflow derives
the upstream from them, and so does this module. Airflow 3 keeps one row per DAG version (the task
instance's ``dag_version_id``), Airflow 2 one per DAG; both carry the ``dag_hash`` of the data.

A shape is parsed once per ``(dag_id, dag_hash)`` and kept while task instances of it wait, so a
poll reads the hashes (small columns, through an index) and the data only of what changed. A
DAG whose data cannot be parsed gives its task instances no upstream and a note saying why.

A task instance in ``scheduled``, ``queued`` or no state yet waits on its upstream task
instances of the same DAG run, and one in ``upstream_failed`` is held by them, among those the
poll read: of each upstream task, the one of its own map index when there is one (as in a
mapped task group), else every one of them. An upstream that finished before the poll's
``since`` is not read.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from zombietop.printable import printable
from zombietop.rows import Row
from zombietop.sources.airflow_reads import Key, key_of

WAITS_ON_UPSTREAM: frozenset[str | None] = frozenset(
    {None, "scheduled", "queued", "upstream_failed"}
)
"""The Airflow states in which a task instance has not yet started past its upstream; in
``upstream_failed`` it never will, and its upstream's failure says why."""
WAITS_IN_POOL = frozenset({"scheduled", "queued"})
"""The states in which a task instance waits for a slot of its pool."""


def pool_words(row: Row) -> str:
    """``pool zt_empty: 0 of 0 slots open``, from a row of ``airflow_waiting_pools``."""
    name = printable(str(row["pool"]))
    if row["slots"] is None:
        return f"pool {name} does not exist"
    slots = int(row["slots"])
    # A pool of -1 slots is unlimited in Airflow.
    if slots < 0:
        return f"pool {name}: unlimited slots"
    return f"pool {name}: {max(0, slots - int(row['used']))} of {slots} slots open"


class DagFormatError(ValueError):
    """A serialized DAG that does not read as Airflow writes one."""


def decoded(data: Any, compressed: bytes | None) -> Any:
    """The JSON of one ``serialized_dag`` row: ``data_compressed`` when set, else ``data``
    (text on SQLite and from asyncpg's jsonb, already a dict from other drivers)."""
    try:
        if compressed is not None:
            return json.loads(zlib.decompress(bytes(compressed)))
        return json.loads(data) if isinstance(data, str | bytes) else data
    except (zlib.error, ValueError) as exc:
        raise DagFormatError(f"not JSON ({exc})") from None


def upstream_of(serialized: Any) -> dict[str, frozenset[str]]:
    """By task id, the tasks it runs after, read from a decoded serialized DAG."""
    dag = serialized.get("dag") if isinstance(serialized, dict) else None
    tasks = dag.get("tasks") if isinstance(dag, dict) else None
    if not isinstance(tasks, list):
        raise DagFormatError("no dag.tasks list")
    upstream: dict[str, set[str]] = {}
    for entry in tasks:
        task = entry.get("__var", entry) if isinstance(entry, dict) else None
        task_id = task.get("task_id") if isinstance(task, dict) else None
        if not isinstance(task, dict) or not isinstance(task_id, str):
            raise DagFormatError("a task without a task_id")
        # Airflow writes only the downstream; an upstream list, were one there, counts too.
        ups = _ids(task.get("upstream_task_ids"), task_id)
        upstream.setdefault(task_id, set()).update(ups)
        # Older data names them _downstream_task_ids (Airflow 3 renames it as it reads).
        down = task.get("downstream_task_ids", task.get("_downstream_task_ids"))
        for name in _ids(down, task_id):
            upstream.setdefault(name, set()).add(task_id)
    return {name: frozenset(ups) for name, ups in upstream.items()}


def _ids(found: Any, task_id: str) -> list[str]:
    """The task ids of one of a task's lists (None: an empty list, left out)."""
    found = found or []
    if not isinstance(found, list) or not all(isinstance(one, str) for one in found):
        raise DagFormatError(f"task {task_id}: its up- or downstream is not a list of task ids")
    return found


@dataclass(frozen=True, slots=True)
class Shape:
    """One parsed DAG: each task's upstream, or why it could not be read."""

    upstream: Mapping[str, frozenset[str]] = field(default_factory=dict)
    problem: str | None = None


def parse(dag_id: str, data: Any, compressed: bytes | None) -> Shape:
    """The shape of one ``serialized_dag`` row; never raises."""
    try:
        return Shape(upstream=upstream_of(decoded(data, compressed)))
    except DagFormatError as exc:
        problem = f"upstream unknown: serialized DAG {dag_id} unreadable ({exc})"
        return Shape(problem=printable(problem[:300]))


@dataclass(frozen=True, slots=True, kw_only=True)
class Waits:
    """What the waiting task instances of one poll wait on."""

    upstream: Mapping[Key, tuple[Key, ...]] = field(default_factory=dict)
    """By a waiting task instance's key, the keys of the upstream task instances read."""
    notes: Mapping[Key, str] = field(default_factory=dict)
    """By key, why a waiting task instance's upstream is unknown."""


class DagShapes:
    """The parsed DAG shapes, kept by ``(dag_id, dag_hash)`` between polls."""

    def __init__(self) -> None:
        self._parsed: dict[tuple[str, str], Shape] = {}

    @staticmethod
    def versions(rows: Iterable[Row]) -> list[str]:
        """The DAG versions (Airflow 3's ``dag_version_id``, Airflow 2's ``dag_id``) whose
        hashes this poll needs: those of the waiting task instances."""
        return sorted(
            {str(row["dag_version"]) for row in rows if _waits(row) and row["dag_version"]}
        )

    def missing(self, hashes: Iterable[Row]) -> list[str]:
        """Of the rows of ``airflow_dag_hashes_v*``, the versions whose shape is not parsed."""
        return sorted(
            {str(h["version"]) for h in hashes if (h["dag_id"], h["dag_hash"]) not in self._parsed}
        )

    def learn(self, hashes: Sequence[Row], dags: Iterable[Row]) -> dict[str, Shape]:
        """Parse the rows of ``airflow_dags_v*`` just read, forget the shapes no ``hashes`` row
        names, and answer the shape of each version ``hashes`` names."""
        for row in dags:
            key = (row["dag_id"], row["dag_hash"])
            if key not in self._parsed:
                self._parsed[key] = parse(str(row["dag_id"]), row["data"], row["data_compressed"])
        by_version = {
            str(h["version"]): (h["dag_id"], h["dag_hash"])
            for h in hashes
            if (h["dag_id"], h["dag_hash"]) in self._parsed
        }
        self._parsed = {key: self._parsed[key] for key in set(by_version.values())}
        return {version: self._parsed[key] for version, key in by_version.items()}


def upstream_waits(
    rows: Sequence[Row], shapes: Mapping[str, Shape], unread: str | None = None
) -> Waits:
    """What each waiting task instance among ``rows`` waits on: its upstream task instances
    in ``rows``, by ``shapes`` (by DAG version); ``unread`` is why no shape could be read."""
    waiting = [row for row in rows if _waits(row)]
    runs = {(row["dag_id"], row["run_id"]) for row in waiting}
    in_runs: dict[tuple[str, str, str], list[Key]] = {}
    for row in rows:
        if (row["dag_id"], row["run_id"]) in runs:
            in_runs.setdefault((row["dag_id"], row["run_id"], row["task_id"]), []).append(
                key_of(row)
            )
    upstream: dict[Key, tuple[Key, ...]] = {}
    notes: dict[Key, str] = {}
    for row in waiting:
        key = key_of(row)
        shape = shapes.get(str(row["dag_version"]))
        if shape is None:
            if unread is not None:
                notes[key] = unread
            continue
        if shape.problem is not None:
            notes[key] = shape.problem
            continue
        found: list[Key] = []
        for task in sorted(shape.upstream.get(row["task_id"], ())):
            of_task = in_runs.get((row["dag_id"], row["run_id"], task), [])
            same = [k for k in of_task if k[3] == key[3] and key[3] >= 0]
            found.extend(same or of_task)
        if found:
            upstream[key] = tuple(found)
    return Waits(upstream=upstream, notes=notes)


def _waits(row: Row) -> bool:
    return row["state"] in WAITS_ON_UPSTREAM
