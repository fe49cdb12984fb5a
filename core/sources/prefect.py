"""Prefect 3's server as a read-only source, read over its REST API (``prefect_api``).

Each flow run becomes one zombietop task:

- its id reads ``FLOW/FLOW_RUN_ID`` (Prefect's UUID); its run is the flow run's name, its step
  and step type the flow's name (so ``[step_types.FLOW]`` sets per-flow thresholds), its job
  ``FLOW/DEPLOYMENT`` (the flow's name when the run has no deployment);
- ``SCHEDULED`` (``Late`` too) runs that are due, and ``PENDING`` ones, are queued and starting;
  ``PAUSED`` waits for someone, not for a worker; ``RUNNING`` and ``CANCELLING`` run;
  ``COMPLETED`` succeeded, ``FAILED`` and ``CRASHED`` failed (with Prefect's message),
  ``CANCELLED`` discarded;
- a running flow run's newest ``prefect.flow-run.heartbeat`` event is a beat that proves that
  its engine lives (``HeartbeatSource.SUPERVISOR``), every ``flows.heartbeat_frequency``
  seconds (180 by default); it names no host and no pid;
- a process worker records the flow run's process as ``infrastructure_pid`` (``PID``; older
  runners wrote ``HOST:PID``). On this host, a process with that pid whose environment says
  ``PREFECT__FLOW_RUN_ID`` is that flow run's is its process: the probe then reads its CPU and
  I/O, and a kill may signal it. It is remembered, so a flow run whose process dies (a kill
  -9, an out-of-memory kill, a lost machine with its worker) is ``dead`` at the next poll,
  while Prefect goes on saying ``RUNNING``: Prefect marks it crashed only when a live worker
  saw its process end, or an automation of the user's does it.
"""

from __future__ import annotations

import asyncio
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import psutil

from zombietop.clock import Clock
from zombietop.errors import SourceError
from zombietop.locations import printable_url
from zombietop.model import Heartbeat, Lease, Task, TaskRecord, TaskState
from zombietop.printable import printable
from zombietop.procs import read_start
from zombietop.sources.base import Engine, Origin, ReadOnlySource, SourceRecord, proof_of_life
from zombietop.sources.engine_text import bounded_id
from zombietop.sources.prefect_api import FINISHED, PrefectApi, epoch, iso
from zombietop.start_identity import ProcessStart

SCHEMES = ("prefect+http", "prefect+https")
FORMS = ("prefect+http://HOST:PORT/api",)
PREFECT_HEARTBEAT_TIMEOUT = 540.0
"""Seconds without a heartbeat event before a running flow run is stalled: three of Prefect's
default ``flows.heartbeat_frequency`` (180 s), as Prefect's own zombie automation counts."""
BEAT_SLACK = 120.0
"""Seconds before the last poll from which the next poll asks for heartbeats again: Prefect
stores an event when it receives it, which may be a little after it occurred."""
RUN_ENV = "PREFECT__FLOW_RUN_ID"
"""The variable Prefect's workers and runners set in a flow run's process: its flow run id."""
REASON_SHOWN = 200
"""The most characters of Prefect's state message kept in a reason."""

_STATES: dict[str, TaskState] = {
    "SCHEDULED": TaskState.QUEUED,
    "PENDING": TaskState.STARTING,
    "PAUSED": TaskState.QUEUED,
    "RUNNING": TaskState.RUNNING,
    "CANCELLING": TaskState.RUNNING,
    "COMPLETED": TaskState.SUCCEEDED,
    "FAILED": TaskState.FAILED,
    "CRASHED": TaskState.FAILED,
    "CANCELLED": TaskState.DISCARDED,
}


def check_url(url: str) -> str:
    """Return ``url`` if it names a Prefect server's API, else raise saying how to write one."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in SCHEMES:
        raise SourceError(f"source {printable_url(url)!r}: not a Prefect API; use {FORMS[0]}")
    parts = urlsplit(url)
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise SourceError(f"source {printable_url(url)!r}: the port is not a number") from None
    if not parts.hostname or parts.path.strip("/") == "" or parts.query or parts.fragment:
        raise SourceError(
            f"source {printable_url(url)!r}: write {FORMS[0]} (the PREFECT_API_URL of your "
            "flows, with prefect+ in front; prefect+https:// for TLS)"
        )
    return url


def infrastructure_pid(value: Any) -> tuple[str | None, int | None]:
    """Prefect's ``infrastructure_pid`` as (host, pid): ``PID`` (a process worker) or
    ``HOST:PID`` (older runners); (None, None) for anything else (a container's id)."""
    if not isinstance(value, str):
        return None, None
    host, _, pid = value.rpartition(":")
    if not pid.isdigit() or not 0 < int(pid) < 2**22:
        return None, None
    return (bounded_id(host) if host else None), int(pid)


def flow_run_process(pid: int, run_id: str) -> ProcessStart | None:
    """The start of ``pid`` when it is that flow run's process on this host (its environment
    names the flow run: ``PREFECT__FLOW_RUN_ID``); None when it is not, or cannot be read."""
    before = read_start(pid)
    if before is None:
        return None
    try:
        env = psutil.Process(pid).environ()
    except psutil.Error:
        return None
    if env.get(RUN_ENV) != run_id:
        return None
    return before if read_start(pid) == before else None


def prefect_task_id(flow: str, run_id: str) -> str:
    """zombietop's id for a flow run: ``FLOW/FLOW_RUN_ID``, each part bounded."""
    return f"{bounded_id(flow)}/{bounded_id(run_id)}"


def state_message(run: Mapping[str, Any]) -> str | None:
    """Prefect's message on the run's state: its first line, printable and short."""
    state = run.get("state")
    message = state.get("message") if isinstance(state, dict) else None
    lines = [line.strip() for line in str(message or "").splitlines() if line.strip()]
    if not lines:
        return None
    line = printable(lines[0])
    return line if len(line) <= REASON_SHOWN else line[: REASON_SHOWN - 3] + "..."


@dataclass(frozen=True, slots=True, kw_only=True)
class Process:
    """What one poll knows of a flow run's process on this host."""

    pid: int
    start: ProcessStart
    alive: bool


class PrefectSource(ReadOnlySource):
    """A Prefect server's API, read-only."""

    clock = "this host's clock (Prefect's server stamps its times in UTC)"

    def __init__(
        self, url: str, *, heartbeat_timeout: float | None = None, clock: Clock | None = None
    ) -> None:
        super().__init__(url, heartbeat_timeout=heartbeat_timeout, clock=clock)
        rest = url.partition("+")[2]
        self.api = PrefectApi(rest, self.name)
        self._names: dict[tuple[str, str], str] = {}
        """By (``flows`` or ``deployments``, id), the names read so far."""
        self._beats: dict[str, float] = {}
        """By flow run id, its newest heartbeat seen."""
        self._beats_read_at: float | None = None
        self._processes: dict[str, Process] = {}
        """By flow run id, its process on this host as last found."""
        self._strangers: dict[str, tuple[int, ProcessStart]] = {}
        """By flow run id, the live process with its pid that is not the flow run's."""
        self._pids: dict[int, str] = {}
        """By pid, the flow run whose process it was at the last poll (for ``kill_check``)."""
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        await self.api.open()

    async def close(self) -> None:
        await self.api.close()

    async def poll(self, since: float | None, host: str) -> Sequence[SourceRecord]:
        async with self._lock:
            now = self._clock.now()
            runs = await self._runs(since, now)
            running = [
                str(run["id"]) for run in runs if run.get("state_type") in ("RUNNING", "CANCELLING")
            ]
            await self._read_beats(running, now)
            await self._read_names(runs)
            return await asyncio.to_thread(self._records, runs, host, now)

    async def _runs(self, since: float | None, now: float) -> list[dict[str, Any]]:
        """The flow runs of this poll: unfinished (scheduled ones once due), and finished at or
        after ``since``."""
        waiting = {
            "state": {"type": {"any_": ["SCHEDULED"]}},
            "expected_start_time": {"before_": iso(now)},
        }
        unfinished = {"state": {"type": {"any_": ["PENDING", "RUNNING", "PAUSED", "CANCELLING"]}}}
        finished: dict[str, Any] = {"state": {"type": {"any_": list(FINISHED)}}}
        if since is not None:
            finished["end_time"] = {"after_": iso(since)}
        found: dict[str, dict[str, Any]] = {}
        for flow_runs in (waiting, unfinished, finished):
            for run in await self.api.flow_runs(flow_runs):
                if isinstance(run.get("id"), str) and isinstance(run.get("flow_id"), str):
                    found[run["id"]] = run
        return list(found.values())

    async def _read_beats(self, running: list[str], now: float) -> None:
        """The newest heartbeat of each running flow run: since a little before the last
        read, or over three heartbeat timeouts at the first."""
        if self._beats_read_at is None:
            since = now - 3 * self.heartbeat_timeout
        else:
            since = self._beats_read_at - BEAT_SLACK
        fresh = await self.api.latest_beats(running, since, now + BEAT_SLACK) if running else {}
        kept = {run_id: self._beats[run_id] for run_id in running if run_id in self._beats}
        for run_id, when in fresh.items():
            kept[run_id] = max(when, kept.get(run_id, when))
        self._beats, self._beats_read_at = kept, now

    async def _read_names(self, runs: Sequence[Mapping[str, Any]]) -> None:
        """The names of the flows and deployments not read yet: once each."""
        wanted = {("flows", run["flow_id"]) for run in runs}
        wanted |= {
            ("deployments", run["deployment_id"])
            for run in runs
            if isinstance(run.get("deployment_id"), str)
        }
        for kind, object_id in sorted(wanted - set(self._names)):
            try:
                name = await self.api.name_of(kind, object_id)
            except SourceError:
                if kind == "flows":
                    raise
                name = None  # a deleted deployment: the run is still its flow's
            self._names[(kind, object_id)] = bounded_id(name or object_id)

    def _records(
        self, runs: Sequence[Mapping[str, Any]], host: str, now: float
    ) -> list[SourceRecord]:
        local = self.local_names(host)
        processes: dict[str, Process] = {}
        out: list[SourceRecord] = []
        for run in runs:
            run_id = str(run["id"])
            process = self._process(run, local)
            if process is not None:
                processes[run_id] = process
            out.append(self._record(run, host, now, process))
        self._processes = processes
        self._pids = {process.pid: run_id for run_id, process in processes.items()}
        read = {str(run["id"]) for run in runs}
        self._strangers = {key: seen for key, seen in self._strangers.items() if key in read}
        return out

    def _process(self, run: Mapping[str, Any], local: frozenset[str]) -> Process | None:
        """The flow run's process on this host: the one remembered, or found now."""
        run_id = str(run["id"])
        where, pid = infrastructure_pid(run.get("infrastructure_pid"))
        if pid is None or (where is not None and where not in local):
            return None
        known = self._processes.get(run_id)
        if known is not None and known.pid == pid:
            return Process(pid=pid, start=known.start, alive=read_start(pid) == known.start)
        stranger = self._strangers.get(run_id)
        now_start = read_start(pid)
        if stranger is not None and stranger == (pid, now_start):
            return None
        start = flow_run_process(pid, run_id)
        if start is not None:
            self._strangers.pop(run_id, None)
            return Process(pid=pid, start=start, alive=True)
        if now_start is not None:
            self._strangers[run_id] = (pid, now_start)
        if where is not None:
            # A runner named this host: the start Prefect recorded, which no later process has.
            began = epoch(run.get("start_time"))
            if began is not None:
                return Process(pid=pid, start=ProcessStart(time=began), alive=False)
        return None

    def _record(
        self, run: Mapping[str, Any], host: str, now: float, process: Process | None
    ) -> SourceRecord:
        run_id = str(run["id"])
        prefect_state = str(run.get("state_type") or "")
        state_name = bounded_id(str(run.get("state_name") or prefect_state.title()))
        state = _STATES.get(prefect_state, TaskState.QUEUED)
        flow = self._names.get(("flows", str(run["flow_id"])), "?")
        deployment_id = run.get("deployment_id")
        deployment = self._names.get(("deployments", str(deployment_id))) if deployment_id else None
        zid = prefect_task_id(flow, run_id)
        started = epoch(run.get("start_time"))
        said = run.get("state")
        state_at = epoch(said.get("timestamp")) if isinstance(said, dict) else None
        expected = epoch(run.get("expected_start_time"))
        created = expected or epoch(run.get("created")) or now
        reason = _reason(prefect_state, state_name, run, process)
        executing = state.executing
        claimed = started if state.finished else None
        if executing:
            claimed = started or state_at or now
        task = Task(
            task_id=zid,
            run_id=bounded_id(str(run.get("name") or run_id)),
            step=flow,
            step_type=flow,
            job=flow if deployment is None else f"{flow}/{deployment}",
            state=state,
            attempt=max(int(run.get("run_count") or 0), 1),
            host=host if process is not None else None,
            pid=None if process is None else process.pid,
            pid_start_time=None if process is None else process.start.time,
            pid_start_identity=None if process is None else process.start.identity,
            state_reason=reason,
            waits_in_queue=prefect_state == "SCHEDULED",
            created_at=created,
            claimed_at=claimed,
            started_at=started if executing or state.finished else None,
            finished_at=(epoch(run.get("end_time")) or state_at or now) if state.finished else None,
            updated_at=epoch(run.get("updated")) or now,
        )
        lease, heartbeat = self._lease_and_beat(run, task) if executing else (None, None)
        return SourceRecord(
            record=TaskRecord(task=task, lease=lease, heartbeat=heartbeat),
            origin=self.origin(
                {
                    "flow": flow,
                    "flow_run_id": bounded_id(run_id),
                    "flow_run": bounded_id(str(run.get("name") or "")),
                    "deployment": deployment,
                    "state": prefect_state,
                    "work_pool": _text(run.get("work_pool_name")),
                    "infrastructure_pid": _text(run.get("infrastructure_pid")),
                }
            ),
        )

    def _lease_and_beat(self, run: Mapping[str, Any], task: Task) -> tuple[Lease, Heartbeat | None]:
        """A running flow run's lease (Prefect has none: held by its worker, with no expiry)
        and its newest heartbeat event, a beat of life."""
        labels = run.get("labels")
        worker = labels.get("prefect.worker.name") if isinstance(labels, dict) else None
        owner = worker or run.get("work_pool_name") or "prefect"
        lease = Lease(
            task_id=task.task_id,
            owner=bounded_id(str(owner)),
            token=task.attempt,
            acquired_at=task.claimed_at,
        )
        return lease, proof_of_life(task.task_id, self._beats.get(str(run["id"])), task.started_at)

    def kill_check(self, pid: int) -> str | None:
        """None when ``pid`` is, right now, the process of the flow run that the last poll
        gave it to (its environment's ``PREFECT__FLOW_RUN_ID``); else what it is."""
        run_id = self._pids.get(pid)
        if run_id is None:
            return f"pid {pid} is no flow run's process in Prefect's last read; nothing signalled"
        if flow_run_process(pid, run_id) is None:
            if read_start(pid) is None:
                return f"pid {pid} is gone; nothing signalled"
            return (
                f"pid {pid} does not carry {RUN_ENV}={run_id} in its environment, so it is not "
                "that flow run's process; nothing signalled"
            )
        return None


def _reason(
    prefect_state: str, state_name: str, run: Mapping[str, Any], process: Process | None
) -> str | None:
    """Prefect's state in its own words where zombietop's word does not say it all."""
    if prefect_state in ("RUNNING", "CANCELLING") and process is not None and not process.alive:
        return (
            f"{prefect_state} in Prefect with no process behind it; Prefect keeps it "
            f"{prefect_state} until a worker or an automation marks it crashed"
        )
    if prefect_state in ("FAILED", "CRASHED"):
        said = state_message(run)
        return f"prefect {state_name}" + (f": {said}" if said else "")
    if prefect_state == "PAUSED":
        return f"prefect {state_name}: waits to be resumed, not for a worker"
    if prefect_state in ("RUNNING", "COMPLETED") and state_name.upper() == prefect_state:
        return None
    if prefect_state == "SCHEDULED" and state_name == "Scheduled":
        return None
    return f"prefect {state_name}"


def _text(value: Any) -> str | None:
    return bounded_id(value) if isinstance(value, str) and value else None


def _task_id_of(origin: Origin) -> str:
    return prefect_task_id(str(origin.ids["flow"]), str(origin.ids["flow_run_id"]))


def _resume(origin: Origin) -> str:
    run_id = shlex.quote(str(origin.ids["flow_run_id"]))
    if origin.ids.get("state") in ("RUNNING", "CANCELLING", "PENDING", "PAUSED"):
        return (
            f"To run it again, cancel it in Prefect, then retry it: prefect flow-run cancel "
            f"{run_id} && prefect flow-run retry {run_id}"
        )
    return f"To run it again, use Prefect's own command: prefect flow-run retry {run_id}"


def _discard(origin: Origin) -> str:
    run_id = shlex.quote(str(origin.ids["flow_run_id"]))
    return f"To stop it, use Prefect's own command: prefect flow-run cancel {run_id}"


# Prefect reports no stages: a flow run is one stage, budgeted as the task.
ENGINE = Engine(
    kind="prefect",
    name="Prefect",
    unit="flow run",
    schemes=SCHEMES,
    forms=FORMS,
    check_url=check_url,
    make=PrefectSource,
    heartbeat_timeout=(
        PREFECT_HEARTBEAT_TIMEOUT,
        "Prefect: three of its heartbeat intervals, flows.heartbeat_frequency = 180 s",
    ),
    actions="cancel or retry it with `prefect flow-run`, or kill its process",
    task_id=_task_id_of,
    resume=_resume,
    discard=_discard,
)
