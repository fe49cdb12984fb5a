"""The contract every source keeps: what it can do, where a task came from, the calls the
monitor makes on it, and how its module declares its engine for the table
(``zombietop.sources.registry``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from zombietop.actions import ActionKind
from zombietop.model import TaskRecord

if TYPE_CHECKING:
    # Only for annotations: the config imports the sources to check their URLs.
    from zombietop.config import Limits


class Capability(StrEnum):
    """What zombietop may do to a source's tasks."""

    READ_ONLY = "read-only"
    """Records are read, never written: resume and discard are refused with the engine's own
    command, kill goes to the local process (identity-checked), holds stay on zombietop's side."""
    READ_AND_ACT = "read-and-act"
    """zombietop's own store: every action is carried out there."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Where one task came from, with the engine's own names for it."""

    source: str
    """The source's printable name (its URL without a password)."""
    kind: str
    """The engine: ``airflow``."""
    capability: Capability
    ids: Mapping[str, str | int | None] = field(default_factory=dict)
    """The engine's identifiers, e.g. dag_id, task_id, run_id, map_index, try_number, operator."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceRecord:
    """A task record read from a source, with where it came from."""

    record: TaskRecord
    origin: Origin


class Source(Protocol):
    """A read-only engine database the monitor polls beside its store."""

    name: str
    kind: str
    capability: Capability
    clock: str
    """Which clock the source's times are on, in words (e.g. ``the PostgreSQL server's now()``);
    ``now()`` reads it, so the monitor can put every record on the store's clock."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def now(self) -> float:
        """The source's clock, epoch seconds."""
        ...

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        """Every unfinished task, and those finished at or after ``since`` (its own clock).

        ``host`` is the monitor's: a task running there is given the pid start time that the
        process probe checks its identity against.
        """
        ...

    def limits(self, base: Limits) -> Limits:
        """The limits for one of its step types, from the effective ``base`` (engine defaults
        fill what the config leaves at zombietop's built-in defaults)."""
        ...

    def refusal(self, kind: ActionKind, origin: Origin) -> str | None:
        """Why ``kind`` cannot be done to this task here, naming the engine's own command; None
        when zombietop can do it. zombietop only ever kills a source's task's process
        (``source_actions``), so a read-only source refuses resume and discard."""
        ...


class SourceFactory(Protocol):
    """Make a source, not yet opened, from a URL its engine has checked."""

    def __call__(self, url: str, *, heartbeat_timeout: float | None = None) -> Source: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Engine:
    """One kind of source, as its module declares it (a module-level ``ENGINE``) for the table
    in ``zombietop.sources.registry``."""

    kind: str
    """Its name: the part of its URLs' scheme before ``+``, and the ``Origin.kind`` of its
    tasks (``airflow``)."""
    schemes: tuple[str, ...]
    """The URL schemes it reads, each ``KIND+BACKEND`` (``airflow+sqlite``)."""
    forms: tuple[str, ...]
    """How its URLs are written, for help and error texts (``airflow+sqlite:///PATH``)."""
    check_url: Callable[[str], str]
    """Return the URL when the engine can read it; else raise ``SourceError`` saying what to
    write instead."""
    make: SourceFactory
    """Make one of its sources from a checked URL: usually the source's class."""


def engine_limits(
    base: Limits, *, engine: str, actions: str, overrides: Mapping[str, tuple[float, str]]
) -> Limits:
    """``base`` as an engine's step type has it (``Source.limits``): the engine's name, the
    actions it allows in words, and each of ``overrides`` (a field: the engine's value, and where
    it comes from in words) that the step type's own ``[step_types.NAME]`` leaves unset."""
    own = f"[step_types.{base.step_type}]"
    sources = dict(base.sources)
    changes: dict[str, Any] = {"engine": engine, "engine_actions": actions}
    for name, (value, said) in overrides.items():
        if not base.source(name).endswith(own):
            changes[name], sources[name] = value, said
    return replace(base, **changes, sources=sources)
