"""Heartbeat lines that a command under ``zombietop run`` prints instead of writing to its file.

The first thing a job author tries is ``echo "stage=copy p=5"``, and the line goes to stdout.
``zombietop run`` does not read heartbeats there, on purpose: a job's stdout is its own. It
may be data that a pipe carries on (``zombietop run -- pg_dump db > dump.sql``), logs that
cron mails, or ``key=value`` lines that a logfmt logger writes all day; read as beats, any of
them would move a task's progress, and taking the beats out would change the output. A
heartbeat needs a channel of its own, the heartbeat file, and the file wins without a doubt.

So the output passes through unchanged, and the wrapper says once, on stderr, how to send the
beats, when the command printed a heartbeat line and no line reached the heartbeat file: the
first try does not lose progress without a word.
"""

from __future__ import annotations

import math
import re
import shlex
import threading
import time

from zombietop.errors import HeartbeatParseError
from zombietop.heartbeat_line import MAX_LINE, format_line, parse_line

STARTS = (b"stage=", b"p=")
"""How a line the job meant as a heartbeat begins (the README's examples): only such lines are
parsed."""
_LINE_START = re.compile(rb"\n(?:stage|p)=")
"""Where such a line begins inside a chunk. Output with no ``=`` at all (the common case) costs
one memchr per chunk; the rest, one pass of this pattern (bench/passthrough.py measures both)."""
FLOOD = 1 << 15
"""A read this long (the wrapper reads up to 64 KiB at a time) means that the command writes
faster than the wrapper copies."""
FLOOD_LOOK_EVERY = 0.1
"""Seconds between the reads that are looked at during a flood: a job that prints its beats
prints many, so one of them is found, and a flood of ``key=value`` lines costs no more than
ten looks a second. Quiet output (the first try: a line, then a sleep) is looked at whole."""
MAX_TRIES = 100
"""Lines that begin so but are no heartbeat line (a log's own ``p=``): after this many, stop."""
SHOWN = 100
"""Characters of the printed line that the hint repeats."""


class StrayBeats:
    """Notice a heartbeat line in a command's output, and give the hint about it once.

    Fed from the threads that copy the command's stdout and stderr, after each copy; it looks
    no further once it found one, once the heartbeat file is in use, or after ``MAX_TRIES``.
    """

    def __init__(self) -> None:
        self.first: str | None = None
        """A heartbeat line from the output, the one the hint quotes (parsed, so it holds no
        control characters)."""
        self.first_at = math.inf
        """When ``first`` was seen (monotonic)."""
        self.done = False
        self._tries = 0
        self._said = False
        self._next_flood_look = 0.0
        self._lock = threading.Lock()

    def hint_due(self, *, file_used: bool, seen_by: float) -> str | None:
        """Return the hint once: a heartbeat line was printed by ``seen_by`` (monotonic; the
        heartbeat file was read since) and no line reached the file. None otherwise."""
        if file_used:
            self.done = True  # the job beats through the file: its output is its own
            return None
        if self._said or self.first is None or self.first_at > seen_by:
            return None
        self._said = self.done = True
        return hint(self.first)

    def feed(self, data: bytes, *, at_line_start: bool) -> None:
        """Look at one chunk of output; ``at_line_start`` says the previous one ended a line."""
        if self.done or b"=" not in data:
            return
        if len(data) >= FLOOD:
            now = time.monotonic()
            if now < self._next_flood_look:
                return
            self._next_flood_look = now + FLOOD_LOOK_EVERY
        for line in _candidates(data, at_line_start):
            with self._lock:
                if self.done:
                    return
                if _is_beat(line):
                    self.first, self.first_at = line.decode(), time.monotonic()
                    self.done = True
                    return
                self._tries += 1
                if self._tries >= MAX_TRIES:
                    self.done = True
                    return


def _candidates(data: bytes, at_line_start: bool) -> list[bytes]:
    """The complete lines of ``data`` that begin as a heartbeat line does."""
    starts = [match.start() + 1 for match in _LINE_START.finditer(data)]
    if at_line_start and data.startswith(STARTS):
        starts.insert(0, 0)
    found = []
    for at in starts:
        end = data.find(b"\n", at)
        if end == -1:
            break  # cut by the chunk: a line is never judged by its first half
        found.append(data[at:end].rstrip(b"\r"))
    return found


def _is_beat(line: bytes) -> bool:
    if len(line) > MAX_LINE:
        return False
    try:
        beat = parse_line(line.decode())
    except (HeartbeatParseError, UnicodeDecodeError):
        return False
    return beat.stage is not None or beat.progress is not None


def hint(line: str) -> str:
    """Say where heartbeat lines go; ``line`` is one that the command printed."""
    example = shlex.quote(format_line(parse_line(line)))
    shown = line if len(line) <= SHOWN else line[: SHOWN - 3] + "..."
    return (
        f"the command printed heartbeat lines on its output ({shown}), but zombietop run reads "
        "heartbeats only from the heartbeat file, so its progress is not recorded; append each "
        f'line to the file instead: echo {example} >> "$ZOMBIETOP_HEARTBEAT_FILE"'
    )
