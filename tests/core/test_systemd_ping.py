"""``SystemdPing`` alone: after each look of the watchdog, ``READY=1`` the first time,
``WATCHDOG=1`` always, and a status line, sent to a real datagram socket."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from zombietop.health import Health
from zombietop.watch.sd_notify import SystemdNotifier, SystemdPing, status_line
from zombietop.watch.watchdog import LookReport


@pytest.fixture
def unit_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, SystemdNotifier]]:
    """The socket systemd makes for a ``Type=notify`` unit, and a notifier that sends to it."""
    path = tmp_path / "notify"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(str(path))
    server.settimeout(10)
    notifier = SystemdNotifier(str(path))
    yield server, notifier
    notifier.close()
    server.close()


def received(server: socket.socket) -> dict[str, str]:
    return dict(line.split("=", 1) for line in server.recv(4096).decode().split("\n"))


def test_ready_comes_with_the_first_look_then_a_ping_with_each(
    unit_socket: tuple[socket.socket, SystemdNotifier],
) -> None:
    server, notifier = unit_socket
    ping = SystemdPing(notifier)
    first = LookReport(taken_at=0.0, counts={Health.STALLED: 1})
    ping(first)
    assert received(server) == {
        "READY": "1",
        "WATCHDOG": "1",
        "STATUS": "1 needing a human; 1 stalled",
    }
    second = LookReport(taken_at=30.0)
    ping(second)
    assert received(server) == {"WATCHDOG": "1", "STATUS": "0 needing a human; no tasks"}
    assert ping.last is second


def test_the_status_says_why_a_look_acted_on_nothing() -> None:
    standby = LookReport(taken_at=0.0, active=False, withheld="standby: watchdog@a is active")
    assert status_line(standby) == "standby: watchdog@a is active"
    assert status_line(LookReport(taken_at=0.0, active=False)) == "standby"
    hostile = LookReport(taken_at=0.0, withheld="cannot read store \x1b[2J: gone")
    assert status_line(hostile) == "withholding verdicts: cannot read store \\x1b[2J: gone"
