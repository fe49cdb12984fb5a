"""One poll of a Prefect source with 1,000 running flow runs, beside a bare read of the same API
calls, in one run.

    python bench/prefect_poll.py [--running 1000] [--polls 5]

A throwaway Prefect 3 server on SQLite (tests/prefect_env.py: the venv in ``.prefect-venv`` or
``$ZOMBIETOP_PREFECT_VENV``). The running flow runs are made through Prefect's API, each with a
heartbeat event, by this script: a thousand real flow run processes do not fit on a small
machine beside the server. Their ``infrastructure_pid`` names no process of this host, as for
runs on other hosts. The bare read is what any reader of these runs must send with aiohttp: the
three pages of ``/flow_runs/filter`` (due, unfinished, finished), the newest heartbeat of each
running run from ``/events/filter`` (distinct, 50 a page, and the next pages), and the flow's
name. The source's poll sends the same and builds the task records.

Prints a table of medians; exits 0. Not a test: the machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import aiohttp  # noqa: E402

from tests.prefect_env import PrefectServer, venv  # noqa: E402
from zombietop.sources.prefect import PrefectSource  # noqa: E402
from zombietop.sources.prefect_api import EVENTS_PAGE, FINISHED, HEARTBEAT, PAGE  # noqa: E402


def iso(when: float) -> str:
    return datetime.fromtimestamp(when, tz=UTC).isoformat()


async def post(http: aiohttp.ClientSession, url: str, body: Any) -> Any:
    """POST ``body``, again while the server answers 503 (SQLite busy), for 30 s at most."""
    ends = time.monotonic() + 30
    while True:
        async with http.post(url, json=body) as answer:
            if answer.status != 503 or time.monotonic() > ends:
                assert answer.status < 300, await answer.text()
                return await answer.json()
        await asyncio.sleep(0.1)


async def fill(api: str, running: int) -> None:
    """``running`` flow runs of one flow, RUNNING, each with one heartbeat event."""
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{api}/flows/", json={"name": "bench"}) as answer:
            flow_id = (await answer.json())["id"]
        now = time.time()
        ids: list[str] = []
        for at in range(running):
            body = {
                "flow_id": flow_id,
                "name": f"bench-{at}",
                "state": {"type": "RUNNING", "name": "Running"},
            }
            made = await post(http, f"{api}/flow_runs/", body)
            ids.append(made["id"])
            patch = {"infrastructure_pid": str(4_000_000 + at)}
            async with http.patch(f"{api}/flow_runs/{made['id']}", json=patch) as answer:
                assert answer.status < 300, await answer.text()
        events = [
            {
                "id": str(uuid.uuid4()),
                "occurred": iso(now),
                "event": HEARTBEAT,
                "resource": {"prefect.resource.id": f"prefect.flow-run.{run_id}"},
            }
            for run_id in ids
        ]
        async with http.post(f"{api}/events", json=events) as answer:
            assert answer.status < 300, await answer.text()


async def bare_read(http: aiohttp.ClientSession, api: str) -> int:
    """The same calls, with nothing else done: the running runs found."""
    now = time.time()
    filters: list[dict[str, Any]] = [
        {"state": {"type": {"any_": ["SCHEDULED"]}}, "expected_start_time": {"before_": iso(now)}},
        {"state": {"type": {"any_": ["PENDING", "RUNNING", "PAUSED", "CANCELLING"]}}},
        {"state": {"type": {"any_": list(FINISHED)}}, "end_time": {"after_": iso(now - 3600)}},
    ]
    runs: list[dict[str, Any]] = []
    for flow_runs in filters:
        offset = 0
        while True:
            body = {"flow_runs": flow_runs, "sort": "ID_DESC", "limit": PAGE, "offset": offset}
            async with http.post(f"{api}/flow_runs/filter", json=body) as answer:
                page = await answer.json()
            runs.extend(page)
            offset += len(page)
            if len(page) < PAGE:
                break
    running = [run["id"] for run in runs if run["state_type"] == "RUNNING"]
    for start in range(0, len(running), PAGE):
        ids = [f"prefect.flow-run.{run_id}" for run_id in running[start : start + PAGE]]
        body = {
            "filter": {
                "occurred": {"since": iso(now - 1620), "until": iso(now + 120)},
                "event": {"name": [HEARTBEAT]},
                "resource": {"id": ids, "distinct": True},
                "order": "DESC",
            },
            "limit": EVENTS_PAGE,
        }
        async with http.post(f"{api}/events/filter", json=body) as answer:
            page = await answer.json()
        while page.get("next_page"):
            query = page["next_page"].partition("?")[2]
            async with http.get(f"{api}/events/filter/next?{query}") as answer:
                page = await answer.json()
    async with http.get(f"{api}/flows/{runs[0]['flow_id']}") as answer:
        await answer.json()
    return len(running)


async def bare_polls(api: str, polls: int) -> tuple[float, int]:
    samples, fewest = [], -1
    async with aiohttp.ClientSession() as http:
        for _ in range(polls):
            start = time.perf_counter()
            found = await bare_read(http, api)
            samples.append(time.perf_counter() - start)
            fewest = found if fewest < 0 else min(fewest, found)
    return statistics.median(samples), fewest


async def source_polls(url: str, polls: int) -> tuple[float, int]:
    source = PrefectSource(url)
    await source.open()
    samples, fewest = [], -1
    try:
        for _ in range(polls):
            start = time.perf_counter()
            found = await source.poll(time.time() - 3600, "bench")
            samples.append(time.perf_counter() - start)
            fewest = len(found) if fewest < 0 else min(fewest, len(found))
    finally:
        await source.close()
    return statistics.median(samples), fewest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--running", type=int, default=1000)
    parser.add_argument("--polls", type=int, default=5)
    args = parser.parse_args()
    found = venv()
    if found is None:
        sys.exit("bench/prefect_poll.py needs Prefect: python3 -m venv .prefect-venv && "
                 ".prefect-venv/bin/pip install 'prefect>=3.9,<4'")  # fmt: skip
    server = PrefectServer(found)
    try:
        server.start()
        asyncio.run(fill(server.api, args.running))
        url = "prefect+" + server.api
        # Each side once before the timed polls: the server's caches are warm for both.
        asyncio.run(bare_polls(server.api, 1))
        rows = [
            ("bare read of the same API calls (aiohttp)", *asyncio.run(bare_polls(server.api, args.polls))),
            ("prefect source poll", *asyncio.run(source_polls(url, args.polls))),
        ]  # fmt: skip
    finally:
        server.stop()
    bare = rows[0][1]
    print(f"{args.running} running flow runs, median of {args.polls} polls")
    print(f"{'what':<44} {'seconds':>9} {'tasks':>7} {'x bare':>7}")
    for what, seconds, tasks in rows:
        print(f"{what:<44} {seconds:>9.3f} {tasks:>7} {seconds / bare:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
