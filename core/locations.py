"""Where things are: the store, the sources, the files kept beside the store, and the
environment a job is given.

A store is a SQLite file or a ``postgresql://`` URL; a source is a URL too, and the table of
engines (``zombietop.sources.registry``) says which ones zombietop reads. Beside a store
``zombietop.db`` lives ``zombietop.db.d/`` with ``logs/`` (relaunched attempts), ``heartbeats/``
(the files ``zombietop run`` tails) and ``checkpoints/`` (the SDK's default).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from pathlib import Path
from urllib.parse import urlsplit


def default_store_path() -> Path:
    """``$XDG_STATE_HOME/zombietop/zombietop.db`` (``~/.local/state/...`` when unset)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "zombietop" / "zombietop.db"


POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: str | Path) -> bool:
    """True for a ``postgresql://`` or ``postgres://`` URL (a PostgreSQL store)."""
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def store_location(text: str | Path) -> Path | str:
    """Where a store is: a URL stays a string, anything else is a file path (``~`` expanded)."""
    if is_postgres_url(text):
        return str(text)
    return Path(text).expanduser()


def printable_url(url: str) -> str:
    """``url`` without its password, for screens and logs."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


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
TASK_NAME_PREFIX = 48
"""How much of a task id its file names keep readable; the hash after it tells ids apart."""


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


TIE_FOLDER = "running"
"""Beside the store, where an SDK job holds a file named for its task open while it runs: how
/proc ties the process to the task when nothing in its environment or command line does."""


def file_identity(path: Path) -> tuple[int, int] | None:
    """The device and inode ``path`` names now (None once nothing is there).

    An open SQLite connection keeps reading the file it opened, through its inode, after another
    file was moved to the path (a restore, ``airflow db reset``): this tells the two apart.
    """
    try:
        found = path.stat()
    except OSError:
        return None
    return found.st_dev, found.st_ino


def safe_name(task_id: str) -> str:
    """Make a task id safe to be part of a file name."""
    return _UNSAFE.sub("_", task_id)


def task_file_name(task_id: str) -> str:
    """The stem of a task's own files (heartbeat file, checkpoint, logs): its id made safe and
    cut short, then a short hash of the exact id. Ids that differ only in what is made safe
    (``col/x``, ``col_x``, ``col x``) never share a file, and no id is too long for one."""
    digest = hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{safe_name(task_id)[:TASK_NAME_PREFIX]}-{digest}"


def adopt_legacy_file(legacy: Path, path: Path) -> None:
    """Move a file kept under a name from before ``task_file_name`` to its new name, once.

    Old names could be shared by ids that differ only in ``/``, a space or ``_``: the first
    of them to look takes the file, as it would have read it before.
    """
    if legacy != path and not path.exists() and legacy.exists():
        with contextlib.suppress(FileNotFoundError):  # another process moved it first
            os.replace(legacy, path)


SOURCES_ENV = "ZOMBIETOP_SOURCES"
"""Source URLs (one on each line) that a command reads besides ``--source``: how a dashboard
hands its ``--source`` URLs to the process that finishes its kills, out of sight of ``ps``."""


def clean_env() -> dict[str, str]:
    """Copy this process's environment without any lease variables it may itself run under."""
    return {key: value for key, value in os.environ.items() if key not in LEASE_ENV}
