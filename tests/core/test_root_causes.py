"""One page per root cause, with real processes: a stalled `zombietop run` and three real
`run --after --wait` wrappers behind it, judged by a real watchdog on a real SQLite file."""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, wait_for, zombietop
from zombietop.config import Config, WatchSettings, load_config
from zombietop.errors import TaskNotFound
from zombietop.health import Health
from zombietop.judge.monitor import Monitor
from zombietop.model import TaskState
from zombietop.paging.notify import Page
from zombietop.procs import PsutilProbe
from zombietop.store.sqlite import SQLiteStore
from zombietop.watch.root_causes import RootCauses, blocks_words
from zombietop.watch.watchdog import Watchdog

QUEUE_TIMEOUT = 1.0
# Beats until $DIR/stall exists, then blocks on a FIFO, using no CPU, until the test writes
# to it (the partner API is back); then beats again until $DIR/exit exists, and exits 0.
EXTRACT = (
    'while [ ! -e "$DIR/stall" ]; do echo "stage=extract p=10" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
    'sleep 0.1; done; read line < "$DIR/finish"; '
    'while [ ! -e "$DIR/exit" ]; do echo "stage=extract p=100" >> "$ZOMBIETOP_HEARTBEAT_FILE"; '
    "sleep 0.1; done"
)
DEPENDENTS = {
    "publish-2031": "extract-2031",
    "report-2031": "extract-2031",
    "notify-2031": "publish-2031",  # behind extract through publish
}


async def _exit_of(proc: subprocess.Popen[bytes]) -> int:
    """Wait for a child off the event loop, which must go on serving the store meanwhile."""
    return await asyncio.to_thread(proc.wait, 60)


class ListNotifier:
    name = kind = "list"
    keeps_incidents = False

    def __init__(self) -> None:
        self.pages: list[Page] = []

    async def send(self, page: Page) -> None:
        self.pages.append(page)


@pytest.fixture
def queue_config_path(tmp_path: Path) -> Path:
    path = tmp_path / "queue.toml"
    path.write_text(
        FAST_CONFIG.replace(
            "[thresholds]\n", f'[thresholds]\nqueue_timeout = "{QUEUE_TIMEOUT:g}s"\n'
        )
    )
    return path


class Pipeline:
    """extract-2031 as a real `zombietop run`, and its three real waiting dependents."""

    def __init__(self, store: SQLiteStore, db: Path, config_path: Path, children: Children,
                 folder: Path, *, group: bool = True) -> None:  # fmt: skip
        self.store, self.db, self.config_path = store, db, config_path
        self.children, self.folder = children, folder
        config = load_config(config_path)
        self.config: Config = replace(
            config, watch=WatchSettings(interval=1.0, group_by_upstream=group)
        )
        self.notifier = ListNotifier()
        self.monitor = Monitor(store, self.config, probe=PsutilProbe(), include_finished=True)
        self.dog = Watchdog(
            Monitor(store, self.config, probe=PsutilProbe()),
            self.config,
            executor=None,
            notifiers=[self.notifier],
            log=lambda _: None,
        )
        self.waiters: dict[str, subprocess.Popen[bytes]] = {}
        os.mkfifo(folder / "finish")

    def _run(self, *args: str) -> subprocess.Popen[bytes]:
        return self.children.start(
            zombietop(self.db, self.config_path, "run", *args),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "DIR": str(self.folder)},
        )

    async def start(self) -> None:
        """extract-2031 beating, and every dependent queued behind it under its lease."""
        self.extract = self._run("--task", "extract-2031", "--", "sh", "-c", EXTRACT)
        await wait_for(lambda: self._state("extract-2031", TaskState.RUNNING),
                       while_running=self.extract, what="extract-2031 running")  # fmt: skip
        # One after the other: notify-2031 waits on publish-2031, which must exist first.
        for task_id, after in DEPENDENTS.items():
            waiter = self._run(
                "--task", task_id, "--after", after, "--wait",
                "--", "sh", "-c", f'touch "$DIR/{task_id}"',
            )  # fmt: skip
            self.waiters[task_id] = waiter

            async def waiting(task_id: str = task_id) -> bool:
                return await self._waiting(task_id)

            await wait_for(waiting, while_running=waiter, what=f"{task_id} queued")

    async def stall(self) -> None:
        """Stop extract-2031's beats; wait until it is stalled and the dependents are queued
        past their queue timeout, so that one look sees both (the flood to hold)."""
        (self.folder / "stall").touch()

        async def stalled_and_late() -> bool:
            snapshot = await self.monitor.poll()
            views = snapshot.by_id()
            late = all(time.time() - views[t].task.created_at > QUEUE_TIMEOUT for t in DEPENDENTS)
            return views["extract-2031"].health is Health.STALLED and late

        await wait_for(stalled_and_late, timeout=30, what="extract-2031 stalled")

    def finish(self) -> None:
        with open(self.folder / "finish", "w") as fifo:
            fifo.write("done\n")

    async def _state(self, task_id: str, state: TaskState) -> bool:
        try:
            return (await self.store.get_task(task_id)).state is state
        except TaskNotFound:
            return False

    async def _waiting(self, task_id: str) -> bool:
        try:
            record = await self.store.get_record(task_id)
        except TaskNotFound:
            return False
        return record.task.state is TaskState.QUEUED and bool(record.lease and record.lease.held)

    async def tick(self, times: int = 1) -> None:
        for _ in range(times):
            await self.dog.tick()

    def pages(self) -> list[tuple[str, str | None]]:
        return [(page.kind, page.task_id) for page in self.notifier.pages]


async def test_a_root_cause_with_three_waiting_dependents_pages_once_and_clears_once(
    real_store: SQLiteStore, db: Path, queue_config_path: Path, children: Children, tmp_path: Path
) -> None:
    line = Pipeline(real_store, db, queue_config_path, children, tmp_path)
    await line.start()
    await line.stall()
    await line.tick(3)
    assert line.pages() == [("incident", "extract-2031")]
    page = line.notifier.pages[0].shown
    assert page.startswith("extract-2031 stalled: ")
    assert "; blocks 3: notify-2031, publish-2031, report-2031" in page
    # The dependents' queued_too_long was held, and the events say behind what.
    events = await real_store.events(task_id="publish-2031")
    assert any(e.data.get("held_behind") == "extract-2031" for e in events)

    line.finish()  # extract-2031 beats again: the incident ends, its hold is let go

    async def beats_again() -> bool:
        beat = (await real_store.get_record("extract-2031")).heartbeat
        return beat is not None and beat.progress == 100

    await wait_for(beats_again, while_running=line.extract, what="extract-2031 beating again")
    await line.tick()
    assert line.pages()[-1] == ("all_clear", "extract-2031")
    assert line.notifier.pages[-1].shown.startswith("extract-2031 all clear: now healthy")
    (tmp_path / "exit").touch()
    assert await _exit_of(line.extract) == 0
    for task_id, waiter in line.waiters.items():
        assert await _exit_of(waiter) == 0, task_id
        assert (tmp_path / task_id).exists()
    await line.tick(2)
    assert line.pages() == [("incident", "extract-2031"), ("all_clear", "extract-2031")]


async def test_a_dependent_whose_waiter_dies_pages_on_its_own_and_gets_its_all_clear(
    real_store: SQLiteStore, db: Path, queue_config_path: Path, children: Children, tmp_path: Path
) -> None:
    line = Pipeline(real_store, db, queue_config_path, children, tmp_path)
    await line.start()
    await line.stall()
    await line.tick()
    assert line.pages() == [("incident", "extract-2031")]
    report = line.waiters["report-2031"]
    report.kill()  # the waiting wrapper dies: its own reason, not extract-2031's
    await _exit_of(report)

    async def reclaimable() -> bool:
        view = (await line.monitor.poll()).by_id()["report-2031"]
        return view.health is Health.RECLAIMABLE

    await wait_for(reclaimable, timeout=30, what="report-2031 reclaimable")
    await line.tick(2)
    assert line.pages() == [("incident", "extract-2031"), ("incident", "report-2031")]
    own = line.notifier.pages[1].shown
    assert own.startswith("report-2031 reclaimable, queued_too_long: waiting wrapper run@")
    assert "gone: lease expired" in own and own.endswith("- resume or discard")
    discard = await asyncio.to_thread(
        subprocess.run,
        zombietop(db, queue_config_path, "discard", "report-2031", "--yes", "--reason", "redo"),
        capture_output=True,
        timeout=60,
    )
    assert discard.returncode == 0, discard.stderr
    await line.tick()
    assert line.pages()[-1] == ("all_clear", "report-2031")


async def test_without_grouping_every_dependent_pages_its_queued_too_long(
    real_store: SQLiteStore, db: Path, queue_config_path: Path, children: Children, tmp_path: Path
) -> None:
    line = Pipeline(real_store, db, queue_config_path, children, tmp_path, group=False)
    await line.start()
    await line.stall()
    await line.tick()
    assert sorted(line.pages(), key=str) == sorted(
        [("incident", "extract-2031"), *(("queued_too_long", t) for t in DEPENDENTS)], key=str
    )
    assert "blocks" not in line.notifier.pages[0].shown


def test_the_blocked_list_is_transitive_nearest_first_and_capped() -> None:
    causes = RootCauses(
        waits_on={"b": ("a",), "c": ("b",), "d": ("a",), "e": ("c",)},
        dependents={"a": ("b", "d"), "b": ("c",), "c": ("e",)},
    )
    assert causes.behind("e", {"a"}) == "a"
    assert causes.behind("e", {"a", "b"}) == "b"  # the nearest open incident speaks for it
    assert causes.behind("a", {"a"}) is None
    assert causes.blocked_by("a", {"a"}) == ("b", "c", "d", "e")
    # b has its own incident and still waits behind a; c and e are held behind b.
    assert causes.blocked_by("a", {"a", "b"}) == ("b", "d")
    assert blocks_words(()) == ""
    many = tuple(f"t{i}" for i in range(7))
    assert blocks_words(many) == "; blocks 7: t0, t1, t2, t3, t4, and 2 more"


class CountedGraph(dict[str, tuple[str, ...]]):
    """A graph mapping that counts how often it is read."""

    reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        CountedGraph.reads += 1
        return super().get(key, default)

    def __getitem__(self, key: str) -> tuple[str, ...]:
        CountedGraph.reads += 1
        return super().__getitem__(key)


def test_a_deep_chain_is_walked_once_per_set_of_open_incidents() -> None:
    """The reported fault: each task's root was found by a walk up the chain of its own, so a
    look at 4,000 tasks in a chain took 17.5 s (the square of the length)."""
    depth = 500
    names = [f"t{i:04d}" for i in range(depth)]
    causes = RootCauses(
        waits_on=CountedGraph({names[i]: (names[i - 1],) for i in range(1, depth)}),
        dependents=CountedGraph({names[i - 1]: (names[i],) for i in range(1, depth)}),
    )
    CountedGraph.reads = 0
    assert [causes.behind(name, {"t0000"}) for name in names] == [None, *["t0000"] * (depth - 1)]
    assert causes.blocked_by("t0000", {"t0000"}) == tuple(names[1:])
    assert CountedGraph.reads <= 3 * depth
    # An incident that opens during the look is seen at the next question.
    assert causes.behind(names[-1], {"t0000", "t0250"}) == "t0250"
    assert causes.blocked_by("t0000", {"t0000", "t0250"}) == tuple(names[1:251])
