"""The columns both stores read, and how a named block asks for them.

A task record is read as one joined row: the task's columns, then its lease's, its latest
heartbeat's and its latest kill's, each prefixed (``l_``, ``h_``, ``k_``). The poll cache
(``poll_cache``) splits such a row by these lists, so the SQL and the reader share them.
"""

from __future__ import annotations

TASK_COLUMNS = (
    "task_id run_id step step_type state attempt upstream host pid pid_start_time command cwd "
    "checkpoint exit_code state_reason heartbeat_error heartbeat_error_at quarantined_at "
    "quarantined_by quarantine_reason created_at claimed_at started_at finished_at updated_at "
    "pid_boot_id pid_start_ticks job run_number trace_id span_id "
    "parent_span_id"
).split()
LEASE_COLUMNS = "task_id owner token acquired_at renewed_at expires_at".split()
HEARTBEAT_COLUMNS = (
    "task_id stage progress counters checkpoint eta_s request_name request_started_at trace_id "
    "reported_at written_at progress_changed_at stage_started_at seq source"
).split()
KILL_COLUMNS = (
    "task_id pid pid_start_time pgid host requested_by term_sent_at deadline outcome finished_at "
    "source pid_boot_id pid_start_ticks"
).split()
REQUEST_COLUMNS = (
    "request_id task_id host kind expected_token actor reason requested_at claimed_by "
    "claimed_at outcome message finished_at requester_uid requester source"
).split()

RECORD_COLUMNS = ", ".join(
    [f"t.{c}" for c in TASK_COLUMNS]
    + [f"l.{c} AS l_{c}" for c in LEASE_COLUMNS]
    + [f"h.{c} AS h_{c}" for c in HEARTBEAT_COLUMNS]
    + [f"k.{c} AS k_{c}" for c in KILL_COLUMNS]
)
"""The select list of one joined task record, in the order ``poll_cache`` splits it."""

KILL_SELECT = ", ".join(f"k.{c}" for c in KILL_COLUMNS)
"""A kill's columns, read from ``pending_kills k``."""

RECORD_WIDTH = len(TASK_COLUMNS) + len(LEASE_COLUMNS) + len(HEARTBEAT_COLUMNS) + len(KILL_COLUMNS)
"""How many of a row's values are the record's (a block may select more after them)."""

RECORD_JOINS = """FROM tasks t
LEFT JOIN leases l ON l.task_id = t.task_id
LEFT JOIN heartbeats h ON h.task_id = t.task_id
LEFT JOIN pending_kills k ON k.kill_id =
    (SELECT max(kill_id) FROM pending_kills WHERE task_id = t.task_id)"""

TASK_RECORDS = f"""SELECT {RECORD_COLUMNS}
{RECORD_JOINS}"""
"""Every task with its lease, latest beat and latest kill: what the poll and record reads
select (a block adds its own WHERE)."""

QUIET = """coalesce((
    t.quarantined_at IS NULL AND t.heartbeat_error IS NULL AND t.job IS NULL
    AND NOT (t.pid IS NOT NULL AND t.host = :quiet_host)
    AND ok.task_id IS NULL AND ps.task_id IS NULL
    AND ((t.state = 'running' AND l.owner IS NOT NULL AND l.expires_at > :quiet_at
          AND h.source = 'reported' AND h.written_at > :quiet_beat
          AND h.progress_changed_at > :quiet_progress AND h.stage_started_at > :quiet_stage
          AND (coalesce(h.request_name, '') = '' OR h.request_started_at IS NULL
               OR h.request_started_at > :quiet_request)
          AND coalesce(t.started_at, t.claimed_at, t.created_at) > :quiet_task)
         OR (t.state = 'queued' AND t.upstream = '[]' AND t.created_at > :quiet_queued
             AND (l.owner IS NULL OR l.expires_at IS NULL OR l.expires_at > :quiet_at)))
), false)"""
"""True for an active task of ``RECORD_JOINS`` and ``QUIET_JOINS`` that has nothing to say
until the next poll, by the bounds of ``zombietop.judge.quiet`` (its docstring says each part in
words); never NULL."""

QUIET_JOINS = """LEFT JOIN pending_kills ok ON ok.task_id = t.task_id AND ok.outcome IS NULL
LEFT JOIN process_samples ps ON ps.task_id = t.task_id
    AND (NOT ps.alive OR NOT ps.identity_ok OR ps.status = 'zombie')"""
"""What ``QUIET`` reads beside a task's lease and beat: its open kill and a sample saying its
process is gone (each at most one row: one open kill a task, one sample a task). Joined, not
asked row by row in a subquery: PostgreSQL then reads each table once for a million tasks."""


def fill_columns(sql: str) -> str:
    """Put the shared column lists and joins into a named block's ``{columns}``-style
    placeholders (``{task_records}`` is the joined read of whole task records, ``{quiet}`` the
    test of a quiet task over ``{record_joins}`` and ``{quiet_joins}``)."""
    return (
        sql.replace("{task_records}", TASK_RECORDS)
        .replace("{record_joins}", RECORD_JOINS)
        .replace("{quiet}", QUIET)
        .replace("{quiet_joins}", QUIET_JOINS)
        .replace("{columns}", RECORD_COLUMNS)
        .replace("{kill_columns}", KILL_SELECT)
        .replace("{task_columns}", ", ".join(TASK_COLUMNS))
        .replace("{heartbeat_columns}", ", ".join(HEARTBEAT_COLUMNS))
        .replace("{request_columns}", ", ".join(REQUEST_COLUMNS))
    )
