"""How a frozen record reads a store row.

Each field of a record reads the column of its own name. A small table per record type names
the fields that read otherwise: another column, a converter, several columns, or no column.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import fields
from functools import cache
from operator import itemgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class Row(Protocol):
    """A database row read by column name (sqlite3.Row, an asyncpg Record, a dict)."""

    def __getitem__(self, key: str, /) -> Any: ...


RowRead = Callable[[Row], Any]
"""How one field reads its value from a row."""

RowReads = Mapping[str, RowRead | None]
"""The fields of one record type that do not read the column of their own name, each with its
reader; None for a field the row has no column for, which keeps its default."""

_Record = TypeVar("_Record", bound="DataclassInstance")
_NO_READS: RowReads = MappingProxyType({})


def column(name: str, convert: Callable[[Any], Any] | None = None) -> RowRead:
    """Read the column ``name``, through ``convert`` when one is given."""
    if convert is None:
        return itemgetter(name)
    return lambda row: convert(row[name])


def read_row(cls: type[_Record], row: Row, reads: RowReads = _NO_READS) -> _Record:
    """Build the record ``cls`` from ``row``, field by field: each reads the column of its name,
    or through the reader ``reads`` gives it."""
    values = {}
    for name in _field_names(cls):
        if name not in reads:
            values[name] = row[name]
        elif (read := reads[name]) is not None:
            values[name] = read(row)
    return cls(**values)


@cache
def _field_names(cls: type[DataclassInstance]) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


def json_tuple(text: str | None) -> tuple[str, ...]:
    """A JSON list column (None or ``[]`` for none) as a tuple."""
    return tuple(json.loads(text)) if text and text != "[]" else ()


def json_mapping(text: str | None) -> Mapping[str, Any]:
    """A JSON object column (None or empty for none) as a mapping."""
    return json.loads(text) if text else {}
