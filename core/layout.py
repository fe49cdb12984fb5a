"""What a job sees of zombietop: the files kept beside the store and the environment it is given.

Beside a store ``zombietop.db`` lives ``zombietop.db.d/`` with ``logs/`` (relaunched attempts),
``heartbeats/`` (the files ``zombietop run`` tails) and ``checkpoints/`` (the SDK's default).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from zombietop.store import default_store_path, is_postgres_url

LEASE_ENV = (
    "ZOMBIETOP_TASK",
    "ZOMBIETOP_LEASE_OWNER",
    "ZOMBIETOP_LEASE_TOKEN",
    "ZOMBIETOP_HEARTBEAT_FILE",
    "ZOMBIETOP_CHECKPOINT",
    "ZOMBIETOP_ATTEMPT",
)
"""Variables that tie a process to one task's lease."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def state_dir(store_path: Path | str) -> Path:
    """Return ``<store>.d``, the folder beside the store for logs, heartbeat files, checkpoints.

    A PostgreSQL store has no folder beside it, and these files belong to one host anyway: they
    go under this host's state directory, named after the server and database.
    """
    if is_postgres_url(store_path):
        parts = urlsplit(str(store_path))
        name = safe_name(f"{parts.hostname or 'local'}-{parts.port or 5432}{parts.path}")
        return default_store_path().parent / f"pg-{name}.d"
    path = Path(store_path)
    return path.with_name(path.name + ".d")


def safe_name(task_id: str) -> str:
    """Make a task id safe to be part of a file name."""
    return _UNSAFE.sub("_", task_id)


def clean_env() -> dict[str, str]:
    """Copy this process's environment without any lease variables it may itself run under."""
    return {key: value for key, value in os.environ.items() if key not in LEASE_ENV}
