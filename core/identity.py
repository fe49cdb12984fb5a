"""Who this process is: the real uid and its name from the password database.

Never ``$USER`` or ``$LOGNAME``: anyone can set those, and an actor recorded in an event or a
request an agent decides on must be the OS user that really ran the command.
"""

from __future__ import annotations

import os
import pwd


def user_name(uid: int) -> str:
    """The name of ``uid`` from the password database (the uid itself when it has none)."""
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def real_user() -> str:
    """The name of this process's real uid."""
    return user_name(os.getuid())
