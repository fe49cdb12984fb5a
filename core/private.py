"""Files only this user can reach: the state directories, heartbeat files, checkpoints, logs.

A heartbeat file or a log opened by name in a directory another user can write is theirs to
aim: ``heartbeats/T.1.hb -> /victim`` made root's ``zombietop run`` truncate /victim. So every
directory zombietop keeps files in is made mode 0700 by zombietop (or, when it is already
there, must be owned by this user and is tightened to 0700), and every file in it is opened
with ``O_NOFOLLOW``, created with ``O_EXCL`` where it is new, and kept at 0600.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from pathlib import Path

from zombietop.errors import NotARegularFile, UnsafePath, ZombietopError
from zombietop.identity import user_name
from zombietop.locations import state_dir

DIR_MODE = 0o700
FILE_MODE = 0o600
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


def private_dir(path: Path | str) -> Path:
    """Make ``path`` (and any missing parent) mode 0700, or check the directory already there.

    Raise ``UnsafePath`` when it is a link, not a directory, or owned by another user.
    """
    path = Path(path)
    missing = []
    probe = path
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, DIR_MODE)
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise UnsafePath(
            f"{path} is a symbolic link: zombietop keeps its files only in a directory it made; "
            "remove the link and run again"
        )
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafePath(f"{path} is not a directory: move it away and run again")
    me = os.geteuid()
    if info.st_uid != me:
        owner = user_name(info.st_uid)
        raise UnsafePath(
            f"{path} is owned by {owner} (uid {info.st_uid}), not by {user_name(me)}: another "
            f"user could plant links in it. Remove it, or run zombietop as {owner}"
        )
    if stat.S_IMODE(info.st_mode) != DIR_MODE:
        os.chmod(path, DIR_MODE)
    return path


def state_subdir(store_path: Path | str, name: str) -> Path:
    """``<store>.d/<name>``, both private (made 0700 here, or checked to be this user's)."""
    private_dir(state_dir(store_path))
    return private_dir(state_dir(store_path) / name)


def _check_file(fd: int, path: Path) -> None:
    """Refuse a file that is not a plain file of ours with one name (a planted hard link)."""
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise UnsafePath(f"{path} is not a regular file: move it away and run again")
    if info.st_uid != os.geteuid():
        raise UnsafePath(
            f"{path} is owned by {user_name(info.st_uid)}, not by {user_name(os.geteuid())}: "
            "move it away and run again"
        )
    if info.st_nlink != 1:
        raise UnsafePath(
            f"{path} has {info.st_nlink} names (a hard link to another file?): "
            "move it away and run again"
        )
    if stat.S_IMODE(info.st_mode) != FILE_MODE:
        os.fchmod(fd, FILE_MODE)


def _open(path: Path, flags: int) -> int:
    try:
        return os.open(path, flags, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symbolic link as the last component
            raise UnsafePath(
                f"{path} is a symbolic link: zombietop never follows one; remove it and run again"
            ) from None
        raise


def create_new(path: Path | str) -> int:
    """Create ``path`` afresh (0600) and return a write descriptor; never through a link.

    A file or link already at that name (left by a crash, or planted) is removed first:
    removing a link never touches what it points to.
    """
    path = Path(path)
    try:
        fd = _open(path, _NEW)
    except FileExistsError:
        path.unlink()
        fd = _open(path, _NEW)
    _check_file(fd, path)
    return fd


def open_append(path: Path | str) -> int:
    """Open ``path`` to append (created 0600 when missing); never through a link."""
    path = Path(path)
    fd = _open(path, _APPEND)
    try:
        _check_file(fd, path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_read(path: Path | str) -> int:
    """Open ``path`` to read, refusing a link; ``FileNotFoundError`` when there is none."""
    path = Path(path)
    return _open(path, _READ)


def write_new(path: Path | str, data: bytes = b"") -> Path:
    """Create ``path`` afresh (0600, never through a link) holding ``data``."""
    fd = create_new(path)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return Path(path)


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (a named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path | str, *, limit: int) -> tuple[bytes, os.stat_result]:
    """Read a regular file of at most ``limit`` bytes (following links); return it and its stat.

    A FIFO would block ``open()`` until someone writes to it, and ``/dev/zero`` never ends: the
    file is opened without blocking and read only once ``fstat`` says it is a regular file.
    Raise ``NotARegularFile`` (what it is instead, or how large it is), or the ``OSError`` of
    the open (``FileNotFoundError``, ``PermissionError``).
    """
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFile(path, f"is {_kind(info.st_mode)}, not a regular file")
        # Read one byte more than the limit: a file that grew since fstat is caught too.
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                break
            data += chunk
        if len(data) > limit:
            raise NotARegularFile(path, f"is larger than {limit} bytes")
    finally:
        os.close(fd)
    return data, info


NEW_NAME_TRIES = 8


def replace_file(path: Path | str, data: bytes, *, mode: int = FILE_MODE) -> Path:
    """Write ``data`` to ``path`` whole: into a new file beside it (``O_EXCL``, never through
    a link, given ``mode`` whatever the umask), synced, then renamed over ``path``, so a reader
    sees the old file or the new one, never half of one.

    The new file's name is random: a name planted in the folder is skipped, never opened. A
    link at ``path`` itself is replaced, never followed. ``OSError`` when it cannot be done.
    """
    path = Path(path)
    for _ in range(NEW_NAME_TRIES):
        new = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = _open(new, _NEW)
        except FileExistsError:
            continue
        break
    else:
        raise FileExistsError(errno.EEXIST, f"no free temporary name beside {path}")
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), mode)
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(new, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(new)
        raise
    return path


def read_secret(path: Path | str, *, what: str, limit: int) -> str:
    """The text of a file holding a secret (ping keys, a routing key), at most ``limit`` bytes.

    Refused unless it is a regular file, not a link, that only its owner can read or write
    (0600 or 0400): a key others can read is a key others have. ``what`` names the setting in
    the errors (``[serve] ping_key_file``), which never quote the file's text.
    """
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise ZombietopError(f"{what} {path}: cannot open it ({exc.strerror})") from None
    with open(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise ZombietopError(f"{what} {path}: not a regular file")
        if info.st_mode & 0o077:
            raise ZombietopError(
                f"{what} {path}: mode {stat.S_IMODE(info.st_mode):04o} lets others read or "
                f"write the key; run `chmod 600 {path}`"
            )
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise ZombietopError(f"{what} {path}: larger than {limit} bytes")
    return data.decode("utf-8", errors="replace")
