"""The first look of a real ``zombietop watch --once`` must know when this process reads the
store's clock wrong, with no look before it to compare: a real time namespace whose boot clock
runs an hour ahead (``unshare --time --boottime 3600``), and real libfaketime moving the boot
clock itself. Real ``zombietop run`` jobs beat meanwhile and must be left alone; a true clock
never holds back what the first look does."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.core.realprocs import FAST_CONFIG, Children, zombietop
from tests.tui.test_sd_notify import _env
from tests.tui.test_watch_clock_step import JOB, LIBFAKETIME

STALLS = 'echo "stage=wait p=5" >> "$ZOMBIETOP_HEARTBEAT_FILE"; sleep 600'
"""A job that beats once, then never again: stalled, and the first look must page it."""


def _can_unshare_time() -> bool:
    if shutil.which("unshare") is None or not os.path.exists("/proc/self/timens_offsets"):
        return False
    probe = subprocess.run(
        ["unshare", "--time", "--boottime", "3600", "true"], capture_output=True, check=False
    )
    return probe.returncode == 0


def _started(db: Path, config: Path, children: Children) -> subprocess.Popen[bytes]:
    subprocess.run(zombietop(db, config, "init"), check=True, capture_output=True)
    beating = children.start(
        zombietop(db, config, "run", "--task", "beating", "--", "sh", "-c", JOB),
        env=_env(),
        stdout=subprocess.DEVNULL,
    )
    children.start(
        zombietop(db, config, "run", "--task", "stuck", "--", "sh", "-c", STALLS),
        env=_env(),
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while True:  # both started; the stuck one past its heartbeat timeout
        listed = subprocess.run(
            zombietop(db, config, "status", "--json"), env=_env(), capture_output=True, text=True
        ).stdout
        if '"health": "healthy"' in listed and '"health": "stalled"' in listed:
            return beating
        assert time.monotonic() < deadline, listed
        time.sleep(0.1)


def _watch_once(db: Path, config: Path, prefix: list[str], env: dict[str, str]) -> str:
    done = subprocess.run(
        [*prefix, *zombietop(db, config, "watch", "--once")],
        env={**_env(), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.mark.skipif(not _can_unshare_time(), reason="needs time namespaces and CAP_SYS_ADMIN")
def test_a_watch_in_a_time_namespace_reads_the_hosts_clock(
    tmp_path: Path, children: Children
) -> None:
    db, config = tmp_path / "z.db", tmp_path / "c.toml"
    config.write_text(FAST_CONFIG)
    beating = _started(db, config, children)
    text = _watch_once(db, config, ["unshare", "--time", "--boottime", "3600"], {})
    # Its clock is the host's: the beating job is healthy, the stuck one is paged at once.
    assert "PAGE (incident) stuck stalled" in text, text
    assert "beating" not in text and "withheld" not in text, text
    assert beating.poll() is None
    listed = subprocess.run(
        zombietop(db, config, "status", "--json"), env=_env(), capture_output=True, text=True
    ).stdout
    assert '"health": "healthy"' in listed, listed


@pytest.mark.skipif(not LIBFAKETIME or not Path(LIBFAKETIME).exists(), reason="no libfaketime")
def test_a_watch_whose_boot_clock_is_faked_withholds_from_its_first_look(
    tmp_path: Path, children: Children
) -> None:
    db, config = tmp_path / "z.db", tmp_path / "c.toml"
    config.write_text(FAST_CONFIG)
    beating = _started(db, config, children)
    # libfaketime answers clock_gettime in-process, boot clock included; /proc/uptime it
    # cannot touch.
    text = _watch_once(db, config, [], {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": "+1h"})
    withheld = [line for line in text.splitlines() if "verdicts withheld" in line]
    assert len(withheld) == 1, text
    assert "this process reads the boot clock" in withheld[0], text
    assert "off the kernel's own count (/proc/uptime)" in withheld[0], text
    for word in ("PAGE", "quarantined", "kill "):
        assert word not in text, text
    assert beating.poll() is None
    listed = subprocess.run(
        zombietop(db, config, "status", "--json"), env=_env(), capture_output=True, text=True
    ).stdout
    assert '"quarantined": true' not in listed, listed
