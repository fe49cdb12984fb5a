"""How an action's outcome is written: one event in the store with the actor, the reason and
what happened, so every outcome, a refusal too, can be read back later."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zombietop.actions import ActionOutcome, ActionRequest, Outcome
from zombietop.model import EventKind
from zombietop.store import Store


async def recorded(
    store: Store,
    request: ActionRequest,
    outcome: Outcome,
    message: str,
    *,
    token: int | None = None,
    data: Mapping[str, Any] | None = None,
) -> ActionOutcome:
    """Record ``outcome`` of ``request`` as an action event; return it as an outcome."""
    why = f" (reason: {request.reason})" if request.reason else ""
    await store.record_event(
        kind=EventKind.ACTION,
        actor=request.actor,
        task_id=request.task_id,
        message=f"{request.kind} {outcome}: {message}{why}",
        data={
            "action": str(request.kind),
            "outcome": str(outcome),
            "reason": request.reason,
            "expected_token": request.expected_token,
            "token": token,
            **dict(data or {}),
        },
    )
    return ActionOutcome(request=request, outcome=outcome, message=message, new_token=token)
