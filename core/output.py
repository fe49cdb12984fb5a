"""The last output of a command under ``zombietop run``: passed through, and its tail kept.

The wrapper copies the command's stdout and stderr to its own, byte for byte (cron still mails
them), and keeps the last ``KEEP`` bytes of both, interleaved, in a file per attempt beside the
store: ``<store>.d/output/<task>.<attempt>.out``, mode 0600 in a folder only its owner reads
(at most ``TRIM_AT`` bytes while the attempt runs, ``KEEP`` once it ended).
Older attempts' files are pruned as a new one starts. What a job wrote is untrusted: whoever
shows it passes it through ``zombietop.printable.printable``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from zombietop.durations import format_age
from zombietop.locations import safe_name, state_dir
from zombietop.model import Task
from zombietop.printable import printable
from zombietop.private import create_new, open_read, state_subdir
from zombietop.store import Store, location_of

KEEP = 64 * 1024
"""Bytes of output kept per attempt."""
TRIM_AT = 16 * KEEP
"""How large the file of a running attempt grows before its end is moved to its top."""
FLOOD_WRITE_EVERY = 0.1
"""Seconds between writes of a flood's latest chunk to the file: a reader is shown the output
at most that much late, and the copy does not pay a file write per read."""
ATTEMPTS_KEPT = 2
"""Attempts of one task whose output stays on disk: this one and the one before."""
SHOWN_LINES = 200
"""Lines of output the detail view is given (the file holds a few hundred more at most)."""


def output_folder(store_path: Path | str) -> Path:
    return state_dir(store_path) / "output"


def private_output_path(store_path: Path | str, task_id: str, attempt: int) -> Path:
    """``output_path``, its folder made private (0700, this user's) first."""
    state_subdir(store_path, "output")
    return output_path(store_path, task_id, attempt)


def output_path(store_path: Path | str, task_id: str, attempt: int) -> Path:
    """Where the output of one attempt of ``task_id`` is kept."""
    # The digest keeps two ids that make the same safe name ("a/b", "a_b") apart.
    digest = hashlib.sha256(task_id.encode()).hexdigest()[:8]
    return output_folder(store_path) / f"{safe_name(task_id)[:80]}-{digest}.{attempt}.out"


class OutputLog:
    """Append a command's output to its attempt's file, keeping the last ``KEEP`` bytes.

    The file grows to ``TRIM_AT``, then its last ``KEEP`` bytes (from a line start) are moved to
    its top in place and the rest is cut off: bounded on disk, one 64 KiB move per MiB written,
    and the same file (0600, never through a link) all along. A write of ``KEEP`` bytes or more
    (a command that floods its output, read 64 KiB at a time) leaves nothing before it worth
    keeping: the latest such write replaces the file's content at most every
    ``FLOOD_WRITE_EVERY`` seconds, and before any other write. ``close`` leaves the last
    ``KEEP`` bytes.

    A write that fails (a full disk) is dropped and counted in ``error``, never raised: the
    output still passes through, and the next write tries again. Written from the threads that
    pump the command's two pipes, hence the lock.
    """

    def __init__(self, path: Path, *, keep: int = KEEP, trim_at: int = TRIM_AT) -> None:
        self.path = path
        self.keep = keep
        self.trim_at = max(trim_at, 2 * keep)
        self.lines = 0
        """Newlines written so far: the ``out_lines`` of observed heartbeats."""
        self.error: OSError | None = None
        """The first write that failed, if one did (the kept tail has a gap)."""
        self._lock = threading.Lock()
        # Never through a planted link, always 0600: see zombietop.private. Written at the
        # descriptor's offset (no O_APPEND), so the tail can be moved to the top in place.
        self._fd = create_new(path)
        self._read = open_read(path)
        self._size = 0
        self._flood: bytes | None = None
        """The latest write of ``keep`` bytes or more, while it has not reached the file."""
        self._flood_due = 0.0

    def write(self, data: bytes) -> None:
        with self._lock:
            if self._fd < 0:
                return
            self.lines += _newlines(data)
            try:
                if len(data) >= self.keep:
                    self._flood = data
                    if time.monotonic() >= self._flood_due:
                        self._write_flood()
                    return
                self._write_flood()
                if self._size + len(data) > self.trim_at:
                    self._trim()
                _write_all(self._fd, data)
                self._size += len(data)
            except OSError as exc:
                self.error = self.error or exc
                self._resync()

    def _write_flood(self) -> None:
        if self._flood is not None:
            self._replace(_from_line_start(self._flood[-self.keep :]))
            self._flood = None
            self._flood_due = time.monotonic() + FLOOD_WRITE_EVERY

    def _trim(self) -> None:
        """Keep only the last ``keep`` bytes written, from a line start."""
        tail = os.pread(self._read, self.keep, max(0, self._size - self.keep))
        self._replace(_from_line_start(tail))

    def _replace(self, data: bytes) -> None:
        # The end moves to the top before the cut: a reader of the file's end (the detail
        # view, a page) sees the same last lines before, during and after.
        os.pwrite(self._fd, data, 0)
        os.ftruncate(self._fd, len(data))
        os.lseek(self._fd, len(data), os.SEEK_SET)
        self._size = len(data)

    def _resync(self) -> None:
        """After a failed write, carry on from wherever the file really ends."""
        with contextlib.suppress(OSError):
            self._size = os.lseek(self._fd, 0, os.SEEK_END)

    def close(self) -> None:
        with self._lock:
            if self._fd < 0:
                return
            with contextlib.suppress(OSError):
                self._write_flood()
                if self._size > self.keep:
                    self._trim()
            os.close(self._fd)
            os.close(self._read)
            self._fd = -1


def _newlines(data: bytes) -> int:
    """How many newlines ``data`` holds.

    ``bytes.count`` looks at one byte after the other; ``replace`` finds them with memchr, a
    third of the cost, and this count is most of what the copy of a flood costs
    (docs/benchmarks.md, section 15).
    """
    return len(data) - len(data.replace(b"\n", b""))


def _from_line_start(tail: bytes) -> bytes:
    """``tail`` without the half line at its top, unless it is all one line."""
    start = tail.find(b"\n")
    return tail[start + 1 :] if 0 <= start < len(tail) - 1 else tail


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def prune_attempts(store_path: Path | str, task_id: str, attempt: int) -> None:
    """Delete the output of attempts of ``task_id`` older than the ones kept."""
    for older in range(max(attempt - ATTEMPTS_KEPT, 0), 0, -1):
        path = output_path(store_path, task_id, older)
        if not path.exists():
            break
        with contextlib.suppress(OSError):
            path.unlink()


@dataclass(frozen=True, slots=True, kw_only=True)
class LastOutput:
    """The end of what one attempt wrote: its last line, when it was written, the lines before."""

    line: str
    """The last non-blank line, as a terminal would leave it after carriage returns (raw:
    show it through ``printable``)."""
    written_at: float
    """When the file was last written (this host's clock)."""
    lines: tuple[str, ...]
    """Up to ``SHOWN_LINES`` last lines, oldest first (raw, as ``line``)."""
    attempt: int

    def age(self, now: float) -> float:
        return max(0.0, now - self.written_at)


def read_last_output(store_path: Path | str, task_id: str, attempt: int) -> LastOutput | None:
    """Read the kept output of the task's latest attempt that has one (this or the one before)."""
    for tried in (attempt, attempt - 1):
        if tried < 1:
            break
        path = output_path(store_path, task_id, tried)
        try:
            with open(open_read(path), "rb") as handle:
                written_at = os.fstat(handle.fileno()).st_mtime
                size = os.fstat(handle.fileno()).st_size
                handle.seek(max(0, size - 2 * KEEP))
                data = handle.read()
        except OSError:
            continue
        lines = [_as_shown(raw) for raw in data.decode("utf-8", errors="replace").split("\n")]
        lines = [line for line in lines if line.strip()]
        if not lines:
            continue
        return LastOutput(
            line=lines[-1],
            written_at=written_at,
            lines=tuple(lines[-SHOWN_LINES:]),
            attempt=tried,
        )
    return None


def _as_shown(line: str) -> str:
    """What a terminal shows of a line rewritten with carriage returns (a progress bar)."""
    line = line.removesuffix("\r")
    if "\r" in line:
        segments = [segment for segment in line.split("\r") if segment.strip()]
        return segments[-1] if segments else ""
    return line


PAGE_LINE_CHARS = 160
"""How much of the last output line a page carries: enough to recognise, short on a phone."""


def keeps_output(task: Task, host: str) -> bool:
    """Whether ``task`` may have output kept beside the store, as seen from ``host``.

    A command under ``zombietop run`` on ``host`` keeps its own. A run reported over HTTP has
    no host and no command: ``zombietop serve`` keeps the bodies of its pings there instead.
    """
    return (task.host == host and bool(task.command)) or (task.host is None and not task.command)


def last_output_of(store: Store, task: Task, host: str) -> LastOutput | None:
    """The kept output of ``task``: the output of ``zombietop run`` on ``host``, or the bodies
    of its pings over HTTP."""
    if not keeps_output(task, host):
        return None
    where = location_of(store)
    return None if where is None else read_last_output(where, task.task_id, task.attempt)


def last_outputs(store: Store, tasks: Iterable[Task], host: str) -> dict[str, LastOutput]:
    """The kept output of each task that has some on ``host``, by task id."""
    where = location_of(store)
    found: dict[str, LastOutput] = {}
    if where is None:
        return found
    for task in tasks:
        if keeps_output(task, host):
            last = read_last_output(where, task.task_id, task.attempt)
            if last is not None:
                found[task.task_id] = last
    return found


def with_last_output(line: str, last: LastOutput | None, now: float) -> str:
    """End a page or status line with the task's last output and its age, escaped."""
    if last is None:
        return line
    said = printable(last.line.strip())
    if len(said) > PAGE_LINE_CHARS:
        said = said[: PAGE_LINE_CHARS - 1] + "…"
    return f"{line}; last output {format_age(last.age(now))} ago: {said}"
