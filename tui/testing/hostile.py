"""Untrusted text: what someone who can write the store, or a job, can put in each field.

The dashboard must show every such field escaped, never obey it.
"""

from __future__ import annotations

from dataclasses import replace

from zombietop.judge.monitor import Snapshot, build_snapshot
from zombietop.model import Event, EventKind, Heartbeat, HeartbeatSource, TaskRecord, TaskState
from zombietop.output import LastOutput
from zombietop.tui.testing.builders import (
    NOW,
    H,
    M,
    alive_process,
    make_beat,
    make_lease,
    make_task,
    sample_config,
)

UNTRUSTED_ID = "evil-\x1b[2J\x1b]0;pwned\x07-01"
"""A task id with a screen wipe and a retitle in it: shown escaped, never obeyed."""


def untrusted_snapshot(now: float = NOW) -> Snapshot:
    """Untrusted text everywhere it can be, and commands that report nothing.

    ``UNTRUSTED_ID`` (escape sequences in its id and stage) is stalled; ``tar-0099``, a legacy
    command under ``zombietop run``, is healthy on observed heartbeats (CPU, I/O, output).
    """
    hostile = TaskRecord(
        task=make_task(
            UNTRUSTED_ID, TaskState.RUNNING, started_ago=3 * H, pid=4242, command=("sh", "job.sh")
        ),
        lease=make_lease(UNTRUSTED_ID, 4242, expires_in=2 * M, token=4),
        heartbeat=make_beat(
            UNTRUSTED_ID, "load\x1b[31m\u202eRED", 12, age=3 * H + 12 * M, counters={"rows": 120}
        ),
    )
    observed = TaskRecord(
        task=make_task(
            "tar-0099", TaskState.RUNNING, started_ago=40 * M, pid=5120, command=("tar",)
        ),
        lease=make_lease("tar-0099", 5120, expires_in=4 * M, token=1),
        heartbeat=Heartbeat(
            task_id="tar-0099",
            counters={"cpu_s": 2310.5, "io_bytes": 48_000_000_000, "out_lines": 0},
            written_at=now - 9,
            progress_changed_at=now - 40 * M,
            stage_started_at=now - 40 * M,
            seq=240,
            source=HeartbeatSource.OBSERVED,
        ),
    )
    samples = {
        UNTRUSTED_ID: alive_process(4242, 0.0, started_ago=3 * H),
        "tar-0099": replace(alive_process(5120, 97.0, started_ago=40 * M), children=3),
    }
    return build_snapshot(now, [hostile, observed], sample_config(), samples)


def untrusted_outputs(now: float = NOW) -> dict[str, LastOutput]:
    """The last output of the hostile task: a retitle, a bell, a bidi override, a wipe."""
    lines = (
        "connecting to orders-db",
        "\x1b[2Jwiped?",
        "retrying POST /orders (attempt 37) \x1b]0;pwned\x07\u202egnirts",
    )
    return {
        UNTRUSTED_ID: LastOutput(
            line=lines[-1], written_at=now - 3 * H - 12 * M, lines=lines, attempt=1
        )
    }


# A hostile fleet: what someone who can write the store, or a job, can put in each field -------

OSC = "\x1b]2;owned\x07"
"""Retitles the terminal (or the tmux pane)."""
CSI_CLEAR = "\x1b[2J"
"""Wipes the screen."""
HOSTILE_ID = f"evil{OSC}{CSI_CLEAR}-1"


def hostile_records() -> list[TaskRecord]:
    """One stalled task whose every text field holds terminal controls, C1 and a bidi override;
    the dashboard must show each escaped (``\\x1b]2;owned\\x07``), never obey it."""
    task = make_task(
        "evil-1",
        TaskState.RUNNING,
        started_ago=40 * M,
        pid=6666,
        checkpoint="s3://x/\u202egpj.exe",
    )
    task = replace(
        task,
        task_id=HOSTILE_ID,
        run_id=f"run{CSI_CLEAR}",
        step="st\x1b[5mep",
        host="batch\x9b2J-01",
    )
    lease = replace(make_lease(HOSTILE_ID, 6666, expires_in=3 * M), owner=f"run{OSC}@batch-01")
    beat = make_beat(
        HOSTILE_ID,
        f"load{CSI_CLEAR}",
        40,
        age=6 * M,
        counters={"rows\x1b[31m": 5},
        request_name="GET\x1b[1m /x",
        trace_id="t\x7f1",
    )
    return [TaskRecord(task=task, lease=lease, heartbeat=beat)]


def hostile_snapshot(now: float = NOW) -> Snapshot:
    samples = {HOSTILE_ID: alive_process(6666, 0.0, started_ago=40 * M)}
    return build_snapshot(now, hostile_records(), sample_config(), samples)


def hostile_events() -> list[Event]:
    return [
        Event(
            event_id=1,
            at=NOW - 60,
            task_id=HOSTILE_ID,
            kind=EventKind.ACTION,
            actor=f"mallory{OSC}@laptop",
            message=f"kill refused: {CSI_CLEAR}(reason: because{OSC})",
        )
    ]
