"""The signals zombietop sends: a run's span, and a log record per verdict change and page.

Pure functions of what the watchdog saw: the OpenTelemetry SDK's records, made with the ids
the run recorded (``Task.trace_id``, ``span_id``, ``parent_span_id``), so the run's span is
the parent of its command's spans and a child of its caller's.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry._logs import LogRecord, SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import (
    NonRecordingSpan,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)

from zombietop import __version__
from zombietop.health import Health
from zombietop.job_summary import run_began
from zombietop.model import Task, TaskState
from zombietop.page import Page

SCOPE = InstrumentationScope("zombietop", __version__)
NS = 1_000_000_000
RESULTS = {
    TaskState.SUCCEEDED: "success",
    TaskState.FAILED: "failure",
    TaskState.DISCARDED: "cancellation",
    TaskState.INTERRUPTED: "cancellation",
}
"""A run's outcome in the CI/CD conventions' words (``cicd.pipeline.result``)."""


def _context(trace_id: str, span_id: str) -> SpanContext:
    return SpanContext(
        trace_id=int(trace_id, 16),
        span_id=int(span_id, 16),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )


def run_attributes(task: Task) -> dict[str, str | int]:
    """What a run's span and its metrics say of it, in the CI/CD conventions where they fit."""
    attributes: dict[str, str | int] = {
        "cicd.pipeline.name": task.job_name,
        "cicd.pipeline.run.id": task.run_id,
        "cicd.pipeline.task.name": task.step,
        "zombietop.task.id": task.task_id,
        "zombietop.step_type": task.step_type,
        "zombietop.attempts": task.attempt,
    }
    if task.state in RESULTS:
        attributes["cicd.pipeline.result"] = RESULTS[task.state]
    if task.host is not None:
        attributes["host.name"] = task.host
    if task.exit_code is not None:
        attributes["process.exit.code"] = task.exit_code
    return attributes


def run_span(
    task: Task, events: Sequence[tuple[str, float, dict[str, str]]], resource: Resource
) -> ReadableSpan | None:
    """The span of a finished run, from its claim to its end, with ``events`` (name, moment,
    attributes) on it; None for a run that recorded no trace."""
    if task.trace_id is None or task.span_id is None or task.finished_at is None:
        return None
    parent = None if task.parent_span_id is None else _context(task.trace_id, task.parent_span_id)
    failed = task.state is not TaskState.SUCCEEDED
    return ReadableSpan(
        name=f"run {task.job_name}",
        context=_context(task.trace_id, task.span_id),
        parent=parent,
        resource=resource,
        attributes=run_attributes(task),
        events=[Event(name, attrs, timestamp=int(at * NS)) for name, at, attrs in events],
        kind=SpanKind.INTERNAL,
        status=Status(StatusCode.ERROR, task.state_reason or str(task.state))
        if failed
        else Status(StatusCode.OK),
        start_time=int(run_began(task) * NS),
        end_time=int(task.finished_at * NS),
        instrumentation_scope=SCOPE,
    )


def severity(health: Health | None) -> SeverityNumber:
    """A health's weight as a log severity: a page is an error, a warning a warning."""
    if health is None:
        return SeverityNumber.INFO
    if health.pages:
        return SeverityNumber.ERROR
    return SeverityNumber.WARN if health.warns or health.needs_attention else SeverityNumber.INFO


def _in_trace(task: Task | None) -> Context | None:
    if task is None or task.trace_id is None or task.span_id is None:
        return None
    return set_span_in_context(NonRecordingSpan(_context(task.trace_id, task.span_id)))


def record(
    *,
    body: str,
    at: float,
    health: Health | None,
    attributes: dict[str, str | int | list[str]],
    task: Task | None,
    resource: Resource,
) -> ReadableLogRecord:
    """One log record, in the task's trace when it has one."""
    level = severity(health)
    log = LogRecord(
        timestamp=int(at * NS),
        observed_timestamp=int(at * NS),
        context=_in_trace(task),
        severity_text=level.name,
        severity_number=level,
        body=body,
        attributes=attributes,
    )
    return ReadableLogRecord(log_record=log, resource=resource, instrumentation_scope=SCOPE)


def verdict_record(
    task: Task,
    before: Health,
    after: Health,
    codes: Sequence[str],
    line: str,
    at: float,
    resource: Resource,
) -> ReadableLogRecord:
    """``export-2031 healthy -> stalled``: the verdict changed, with its reason codes."""
    attributes: dict[str, str | int | list[str]] = {
        "zombietop.event": "verdict",
        "zombietop.task.id": task.task_id,
        "zombietop.health": str(after),
        "zombietop.health.before": str(before),
        "zombietop.reasons": list(codes),
        "cicd.pipeline.name": task.job_name,
    }
    return record(
        body=line, at=at, health=after, attributes=attributes, task=task, resource=resource
    )


def page_record(page: Page, task: Task | None, resource: Resource) -> ReadableLogRecord:
    """One page, as a human received it."""
    health = page.health if isinstance(page.health, Health) else None
    attributes: dict[str, str | int | list[str]] = {
        "zombietop.event": "page",
        "zombietop.page": str(page.kind),
    }
    if page.task_id is not None:
        attributes["zombietop.task.id"] = page.task_id
    if page.health is not None:
        attributes["zombietop.health"] = str(page.health)
    if page.incident is not None:
        attributes["zombietop.incident"] = page.incident
    return record(
        body=page.shown,
        at=page.at,
        health=health,
        attributes=attributes,
        task=task,
        resource=resource,
    )
