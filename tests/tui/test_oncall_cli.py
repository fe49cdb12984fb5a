"""The on-call loop through the real command: ``zombietop ack``, ``silence``, ``silences``,
``unsilence``, and real ``zombietop watch --once`` passes (each its own process, as cron runs
them) paging through a real notifier command; and a schedule across a real minute boundary."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import pwd
import re
import sqlite3
import struct
import subprocess
import sys
import termios
import time
from datetime import datetime
from pathlib import Path

import pytest

from zombietop.clock import FakeClock
from zombietop.heartbeat_line import parse_line
from zombietop.model import TaskState
from zombietop.store import open_store

HOUR = 3600.0
SCRIPT = Path(sys.executable).with_name("zombietop")
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "zombietop.tui"]
ME = pwd.getpwuid(os.getuid()).pw_name


def stalled_store(path: Path, *task_ids: str) -> None:
    """Tasks whose last beat was an hour ago (stalled, lease good for hours: nothing flips)."""

    async def build() -> None:
        clock = FakeClock(time.time() - HOUR)
        async with await open_store(path, create=True, clock=clock) as store:
            for task_id in task_ids:
                await store.create_task(
                    task_id=task_id, run_id="r", step="export", step_type="export", actor="t"
                )
                lease = await store.acquire_lease(task_id, owner="w1@box", ttl=6 * HOUR)
                await store.record_heartbeat(
                    task_id, parse_line("stage=transform p=61"), owner="w1@box", token=lease.token
                )

    asyncio.run(build())


class Zombietop:
    """The installed command on one store and config, with pages appended to a file."""

    def __init__(self, tmp_path: Path, config: str = "", *, name: str = "config.toml") -> None:
        self.db = tmp_path / "z.db"
        self.pages = tmp_path / "pages.txt"
        self.config = tmp_path / name
        self.config.write_text(
            f'[timeouts]\nstage = "5h"\n[notify]\ncommand = ["sh", "-c", "cat >> {self.pages}"]\n'
            + config
        )
        # $USER says someone else: the actor is who the uid is, not who the environment claims.
        self.env = {**os.environ, "USER": "mallory", "LOGNAME": "mallory"}

    def __call__(self, command: str, *argv: str) -> subprocess.CompletedProcess[str]:
        options = ["--db", str(self.db), "--config", str(self.config)]
        return subprocess.run(
            [*COMMAND, command, *options, *argv],
            capture_output=True,
            text=True,
            env=self.env,
            timeout=60,
        )

    def watch(self) -> list[str]:
        """One real ``watch --once`` pass; the pages it sent."""
        before = self.read_pages()
        done = self("watch", "--once")
        assert done.returncode == 0, done.stderr
        return self.read_pages()[len(before) :]

    def read_pages(self) -> list[str]:
        return self.pages.read_text().splitlines() if self.pages.exists() else []


RENOTIFY = 60.0
"""The shortest renotify a config may set."""


def age_the_pages(db: Path, seconds: float) -> None:
    """Move every page already sent ``seconds`` into the past, in the real store file: the
    watchdog's memory of what it sent is these events, so the next pass is that much later for
    it, and the test need not wait a minute of real time."""
    with sqlite3.connect(db) as con:
        con.execute("UPDATE events SET at = at - ? WHERE kind = 'page'", (seconds,))
    con.close()


def test_an_acked_incident_is_not_repaged_and_a_loud_one_is(tmp_path: Path) -> None:
    stalled_store(tmp_path / "z.db", "loud-1", "acked-1")
    zt = Zombietop(tmp_path, f'[watch]\nrenotify = "{RENOTIFY:g}s"\n')
    first = zt.watch()
    assert sorted(line.split(" ")[0] for line in first) == ["acked-1", "loud-1"]
    done = zt("ack", "acked-1", "--for", "1h", "--reason", "restarting the partner API")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"acked-1: acked by {ME} until ")
    assert done.stdout.rstrip().endswith("(1h00m): restarting the partner API")
    for notice in ("2nd", "3rd"):
        age_the_pages(zt.db, RENOTIFY)  # real passes, a renotify interval apart for the watchdog
        (page,) = zt.watch()
        assert page.startswith("loud-1 stalled: stage=transform p=61% heartbeat 1h00m old")
        assert f"- resume or discard ({notice} notice, open " in page
    status = zt("status", "--json")
    assert status.returncode == 2
    tasks = {t["task_id"]: t for t in json.loads(status.stdout)["tasks"]}
    assert tasks["loud-1"]["ack"] is None
    ack = tasks["acked-1"]["ack"]
    assert (ack["by"], ack["reason"]) == (ME, "restarting the partner API")
    assert ack["until"].endswith("Z")
    table = zt("status").stdout
    assert f"acked:{ME}" in table
    assert f"acked-1 acked by {ME} " in table
    assert zt("unack", "acked-1").stdout == f"acked-1: ack by {ME} ended\n"
    again = zt("unack", "acked-1")
    assert (again.returncode, again.stdout) == (0, "acked-1 has no ack: nothing to end\n")


def test_a_silence_holds_pages_until_it_ends_then_the_page_goes_out(tmp_path: Path) -> None:
    stalled_store(tmp_path / "z.db", "export-1")
    zt = Zombietop(tmp_path, '[watch]\nrenotify = "0s"\n')
    made = zt(
        "silence", "--task", "export-*", "--for", "1h", "--reason", "maintenance\x1b[2J night"
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith(f"silence 1 (task export-*) by {ME}, ends ")
    assert "maintenance\\x1b[2J night" in made.stdout  # shown escaped, never raw
    assert zt.watch() == []
    assert zt.watch() == []
    listed = zt("silences").stdout
    assert listed.startswith(f"silence 1 (task export-*) by {ME}, ends ") and "(in 59m" in listed
    as_json = json.loads(zt("silences", "--json").stdout)
    assert [(s["id"], s["pattern"], s["reason"]) for s in as_json] == [
        (1, "export-*", "maintenance\x1b[2J night")
    ]
    table = zt("status").stdout
    assert "silenced:#1" in table
    assert zt("unsilence", "1").stdout == "silence 1 (task export-*) ended\n"
    (page,) = zt.watch()
    assert page.startswith("export-1 stalled: ") and "(1st notice, open " in page
    assert zt("silences").stdout == "no silences in force\n"
    again = zt("unsilence", "1")
    assert again.returncode == 2 and "has already ended" in again.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["silence", "--host", "h", "--for", "8d", "--reason", "r"],
            "longer than [oncall] max_silence",
        ),
        (["silence", "--host", "h", "--for", "1h"], "--reason"),
        (
            ["silence", "--for", "1h", "--reason", "r"],
            "one of the arguments --task --step-type --host --job is required",
        ),
        (["ack", "nope-1"], "no task 'nope-1'"),
        (["ack", "export-1", "--for", "soon"], "is not a duration"),
    ],
)
def test_bad_requests_say_what_to_do(tmp_path: Path, argv: list[str], message: str) -> None:
    stalled_store(tmp_path / "z.db", "export-1")
    done = Zombietop(tmp_path)(*argv)
    assert done.returncode == 2 and message in done.stderr


def test_a_schedule_across_a_real_minute_boundary(tmp_path: Path) -> None:
    """Every five minutes, with a second of grace: once a real boundary is two seconds behind
    and no run started, it is missed (paged, status CRITICAL); a run makes it ok again. The
    passes start at least a minute before the next boundary, so they all judge the same one.
    The config was written an hour ago: the schedule is judged from then on (a read-only
    `status` counts from the file's mtime; the watchdog records it in the store)."""
    zt = Zombietop(
        tmp_path, '[schedules.fively]\nstep = "tick"\ncron = "*/5 * * * *"\ngrace = "1s"\n'
    )
    an_hour_ago = time.time() - HOUR
    os.utime(zt.config, (an_hour_ago, an_hour_ago))
    assert zt("init").returncode == 0
    past = time.time() % 300
    if not 2 <= past <= 240:
        time.sleep((302 - past) % 300)
    status = zt("status", "--json")
    assert status.returncode == 2, status.stdout
    (schedule,) = json.loads(status.stdout)["schedules"]
    assert (schedule["name"], schedule["step"], schedule["health"]) == ("fively", "tick", "missed")
    assert schedule["last_started"] is None and schedule["tz"] == "UTC"
    due = datetime.fromisoformat(schedule["last_due"].replace("Z", "+00:00"))
    assert due.minute % 5 == 0 and due.second == 0
    nagios = zt("status", "--nagios")
    summary, detail = nagios.stdout.splitlines()[:2]
    assert nagios.returncode == 2
    assert summary.startswith("ZOMBIETOP CRITICAL - 1 schedule missed | ") and "missed=1" in summary
    assert detail.startswith("fively missed: ")
    (page,) = zt.watch()
    assert page.startswith("fively missed: no tick run started within 1s of ")
    seen = json.loads(zt("status", "--json").stdout)["schedules"][0]["first_seen"]
    assert abs(datetime.fromisoformat(seen.replace("Z", "+00:00")).timestamp() - an_hour_ago) < 1
    job = tmp_path / "tick"  # `zombietop run` names the step after the command
    job.write_text("#!/bin/sh\nexit 0\n")
    job.chmod(0o755)
    ran = zt("run", "--task", "tick-1", "--", str(job))
    assert ran.returncode == 0, ran.stderr
    status = zt("status", "--json")
    assert status.returncode == 0, status.stdout
    assert json.loads(status.stdout)["schedules"][0]["health"] == "ok"
    (clear,) = zt.watch()
    assert clear.startswith("schedule fively all clear: now ok (was missed for ")


WHOLE_SECOND = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


def test_times_a_person_reads_are_whole_seconds(tmp_path: Path) -> None:
    """``until 2026-12-01T21:23:51Z``, never ``...51.241879Z``; JSON keeps its precision."""
    stalled_store(tmp_path / "z.db", "export-1")
    zt = Zombietop(tmp_path)
    acked = zt("ack", "export-1", "--for", "1h")
    assert re.fullmatch(rf"export-1: acked by {ME} until {WHOLE_SECOND} \(1h00m\)\n", acked.stdout)
    made = zt("silence", "--task", "export-*", "--for", "1h", "--reason", "night")
    assert re.match(rf"silence 1 \(task export-\*\) by {ME}, ends {WHOLE_SECOND}: ", made.stdout)
    listed = zt("silences").stdout
    assert re.match(rf"silence 1 \(task export-\*\) by {ME}, ends {WHOLE_SECOND} \(in ", listed)
    (as_json,) = json.loads(zt("silences", "--json").stdout)
    assert as_json["until"].endswith("Z") and "." in as_json["until"]


def test_unack_of_no_ack_is_nothing_to_do(tmp_path: Path) -> None:
    """Exit 0, as the docs promise when there is nothing to do: the task has no ack, which is
    what was asked. An ack that already ran out is no ack either. A task that does not exist is
    an error (2)."""
    stalled_store(tmp_path / "z.db", "export-1", "lapsed-1")

    async def lapsed_ack() -> None:
        clock = FakeClock(time.time() - HOUR)
        async with await open_store(tmp_path / "z.db", clock=clock) as store:
            await store.ack_task("lapsed-1", by="ana", reason=None, duration=60)

    asyncio.run(lapsed_ack())
    zt = Zombietop(tmp_path)
    none = zt("unack", "export-1")
    assert (none.returncode, none.stdout, none.stderr) == (
        0,
        "export-1 has no ack: nothing to end\n",
        "",
    )
    lapsed = zt("unack", "lapsed-1")
    assert lapsed.returncode == 0, lapsed.stderr
    assert re.fullmatch(
        rf"lapsed-1 has no ack: the last one, by ana, ended at {WHOLE_SECOND}; nothing to end\n",
        lapsed.stdout,
    )
    missing = zt("unack", "nope-1")
    assert missing.returncode == 2 and "no task 'nope-1'" in missing.stderr


def finished_store(path: Path, task_id: str, state: TaskState) -> None:
    async def build() -> None:
        async with await open_store(path, create=True) as store:
            await store.create_task(
                task_id=task_id, run_id="r", step="export", step_type="export", actor="t"
            )
            lease = await store.acquire_lease(task_id, owner="w1@box", ttl=HOUR)
            await store.finish_task(
                task_id, owner="w1@box", token=lease.token, state=state, exit_code=1
            )

    asyncio.run(build())


def test_an_ack_of_a_finished_task_is_refused_and_says_why(tmp_path: Path) -> None:
    """A finished task that pages nobody: an ack of it would hold nothing now, and would only
    keep quiet a later run's incident. So it is refused (2), and no ack is kept. (A failed run
    pages: tests/tui/test_failed_run_ack.py.)"""
    finished_store(tmp_path / "z.db", "export-1", TaskState.SUCCEEDED)
    zt = Zombietop(tmp_path)
    done = zt("ack", "export-1", "--reason", "on it")
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        "zombietop: export-1 has finished (succeeded): it pages nobody, so there is nothing to "
        "ack; no ack was set\n"
    )
    status = json.loads(zt("status", "--json").stdout)
    assert status["tasks"][0]["ack"] is None


def test_a_silence_says_how_many_tasks_it_matches_now(tmp_path: Path) -> None:
    """A rule that matches nothing is allowed (it may be for the night's run), but is said."""
    stalled_store(tmp_path / "z.db", "export-1", "export-2", "load-1")
    finished_store(tmp_path / "z.db", "export-0", TaskState.SUCCEEDED)
    zt = Zombietop(tmp_path)
    for argv, matched in [
        (["--task", "export-*"], "it matches 2 tasks now"),
        (["--task", "load-*"], "it matches 1 task now"),
        (["--task", "nomatch*"], "it matches 0 tasks now, and will hold any that match later"),
        (["--step-type", "nosuch"], "it matches 0 tasks now, and will hold any that match later"),
        (["--host", "nosuch"], "it matches 0 tasks now, and will hold any that match later"),
    ]:
        made = zt("silence", *argv, "--for", "1h", "--reason", "night")
        assert made.returncode == 0, made.stderr
        line = made.stdout.rstrip("\n")
        assert line.count("\n") == 0 and line.endswith(f" (1h); {matched}"), line


def test_a_piped_status_prints_whole_rows(tmp_path: Path) -> None:
    """Cron mail and ``| less`` get FLAGS and ON-CALL, however wide the rows are."""
    task = "nightly-export-of-the-partner-orders-2031"
    stalled_store(tmp_path / "z.db", task)
    zt = Zombietop(tmp_path)
    assert zt("ack", task).returncode == 0
    env = {key: value for key, value in zt.env.items() if key not in ("COLUMNS", "LINES")}
    piped = subprocess.run(
        [*COMMAND, "status", "--db", str(zt.db), "--config", str(zt.config)],
        capture_output=True,  # stdout is a pipe, as in cron or `| less`
        text=True,
        env=env,
        timeout=60,
    )
    assert piped.returncode == 2, piped.stderr
    lines = piped.stdout.splitlines()
    header = next(line for line in lines if line.startswith("HEALTH"))
    row = next(line for line in lines if line.startswith(f"stalled  {task[:20]}"))
    assert header.endswith("FLAGS  ON-CALL") and len(header) > 100
    assert row.endswith(f"acked:{ME}") and task in row


def test_status_on_a_terminal_is_cut_to_its_width(tmp_path: Path) -> None:
    """On a terminal 60 columns wide the table's rows end at column 60, as they always did."""
    task = "nightly-export-of-the-partner-orders-2031"
    stalled_store(tmp_path / "z.db", task)
    zt = Zombietop(tmp_path)
    env = {key: value for key, value in zt.env.items() if key not in ("COLUMNS", "LINES")}
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    with subprocess.Popen(
        [*COMMAND, "status", "--db", str(zt.db), "--config", str(zt.config)],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env=env,
    ) as proc:
        os.close(slave)
        chunks = []
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert proc.wait(timeout=60) == 2
    os.close(master)
    lines = b"".join(chunks).decode().splitlines()
    header = next(line for line in lines if line.startswith("HEALTH"))
    row = next(line for line in lines if line.startswith(f"stalled  {task[:20]}"))
    assert len(header) <= 60 and "ON-CALL" not in header
    assert len(row) <= 60


def test_a_megabyte_task_id_is_still_paged_through_the_command(tmp_path: Path) -> None:
    """Issue N2 #13: the page line carried the whole id; in $ZOMBIETOP_PAGE it made the
    command fail with "Argument list too long" until the page was dropped. The id is cut in its
    middle; the verdict and the action stay."""
    task_id = "export-" + "x" * 1_000_000 + "-2031"
    stalled_store(tmp_path / "z.db", task_id)
    zt = Zombietop(tmp_path)
    (page,) = zt.watch()
    assert len(page) <= 1000
    assert page.startswith("export-xxx") and " characters cut...]" in page
    assert "xxx-2031 stalled: stage=transform p=61% heartbeat 1h00m old" in page
    assert page.endswith("- resume or discard")


def test_an_error_echoes_a_long_id_cut_short(tmp_path: Path) -> None:
    stalled_store(tmp_path / "z.db", "export-1")
    task_id = "nope-" + "y" * 100_000
    done = Zombietop(tmp_path)("ack", task_id)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert len(line) <= 2000
    assert line.startswith("zombietop: no task 'nope-yyy") and " characters cut...]" in line


def test_silences_are_capped_by_the_readers_own_max_silence(tmp_path: Path) -> None:
    """Issue N2 #10: a silence made under a config that allows 300 days held the pages of a
    watchdog whose config allows 7. Each reader caps it at its own max_silence and says so."""
    stalled_store(tmp_path / "z.db", "export-1")
    big = Zombietop(tmp_path, '[oncall]\nmax_silence = "300d"\n', name="big.toml")
    made = big("silence", "--task", "*", "--for", "300d", "--reason", "until further notice")
    assert made.returncode == 0, made.stderr
    assert big("silences").stdout.count("ends sooner") == 0
    small = Zombietop(tmp_path)  # the 7-day default
    listed = small("silences").stdout
    assert listed.startswith(f"silence 1 (task *) by {ME}, ends ")
    assert "(in 6d23h) (set to end " in listed
    assert (
        """; this reader's [oncall] max_silence = "7d" ends it sooner): until further""" in listed
    )
    (as_json,) = json.loads(small("silences", "--json").stdout)
    assert as_json["set_until"] is not None and as_json["until"] < as_json["set_until"]
    (big_json,) = json.loads(big("silences", "--json").stdout)
    assert big_json["set_until"] is None and big_json["until"] == as_json["set_until"]
    status = small("status").stdout
    assert """this reader's [oncall] max_silence = "7d" ends it sooner""" in status


def test_a_schedule_added_now_is_not_missed_for_fire_times_before_it(tmp_path: Path) -> None:
    """Issue N2 #17: a leap-day schedule added to the config today paged about 2024-02-29."""
    zt = Zombietop(tmp_path, '[schedules.leap]\nstep = "leap"\ncron = "0 0 29 2 *"\n')
    assert zt("init").returncode == 0
    status = zt("status", "--json")
    assert status.returncode == 0, status.stdout
    (schedule,) = json.loads(status.stdout)["schedules"]
    assert schedule["health"] == "ok", schedule["line"]
    assert schedule["last_due"].endswith("-02-29T00:00:00Z")  # a fire time it was not there for
    assert zt.watch() == []


def test_a_note_shows_in_status_json_and_rides_in_the_next_renotify(tmp_path: Path) -> None:
    stalled_store(tmp_path / "z.db", "export-1")
    zt = Zombietop(tmp_path, f'[watch]\nrenotify = "{RENOTIFY:g}s"\n')
    (first,) = zt.watch()
    assert "note by" not in first
    done = zt("note", "export-1", "waiting on\x1b[2J partner API")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"export-1: note by {ME}: waiting on\\x1b[2J partner API\n"
    missing = zt("note", "no-such-task", "hello")
    assert missing.returncode != 0 and "no-such-task" in missing.stderr
    age_the_pages(zt.db, RENOTIFY)
    (page,) = zt.watch()
    assert re.search(
        rf"- resume or discard; note by {ME} \d+s ago: waiting on\\x1b\[2J partner API "
        r"\(2nd notice, open ",
        page,
    ), page
    (task,) = json.loads(zt("status", "--json").stdout)["tasks"]
    (note,) = task["notes"]
    assert (note["by"], note["text"]) == (ME, "waiting on\\x1b[2J partner API")
    assert note["at"].endswith("Z")
