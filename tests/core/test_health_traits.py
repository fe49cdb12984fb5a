"""The health table: every health has one row of traits, the traits say what each module used
to keep in a set of its own, and no module keeps such a set again."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from zombietop.health import (
    FLAG_TRAITS,
    HEALTH_TRAITS,
    Flag,
    Health,
    HealthTraits,
    NagiosLevel,
    RowOrder,
    WatchReaction,
)
from zombietop.model import TaskState

REPO = Path(__file__).resolve().parents[2]
H = Health


def test_every_health_has_one_row_of_traits() -> None:
    assert list(HEALTH_TRAITS) == list(Health)
    for health in Health:
        assert health.traits is HEALTH_TRAITS[health]


def healths(trait: str) -> set[Health]:
    return {health for health in Health if getattr(health, trait)}


@pytest.mark.parametrize(
    ("trait", "expected"),
    [
        ("pages", {H.DEAD, H.ORPHANED, H.RECLAIMABLE, H.STALLED}),
        ("asks_to_kill", {H.ORPHANED}),
        ("holds", {H.DEAD, H.RECLAIMABLE, H.STALLED}),
        ("warns", {H.SPINNING}),
        ("asks_a_human", {H.DEAD, H.RECLAIMABLE, H.STALLED, H.QUARANTINED, H.INTERRUPTED}),
        (
            "needs_attention",
            {
                *(H.DEAD, H.ORPHANED, H.RECLAIMABLE, H.STALLED, H.SPINNING),
                *(H.QUARANTINED, H.INTERRUPTED),
            },
        ),
        (
            "blocks_dependents",
            {
                *(H.DEAD, H.ORPHANED, H.RECLAIMABLE, H.STALLED, H.SPINNING),
                *(H.QUARANTINED, H.INTERRUPTED, H.FAILED, H.DISCARDED),
            },
        ),
        ("retryable", {H.DEAD, H.RECLAIMABLE}),
        ("finished", {H.SUCCEEDED, H.FAILED, H.DISCARDED}),
    ],
)
def test_each_trait_names_the_healths_it_always_named(trait: str, expected: set[Health]) -> None:
    """The sets the modules kept before (PAGING_HEALTHS, ASK_A_HUMAN, ATTENTION_HEALTHS, the
    upstreams a task is blocked behind, the healths auto_retry may retry, the finished list)."""
    assert healths(trait) == expected


def test_rows_sort_by_silence_by_flat_progress_or_by_task_id() -> None:
    orders = {health: health.order for health in Health}
    assert {h for h, o in orders.items() if o is RowOrder.SILENCE} == {
        H.DEAD,
        H.RECLAIMABLE,
        H.STALLED,
    }
    assert {h for h, o in orders.items() if o is RowOrder.FLAT} == {H.SPINNING}


def test_every_health_has_a_nagios_level() -> None:
    levels = {health: health.nagios_level for health in Health}
    assert {h for h, level in levels.items() if level is NagiosLevel.CRITICAL} == healths("pages")
    assert {h for h, level in levels.items() if level is NagiosLevel.WARNING} == healths("warns")
    assert NagiosLevel.UNKNOWN not in levels.values()  # only for a store nobody could read
    assert all(level is NagiosLevel.OK for h, level in levels.items() if h.finished)


def test_every_health_has_a_watchdog_reaction() -> None:
    """The watchdog pages a health that pages, digests one that warns, and is quiet about the
    rest: no health is left without a reaction, and none that warns is dropped."""
    reactions = {health: health.watch for health in Health}
    assert set(reactions.values()) <= set(WatchReaction)
    assert {h for h, r in reactions.items() if r is WatchReaction.PAGE} == healths("pages")
    assert {h for h, r in reactions.items() if r is WatchReaction.DIGEST} == healths("warns")
    assert {h for h, r in reactions.items() if r is WatchReaction.QUIET} == {
        *(H.QUARANTINED, H.INTERRUPTED, H.STARTING, H.QUEUED, H.HEALTHY),
        *(H.FAILED, H.SUCCEEDED, H.DISCARDED),
    }


def test_a_health_cannot_both_page_and_warn() -> None:
    with pytest.raises(ValueError, match="pages or warns"):
        HealthTraits(pages=True, warns=True)


def _sets_of_healths(tree: ast.AST) -> list[tuple[int, list[str]]]:
    """Literals and ``or`` chains that name some healths but not all of them: a set of healths
    (a literal naming every health is a table by health, as ``GLYPHS`` is)."""

    def member(node: ast.AST) -> str | None:
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "Health"
            and node.attr in Health.__members__
        ):
            return node.attr
        return None

    found = []
    for node in ast.walk(tree):
        named: set[str | None] = set()
        if isinstance(node, (ast.Set, ast.Tuple, ast.List)):
            named = {member(element) for element in node.elts}
        elif isinstance(node, ast.Dict):
            named = {member(key) for key in node.keys if key is not None}
        elif isinstance(node, ast.BoolOp):
            named = {
                member(side)
                for compare in node.values
                if isinstance(compare, ast.Compare)
                for side in (compare.left, *compare.comparators)
            }
        named.discard(None)
        if 2 <= len(named) < len(Health):
            found.append((node.lineno, sorted(str(name) for name in named)))
    return found


def _health_words_compared(tree: ast.AST) -> list[tuple[int, str]]:
    """Comparisons of something called a health with a health's word (``h == "spinning"``)."""
    words = {str(health) for health in Health}
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any(isinstance(s, ast.Constant) and s.value in words for s in sides) and any(
            "health" in ast.unparse(s).lower() for s in sides
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_module_keeps_a_set_of_healths_or_compares_a_health_by_its_word() -> None:
    """A new health is its member and row in core/model.py, its rule in core/judge/classify.py and
    its glyph and style in tui/healths.py: a set of healths anywhere else would be a fourth
    place to edit, and a word compared would miss a renamed health silently."""
    problems = []
    for folder in ("core", "tui"):
        for path in sorted((REPO / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            where = path.relative_to(REPO)
            problems += [f"{where}:{line} names {names}" for line, names in _sets_of_healths(tree)]
            problems += [f"{where}:{line} {said}" for line, said in _health_words_compared(tree)]
    assert not problems, (
        "make these a trait of Health (HEALTH_TRAITS in core/model.py) and ask the trait:\n"
        + "\n".join(problems)
    )


def test_every_flag_has_one_row_of_traits() -> None:
    """A flag without its row in FLAG_TRAITS fails here (and ``flag.pages_once`` raises)."""
    assert list(FLAG_TRAITS) == list(Flag)
    for flag in Flag:
        assert flag.traits is FLAG_TRAITS[flag]
    assert {flag for flag in Flag if flag.pages_once} == {
        Flag.QUEUED_TOO_LONG,
        Flag.REDELIVERED,
        Flag.SLOWER_THAN_USUAL,
        Flag.FINISHED_TOO_FAST,
        Flag.RUNS_LATE_USUALLY,
        Flag.FAILING_MORE,
    }
    # A job's trends page once a day per job, whichever run carries them.
    assert {flag for flag in Flag if flag.per_job} == {Flag.RUNS_LATE_USUALLY, Flag.FAILING_MORE}


def test_each_finished_state_has_its_health_and_no_other_state_has_one() -> None:
    """``Health.of_finished`` is the one map from a final state to its health (classify and
    ``status``'s count of older finished tasks both read it)."""
    finished = {state: Health.of_finished(state) for state in TaskState if state.finished}
    assert finished == {
        TaskState.SUCCEEDED: H.SUCCEEDED,
        TaskState.FAILED: H.FAILED,
        TaskState.DISCARDED: H.DISCARDED,
    }
    assert set(finished.values()) == healths("finished")
    for state in TaskState:
        if not state.finished:
            with pytest.raises(ValueError, match="not a finished state"):
                Health.of_finished(state)
