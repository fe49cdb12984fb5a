"""Named SQL blocks, one ``.sql`` file per backend, read once."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

_NAME = re.compile(r"^-- ([a-z0-9_]+) --$", re.MULTILINE)


@cache
def load(backend: str) -> dict[str, str]:
    """Return ``{name: sql}`` for ``sql/<backend>.sql``; blocks start with ``-- name --``."""
    sql = resources.files("zombietop.store").joinpath("sql", f"{backend}.sql")
    text = sql.read_text(encoding="utf-8")
    pieces = _NAME.split(text)
    # pieces = [preamble, name1, body1, name2, body2, ...]
    blocks = {name: body.strip() for name, body in zip(pieces[1::2], pieces[2::2], strict=True)}
    if not blocks:
        raise RuntimeError(f"{sql} holds no named blocks")
    return blocks
