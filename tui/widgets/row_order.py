"""The task table's row order, kept as the list it is.

DataTable keeps row index <-> row key in a two-way dict, and derives its ordered rows and line
offsets from it with a walk over every row. The dashboard re-sorts every poll (a task that beats
moves to the end of its health group), so that bookkeeping cost what the table holds, not what
changed. Here the order is a list: reading the row at an index (what drawing does) is a list
lookup, and the map from key to index is built only when something asks for it (the cursor, a
cell update), then kept up to date where a re-sort moved rows (``put``).

Every row of the task table is one line high; the lazy sequences below rely on it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import overload

from textual._two_way_dict import TwoWayDict
from textual.widgets.data_table import Row, RowKey


def _name(key: RowKey | str) -> str | None:
    return key if isinstance(key, str) else key.value


class RowOrder(TwoWayDict[RowKey, int]):
    """Row index <-> row key for a table whose order is ``order`` (task ids, top first)."""

    def __init__(self, order: list[str], keys: Mapping[str, RowKey]) -> None:
        # TwoWayDict's own dicts are never built: every method it offers is answered here.
        self.order = order
        self._keys = keys
        self._positions: dict[str, int] | None = None

    def _index(self) -> dict[str, int]:
        if self._positions is None:
            self._positions = {task_id: i for i, task_id in enumerate(self.order)}
        return self._positions

    def put(self, places: Sequence[int], task_ids: Sequence[str]) -> None:
        """Put ``task_ids`` at ``places``: the tasks that were there, in another order.

        What a re-sort moved is all that is touched (in C), here and in the map to indices.
        """
        deque(map(self.order.__setitem__, places, task_ids), maxlen=0)
        if self._positions is not None:
            self._positions.update(zip(task_ids, places, strict=True))

    def __setitem__(self, key: RowKey, value: int) -> None:
        # DataTable.add_row puts a new row at the end.
        name = _name(key)
        if name is None or value != len(self.order) or name in self._index():
            raise ValueError(f"rows are only appended here, not {key!r} at {value}")
        self.order.append(name)
        self._index()[name] = value

    def __delitem__(self, key: RowKey) -> None:
        name = _name(key)
        self.order.remove(name)  # type: ignore[arg-type]
        self._positions = None

    def __iter__(self) -> Iterator[RowKey]:
        keys = self._keys
        return (keys[task_id] for task_id in self.order)

    def __len__(self) -> int:
        return len(self.order)

    def __contains__(self, item: object) -> bool:
        return isinstance(item, RowKey | str) and _name(item) in self._index()

    def get(self, key: RowKey) -> int | None:
        name = _name(key)
        return None if name is None else self._index().get(name)

    def get_key(self, value: int) -> RowKey | None:
        if 0 <= value < len(self.order):
            return self._keys[self.order[value]]
        return None

    def contains_value(self, value: int) -> bool:
        return 0 <= value < len(self.order)


class OrderedRows(Sequence[Row]):
    """``DataTable.ordered_rows`` read through the order, row by row as asked."""

    def __init__(self, order: Sequence[str], keys: Mapping[str, RowKey], rows: dict[RowKey, Row]):
        self._order, self._keys, self._rows = order, keys, rows

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> Row: ...

    @overload
    def __getitem__(self, index: slice) -> list[Row]: ...

    def __getitem__(self, index: int | slice) -> Row | list[Row]:
        keys, rows = self._keys, self._rows
        if isinstance(index, slice):
            return [rows[keys[task_id]] for task_id in self._order[index]]
        return rows[keys[self._order[index]]]


class LineOffsets(Sequence[tuple[RowKey, int]]):
    """``DataTable._y_offsets`` (the row and line within it of each line): one line a row."""

    def __init__(self, order: Sequence[str], keys: Mapping[str, RowKey]) -> None:
        self._order, self._keys = order, keys

    def __len__(self) -> int:
        return len(self._order)

    @overload
    def __getitem__(self, index: int) -> tuple[RowKey, int]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[RowKey, int]]: ...

    def __getitem__(self, index: int | slice) -> tuple[RowKey, int] | list[tuple[RowKey, int]]:
        keys = self._keys
        if isinstance(index, slice):
            return [(keys[task_id], 0) for task_id in self._order[index]]
        return keys[self._order[index]], 0

    def clear(self) -> None:
        """DataTable.clear() empties its offsets; these follow the order, which it replaces."""
