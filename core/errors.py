"""The one error tree: every message says what went wrong, where, and what to do."""

from __future__ import annotations


class ZombietopError(Exception):
    """Root of every error zombietop raises on purpose."""


class ConfigError(ZombietopError):
    """A config file is missing, unparsable, or breaks a rule."""


class StoreError(ZombietopError):
    """The store is missing, locked, corrupt, read-only or from a newer zombietop."""


class StoreMissing(StoreError):
    """No store exists at the given path."""


class StoreBusy(StoreError):
    """Another writer held the store's lock for longer than we are willing to wait."""


class ReadOnlyStore(StoreError):
    """A write was attempted through a store opened read-only."""


class StoreReplaced(StoreMissing):
    """The store's path no longer names the file this process holds: deleted or replaced."""


class TaskNotFound(StoreError):
    """The named task is not in the store."""


class LeaseError(ZombietopError):
    """A lease operation was refused."""


class LeaseHeld(LeaseError):
    """Someone else holds the lease (acquire) or it has not expired yet (reclaim)."""


class TaskFinished(LeaseHeld):
    """A task id that already ran to its end was asked to run again: task ids are single-use,
    and the message says to give each run its own id or to start a new run of a job."""


class LeaseLost(LeaseError):
    """The caller no longer owns the lease: the token moved on or it expired."""


class HeartbeatParseError(ZombietopError):
    """A heartbeat line does not follow ``key=value`` format; carries the line."""

    def __init__(self, line: str, problem: str) -> None:
        self.line = line
        self.problem = problem
        shown = line if len(line) <= 120 else line[:117] + "..."
        super().__init__(f"malformed heartbeat line {shown!r}: {problem}")


class ActionRefused(ZombietopError):
    """An action was refused: read-only, task changed, or identity mismatch."""


class UpstreamBlocked(ZombietopError):
    """A task may not start: an upstream task is quarantined or has not succeeded."""


class RequestTimeout(ZombietopError):
    """An SDK ``job.request(name)`` ran past the request timeout and was failed fast."""


class UnsafePath(ZombietopError):
    """A state directory or file zombietop would write is not safely its own (another user's
    directory, a link, a file with other names); the message says which and what to do."""


class NotARegularFile(ZombietopError):
    """A path that must name a regular file names a FIFO, a device or a directory, or a file
    far larger than what it should hold; ``problem`` says which."""

    def __init__(self, path: object, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path} {problem}")


class SourceError(ZombietopError):
    """An engine's database (a read-only source) cannot be opened or read."""


class MissingExtra(ZombietopError):
    """A command needs a package of an extra (``zombietop[all]``) that is not installed; the
    message names it and the command that installs it."""
