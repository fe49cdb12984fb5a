"""Tell systemd how a long-running command is doing (``sd_notify``), without libsystemd.

Under a unit with ``Type=notify`` systemd sets ``$NOTIFY_SOCKET`` to a datagram socket; each
message is newline-separated ``KEY=VALUE`` pairs. ``READY=1`` ends start-up, ``WATCHDOG=1``
resets the unit's ``WatchdogSec`` timer (systemd restarts the unit when it runs out), and
``STATUS=`` is the line ``systemctl status`` shows. Outside systemd this does nothing.

``SystemdPing`` is what ``zombietop watch`` sends after each look of the watchdog (see
docs/glossary.md; ``zombietop.watch.watchdog``).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING

from zombietop.printable import printable

if TYPE_CHECKING:
    from zombietop.watch.watchdog import LookReport


class SystemdNotifier:
    """The unit's notify socket, or nothing when the command does not run under systemd."""

    def __init__(self, address: str | None) -> None:
        if address and address.startswith("@"):
            # A socket in the abstract namespace: its name starts with a NUL byte.
            address = "\0" + address[1:]
        self.address = address or None
        self._socket: socket.socket | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> SystemdNotifier:
        return cls(environ.get("NOTIFY_SOCKET"))

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def notify(self, **fields: str) -> bool:
        """Send ``KEY=VALUE`` fields (``READY="1"``, ``STATUS="..."``); False if none was sent.

        systemd reads one datagram per message and never answers; a full or vanished socket
        costs this round's message, never the caller's round.
        """
        if self.address is None:
            return False
        # One field a line: a newline inside a value would start a field of its own.
        message = "\n".join(
            f"{key}={' '.join(value.splitlines())}" for key, value in fields.items()
        )
        try:
            if self._socket is None:
                self._socket = socket.socket(
                    socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC
                )
            self._socket.sendto(message.encode("utf-8", "replace"), self.address)
        except OSError:
            return False
        return True

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None


class SystemdPing:
    """After each look: ``READY=1`` the first time, ``WATCHDOG=1`` always, and the counts.

    ``WATCHDOG=1`` comes only from a look that finished, so a watchdog stuck in the middle of
    one misses its unit's ``WatchdogSec`` and systemd restarts it.
    """

    def __init__(self, systemd: SystemdNotifier) -> None:
        self.systemd = systemd
        self.ready = False
        self.last: LookReport | None = None

    def __call__(self, report: LookReport) -> None:
        self.last = report
        fields = {"WATCHDOG": "1", "STATUS": status_line(report)}
        if not self.ready:
            fields = {"READY": "1", **fields}
            self.ready = True
        self.systemd.notify(**fields)


def status_line(report: LookReport) -> str:
    """What ``systemctl status`` shows: what this look found, or why it found nothing."""
    if not report.active:
        return report.withheld or "standby"
    if report.withheld is not None:
        return printable(f"withholding verdicts: {report.withheld}")
    found = [f"{n} {health}" for health, n in report.counts.items() if n]
    if report.missed_schedules:
        found.append(f"{report.missed_schedules} schedule(s) missed")
    paging = sum(n for health, n in report.counts.items() if health.pages)
    return f"{paging + report.missed_schedules} needing a human; {', '.join(found) or 'no tasks'}"
