"""The contract every source keeps: what it can do, where a task came from, the calls the
monitor makes on it, how its module declares its engine for the table
(``zombietop.sources.registry``), and ``ReadOnlySource``, the base that every engine's source
is built on, so that a new engine is its ``poll`` and its ``ENGINE``."""

from __future__ import annotations

import functools
import socket
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

from zombietop.actions import ActionKind
from zombietop.clock import Clock, SystemClock
from zombietop.locations import printable_url
from zombietop.model import Heartbeat, HeartbeatSource, TaskRecord
from zombietop.procs import this_host

if TYPE_CHECKING:
    from zombietop.thresholds import Limits


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


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineWorker:
    """One process that an engine's tasks run on (a Celery or RQ worker, a BullMQ worker's
    connection), as a source's last poll saw it. Every text in it is the engine's: untrusted."""

    name: str
    """The engine's name for it (``celery@batch-07``, an RQ worker's name)."""
    kind: str
    """The engine (``Origin.kind``): ``celery``, ``rq``."""
    source: str
    """The source's printable name."""
    host: str | None
    pid: int | None
    """The worker's own process, when the engine records it."""
    last_beat: float | None
    """The worker's last sign of life, on the source's clock (None: never seen)."""
    holds: int
    """How many tasks the engine says it is running now."""
    gone: bool
    """The engine no longer knows it as a live worker: its record expired, or it stopped
    answering for longer than the source's heartbeat timeout."""
    why: str = ""
    """What says it is gone, in words (empty for a live worker)."""


@runtime_checkable
class ListsWorkers(Protocol):
    """A source that knows its engine's workers. It is optional: a source without it has no
    workers in the workers list (``W``), only its tasks.

    ``workers`` is no read of its own: it returns what the last ``poll`` read (an empty
    sequence before the first), so it costs nothing and never writes to the engine; a
    worker that holds tasks but is gone from the engine's records is in it too, ``gone``.
    """

    def workers(self) -> Sequence[EngineWorker]: ...


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
        process probe checks its identity against. A running task carries a held lease, or it
        is judged reclaimable: ``ReadOnlySource.poll`` says all that a source must return.
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


class SourceEntry(Protocol):
    """What opens a source: a ``[[sources]]`` entry of the config, or ``--source URL``."""

    @property
    def url(self) -> str: ...

    @property
    def heartbeat_timeout(self) -> float | None:
        """None: the engine's own default."""


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
    name: str
    """The engine in words, as its users write it (``Airflow``)."""
    heartbeat_timeout: tuple[float, str]
    """Seconds without a beat before a running task is stalled, unless the config says
    otherwise, and where that number comes from in words."""
    actions: str
    """What a person can do to one of its tasks, in words, for the detail view."""
    task_id: Callable[[Origin], str]
    """zombietop's id of a task, from its origin: the refusals name the task by it."""
    resume: Callable[[Origin], str]
    """The sentence that says how to run a task again with the engine's own command."""
    discard: Callable[[Origin], str]
    """The sentence that says how to stop or fail a task with the engine's own command."""
    unit: str = "task"
    """The engine's word for one of its tasks (``task instance``, ``job``)."""


def proof_of_life(task_id: str, beat: float | None, started: float | None) -> Heartbeat | None:
    """An engine's beat (its worker's, its supervisor's, its lock's renewal) as the task's
    heartbeat, or None without one. It proves life, never progress: progress "moves" with
    every beat, so only the task process's CPU and I/O can call an engine's task spinning."""
    if beat is None:
        return None
    return Heartbeat(
        task_id=task_id,
        source=HeartbeatSource.SUPERVISOR,
        written_at=beat,
        progress_changed_at=beat,
        stage_started_at=started if started is not None else beat,
    )


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


def local_hostnames(host: str) -> frozenset[str]:
    """Names an engine may have recorded for this host: ``host`` (zombietop's own name, which
    ``ZOMBIETOP_HOST`` can set), the host name and the fully qualified one (the default of
    Airflow's ``hostname_callable``, and of the name after ``@`` of a Celery worker)."""
    return frozenset({host, *machine_names()})


@functools.cache
def machine_names() -> frozenset[str]:
    """This machine's host name and fully qualified name, asked once per process:
    ``socket.getfqdn`` can ask the resolver (a DNS round trip), and every poll needs them."""
    return frozenset({socket.gethostname(), socket.getfqdn()})


class ReadOnlySource(ABC):
    """The base of a read-only source: everything but ``poll``, from the module's ``ENGINE``.

    A subclass writes ``poll`` (and ``open`` and ``close`` when it holds a connection); its
    module ends with ``ENGINE = Engine(..., make=TheSource)``, which the base reads for the
    kind, the default heartbeat timeout, the limits and the refusals.
    """

    capability = Capability.READ_ONLY
    clock = "this host's clock"
    """Which clock the times are on, in words (``Source.clock``); a subclass says more."""

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        self.engine = declared_engine(type(self))
        self.kind = self.engine.kind
        self.url = url
        self.name = printable_url(url)
        """The URL without its password: safe to show and to log."""
        default = self.engine.heartbeat_timeout[0]
        self.heartbeat_timeout = default if heartbeat_timeout is None else heartbeat_timeout
        self._clock = clock or SystemClock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    async def open(self) -> None:  # noqa: B027 - a file engine has nothing to open
        """Connect, and check that the engine answers; nothing to do for a plain file."""

    async def close(self) -> None:  # noqa: B027 - nor anything to close
        """Let go of what ``open`` took."""

    async def now(self) -> float:
        """The source's clock, epoch seconds: this host's, unless the engine has its own."""
        return self._clock.now()

    @abstractmethod
    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        """Every unfinished task, and those finished at or after ``since`` (its own clock).

        What a source must return, one ``SourceRecord`` for each task, with ``self.origin``:

        - A task that runs (``RUNNING`` or ``STARTING``) carries a lease that is held (an
          ``owner``). Give it the engine's own lease with its expiry (RQ's registry, Celery's
          visibility timeout): past it, the task is ``reclaimable``. An engine without leases
          gives one held with no expiry (``expires_at=None``), which is never reclaimable. A
          running task with no lease, or a released one, is judged ``reclaimable``: nobody
          holds it.
        - A heartbeat the engine writes proves that its worker lives, not that the task moves:
          write it as ``HeartbeatSource.SUPERVISOR``.
        - A task on this host (its host in ``self.local_names(host)``) has ``host`` as its
          host, and its pid with the start time that the process probe checks (``procs``).
        - Every name read from the engine goes through ``engine_text.bounded_id`` before it
          becomes part of an id, a step or a reason.
        - What cannot be read raises ``SourceError``: the monitor keeps it to this source.
        """

    def origin(self, ids: Mapping[str, str | int | None]) -> Origin:
        """Where a task of this source came from, with the engine's own names for it."""
        return Origin(source=self.name, kind=self.kind, capability=self.capability, ids=ids)

    def local_names(self, host: str) -> frozenset[str]:
        """The host names that mean this host, for the monitor's ``host``: the machine's own
        names too when the monitor runs here (an agent for another host uses only its name)."""
        return local_hostnames(host) if host == this_host() else frozenset({host})

    def limit_overrides(self, base: Limits) -> dict[str, tuple[float, str]]:
        """The engine's own values for the limits (see ``engine_limits``): its heartbeat
        timeout, and one stage per task, budgeted as the task."""
        name, unit = self.engine.name, self.engine.unit
        return {
            "heartbeat_timeout": (self.heartbeat_timeout, self.engine.heartbeat_timeout[1]),
            "stage": (base.task, f"{name}: one stage per {unit} (the task budget)"),
        }

    def limits(self, base: Limits) -> Limits:
        return engine_limits(
            base,
            engine=self.engine.name,
            actions=self.engine.actions,
            overrides=self.limit_overrides(base),
        )

    def refusal(self, kind: ActionKind, origin: Origin) -> str | None:
        """Resume and discard are refused with the engine's own command: zombietop never
        writes to an engine. A kill goes to the task's process (``source_actions``)."""
        return engine_refusal(self.engine, self.name, kind, origin)


def engine_refusal(engine: Engine, source: str, kind: ActionKind, origin: Origin) -> str | None:
    """Why ``kind`` is refused for a task of ``engine`` read from ``source``, naming the
    engine's own command; None for a kill. The source's ``refusal``, and what a bulk action's
    confirm says before anything is asked (``zombietop.act.bulk``)."""
    if kind is ActionKind.RESUME:
        how = engine.resume(origin)
    elif kind is ActionKind.DISCARD:
        how = engine.discard(origin)
    else:
        return None
    what = engine.task_id(origin)
    return (
        f"{what} is {engine.name}'s (read-only source {source}); "
        f"zombietop never writes to it. {how}"
    )


@functools.cache
def declared_engine(cls: type) -> Engine:
    """The ``ENGINE`` that the module of ``cls`` (or of a class it is built on) declares with
    ``make=`` that class."""
    for klass in cls.__mro__:
        found = getattr(sys.modules.get(klass.__module__), "ENGINE", None)
        if isinstance(found, Engine) and found.make is cast(Any, klass):
            return found
    # A mistake in the engine's module, never in what a user wrote.
    raise RuntimeError(f"{cls.__module__} declares no ENGINE with make={cls.__name__}")
