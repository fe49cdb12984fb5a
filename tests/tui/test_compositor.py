"""The lean compositor writes what Textual's writes, rendering only the widgets it must."""

from __future__ import annotations

import random

import pytest
from textual._compositor import Compositor
from textual.geometry import Region
from textual.widget import Widget

from tests.tui.helpers import make_app, settle
from zombietop.tui.compositor import LeanCompositor


def _regions(rng: random.Random, width: int, height: int) -> set[Region]:
    """A few dirty regions: single cells (a ticking digit), line pieces and blocks."""
    regions = set()
    for _ in range(rng.randint(1, 4)):
        x, y = rng.randrange(width), rng.randrange(height)
        w = rng.choice([1, 1, 3, rng.randint(1, width - x)])
        h = rng.choice([1, 1, rng.randint(1, height - y)])
        regions.add(Region(x, y, w, h))
    return regions


@pytest.mark.parametrize(("wall", "size"), [(False, (80, 24)), (True, (120, 40)), (True, (80, 24))])
async def test_a_partial_update_writes_what_textuals_own_writes(
    wall: bool, size: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any dirty regions, on the dashboard and the wall: the same terminal output as Textual's
    compositor, from fewer widgets rendered when the regions miss some."""
    rendered: list[Widget] = []
    render_lines = Widget.render_lines

    def counted(widget: Widget, crop: Region) -> object:
        rendered.append(widget)
        return render_lines(widget, crop)

    monkeypatch.setattr(Widget, "render_lines", counted)
    app = make_app(read_only=True, wall=wall)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        compositor = app.screen._compositor
        assert isinstance(compositor, LeanCompositor)
        rng = random.Random(7)
        fewer = 0
        for _ in range(60):
            regions = _regions(rng, *size)
            compositor._dirty_regions = set(regions)
            rendered.clear()
            lean = compositor.render_partial_update()
            lean_count = len(rendered)
            compositor._dirty_regions = set(regions)
            rendered.clear()
            stock = Compositor.render_partial_update(compositor)  # Textual's own renders
            assert lean is not None and stock is not None
            assert lean.render_segments(app.console) == stock.render_segments(app.console)
            assert lean_count <= len(rendered)
            fewer += lean_count < len(rendered)
        assert fewer > 10  # most regions miss most widgets
