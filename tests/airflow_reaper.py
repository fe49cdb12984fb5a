"""The parent of one test Airflow: starts its commands, and ends them all, leaving nothing.

    python airflow_reaper.py '[["LOG", "ARGV0", ...], ...]'

It makes itself a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), so every process Airflow
starts stays its descendant, even one whose parent died (a task process cut off from its
supervisor): none is left running, and none is left a zombie for an init that does not reap.
It runs until SIGTERM, or until one of the commands exits; then it kills every descendant, reaps
them all, and exits (1 when a command exited first, naming it on stderr).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

import psutil

PR_SET_CHILD_SUBREAPER = 36


class Stop(Exception):
    pass


def _stop(signum: int, frame: object) -> None:
    raise Stop


def main(commands: list[list[str]]) -> int:
    if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("airflow_reaper: cannot become a child subreaper", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _stop)
    started: dict[int, str] = {}
    status = 0
    try:
        for log, *argv in commands:
            with open(log, "wb") as out:
                proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
            started[proc.pid] = " ".join(argv[1:])
        while True:
            pid, _ = os.wait()
            if pid in started:
                print(f"airflow_reaper: {started[pid]} exited", file=sys.stderr)
                status = 1
                break
    except Stop:
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    # Kill until none is left: a process may fork while its siblings are killed.
    while children := psutil.Process().children(recursive=True):
        for child in children:
            try:
                child.kill()
            except psutil.Error:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0]:
                pass
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return status


if __name__ == "__main__":
    sys.exit(main(json.loads(sys.argv[1])))
