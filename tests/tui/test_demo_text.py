"""What the demo tells a new user: what they will see and which keys to press, in plain words."""

from __future__ import annotations

from pathlib import Path

from zombietop.tui.demo.command import JOBS, DemoPaths, demo_guide


def test_the_demo_says_what_the_user_sees_without_in_house_words(tmp_path: Path) -> None:
    said = demo_guide(DemoPaths(db=tmp_path / "demo.db"), 1.0, dashboard=True)
    for job in JOBS:
        assert job.task_id in said and job.shows in said
    assert "seed" not in said.casefold()
    # The keys it names are the dashboard's: K kills (k moves), and ctrl+c quits like q.
    assert "K kills" in said and "k kills" not in said
    assert "ctrl+c" in said and "stops every job" in said
