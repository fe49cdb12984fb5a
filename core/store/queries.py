"""Named SQL blocks, one ``.sql`` file per backend, read once.

The store reads its own ``sql/`` folder; a source reads the ``sql/`` folder of its own package
(``zombietop.sources``) with the same loader.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^-- ([a-z0-9_]+) --$", re.MULTILINE)


@cache
def load(backend: str, package: str = "zombietop.store") -> dict[str, str]:
    """Return ``{name: sql}`` for ``sql/<backend>.sql`` in ``package``; blocks start with
    ``-- name --``."""
    sql = resources.files(package).joinpath("sql", f"{backend}.sql")
    text = sql.read_text(encoding="utf-8")
    pieces = _NAME.split(text)
    # pieces = [preamble, name1, body1, name2, body2, ...]
    blocks = {name: body.strip() for name, body in zip(pieces[1::2], pieces[2::2], strict=True)}
    if not blocks:
        raise RuntimeError(f"{sql} holds no named blocks")
    return blocks
