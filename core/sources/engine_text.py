"""Engine text bounded as it is read: the one function every source passes it through.

Whatever can write an engine's database or broker chooses its names: an RQ job's description of
30 MB became a task id of 30 MB, a ``status`` of 210 MB and 540 MB of memory. Every name that
becomes part of an id, a step or a reason goes through ``bounded_id`` when it is read, so one
long name costs a few hundred characters wherever it goes.
"""

from __future__ import annotations

import hashlib

ID_PART_LIMIT = 250
"""The most characters of one part of an id (a queue, a task's name, a job id), as Airflow's own
``ID_LEN`` allows its DAG and task ids."""


def bounded_id(text: str, limit: int = ID_PART_LIMIT) -> str:
    """Return ``text`` when it has at most ``limit`` characters; else its start and its end
    around a marker that says how many characters were cut and a digest of the whole.

    The digest keeps two long names apart that share their start and their end, so the ids
    built from them stay unique.
    """
    if len(text) <= limit:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    marker = f"[...{len(text)} characters, sha256 {digest}...]"
    keep = max(limit - len(marker), 2)
    return text[: keep - keep // 2] + marker + text[len(text) - keep // 2 :]
