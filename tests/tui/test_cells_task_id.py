"""The TASK column keeps the part of a long id that differs: three runs of one Airflow task read
apart, whether they differ in their date or in their seconds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len

from zombietop.tui.cells import TASK_GROWS_BY, TASK_WIDTH
from zombietop.tui.short_ids import middle_cut, short_id


@pytest.mark.parametrize(
    ("task_id", "shown"),
    [
        ("export-2031", "export-2031"),
        ("a" * 18, "a" * 18),
        ("x" * 40, "xxxxx…" + "x" * 12),
        ("etl/load/manual__2026-12-01T00:00:01", "etl/load/…00:00:01"),
        ("etl/load/manual__2026-12-01T00:00:02", "etl/load/…00:00:02"),
        ("nightly_etl/transform/scheduled__2026", "transfor…led__2026"),
        ("nightly_etl/load_warehouse/scheduled__2026", "load_war…led__2026"),
        ("a_very_long_dag_name/t/r", "…t/r"),
        ("etl/split/scheduled__2026-12-01[12]", "etl/split/…-01[12]"),
        ("日本語のタスクの名前です1234", "日本…名前です1234"),
    ],
)
def test_a_long_id_is_cut_in_the_middle(task_id: str, shown: str) -> None:
    assert middle_cut(task_id, TASK_WIDTH) == shown


def test_three_runs_of_one_task_and_three_tasks_of_one_run_read_apart() -> None:
    """Scheduled runs differ in their date, manual runs at their end (seconds and
    microseconds), and one DAG's tasks in their TASK part."""
    nights = [f"nightly_etl/transform/scheduled__2026-11-{d}T04:00:00+00:00" for d in (27, 28, 29)]
    assert [short_id(night, TASK_WIDTH) for night in nights] == [
        "transfor…-27T04:00",
        "transfor…-28T04:00",
        "transfor…-29T04:00",
    ]
    runs = [f"bigdag/transform_all/manual__2026-12-02T18:31:0{s}.12345{s}+00:00" for s in "123"]
    assert len({short_id(run, TASK_WIDTH) for run in runs}) == 3
    tasks = [f"nightly_etl/{t}/scheduled__2026-11-29T04:00:00+00:00" for t in ("a", "bb", "cc")]
    assert len({short_id(task, TASK_WIDTH) for task in tasks}) == 3


def test_the_same_task_of_three_dags_reads_apart() -> None:
    """Three DAGs with a task ``victim`` each: the DAG is kept where the column has room for
    it beside the end of the run (a wider terminal widens the column)."""
    runs = [
        f"{dag}/victim/manual__2026-12-05T10:11:1{s}.12345{s}+00:00"
        for dag, s in (("fe_hang", 1), ("fe_orphan", 2), ("fe_fail", 3))
    ]
    shown = [short_id(run, TASK_WIDTH + TASK_GROWS_BY) for run in runs]
    assert shown == [
        "fe_hang/victim/…05T10:11:11.123451",
        "fe_orphan/victim/…T10:11:12.123452",
        "fe_fail/victim/…05T10:11:13.123453",
    ]


@pytest.mark.parametrize(
    ("time", "squeezed"),
    [
        ("2026-11-29T04:00:00+00:00", "2026-11-29T04:00"),
        ("2026-11-29T04:00:00Z", "2026-11-29T04:00"),
        ("2026-11-29T04:00:00.000000+00:00", "2026-11-29T04:00"),
        ("2026-11-29T04:00:07+00:00", "2026-11-29T04:00:07"),
        ("2026-11-29T04:00:00.5+00:00", "2026-11-29T04:00:00.5"),
        ("2026-11-29T04:00:00+02:00", "2026-11-29T04:00+02:00"),
    ],
)
def test_a_long_ids_times_lose_only_what_every_time_repeats(time: str, squeezed: str) -> None:
    """Zero seconds and a UTC offset go; other seconds and other offsets stay."""
    prefix = "dag/task/scheduled__"
    assert short_id(prefix + time, 200) == prefix + time
    assert short_id(prefix + time, len(prefix + squeezed)) == prefix + squeezed


@given(st.text(min_size=0, max_size=60), st.integers(min_value=2, max_value=40))
def test_the_cut_fits_and_keeps_the_tail(text: str, width: int) -> None:
    assert cell_len(short_id(text, width)) <= width
    cut = middle_cut(text, width)
    assert cell_len(cut) <= width
    if cell_len(text) <= width:
        assert cut == text
    else:
        tail = cut.split("…")[-1]
        assert text.endswith(tail)
        assert len(tail) >= 1 or width < 3
