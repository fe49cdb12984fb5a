"""How each health looks: a glyph and a style for every health, and no glyph meaning two
things."""

from __future__ import annotations

from zombietop.health import Health
from zombietop.tui.cells import FLAG_MARKS, MARKS, OUTCOME_GLYPH
from zombietop.tui.healths import GLYPHS, STYLES


def test_every_health_has_a_glyph_and_a_style() -> None:
    assert set(GLYPHS) == set(Health)
    assert set(STYLES) == set(Health)
    assert all(GLYPHS[health].strip() and STYLES[health] for health in Health)


def test_no_two_healths_share_a_glyph_nor_does_a_mark() -> None:
    glyphs = list(GLYPHS.values())
    assert len(set(glyphs)) == len(glyphs)
    marks = {mark.glyph for mark in [*MARKS.values(), *FLAG_MARKS.values()]} | {OUTCOME_GLYPH}
    assert not marks & set(glyphs)
