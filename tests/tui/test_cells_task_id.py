"""The TASK column keeps the end of a long id: three runs of one Airflow task read apart."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from zombietop.tui.cells import TASK_WIDTH, middle_cut


@pytest.mark.parametrize(
    ("task_id", "shown"),
    [
        ("export-2031", "export-2031"),
        ("a" * 18, "a" * 18),
        ("etl/load/manual__2026-12-01T00:00:01", "etl/l…-01T00:00:01"),
        ("etl/load/manual__2026-12-01T00:00:02", "etl/l…-01T00:00:02"),
        ("etl/split/scheduled__2026-12-01[12]", "etl/s…26-12-01[12]"),
        ("日本語のタスクの名前です1234", "日本…名前です1234"),
    ],
)
def test_a_long_id_is_cut_in_the_middle(task_id: str, shown: str) -> None:
    assert middle_cut(task_id, TASK_WIDTH) == shown


def test_three_runs_of_one_task_read_apart() -> None:
    runs = [f"bigdag/transform_all/manual__2026-12-0{day}T0{day}:00:00" for day in (1, 2, 3)]
    shown = {middle_cut(run, TASK_WIDTH) for run in runs}
    assert len(shown) == 3


@given(st.text(min_size=0, max_size=60), st.integers(min_value=2, max_value=40))
def test_the_cut_fits_and_keeps_the_tail(text: str, width: int) -> None:
    cut = middle_cut(text, width)
    assert cell_len(cut) <= width
    if cell_len(text) <= width:
        assert cut == text
    else:
        tail = cut.split("…")[-1]
        assert text.endswith(tail)
        assert len(tail) >= 1 or width < 3
