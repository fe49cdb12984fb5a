"""Every ``python`` and ``sh`` example of the documentation runs, as a reader would run it.

The pages are README.md, CONTRIBUTING.md, CHANGELOG.md and every page under docs/. Each example
runs in a fresh folder, as real processes, and must exit 0:

- with a home of its own: ``HOME`` and every ``XDG_*`` folder point into the test's temporary
  folder, so an example writes its store, its config and its keys there and never in the real
  home;
- with the loopback ports it names (``127.0.0.1:8099``, ``:9464``, ``6379``) replaced by ports
  found free at run time, so that examples can run side by side;
- in a session of its own: whatever it leaves running, in the background or in a process group
  of its own, is killed when it ends, and on a timeout the whole session is;
- with the PostgreSQL URL the pages use for a fleet's store (``PG_PLACEHOLDER``) replaced by
  a fresh database on the session's throwaway PostgreSQL (tests/pg_server.py), so that a fleet's
  example runs against a real server;
- skipped, with the reason, when it needs a program that is not installed (``redis-server``,
  ``promtool``, ``curl``...), unless the environment variable that requires that program
  (``ZOMBIETOP_REQUIRE_REDIS``...) is set, as CI sets it: there a missing program fails.

A task it leaves ``succeeded`` with a progress must read 100%: an example that beats before its
work would teach jobs that finish at 87.5%. An example that cannot run here (it installs
something, opens an interactive screen, needs another machine) says why on the line before its
fence, in a comment that the rendered page does not show:

    <!-- not run: needs a PostgreSQL server -->

The reasons are counted, and the suite prints ``examples: N of M run (P%)`` with them; under
80% run, it fails. The examples run in a pool of threads, a few at a time, since most of their
time is spent waiting on the processes they start.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from tests import docs_pages
from tests.pg_server import find_binaries
from zombietop.model import TaskRecord, TaskState
from zombietop.store import open_store

LANGUAGES = ("python", "sh")
FENCE = re.compile(r"```(?P<lang>[\w+-]*)\s*\Z")
NOT_RUN = re.compile(r"<!-- not run: (?P<why>.*\S) -->\Z")
TIMEOUT = 90.0
AT_LEAST = 0.8
WORKERS = 4
# The loopback ports the examples name; each is replaced by a free one at run time.
PG_PLACEHOLDER = "postgresql://zombietop:secret@db.internal:5432/zombietop"
"""The fleet's store in the pages' examples; each run gets a database of its own instead."""
PORTS = re.compile(r"(?:(?<=:)|(?<=--port )|(?<=--metrics )|(?<=-p ))(8099|9464|6379)(?!\d)")
# The programs an example may need beyond zombietop and a POSIX shell, and the variable that,
# when set, makes a missing one fail the example instead of skipping it.
PROGRAMS = {
    "redis-server": "ZOMBIETOP_REQUIRE_REDIS",
    "redis-cli": "ZOMBIETOP_REQUIRE_REDIS",
    "promtool": "ZOMBIETOP_REQUIRE_PROMETHEUS",
    "curl": "ZOMBIETOP_REQUIRE_EXAMPLE_TOOLS",
    "openssl": "ZOMBIETOP_REQUIRE_EXAMPLE_TOOLS",
    "sqlite3": "ZOMBIETOP_REQUIRE_EXAMPLE_TOOLS",
    "perl": "ZOMBIETOP_REQUIRE_EXAMPLE_TOOLS",
}
# Set in each example's environment, so that a process it started is found even when it left
# the example's session (a daemon's double fork, `setsid`).
MARK = "ZT_DOCS_EXAMPLE"


@dataclass(frozen=True, slots=True, kw_only=True)
class Example:
    """One fenced example of one page."""

    page: str
    """The page's path in the repository."""
    line: int
    """The line of its opening fence."""
    lang: str
    code: str
    section: str
    marker: str | None
    """The line before the fence, when it is an HTML comment."""

    @property
    def key(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def name(self) -> str:
        first = next((line.strip() for line in self.code.splitlines() if line.strip()), "")
        return f"{self.page} line {self.line} ({self.section}): the {self.lang} example {first!r}"

    @property
    def why_not(self) -> str | None:
        """The reason it is not run, or None when it runs."""
        found = NOT_RUN.match(self.marker) if self.marker is not None else None
        return found["why"] if found is not None else None


def read_examples(text: str, page: str) -> list[Example]:
    """Return the page's fenced python and sh examples, in order."""
    found: list[Example] = []
    lines = text.splitlines()
    section = "the top"
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            section = line.lstrip("#").strip()
        opening = FENCE.match(line)
        if opening is None:
            i += 1
            continue
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), None)
        assert end is not None, f"{page} line {i + 1}: a fence that is never closed"
        before = lines[i - 1].strip() if i > 0 else ""
        if opening["lang"] in LANGUAGES:
            found.append(
                Example(
                    page=page,
                    line=i + 1,
                    lang=opening["lang"],
                    code="\n".join(lines[i + 1 : end]) + "\n",
                    section=section,
                    marker=before if before.startswith("<!--") else None,
                )
            )
        i = end + 1
    return found


def all_examples() -> list[Example]:
    """Every example of every page of the documentation."""
    return [
        example
        for page in docs_pages.pages()
        for example in read_examples(
            page.read_text(encoding="utf-8"), str(page.relative_to(docs_pages.REPO))
        )
    ]


EXAMPLES = all_examples()
RUNNABLE = [example for example in EXAMPLES if example.why_not is None]


def summary() -> str:
    """``examples: N of M run (P%)``, then each reason for not running one, with its count."""
    reasons = Counter(example.why_not for example in EXAMPLES if example.why_not is not None)
    share = 100 * len(RUNNABLE) / len(EXAMPLES)
    lines = [f"examples: {len(RUNNABLE)} of {len(EXAMPLES)} run ({share:.0f}%)"]
    lines += [f"  not run, {count}: {why}" for why, count in reasons.most_common()]
    return "\n".join(lines)


def test_at_least_80_percent_of_the_examples_run() -> None:
    assert {example.lang for example in RUNNABLE} == set(LANGUAGES), [e.name for e in RUNNABLE]
    assert len(RUNNABLE) >= AT_LEAST * len(EXAMPLES), summary()


def test_the_examples_are_read_from_every_kind_of_page() -> None:
    pages = {example.page.split("/")[0] for example in EXAMPLES}
    assert {"README.md", "CONTRIBUTING.md", "docs"} <= pages, pages


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.key for e in EXAMPLES])
def test_a_comment_before_an_example_is_a_well_formed_marker(example: Example) -> None:
    if example.marker is not None and example.marker.startswith("<!-- not run"):
        assert example.why_not is not None, (
            f"{example.name} has {example.marker!r} before it; an example that cannot run is "
            "marked with <!-- not run: WHY --> on the line before its fence"
        )


def free_port() -> int:
    """A loopback TCP port nobody listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def with_free_ports(code: str) -> str:
    """The code with each loopback port it names replaced by a free one (the same each time)."""
    chosen: dict[str, str] = {}
    return PORTS.sub(lambda m: chosen.setdefault(m[0], str(free_port())), code)


def missing_program(code: str) -> tuple[str, str] | None:
    """The first program the code runs that is not installed, and its requiring variable."""
    if PG_PLACEHOLDER in code and not os.environ.get("ZOMBIETOP_TEST_PG") and not find_binaries():
        return "PostgreSQL", "ZOMBIETOP_REQUIRE_PG"
    for program, require in PROGRAMS.items():
        if re.search(rf"(?<![\w/.-]){re.escape(program)}(?![\w-])", code) and not shutil.which(
            program
        ):
            return program, require
    return None


def reader_env(home: Path) -> dict[str, str]:
    """A reader's shell: zombietop on PATH, a home and state of its own, no lease of ours."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ZOMBIETOP_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["HOME"] = str(home)
    for key, folder in [
        ("XDG_STATE_HOME", ".local/state"),
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_RUNTIME_DIR", "run"),
    ]:
        (home / folder).mkdir(parents=True, exist_ok=True, mode=0o700)
        env[key] = str(home / folder)
    env[MARK] = str(home)
    return env


def _left_behind(session: int, home: str) -> list[psutil.Process]:
    """The processes of the example's session, and those that carry its mark elsewhere."""
    found = []
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == session or proc.environ().get(MARK) == home:
                found.append(proc)
        except (psutil.Error, ProcessLookupError, PermissionError):
            continue
    return found


def end_everything(session: int, home: str) -> None:
    """Kill whatever the example left running, in its session or not."""
    procs = _left_behind(session, home)
    for proc in procs:
        try:
            proc.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(procs, timeout=10)


@dataclass(frozen=True, slots=True)
class Ran:
    """How one example ended: its exit status (None after a timeout), what it said, and the
    succeeded tasks it left short of 100%."""

    returncode: int | None
    stdout: str
    stderr: str
    short: list[str]


def run_example(example: Example, folder: Path, database: str | None = None) -> Ran:
    """Run one example in ``folder``, as a reader would (on ``database`` where it names the
    fleet's PostgreSQL store), and end whatever it leaves running."""
    work = folder / "work"
    work.mkdir(parents=True)
    env = reader_env(folder / "home")
    code = with_free_ports(example.code)
    if database is not None:
        code = code.replace(PG_PLACEHOLDER, database)
    if example.lang == "python":
        script = work / "example.py"
        script.write_text(code)
        argv = [sys.executable, str(script)]
    else:
        argv = ["sh", "-e", "-c", code]
    proc = subprocess.Popen(
        argv,
        cwd=work,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
        returncode: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        returncode = None
    finally:
        end_everything(proc.pid, env[MARK])
    return Ran(returncode, out, err, short_of_100(Path(env["XDG_STATE_HOME"])))


def short_of_100(state: Path) -> list[str]:
    """The succeeded tasks of the example's store whose progress is not 100%."""
    db = state / "zombietop" / "zombietop.db"
    if not db.exists():
        return []

    async def read() -> list[TaskRecord]:
        async with await open_store(db) as store:
            return await store.poll(None)

    return [
        f"{record.task.task_id} at {record.heartbeat.progress:g}%"
        for record in asyncio.run(read())
        if record.task.state is TaskState.SUCCEEDED
        and record.heartbeat is not None
        and record.heartbeat.progress not in (None, 100)
    ]


def database_for(example: Example, request: pytest.FixtureRequest) -> str | None:
    """A fresh store on the throwaway PostgreSQL for an example that names the fleet's store
    (the ``postgres`` fixture skips, or fails under ZOMBIETOP_REQUIRE_PG, without a server)."""
    if PG_PLACEHOLDER not in example.code:
        return None
    server: Any = request.getfixturevalue("postgres")  # tests/conftest.py's PostgresForTests
    url: str = server.create_database(empty=True)
    return url


@pytest.fixture(scope="session")
def example_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, concurrent.futures.Future[Ran]]]:
    """Start every selected example at once, a few at a time, in a pool of threads."""
    chosen = [
        item.callspec.params["example"]
        for item in request.session.items
        if item.originalname == "test_an_example_runs" and hasattr(item, "callspec")
    ]
    with concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="example") as pool:
        started = {
            example.key: pool.submit(
                run_example,
                example,
                tmp_path_factory.mktemp("example", numbered=True),
                database_for(example, request),
            )
            for example in chosen
            if missing_program(example.code) is None
        }
        yield started
        for future in started.values():
            future.cancel()


@pytest.mark.parametrize("example", RUNNABLE, ids=[e.key for e in RUNNABLE])
def test_an_example_runs(
    example: Example, example_runs: dict[str, concurrent.futures.Future[Ran]]
) -> None:
    missing = missing_program(example.code)
    if missing is not None:
        program, require = missing
        if os.environ.get(require):
            pytest.fail(
                f"{example.name} needs {program}, which is not installed ({require} is set)"
            )
        pytest.skip(f"{example.name} needs {program}, which is not installed")
    ran = example_runs[example.key].result()
    assert ran.returncode is not None, (
        f"{example.name} did not end within {TIMEOUT:g} s; it said:\n{ran.stderr[-3000:]}"
    )
    assert ran.returncode == 0, (
        f"{example.name} exited {ran.returncode}; it said:\n{ran.stdout[-2000:]}\n"
        f"{ran.stderr[-3000:]}\n(if it cannot run here, put <!-- not run: WHY --> on the line "
        "before its fence)"
    )
    assert not ran.short, (
        f"{example.name} leaves {', '.join(ran.short)} succeeded: beat after each piece of work, "
        "so that a finished job reads 100%"
    )
