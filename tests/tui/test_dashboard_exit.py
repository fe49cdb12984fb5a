"""Closing the dashboard never cancels a kill: one still in its grace is handed to a background
`zombietop kill`, which sends the owed SIGKILL."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from tests.core.realprocs import Children, start_task_process
from zombietop.act.executor import Executor
from zombietop.actions import Outcome
from zombietop.config import Config
from zombietop.locations import task_file_name
from zombietop.store.sqlite import SQLiteStore
from zombietop.tui.launch import hand_over_pending_kills


async def test_a_pending_kill_outlives_the_dashboard(
    real_store: SQLiteStore, fast_config: Config, children: Children, tmp_path: Path, db: Path
) -> None:
    ready = tmp_path / "ready"
    proc = await start_task_process(
        real_store, children, f"trap '' TERM; : > {ready}; sleep 60 & wait", ready
    )
    executor = Executor(real_store, fast_config)  # kill_grace 1s
    sent = await executor.kill("t1", expected_token=1, actor="oncall", reason="stuck")
    assert sent.outcome is Outcome.TERM_SENT
    finishers = await hand_over_pending_kills(real_store, executor, db, fast_config)
    assert len(finishers) == 1
    assert await asyncio.to_thread(proc.wait, 20) == -signal.SIGKILL
    _, status = await asyncio.to_thread(os.waitpid, finishers[0], 0)
    assert os.waitstatus_to_exitcode(status) == 0
    log = db.parent / "zombietop.db.d" / "logs" / f"kill-{task_file_name('t1')}.log"
    assert "escalated: process group" in log.read_text()
