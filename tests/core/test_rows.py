"""Records built from poll rows: the fast builders must give exactly what the constructors give,
and a row read again must give the record a fresh read gives, keeping what did not change."""

from __future__ import annotations

import json
import random
from dataclasses import FrozenInstanceError, InitVar, dataclass, field, fields
from typing import Any

import pytest

from zombietop.classify import Verdict, classify
from zombietop.model import (
    Health,
    Heartbeat,
    Lease,
    PendingKill,
    Task,
    TaskRecord,
    builder,
    from_values,
)
from zombietop.monitor import TaskView
from zombietop.rows import (
    HEARTBEAT_COLUMNS,
    KILL_COLUMNS,
    LEASE_COLUMNS,
    TASK_COLUMNS,
    json_loads,
    record_from_values,
)


def distinct_values(names: list[str]) -> dict[str, Any]:
    """A different value per name, so a value in the wrong slot shows."""
    return {name: f"value of {name}" for name in names}


@pytest.mark.parametrize("cls", [Lease, Heartbeat, Task, PendingKill])
def test_a_builder_fills_each_field_with_its_own_value(cls: type[Any]) -> None:
    names = [f.name for f in fields(cls)]
    random.Random(cls.__name__).shuffle(names)
    values = distinct_values(names)
    built = from_values(cls, names)(values[name] for name in names)
    assert built == cls(**values)
    assert type(built) is cls
    assert repr(built) == repr(cls(**values))
    assert hash(built) == hash(cls(**values))
    with pytest.raises(AttributeError):
        built.task_id = "other"  # still frozen


def test_a_builder_needs_every_field_once_and_nothing_else() -> None:
    names = [f.name for f in fields(Lease)]
    for wrong in (names[:-1], [*names, "extra"], [*names[:-1], names[0]]):
        with pytest.raises(TypeError):
            from_values(Lease, wrong)
    build = from_values(Lease, names)
    with pytest.raises(ValueError):
        build(range(len(names) - 1))


def test_a_builder_refuses_what_it_cannot_build_like_the_constructor() -> None:
    @dataclass(frozen=True, kw_only=True)
    class NoSlots:
        a: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            assert self.a >= 0

    for cls in (NoSlots, Checked):
        with pytest.raises(TypeError):
            from_values(cls, ["a"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Kinds:
    """A field of each kind ``builder`` mirrors."""

    plain: str
    defaulted: str = "default"
    later: list[str] = field(default_factory=list, init=False)
    fixed: int = field(default=7, init=False)
    derived: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "derived", self.plain + self.defaulted)


def keywords() -> list[tuple[type[Any], dict[str, Any]]]:
    """A class and its constructor's keywords, with and without the defaulted ones."""
    from tests.core.test_classify import NOW, beat, lease, proc, task
    from zombietop.config import default_limits

    limits = default_limits()
    verdict = classify(NOW, task(), lease(), beat(), proc(), limits)
    view = {
        "task": task(),
        "lease": lease(),
        "heartbeat": beat(),
        "process": proc(),
        "limits": limits,
        "verdict": verdict,
    }
    return [
        (Kinds, {"plain": "p"}),
        (Kinds, {"plain": "p", "defaulted": "d"}),
        (Verdict, {f.name: getattr(verdict, f.name) for f in fields(Verdict)}),
        (TaskView, view),
        (
            TaskView,
            {
                **view,
                "pending_kill": PendingKill(
                    task_id="t",
                    pid=1,
                    pid_start_time=None,
                    host="h",
                    requested_by="r",
                    term_sent_at=1.0,
                    deadline=2.0,
                ),
                "remote": True,
                "agent_note": "no agent on h",
                "waiting_on": (("up", Health.QUEUED),),
            },
        ),
    ]


@pytest.mark.parametrize(("cls", "given"), keywords())
def test_a_keyword_builder_builds_what_the_constructor_builds(
    cls: type[Any], given: dict[str, Any]
) -> None:
    build = builder(cls)
    built, constructed = build(**given), cls(**given)
    assert type(built) is cls
    assert built == constructed and repr(built) == repr(constructed)
    every = [f.name for f in fields(cls)]
    assert [getattr(built, name) for name in every] == [
        getattr(constructed, name) for name in every
    ]
    first = every[0]
    with pytest.raises(FrozenInstanceError):
        setattr(built, first, "other")
    for wrong in ({**given, "extra": 1}, {k: v for k, v in given.items() if k != first}):
        with pytest.raises(TypeError):
            build(**wrong)
    with pytest.raises(TypeError):
        build(*given.values())


def test_a_keyword_builder_gives_each_object_its_own_default_from_a_factory() -> None:
    build = builder(Kinds)
    assert build(plain="a").later is not build(plain="a").later


def test_a_keyword_builder_refuses_what_it_does_not_mirror() -> None:
    @dataclass(frozen=True, slots=True, kw_only=True)
    class Given:
        a: int
        b: InitVar[int]

    @dataclass(frozen=True, kw_only=True)
    class NoSlots:
        a: int

    # Heartbeat's counters take a default factory from callers.
    for cls in (Given, NoSlots, Heartbeat):
        with pytest.raises(TypeError):
            builder(cls)


@pytest.mark.parametrize(
    "text",
    [
        '{"rows": 1400}',
        '{"rows": 8200000, "files": 3.5, "nested": {"a": [1, null, true]}}',
        "{}",
        '{"a":1,"a":2}',
        " {}",
        "{} ",
        "\n{}\n",
        "\ufeff{}",
        '{"a": 1}x',
        '{"a": 1',
        "nope",
        "",
        "5",
        '"text"',
        "[1, 2]",
        '{"a": NaN}',
        b'{"a": 1}',
    ],
)
def test_decoding_counters_reads_or_refuses_as_json_loads(text: str | bytes) -> None:
    try:
        expected: Any = json.loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc)) as refused:
            json_loads(text)
        assert str(refused.value) == str(exc)
    else:
        decoded = json_loads(text)
        assert decoded == expected and type(decoded) is type(expected)


def row(rng: random.Random, task_id: str) -> tuple[Any, ...]:
    """A poll row (task, lease, heartbeat, kill columns) with random contents."""
    task: dict[str, Any] = dict.fromkeys(TASK_COLUMNS)
    task.update(
        task_id=task_id,
        run_id="r",
        step="s",
        step_type=rng.choice(["d", "export"]),
        state=rng.choice(["running", "starting", "queued"]),
        attempt=rng.randrange(1, 3),
        upstream=rng.choice([None, "[]", '["a"]']),
        command=rng.choice([None, '["sleep", "1"]']),
        created_at=1.0,
        updated_at=float(rng.randrange(3)),
    )
    lease: dict[str, Any] = dict.fromkeys(LEASE_COLUMNS)
    if rng.random() < 0.8:
        lease.update(
            task_id=task_id,
            owner=rng.choice(["w", None]),
            token=rng.randrange(1, 3),
            renewed_at=float(rng.randrange(3)),
            expires_at=float(rng.randrange(100, 103)),
        )
    beat: dict[str, Any] = dict.fromkeys(HEARTBEAT_COLUMNS)
    if rng.random() < 0.8:
        beat.update(
            task_id=task_id,
            stage=rng.choice(["a", "b", None]),
            progress=rng.choice([None, 1.0, 2.5]),
            counters=rng.choice([None, "", "{}", json.dumps({"rows": rng.randrange(3)})]),
            request_name=rng.choice([None, "GET"]),
            written_at=float(rng.randrange(3)),
            progress_changed_at=float(rng.randrange(2)),
            stage_started_at=0.0,
            seq=rng.randrange(1, 3),
            source=rng.choice(["reported", "observed"]),
        )
    kill: dict[str, Any] = dict.fromkeys(KILL_COLUMNS)
    if rng.random() < 0.3:
        kill.update(
            task_id=task_id,
            pid=7,
            requested_by="t",
            term_sent_at=1.0,
            deadline=31.0,
            outcome=rng.choice([None, "exited"]),
        )
    return tuple([*task.values(), *lease.values(), *beat.values(), *kill.values()])


def by_constructors(values: tuple[Any, ...]) -> TaskRecord:
    """The record as the model's own ``from_row`` constructors build it."""
    names = (
        TASK_COLUMNS
        + [f"l_{c}" for c in LEASE_COLUMNS]
        + [f"h_{c}" for c in HEARTBEAT_COLUMNS]
        + [f"k_{c}" for c in KILL_COLUMNS]
    )
    columns = dict(zip(names, values, strict=True))

    def part(prefix: str, names: list[str]) -> dict[str, Any] | None:
        if columns[f"{prefix}task_id"] is None:
            return None
        return {name: columns[f"{prefix}{name}"] for name in names}

    lease, beat, kill = (
        part("l_", LEASE_COLUMNS),
        part("h_", HEARTBEAT_COLUMNS),
        part("k_", KILL_COLUMNS),
    )
    return TaskRecord(
        task=Task.from_row(columns),
        lease=None if lease is None else Lease.from_row(lease),
        heartbeat=None if beat is None else Heartbeat.from_row(beat),
        pending_kill=None if kill is None else PendingKill.from_row(kill),
    )


@pytest.mark.parametrize("seed", range(3))
def test_a_row_read_again_gives_what_a_fresh_read_gives(seed: int) -> None:
    rng = random.Random(seed)
    old = row(rng, "t")
    kept = record_from_values(old)
    assert kept == by_constructors(old)
    for _ in range(300):
        new = row(rng, "t")
        record = record_from_values(new, old, kept)
        assert record == by_constructors(new)
        for part, (start, stop) in PARTS.items():
            if new[start:stop] == old[start:stop]:
                assert getattr(record, part) is getattr(kept, part), part
        if (
            record.heartbeat is not None
            and kept.heartbeat is not None
            and new[COUNTERS] == old[COUNTERS]
        ):
            assert record.heartbeat.counters is kept.heartbeat.counters
        old, kept = new, record


_T = len(TASK_COLUMNS)
_L = _T + len(LEASE_COLUMNS)
_H = _L + len(HEARTBEAT_COLUMNS)
PARTS = {"task": (0, _T), "lease": (_T, _L), "heartbeat": (_L, _H), "pending_kill": (_H, None)}
COUNTERS = _L + HEARTBEAT_COLUMNS.index("counters")
