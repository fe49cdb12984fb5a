"""W3C trace context, carried in the environment: how a run joins its caller's trace.

A process started inside a trace finds ``TRACEPARENT`` (``00-<trace id>-<parent id>-<flags>``)
and maybe ``TRACESTATE`` in its environment, as OpenTelemetry's environment carrier says.
``zombietop run`` and the SDK join that trace with a span id of their own, or start a trace
when there is none (or it does not read), and give their command the same two variables with
their own span id as the parent. The ids come from ``secrets``: no OpenTelemetry is loaded on
the job's side.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass

from zombietop.model import Heartbeat, Task

TRACEPARENT = "TRACEPARENT"
TRACESTATE = "TRACESTATE"
_PARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})")
TRACESTATE_MAX = 512
"""The longest ``TRACESTATE`` passed on (the W3C limit a vendor must accept)."""
TRACE_ID_SHOWN = 8
"""How many hex digits of a trace id a page line shows (``trace 4bf92f35...``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceContext:
    """The trace a run belongs to, and its own place in it."""

    trace_id: str
    """32 lowercase hex digits."""
    span_id: str
    """The run's own span: 16 lowercase hex digits."""
    parent_id: str | None = None
    """The caller's span the run joined (None: the run started the trace)."""
    flags: str = "01"
    state: str = ""

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"

    def child_env(self) -> dict[str, str]:
        """``TRACEPARENT`` and ``TRACESTATE`` for a command the run starts."""
        env = {TRACEPARENT: self.traceparent}
        if self.state:
            env[TRACESTATE] = self.state
        return env


def parse_traceparent(text: str) -> tuple[str, str, str] | None:
    """``(trace id, parent id, flags)`` of a ``TRACEPARENT``, or None when it does not read as
    the W3C format says (version ff, an id of all zeros, a version 00 with more after it)."""
    found = _PARENT.match(text.strip().lower())
    if found is None:
        return None
    version, trace_id, parent_id, flags = found.groups()
    rest = text.strip()[found.end() :]
    if version == "ff" or (version == "00" and rest) or (rest and not rest.startswith("-")):
        return None
    if set(trace_id) == {"0"} or set(parent_id) == {"0"}:
        return None
    return trace_id, parent_id, flags


def is_trace_id(text: str) -> bool:
    """True for 32 lowercase hex digits, not all zero: a trace id as W3C writes it."""
    return len(text) == 32 and all(c in "0123456789abcdef" for c in text) and set(text) != {"0"}


def join_or_start(env: Mapping[str, str]) -> TraceContext:
    """The caller's trace with a new span of ours, or a new trace when there is none."""
    span_id = _nonzero(8)
    parsed = parse_traceparent(env.get(TRACEPARENT, ""))
    if parsed is None:
        return TraceContext(trace_id=_nonzero(16), span_id=span_id)
    trace_id, parent_id, flags = parsed
    state = env.get(TRACESTATE, "").strip()
    return TraceContext(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent_id,
        flags=flags,
        state=state if len(state) <= TRACESTATE_MAX and state.isprintable() else "",
    )


def _nonzero(size: int) -> str:
    """``size`` random bytes in hex, never all zeros (an id of zeros is invalid)."""
    while True:
        value = secrets.token_hex(size)
        if set(value) != {"0"}:
            return value


def trace_of(task: Task, heartbeat: Heartbeat | None) -> str | None:
    """The trace a task runs in: the one its run recorded, else its latest heartbeat's
    ``trace=`` when that reads as a W3C trace id (None: no trace known)."""
    if task.trace_id is not None:
        return task.trace_id
    said = None if heartbeat is None else heartbeat.trace_id
    return said.lower() if said is not None and is_trace_id(said.lower()) else None


def shown_trace(trace_id: str) -> str:
    """``trace 4bf92f35...``: the trace id as a page line carries it."""
    return f"trace {trace_id[:TRACE_ID_SHOWN]}..."
