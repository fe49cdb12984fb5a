"""A real clock step under a real ``zombietop watch``: libfaketime moves the watch's wall clock
an hour ahead (``FAKETIME_TIMESTAMP_FILE``) while real ``zombietop run`` jobs beat on.

``FAKETIME_DONT_FAKE_MONOTONIC`` keeps the boot and monotonic clocks true, as a real step
(``date -s``, an NTP correction) does: only CLOCK_REALTIME moves.
"""

from __future__ import annotations

import glob
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, zombietop
from tests.tui.test_sd_notify import _env, fields

LIBFAKETIME = next(
    iter(sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1"))),
    os.environ.get("ZOMBIETOP_LIBFAKETIME", ""),
)

pytestmark = pytest.mark.skipif(
    not LIBFAKETIME or not Path(LIBFAKETIME).exists(),
    reason="libfaketime not found (apt-get install faketime, or set ZOMBIETOP_LIBFAKETIME)",
)

JOB = (
    'i=0; while :; do i=$((i+1)); echo "stage=work p=$((i % 100)) n=$i" '
    '>> "$ZOMBIETOP_HEARTBEAT_FILE"; sleep 0.1; done'
)


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.settimeout(60)
    yield sock
    sock.close()


def test_a_step_of_the_watch_hosts_clock_kills_and_pages_nobody(
    tmp_path: Path, children: Children, notify_socket: socket.socket
) -> None:
    db, config, stamp = tmp_path / "z.db", tmp_path / "c.toml", tmp_path / "faketime"
    config.write_text(FAST_CONFIG)
    stamp.write_text("+0\n")
    subprocess.run(zombietop(db, config, "init"), check=True, capture_output=True)
    jobs = [
        children.start(
            zombietop(db, config, "run", "--task", f"job-{n}", "--", "sh", "-c", JOB),
            env=_env(),
            stdout=subprocess.DEVNULL,
        )
        for n in range(2)
    ]
    log = tmp_path / "watch.log"
    with log.open("wb") as out:
        watch = children.start(
            zombietop(db, config, "watch", "--interval", "1"),
            env={
                **_env(),
                "NOTIFY_SOCKET": str(tmp_path / "notify"),
                "LD_PRELOAD": LIBFAKETIME,
                "FAKETIME_TIMESTAMP_FILE": str(stamp),
                "FAKETIME_NO_CACHE": "1",
                "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            },
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while fields(notify_socket).get("STATUS") != "0 needing a human; 2 healthy":
        assert time.monotonic() < deadline, log.read_text()
    stamp.write_text("+3600\n")  # the watch's wall clock is now an hour ahead
    for _ in range(8):
        status = fields(notify_socket).get("STATUS") or ""
        # A look slower than the interval on a loaded machine withholds too; nothing else may.
        assert status == "0 needing a human; 2 healthy" or status.startswith(
            "withholding verdicts: store lags"
        ), log.read_text()
    watch.send_signal(signal.SIGTERM)
    assert watch.wait(timeout=30) == 0
    text = log.read_text()
    assert text.count("this host's wall clock stepped +1h00m") == 1, text
    for word in ("quarantined", "kill", "stalled", "reclaimable", "PAGE"):
        assert word not in text, text
    assert all(job.poll() is None for job in jobs)
    listed = subprocess.run(
        zombietop(db, config, "status", "--json"), env=_env(), capture_output=True, text=True
    )
    assert '"quarantined": true' not in listed.stdout
    assert listed.stdout.count('"health": "healthy"') == 2, listed.stdout
