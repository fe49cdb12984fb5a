"""A store deleted under running commands is noticed: ``rm z.db*`` under a real ``watch``,
``run`` and ``agent``. The watch pages about itself and stops (its supervisor restarts it on
whatever the path holds then), the agent stops, and the run says its result is lost."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.core.realprocs import FAST_CONFIG, Children, wait_for_file, zombietop
from tests.tui.test_sd_notify import _env


def _remove_store(db: Path) -> None:
    for path in db.parent.glob(db.name + "*"):
        if path.is_file():
            path.unlink()


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float = 60) -> int:
    return proc.wait(timeout=timeout)


def test_rm_of_the_store_under_watch_run_and_agent_is_noticed(
    tmp_path: Path, children: Children
) -> None:
    db, config, started = tmp_path / "z.db", tmp_path / "c.toml", tmp_path / "started"
    finish = tmp_path / "finish"
    config.write_text(FAST_CONFIG)
    subprocess.run(zombietop(db, config, "init"), check=True, capture_output=True)
    logs = {name: tmp_path / f"{name}.log" for name in ("watch", "run", "agent")}
    argv = {
        "watch": zombietop(db, config, "watch", "--interval", "0.3"),
        "agent": zombietop(db, config, "agent", "--interval", "0.3"),
        "run": zombietop(
            db,
            config,
            "run",
            "--task",
            "j",
            "--",
            "sh",
            "-c",
            # Runs until the test says: the store must go while it runs, however slowly the
            # watch and the agent start.
            f": > {started}; while [ ! -e {finish} ]; do sleep 0.05; done",
        ),
    }
    procs = {}
    for name, command in argv.items():
        with logs[name].open("wb") as out:
            procs[name] = children.start(command, env=_env(), stdout=out, stderr=subprocess.STDOUT)
    wait_for_file(started, timeout=60)
    deadline = time.monotonic() + 60
    while "watching" not in logs["watch"].read_text() or "serving" not in logs["agent"].read_text():
        assert time.monotonic() < deadline, [p.read_text() for p in logs.values()]
        time.sleep(0.05)
    _remove_store(db)
    assert _wait_exit(procs["watch"]) == 2
    watch = logs["watch"].read_text()
    assert "PAGE (watchdog) zombietop watchdog cannot read store" in watch, watch
    assert f"store {db} was deleted or moved while open" in watch
    assert _wait_exit(procs["agent"]) == 2
    assert f"store {db} was deleted" in logs["agent"].read_text()
    deadline = time.monotonic() + 60
    while "j keeps running unrecorded" not in logs["run"].read_text():
        assert procs["run"].poll() is None and time.monotonic() < deadline, logs["run"].read_text()
        time.sleep(0.05)
    finish.touch()
    assert _wait_exit(procs["run"]) == 0  # the command itself was fine
    run = logs["run"].read_text()
    assert run.count(f"store {db} was deleted") == 1, run
    assert "j keeps running unrecorded" in run
