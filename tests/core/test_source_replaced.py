"""A source's SQLite file replaced under zombietop's connection (issue 29, item 9.1).

``mv new.db airflow.db``, as ``airflow db reset`` or a restore does: a kept connection still
reads the old file through its inode, and its running tasks would age into ``stalled`` with no
word of why. The source checks the path's device and inode at each read, as the store does:
the read that finds another file says so, and the next reads the new file.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.airflow_by_hand import add_running, add_task, make_database
from zombietop.clock import FakeClock
from zombietop.config import load_config
from zombietop.errors import SourceError
from zombietop.judge.monitor import Monitor
from zombietop.sources.airflow import AirflowSource
from zombietop.store.sqlite import SQLiteStore


def _ids(found: object) -> list[str]:
    return sorted(one.record.task.task_id for one in found)  # type: ignore[attr-defined]


async def test_a_replaced_file_is_said_and_then_read(tmp_path: Path) -> None:
    path = tmp_path / "airflow.db"
    make_database(path, "delete")  # a rollback journal: the connection is kept between polls
    add_running(path, "old", started=time.time() - 60, beat=time.time())
    source = AirflowSource(f"airflow+sqlite:///{path}")
    await source.open()
    try:
        assert _ids(await source.poll(None, "here")) == ["etl/extract/r", "etl/old/r"]

        fresh = tmp_path / "new.db"
        make_database(fresh, "delete")
        add_task(fresh, "restored")
        os.replace(fresh, path)

        with pytest.raises(SourceError) as said:
            await source.poll(None, "here")
        assert str(said.value) == (
            f"source {source.name}: {path} was replaced by another file while zombietop read "
            "it (as `airflow db reset` or a restore does); zombietop reopened the path, and "
            "its tasks are read from the new file from the next poll"
        )
        assert _ids(await source.poll(None, "here")) == ["etl/extract/r", "etl/restored/r"]
        # And it stays on the new file: nothing more to say.
        assert _ids(await source.poll(None, "here")) == ["etl/extract/r", "etl/restored/r"]
    finally:
        await source.close()


async def test_the_monitor_names_the_replaced_source_for_one_poll(
    tmp_path: Path, fake_clock: FakeClock
) -> None:
    path = tmp_path / "airflow.db"
    make_database(path, "delete")
    add_running(path, "old", started=fake_clock.now() - 60, beat=fake_clock.now())
    store = await SQLiteStore.open(tmp_path / "zombietop.db", create=True, clock=fake_clock)
    source = AirflowSource(f"airflow+sqlite:///{path}", clock=fake_clock)
    monitor = Monitor(store, load_config(None), clock=fake_clock, sources=[source])
    try:
        first = await monitor.poll()
        assert "etl/old/r" in {view.task_id for view in first.tasks}

        fresh = tmp_path / "new.db"
        make_database(fresh, "delete")
        os.replace(fresh, path)
        fake_clock.advance(1)
        replaced = await monitor.poll()
        # Its tasks are withheld (the old file's), not judged as if still current.
        assert "replaced by another file" in replaced.source_errors[source.name]
        assert "etl/old/r" in replaced.unread

        fake_clock.advance(1)
        after = await monitor.poll()
        assert after.source_errors == {}
        assert {view.task_id for view in after.tasks} == {"etl/extract/r"}
    finally:
        await source.close()
        await store.close()
