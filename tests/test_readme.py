"""Every ``python`` and ``sh`` example in README.md runs, as a reader would run it.

Each example runs in a fresh folder with a store of its own (the default one, under a temporary
``XDG_STATE_HOME``), as real processes, and must exit 0. A task it leaves ``succeeded`` with a
progress must read 100%: an example that beats before its work would teach jobs that finish at
87.5%. An example that is only an illustration (it installs something, needs a server, or
serves until stopped) says so on the line before its fence, in a comment that a reader of the
rendered page does not see:

    <!-- not run: needs a PostgreSQL server -->

The README is read when the tests are collected, so an example that anyone adds or changes is
tested as it stands then, and a failure names its line, its section and how it begins.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from zombietop.model import TaskRecord, TaskState
from zombietop.store import open_store

README = Path(__file__).resolve().parents[1] / "README.md"
LANGUAGES = ("python", "sh")
FENCE = re.compile(r"```(?P<lang>[\w+-]*)\s*\Z")
NOT_RUN = re.compile(r"<!-- not run: (?P<why>.*\S) -->\Z")
TIMEOUT = 60.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Example:
    """One fenced example of README.md."""

    line: int
    """The line of its opening fence."""
    lang: str
    code: str
    section: str
    marker: str | None
    """The line before the fence, when it is an HTML comment."""

    @property
    def name(self) -> str:
        first = next((line.strip() for line in self.code.splitlines() if line.strip()), "")
        return f"README.md line {self.line} ({self.section}): the {self.lang} example {first!r}"

    @property
    def runs(self) -> bool:
        return self.marker is None or NOT_RUN.match(self.marker) is None


def read_examples(text: str) -> list[Example]:
    """Return the README's fenced python and sh examples, in order."""
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
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), len(lines))
        before = lines[i - 1].strip() if i > 0 else ""
        if opening["lang"] in LANGUAGES:
            found.append(
                Example(
                    line=i + 1,
                    lang=opening["lang"],
                    code="\n".join(lines[i + 1 : end]) + "\n",
                    section=section,
                    marker=before if before.startswith("<!--") else None,
                )
            )
        i = end + 1
    return found


EXAMPLES = read_examples(README.read_text(encoding="utf-8"))
RUNNABLE = [example for example in EXAMPLES if example.runs]


def test_the_readme_has_examples_that_run() -> None:
    assert {example.lang for example in RUNNABLE} == set(LANGUAGES), [e.name for e in RUNNABLE]


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"line{e.line}" for e in EXAMPLES])
def test_a_comment_before_an_example_is_a_well_formed_marker(example: Example) -> None:
    if example.marker is not None and example.marker.startswith("<!-- not run"):
        assert not example.runs, (
            f"{example.name} has {example.marker!r} before it; an illustration is marked "
            "with <!-- not run: WHY --> on the line before its fence"
        )


def _env(tmp_path: Path) -> dict[str, str]:
    """A reader's shell: zombietop on PATH, state and config of its own, no lease of ours."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("ZOMBIETOP_")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    return env


def _short_of_100(env: dict[str, str]) -> list[str]:
    """The succeeded tasks of the example's store whose progress is not 100%."""
    db = Path(env["XDG_STATE_HOME"]) / "zombietop" / "zombietop.db"
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


@pytest.mark.parametrize("example", RUNNABLE, ids=[f"line{e.line}-{e.lang}" for e in RUNNABLE])
def test_a_readme_example_runs(example: Example, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    env = _env(tmp_path)
    if example.lang == "python":
        script = work / "example.py"
        script.write_text(example.code)
        argv = [sys.executable, str(script)]
    else:
        argv = ["sh", "-e", "-c", example.code]
    try:
        ran = subprocess.run(
            argv, cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{example.name} did not end within {TIMEOUT:g} s")
    assert ran.returncode == 0, (
        f"{example.name} exited {ran.returncode}; it said:\n{ran.stderr[-3000:]}"
        "\n(if it is only an illustration, put <!-- not run: WHY --> on the line before its fence)"
    )
    short = _short_of_100(env)
    assert not short, (
        f"{example.name} leaves {', '.join(short)} succeeded: beat after each piece of work, "
        "so that a finished job reads 100%"
    )
