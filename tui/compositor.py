"""Textual's compositor, rendering for a partial update only the widgets it touches.

For a partial update Textual 8.2 asks every widget on the screen for its lines whenever the
box around all the dirty regions overlaps the widget's container (the screen, for most), then
throws away the lines outside the dirty spans. On the wall a clock tick in the header and an
age ticking in the offenders span the whole screen, so all 26 of its widgets render twice a
second to write twenty cells. ``LeanCompositor`` skips the widgets no dirty region touches:
none of their cells is written by the update (its spans lie inside the dirty regions, and a
cell is written from the topmost widget over it, which a dirty region over the cell touches).
"""

from __future__ import annotations

from collections.abc import Iterable

from textual._compositor import ChopsUpdate, Compositor
from textual.geometry import Region
from textual.screen import Screen
from textual.strip import Strip


class LeanCompositor(Compositor):
    """A compositor whose partial updates render only the widgets a dirty region touches."""

    def __init__(self) -> None:
        super().__init__()
        self._touched: list[Region] | None = None
        """The dirty regions of the partial update being rendered."""

    def render_partial_update(self) -> ChopsUpdate | None:
        self._touched = list(self._dirty_regions)
        try:
            return super().render_partial_update()
        finally:
            self._touched = None

    def _get_renders(
        self, crop: Region | None = None
    ) -> Iterable[tuple[Region, Region, list[Strip]]]:
        touched = self._touched
        if crop is None or not touched:
            yield from super()._get_renders(crop)
            return
        for widget, (region, clip) in self.visible_widgets.items():
            visible = region.intersection(clip)
            if visible.area and any(map(visible.overlaps, touched)):
                yield region, clip, widget.render_lines(visible.translate(-region.offset))


class LeanScreen(Screen[None]):
    """A screen drawn by a ``LeanCompositor``."""

    def __init__(
        self, name: str | None = None, id: str | None = None, classes: str | None = None
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._compositor = LeanCompositor()
