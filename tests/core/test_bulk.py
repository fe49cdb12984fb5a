"""A bulk action's plan: the marked tasks it will ask, and the ones it will not, each refused
for the reason the one-task path gives itself (the store's, the kill's, the engine's), word
for word; and the one line that sums up the outcomes."""

from __future__ import annotations

import pytest

from zombietop.act.bulk import SHOWN_IDS, plan_action, plan_all, tally
from zombietop.act.executor import Executor
from zombietop.actions import ActionKind, ActionRequest, Outcome
from zombietop.config import load_config
from zombietop.health import Health
from zombietop.judge.monitor import Monitor, Snapshot
from zombietop.sources.airflow import AirflowSource
from zombietop.sources.base import Capability, Origin
from zombietop.store import Store


async def _fleet(store: Store) -> Snapshot:
    """``queued-N`` (no process yet), and ``done``, discarded already."""
    for n in range(7):
        await store.create_task(
            task_id=f"queued-{n}", run_id="r", step="s", step_type="default", actor="test"
        )
    await store.create_task(task_id="done", run_id="r", step="s", step_type="default", actor="t")
    await store.discard_task("done", expected_token=None, actor="test")
    snapshot = await Monitor(store, load_config(None)).poll()
    assert snapshot.ok, snapshot.error
    return snapshot


async def _executor_says(store: Store, kind: ActionKind, snapshot: Snapshot, task_id: str) -> str:
    view = snapshot.by_id()[task_id]
    request = ActionRequest(kind=kind, task_id=task_id, expected_token=view.token, actor="t")
    outcome = await Executor(store, load_config(None)).run(request)
    assert outcome.outcome is Outcome.REFUSED
    return outcome.message


async def test_a_discarded_task_is_not_asked_for_the_stores_own_reason(live_store: Store) -> None:
    snapshot = await _fleet(live_store)
    plan = plan_action(ActionKind.RESUME, snapshot.tasks, snapshot.origins)
    assert {view.task_id for view in plan.asked} == {f"queued-{n}" for n in range(7)}
    (skipped,) = plan.skipped
    assert skipped.view.task_id == "done"
    said = await _executor_says(live_store, ActionKind.RESUME, snapshot, "done")
    assert skipped.why == said == "done is discarded; there is nothing to resume"


async def test_a_task_with_no_process_is_not_killed_for_the_kills_own_reason(
    live_store: Store,
) -> None:
    snapshot = await _fleet(live_store)
    plan = plan_action(ActionKind.KILL, snapshot.tasks, snapshot.origins)
    assert plan.asked == ()
    why = {one.view.task_id: one.why for one in plan.skipped}
    said = await _executor_says(live_store, ActionKind.KILL, snapshot, "queued-3")
    assert why["queued-3"] == said == "queued-3 has no process recorded; nothing to kill"


async def test_the_plan_counts_healths_names_five_ids_and_keeps_the_tokens(
    live_store: Store,
) -> None:
    snapshot = await _fleet(live_store)
    plan = plan_action(ActionKind.DISCARD, snapshot.tasks, snapshot.origins)
    assert plan.healths() == [(Health.QUEUED, 7), (Health.DISCARDED, 1)]
    ids, more = plan.shown_ids()
    assert len(ids) == SHOWN_IDS and more == 8 - SHOWN_IDS
    requests = plan.requests(ActionKind.DISCARD, "alice")
    assert [(r.task_id, r.expected_token) for r in requests] == [
        (view.task_id, view.token) for view in plan.asked
    ]


@pytest.mark.parametrize("kind", [ActionKind.RESUME, ActionKind.DISCARD])
async def test_an_engines_task_is_refused_as_its_source_refuses_it(
    live_store: Store, kind: ActionKind
) -> None:
    snapshot = await _fleet(live_store)
    view = snapshot.by_id()["queued-0"]
    source = AirflowSource("airflow+sqlite:////srv/airflow/airflow.db")
    origin = Origin(
        source=source.name,
        kind="airflow",
        capability=Capability.READ_ONLY,
        ids={"dag_id": "etl", "task_id": "load", "run_id": "r1", "map_index": -1},
    )
    plan = plan_action(kind, [view], {"queued-0": origin})
    (skipped,) = plan.skipped
    assert skipped.why == source.refusal(kind, origin)
    assert "zombietop never writes to it" in skipped.why
    assert plan_action(ActionKind.KILL, [view], {"queued-0": origin}).skipped[0].why == (
        "queued-0 has no process recorded; nothing to kill"
    )


async def test_an_ack_plan_asks_every_task(live_store: Store) -> None:
    snapshot = await _fleet(live_store)
    plan = plan_all("ack", snapshot.tasks)
    assert len(plan.asked) == 8 and plan.skipped == ()


@pytest.mark.parametrize(
    ("words", "skipped", "line"),
    [
        (
            ["term sent"] * 26 + ["gone"] * 2,
            2,
            "kill of 30 tasks: 26 term sent, 2 gone; 2 not asked",
        ),
        (["acked"], 0, "ack of 1 task: 1 acked"),
        ([], 3, "resume of 3 tasks: none asked; 3 not asked"),
    ],
)
def test_the_tally_is_one_line_of_counts(words: list[str], skipped: int, line: str) -> None:
    verb = line.split(" of ")[0]
    assert tally(verb, words, skipped) == line
