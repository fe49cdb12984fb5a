"""The names of this machine that Airflow may record are asked once per process, not at each
poll: ``socket.getfqdn`` can be a DNS round trip (issue 29, item 8)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.airflow_by_hand import add_running, make_database
from zombietop.clock import FakeClock
from zombietop.procs import this_host
from zombietop.sources import base
from zombietop.sources.airflow import AirflowSource


async def test_getfqdn_is_asked_once_for_every_poll(
    tmp_path: Path, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []

    def getfqdn(name: str = "") -> str:
        asked.append(name)
        return "box.example.org"

    monkeypatch.setattr(socket, "getfqdn", getfqdn)
    base.machine_names.cache_clear()
    path = tmp_path / "airflow.db"
    make_database(path, "wal")
    add_running(path, "load", started=clock.now() - 60, beat=clock.now())
    source = AirflowSource(f"airflow+sqlite:///{path}", clock=clock)
    await source.open()
    try:
        for _ in range(5):
            found = await source.poll(None, this_host())
            assert len(found) == 2  # etl/extract/r (queued) and etl/load/r
            clock.advance(1)
        assert "box.example.org" in base.local_hostnames(this_host())
        assert asked == [""]
    finally:
        await source.close()
        base.machine_names.cache_clear()  # the next test asks the real resolver
