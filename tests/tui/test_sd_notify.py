"""``zombietop watch`` under systemd: sd_notify messages received on a real datagram socket."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.realprocs import Children, zombietop
from zombietop.watch.sd_notify import SystemdNotifier


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, Path]]:
    """A socket like the one systemd makes for a ``Type=notify`` unit."""
    path = tmp_path / "notify"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(path))
    sock.settimeout(30)
    yield sock, path
    sock.close()


def fields(sock: socket.socket) -> dict[str, str]:
    datagram = sock.recv(4096).decode()
    return dict(line.split("=", 1) for line in datagram.split("\n"))


def test_watch_is_ready_after_its_first_look_then_pings_each_round(
    notify_socket: tuple[socket.socket, Path],
    children: Children,
    tmp_path: Path,
    fast_config_path: Path,
) -> None:
    sock, path = notify_socket
    db = tmp_path / "z.db"
    subprocess.run(zombietop(db, fast_config_path, "init"), check=True, capture_output=True)
    watch = children.start(
        zombietop(db, fast_config_path, "watch", "--interval", "0.2"),
        env={**_env(), "NOTIFY_SOCKET": str(path)},
        stdout=subprocess.DEVNULL,
    )
    first = fields(sock)
    assert first == {"READY": "1", "WATCHDOG": "1", "STATUS": "0 needing a human; no tasks"}
    for _ in range(2):
        assert fields(sock) == {"WATCHDOG": "1", "STATUS": "0 needing a human; no tasks"}
    watch.send_signal(signal.SIGTERM)
    while (message := fields(sock)) != {"STOPPING": "1"}:
        assert message.keys() == {"WATCHDOG", "STATUS"}
    assert watch.wait(timeout=30) == 0


def test_a_socket_in_the_abstract_namespace(tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(f"\0zombietop-test-{tmp_path.name}")
    server.settimeout(10)
    notifier = SystemdNotifier(f"@zombietop-test-{tmp_path.name}")
    assert notifier.notify(STATUS="two\nlines") is True
    assert server.recv(4096) == b"STATUS=two lines"
    notifier.close()
    server.close()


def test_without_systemd_nothing_is_sent() -> None:
    notifier = SystemdNotifier.from_env({})
    assert not notifier.enabled and notifier.notify(READY="1") is False


def test_a_vanished_socket_costs_the_message_not_the_round(tmp_path: Path) -> None:
    notifier = SystemdNotifier(str(tmp_path / "gone"))
    assert notifier.notify(WATCHDOG="1") is False
    notifier.close()


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("ZOMBIETOP_", "NOTIFY_"))}


def test_status_counts_missed_schedules_among_what_needs_a_human() -> None:
    from zombietop.health import Health
    from zombietop.watch.sd_notify import status_line
    from zombietop.watch.watchdog import LookReport

    report = LookReport(
        taken_at=0.0, counts={Health.STALLED: 1, Health.HEALTHY: 3}, missed_schedules=1
    )
    assert status_line(report) == "2 needing a human; 1 stalled, 3 healthy, 1 schedule(s) missed"
    assert status_line(LookReport(taken_at=0.0)) == "0 needing a human; no tasks"
