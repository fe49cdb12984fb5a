"""The environment a command under ``zombietop run`` is given: ours, without the lease
variables we may run under ourselves, with its task, its lease, its heartbeat file, the store
and config (so ``zombietop beat`` inside it finds them) and its trace (``TRACEPARENT``)."""

from __future__ import annotations

from pathlib import Path

from zombietop.locations import clean_env
from zombietop.run.claim import Claim
from zombietop.trace_context import TRACESTATE, TraceContext


def command_env(
    claim: Claim,
    beat_file: Path,
    trace: TraceContext,
    store_path: Path | str | None,
    config_path: Path | None,
) -> dict[str, str]:
    """The command's environment: ours, with its task, lease, heartbeat file and trace."""
    env = clean_env()
    env.update(
        ZOMBIETOP_TASK=claim.task.task_id,
        ZOMBIETOP_HEARTBEAT_FILE=str(beat_file),
        ZOMBIETOP_CHECKPOINT=claim.task.checkpoint or "",
        ZOMBIETOP_ATTEMPT=str(claim.task.attempt),
        ZOMBIETOP_LEASE_OWNER=claim.owner,
        ZOMBIETOP_LEASE_TOKEN=str(claim.token),
    )
    env.pop(TRACESTATE, None)  # a state that goes with no parent we pass on
    env.update(trace.child_env())
    # So that `zombietop beat` inside the command finds the same store and config.
    if store_path is not None:
        env["ZOMBIETOP_DB"] = str(store_path)
    if config_path is not None:
        env["ZOMBIETOP_CONFIG"] = str(config_path)
    return env
