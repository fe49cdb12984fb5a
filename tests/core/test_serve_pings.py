"""``zombietop serve``: a real server on loopback, pinged by real ``curl``, into a real store."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import shutil
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests import docs_pages
from tests.core.test_watchdog import config, watchdog
from zombietop.clock import FakeClock
from zombietop.config import ServeSettings, load_config, parse_listen
from zombietop.errors import ConfigError, ZombietopError
from zombietop.model import TaskState
from zombietop.output import read_last_output
from zombietop.serve.keys import PingKeys, load_keys, load_wall_tokens
from zombietop.serve.pings import PingBook
from zombietop.serve.server import PingServer, check_listen, check_wall
from zombietop.store import Store

pytestmark = pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")

KEY = "k3y-0f-the-cr0n-b0x-1234"
SERVE = ServeSettings(read_timeout=1.0, max_connections=8)


@dataclass
class Served:
    server: PingServer
    store: Store
    clock: FakeClock
    db: Path

    def url(self, path: str, key: str = KEY) -> str:
        return f"http://{self.server.address}/ping/{key}/{path}"

    async def runs(self, job: str) -> list[tuple[str, TaskState]]:
        return [(t.task_id, t.state) for t in await self.store.job_runs(job, 100)]


@pytest.fixture
async def served(fake_store: Store, fake_clock: FakeClock, db: Path) -> AsyncIterator[Served]:
    cfg = replace(config(), serve=SERVE)
    book = PingBook(fake_store, cfg, host="cron-1")
    server = await PingServer.start(
        book, PingKeys([KEY]), parse_listen("127.0.0.1:0"), SERVE, clock=fake_clock.now
    )
    yield Served(server, fake_store, fake_clock, db)
    await server.close()


async def curl(url: str, *args: str) -> tuple[int, str]:
    """Ask with the real curl, as a crontab does; return the status and the answer."""
    proc = await asyncio.create_subprocess_exec(
        "curl", "-sS", "-m", "20", "-w", "\n%{http_code}", *args, url,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await proc.communicate()
    body, _, code = out.decode().rpartition("\n")
    return int(code), body


async def test_status_json_shows_each_jobs_last_ping(served: Served) -> None:
    assert (await curl(served.url("nightly/start?create=1")))[0] == 200
    assert (await curl(served.url("weekly/start?create=1")))[0] == 200
    assert (await curl(served.url("nightly/2")))[0] == 200
    command = Path(sys.executable).with_name("zombietop")
    proc = await asyncio.create_subprocess_exec(
        str(command), "--db", str(served.db), "status", "--json",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await proc.communicate()
    pings = {ping["job"]: ping for ping in json.loads(out)["pings"]}
    assert {job: (p["ping"], p["via"]) for job, p in pings.items()} == {
        "nightly": ("/2", "http"),
        "weekly": ("start", "http"),
    }
    assert pings["nightly"]["task_id"].startswith("nightly/")
    events = await served.store.events(kind="ping")
    assert all(KEY not in event.message and KEY not in str(event.data) for event in events)


async def test_start_beat_success(served: Served, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "zombietop.serve")
    code, answer = await curl(served.url("nightly/start?create=1"))
    assert code == 200, answer
    [(task_id, state)] = await served.runs("nightly")
    assert state is TaskState.STARTING
    lease = await served.store.get_lease(task_id)
    assert lease is not None and lease.over_http and lease.owner is not None
    assert lease.expires_at is not None
    assert lease.expires_at - served.clock.now() == pytest.approx(config().defaults.lease_ttl)
    assert (await curl(served.url("nightly/beat?stage=copy&p=40&eta=12m")))[0] == 200
    record = await served.store.get_record(task_id)
    assert record.heartbeat is not None
    assert (record.heartbeat.stage, record.heartbeat.progress) == ("copy", 40.0)
    code, _ = await curl(served.url("nightly/beat"), "--data-binary", "stage=load p=90")
    assert code == 200
    record = await served.store.get_record(task_id)
    assert record.heartbeat is not None and record.heartbeat.progress == 90.0
    code, _ = await curl(served.url("nightly"), "-I")  # HEAD, as some monitors send
    assert code == 200
    assert await served.runs("nightly") == [(task_id, TaskState.SUCCEEDED)]
    logged = [record.getMessage() for record in caplog.records]
    assert "ping start of nightly" in logged  # the job, never the URL: it holds the key
    assert not any(KEY in line for line in logged)


async def test_a_failure_keeps_the_end_of_its_body(served: Served, tmp_path: Path) -> None:
    assert (await curl(served.url("export/start?create=1")))[0] == 200
    body = "".join(f"line {n}\n" for n in range(30_000)) + "\x1b[2Jthe real error at the end"
    assert len(body) > SERVE.body_limit
    (tmp_path / "out").write_text(body)
    code, _ = await curl(served.url("export/fail"), "--data-binary", f"@{tmp_path / 'out'}")
    assert code == 200
    [(task_id, state)] = await served.runs("export")
    assert state is TaskState.FAILED
    task = await served.store.get_task(task_id)
    kept = read_last_output(served.db, task_id, task.attempt)
    assert kept is not None
    assert kept.line.endswith("the real error at the end")
    assert "line 29999" in kept.lines[-2]
    assert "line 0\n" not in "\n".join(kept.lines)  # the start went, the end stayed
    assert os.stat(next(served.db.parent.glob("*.d/output/*.out"))).st_size <= SERVE.body_limit


async def _zombietop(db: Path, *args: str) -> tuple[int, str]:
    command = Path(sys.executable).with_name("zombietop")
    proc = await asyncio.create_subprocess_exec(
        str(command), "--db", str(db), *args, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode()


async def test_the_body_of_a_failure_is_its_last_output_everywhere(served: Served) -> None:
    """The reported fault: the body of ``/fail`` was kept but never read, so the page, ``status``
    and ``history`` showed no last output."""
    code, _ = await curl(
        served.url("report/fail?create=1"), "--data-binary", "step 1 ok\nFATAL: disk full"
    )
    assert code == 200
    # A log and then an exit status: the log's body is what the run last said.
    assert (await curl(served.url("backup/start?create=1")))[0] == 200
    assert (await curl(served.url("backup/log"), "--data-binary", "copied 12 files"))[0] == 200
    assert (await curl(served.url("backup/3")))[0] == 200

    dog, notifier, _ = watchdog(served.store, served.clock)
    await dog.tick()
    lines = {page.task_id.split("/")[0]: page.line for page in notifier.pages}
    assert lines["report"].endswith(
        "last output 0s ago: FATAL: disk full - rerun, resume or discard"
    )
    assert "last output 0s ago: copied 12 files" in lines["backup"]

    code, out = await _zombietop(served.db, "status")
    assert code == 2 and "FATAL: disk full" in out and "copied 12 files" in out
    code, out = await _zombietop(served.db, "status", "--json")
    shown = {
        task["task_id"].split("/")[0]: task["last_output"] for task in json.loads(out)["tasks"]
    }
    assert shown["report"]["line"] == "FATAL: disk full"
    assert shown["backup"]["line"] == "copied 12 files"
    code, out = await _zombietop(served.db, "history", "report")
    assert code == 0 and "last output: FATAL: disk full" in out


async def test_the_docs_crontab_line_records_a_job_never_seen(
    served: Served, tmp_path: Path
) -> None:
    """The crontab line of docs/howto/cron-and-pings.md, as written but for the server, the key,
    the script and the log's path: it recorded nothing for a new job (404 without
    ``?create=1``)."""
    line = docs_pages.line("0 3 * * * curl ").removeprefix("0 3 * * * ")
    script = tmp_path / "export.sh"
    script.write_text("#!/bin/sh\necho 'step 1 ok'\necho 'FATAL: disk full' >&2\nexit 3\n")
    script.chmod(0o755)
    base = served.url("").removesuffix("/")
    line = line.replace("http://zt:8099/ping/KEY", base)
    line = line.replace("/usr/local/bin/export.sh", str(script))
    line = line.replace("/tmp/export.log", str(tmp_path / "export.log"))
    proc = await asyncio.create_subprocess_exec("sh", "-c", line)
    assert await proc.wait() == 0
    [(task_id, state)] = await served.runs("nightly-export")
    assert state is TaskState.FAILED
    task = await served.store.get_task(task_id)
    assert task.exit_code == 3
    kept = read_last_output(served.db, task_id, task.attempt)
    assert kept is not None and kept.line == "FATAL: disk full"


async def test_the_docs_ping_key_commands_make_a_private_key_file(tmp_path: Path) -> None:
    """The two lines of docs/howto/cron-and-pings.md that make the ping keys' file."""
    keys = docs_pages.line('keys="${XDG_CONFIG_HOME:-$HOME/.config}/zombietop/ping-keys"')
    make = docs_pages.line('mkdir -p "$(dirname "$keys")" && ')
    env = {key: value for key, value in os.environ.items() if key != "XDG_CONFIG_HOME"}
    env["HOME"] = str(tmp_path)
    proc = await asyncio.create_subprocess_exec("sh", "-c", f"{keys}\n{make}", env=env)
    assert await proc.wait() == 0
    path = tmp_path / ".config" / "zombietop" / "ping-keys"
    assert path.stat().st_mode & 0o777 == 0o600
    assert len(load_keys(path, environ={})) == 1


async def test_an_exit_status_ends_the_run(served: Served) -> None:
    assert (await curl(served.url("backup/start?create=1")))[0] == 200
    assert (await curl(served.url("backup/0")))[0] == 200
    assert (await curl(served.url("backup/start")))[0] == 200
    assert (await curl(served.url("backup/3")))[0] == 200
    assert (await curl(served.url("backup/256")))[0] == 404
    runs = await served.runs("backup")
    assert [state for _, state in runs] == [TaskState.FAILED, TaskState.SUCCEEDED]
    failed = await served.store.get_task(runs[0][0])
    assert failed.exit_code == 3


async def test_overlapping_runs_are_paired_by_rid(served: Served) -> None:
    a, b = "7b3b1a7e-0e4c-4a52-9d1e-1f0f35c0aa01", "7b3b1a7e-0e4c-4a52-9d1e-1f0f35c0aa02"
    assert (await curl(served.url(f"sync/start?create=1&rid={a}")))[0] == 200
    assert (await curl(served.url(f"sync/start?rid={b}")))[0] == 200
    assert (await curl(served.url(f"sync/fail?rid={b}")))[0] == 200
    assert (await curl(served.url(f"sync?rid={a}")))[0] == 200
    assert sorted(await served.runs("sync")) == [
        (f"sync/{a}", TaskState.SUCCEEDED),
        (f"sync/{b}", TaskState.FAILED),
    ]
    assert (await curl(served.url("sync?rid=../../etc")))[0] == 400


async def test_a_stalled_http_run_is_paged(served: Served) -> None:
    assert (await curl(served.url("etl/beat?create=1&stage=copy&p=10")))[0] == 200
    [(task_id, _)] = await served.runs("etl")
    dog, notifier, _ = watchdog(served.store, served.clock)
    for _ in range(60):
        await dog.tick()
        if notifier.pages:
            break
        served.clock.advance(30)
    [page] = [p for p in notifier.pages if p.kind == "incident"]
    assert page.task_id == task_id
    assert "reported over HTTP" in page.line


async def test_a_wrong_key_and_an_unknown_job_look_the_same(served: Served) -> None:
    wrong = await curl(served.url("nightly/start?create=1", key="not-the-key-at-all-0000"))
    unknown = await curl(served.url("never-ran/start"))
    assert wrong == unknown == (404, "not found\n")
    assert await served.runs("nightly") == [] and await served.runs("never-ran") == []


async def test_a_huge_body_is_refused_and_changes_nothing(served: Served, tmp_path: Path) -> None:
    assert (await curl(served.url("big/start?create=1")))[0] == 200
    huge = tmp_path / "huge"
    huge.write_bytes(b"x" * (10 * 1024 * 1024))
    code, _ = await curl(served.url("big/fail"), "--data-binary", f"@{huge}")
    assert code == 413
    [(_, state)] = await served.runs("big")
    assert state is TaskState.STARTING
    assert (await curl(served.url("big")))[0] == 200


async def test_a_slowloris_client_holds_nothing_up(served: Served) -> None:
    slow = [await asyncio.open_connection(*_host_port(served)) for _ in range(12)]
    for _, writer in slow:
        writer.write(b"GET /ping/")  # and never the rest
        await writer.drain()
    assert (await curl(served.url("quick/start?create=1")))[0] == 200
    for reader, writer in slow:
        assert await asyncio.wait_for(reader.read(), 5) == b""  # cut off, not answered
        writer.close()
    assert served.server.server.open == 0
    assert [state for _, state in await served.runs("quick")] == [TaskState.STARTING]


async def test_a_thousand_pings_in_a_minute_are_limited(served: Served) -> None:
    assert (await curl(served.url("noisy/start?create=1")))[0] == 200
    proc = await asyncio.create_subprocess_exec(
        "curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}\n",
        served.url("noisy/log?n=[1-1000]"), stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, _ = await proc.communicate()
    codes = out.decode().split()
    assert len(codes) == 1000
    assert codes.count("200") == 9 and codes.count("429") == 991
    assert (await curl(served.url("other/start?create=1")))[0] == 200  # another job: served
    assert (await curl(served.url("noisy")))[0] == 429
    served.clock.advance(61)
    assert (await curl(served.url("noisy")))[0] == 200
    assert [state for _, state in await served.runs("noisy")] == [TaskState.SUCCEEDED]


async def test_metrics_on_the_same_port(fake_store: Store, fake_clock: FakeClock) -> None:
    cfg = replace(config(), serve=SERVE)
    server = await PingServer.start(
        PingBook(fake_store, cfg, host="cron-1"),
        PingKeys([KEY]),
        parse_listen("127.0.0.1:0"),
        SERVE,
        clock=fake_clock.now,
        metrics=True,
    )
    try:
        base = f"http://{server.address}"
        assert (await curl(f"{base}/ping/{KEY}/m/start?create=1"))[0] == 200
        assert (await curl(f"{base}/ping/wrong-key-wrong-key-00/m"))[0] == 404
        code, page = await curl(f"{base}/metrics")
    finally:
        await server.close()
    assert code == 200
    assert 'zombietop_serve_pings_total{ping="start"} 1.0' in page
    assert 'zombietop_serve_answers_total{status="404"} 1.0' in page
    assert 'zombietop_serve_answers_total{status="200"} 1.0' in page
    assert "zombietop_serve_open_connections 1.0" in page  # the scrape itself
    assert KEY not in page and "m/" not in page


def _host_port(served: Served) -> tuple[str, int]:
    return served.server.address.host, served.server.address.port


def test_keys_are_read_only_from_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(f"# the cron boxes\n{KEY}\n")
    path.chmod(0o644)
    with pytest.raises(ZombietopError, match="chmod 600"):
        load_keys(path, environ={})
    path.chmod(0o600)
    keys = load_keys(path, environ={"ZOMBIETOP_PING_KEY": "an0ther-key-0f-16-chars"})
    assert len(keys) == 2 and keys.match(KEY) and not keys.match(KEY[:-1])
    with pytest.raises(ZombietopError, match="at least 16"):
        load_keys(None, environ={"ZOMBIETOP_PING_KEY": "short"})


def test_only_loopback_is_served_without_a_key() -> None:
    check_listen(parse_listen("127.0.0.1:8099"), PingKeys([]))
    check_listen(parse_listen("[::1]:8099"), PingKeys([]))
    with pytest.raises(ZombietopError, match="without a ping key"):
        check_listen(parse_listen("0.0.0.0:8099"), PingKeys([]))
    check_listen(parse_listen("0.0.0.0:8099"), PingKeys([KEY]))


def test_serve_settings_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[serve]\nlisten = "0.0.0.0:9000"\nbody_limit = 2048\nread_timeout = "5s"\n')
    serve = load_config(path).serve
    assert (str(serve.listen), serve.body_limit, serve.read_timeout) == ("0.0.0.0:9000", 2048, 5)
    path.write_text("[serve]\nbody_limt = 2048\n")
    with pytest.raises(ConfigError, match="did you mean 'body_limit'"):
        load_config(path)
    path.write_text("[serve]\nrate_limit = 0\n")
    with pytest.raises(ConfigError, match="rate_limit must be a whole number"):
        load_config(path)


def test_wall_tokens_are_read_only_from_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "wall-tokens"
    path.write_text("# the ops room\nwall-0123456789abcdef\n")
    path.chmod(0o640)
    with pytest.raises(ZombietopError, match=r"\[serve\] wall_token_file .*chmod 600"):
        load_wall_tokens(path, environ={})
    path.chmod(0o600)
    tokens = load_wall_tokens(path, environ={"ZOMBIETOP_WALL_TOKEN": "another-wall-token-16"})
    assert len(tokens) == 2 and tokens.match("wall-0123456789abcdef")
    assert not tokens.match(KEY), "a ping key is no wall token"
    # A token goes unquoted into a URL and a cookie: nothing that would end either.
    for bad in ("short", "wall-token-0123456789;x=1", "wall token 0123456789"):
        with pytest.raises(ZombietopError, match="a wall token must be"):
            load_wall_tokens(None, environ={"ZOMBIETOP_WALL_TOKEN": bad})


def test_only_loopback_shows_the_wall_without_a_token() -> None:
    check_wall(parse_listen("127.0.0.1:8099"), PingKeys([]))
    with pytest.raises(ZombietopError, match="without a token"):
        check_wall(parse_listen("0.0.0.0:8099"), PingKeys([]))
    check_wall(parse_listen("0.0.0.0:8099"), PingKeys(["wall-0123456789abcdef"]))


def test_wall_settings_are_checked(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[serve]\nwall = true\nwall_token_file = "~/wall"\nwall_viewers = 3\n')
    serve = load_config(path).serve
    assert (serve.wall, serve.wall_token_file, serve.wall_viewers) == (
        True,
        Path("~/wall").expanduser(),
        3,
    )
    assert not load_config(None).serve.wall
    for text, error in [
        ('wall = "yes"', "wall must be true or false"),
        ("wall_viewers = 0", "wall_viewers must be a whole number from 1 to 64"),
        ("wall_token_file = 7", "wall_token_file must be the path of a file of wall tokens"),
    ]:
        path.write_text(f"[serve]\n{text}\n")
        with pytest.raises(ConfigError, match=error):
            load_config(path)
