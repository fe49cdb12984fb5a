"""The table of the engines zombietop reads, and the calls that go through it.

A source URL reads ``KIND+BACKEND://...`` (``airflow+sqlite:///PATH``). Its kind picks a line of
``ENGINES``; the module on that line declares its engine (``ENGINE``, a ``base.Engine``), checks
the rest of the URL and makes the source. Adding an engine is its module and one line here.

The table names modules, not classes, as healthchecks' ``TRANSPORTS`` does: an engine's module
is imported only when a URL of its kind is read. So the config, which checks the source URLs it
is given, does not import every engine when it is imported.
"""

from __future__ import annotations

import importlib

from zombietop.errors import SourceError
from zombietop.locations import printable_url
from zombietop.sources.base import Engine, Source

ENGINES: dict[str, str] = {
    "airflow": "zombietop.sources.airflow",
    "celery": "zombietop.sources.celery",
    "rq": "zombietop.sources.rq",
    "bullmq": "zombietop.sources.bullmq",
    "dramatiq": "zombietop.sources.dramatiq",
    "prefect": "zombietop.sources.prefect",
    "dagster": "zombietop.sources.dagster",
}
"""Each engine's kind (the part of its URLs' scheme before ``+``) and the module that reads it."""


def engine(kind: str) -> Engine:
    """The engine of ``kind``, as its module declares it."""
    module = importlib.import_module(ENGINES[kind])
    found = getattr(module, "ENGINE", None)
    if not isinstance(found, Engine) or found.kind != kind:
        # A mistake in the table or in the module, never in what a user wrote.
        raise RuntimeError(f"{module.__name__} declares no ENGINE of kind {kind!r}")
    return found


def engines() -> list[Engine]:
    """Every engine in the table, in its order."""
    return [engine(kind) for kind in ENGINES]


def spoken_list(items: list[str]) -> str:
    """``a, b or c``."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} or {items[-1]}"


def source_forms() -> str:
    """How every source URL zombietop reads is written: ``A, B or C``."""
    return spoken_list([form for found in engines() for form in found.forms])


def engine_of(url: str) -> Engine:
    """The engine that reads ``url``, or a ``SourceError`` that lists the ones in the table."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    kind = scheme.partition("+")[0]
    if kind in ENGINES:
        found = engine(kind)
        if scheme in found.schemes:
            return found
    schemes = ", ".join(scheme for found in engines() for scheme in found.schemes)
    raise SourceError(
        f"source {printable_url(url)!r}: unknown kind; zombietop reads these kinds of source: "
        f"{schemes} (write {source_forms()})"
    )


def check_source_url(url: str) -> str:
    """Return ``url`` if an engine in the table can read it, else raise saying what to write."""
    return engine_of(url).check_url(url)


def open_source(url: str, *, heartbeat_timeout: float | None = None) -> Source:
    """A source for ``url`` (not yet opened)."""
    found = engine_of(url)
    return found.make(found.check_url(url), heartbeat_timeout=heartbeat_timeout)
