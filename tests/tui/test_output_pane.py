"""The output pane of the detail view: search (/ n N), jumps (G g) and copy (c)."""

from __future__ import annotations

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from tests.tui.helpers import make_app, notified, settle, steady_cursor
from zombietop.output import LastOutput
from zombietop.tui.output_search import (
    Match,
    copy_of,
    copy_refusal,
    find_matches,
    nearest_match,
    step,
)
from zombietop.tui.screens.detail import DetailScreen
from zombietop.tui.screens.oncall import NoteScreen
from zombietop.tui.testing import NOW, SampleSource
from zombietop.tui.widgets.output_pane import OutputPane, copy_words

TASK = "export-2031"
ERRORS = (30, 75, 110)
"""The lines (from 0) that say ERROR."""


def long_output() -> LastOutput:
    """120 lines; three of them errors, one with a terminal control in it."""
    lines = tuple(
        f"12:{n // 60:02d}:{n % 60:02d} ERROR timeout talking to warehouse (batch {n})"
        if n in ERRORS
        else f"12:{n // 60:02d}:{n % 60:02d} loaded batch {n} of 120"
        for n in range(120)
    )
    lines = (*lines[:-1], "done \x1b]0;pwned\x07 bye")
    return LastOutput(line=lines[-1], written_at=NOW - 30, lines=lines, attempt=2)


def source() -> SampleSource:
    return SampleSource(outputs={TASK: long_output()})


async def open_output(pilot: Pilot[None]) -> OutputPane:
    await settle(pilot)
    await pilot.press("down", "enter")
    await settle(pilot)
    await pilot.press("o")
    await settle(pilot)
    assert isinstance(pilot.app.screen, DetailScreen)
    return pilot.app.screen.query_one(OutputPane)


async def search(pilot: Pilot[None], words: str) -> None:
    await pilot.press("slash", *words, "enter")
    await settle(pilot)


# The pure parts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("error", [Match(0, 3, 8), Match(2, 0, 5)]),  # lower case: any case
        ("Error", [Match(2, 0, 5)]),  # a capital: this case only
        ("ERROR", [Match(0, 3, 8)]),
        ("oo", [Match(1, 3, 5), Match(2, 8, 10)]),
        ("", []),
        ("nowhere", []),
    ],
)
def test_find_matches(query: str, found: list[Match]) -> None:
    lines = ["an ERROR", "a foo", "Error, too"]
    assert list(find_matches(lines, query)) == found


def test_matches_are_found_in_the_escaped_text_as_shown() -> None:
    shown = ["tab\\there \\x1b[2J"]
    assert find_matches(shown, "\\x1b") == (Match(0, 10, 14),)


@pytest.mark.parametrize(
    ("index", "count", "forward", "then"),
    [
        (None, 3, True, 0),
        (None, 3, False, 2),
        (0, 3, True, 1),
        (2, 3, True, 0),  # wraps to the first
        (0, 3, False, 2),  # wraps to the last
        (None, 0, True, None),
    ],
)
def test_step(index: int | None, count: int, forward: bool, then: int | None) -> None:
    assert step(index, count, forward) == then


def test_nearest_match_is_at_or_below_the_line_and_wraps() -> None:
    matches = (Match(3, 0, 1), Match(9, 0, 1))
    assert nearest_match(matches, 0) == 0
    assert nearest_match(matches, 4) == 1
    assert nearest_match(matches, 10) == 0
    assert nearest_match((), 4) is None


def test_copy_carries_no_control_sequence() -> None:
    copied = copy_of(["ok", "\x1b]52;c;ZXZpbA==\x07 evil", "\u202eright\ttab"], 2)
    assert copied.text == "\\x1b]52;c;ZXZpbA==\\x07 evil\n\\u202eright\\ttab"
    assert (copied.lines, copied.asked) == (2, 2)
    assert not any(ord(c) < 32 and c != "\n" for c in copied.text)


def test_copy_of_too_much_keeps_the_last_lines_that_fit() -> None:
    lines = [f"{n:03d}" + "x" * 97 for n in range(50)]  # 100 bytes and a newline each
    copied = copy_of(lines, 50, limit=1000)
    assert (copied.lines, copied.asked) == (9, 50)
    assert copied.text.startswith("041") and len(copied.text.encode()) <= 1000


@pytest.mark.parametrize(
    ("environ", "said"),
    [
        ({}, None),
        ({"TERM_PROGRAM": "iTerm.app"}, None),
        ({"TERM_PROGRAM": "Apple_Terminal"}, "macOS Terminal"),
        ({"TMUX": "/tmp/tmux-1000/default,1,0"}, "set-clipboard on"),
        ({"STY": "1234.pts-0.host"}, "GNU screen"),
    ],
)
def test_copy_refusal_reads_the_environment(environ: dict[str, str], said: str | None) -> None:
    refusal = copy_refusal(environ)
    assert refusal is None if said is None else said in (refusal or "")


@pytest.mark.parametrize(
    ("lines", "asked", "refusal", "severity", "words"),
    [
        (50, 50, None, "information", "copied the last 50 lines"),
        (1, 1, None, "information", "copied the last 1 line "),
        (9, 50, None, "warning", "copied only the last 9 of 50 lines"),
        (50, 50, "tmux passes ...", "warning", "but tmux passes ...."),
    ],
)
def test_copy_words(lines: int, asked: int, refusal: str | None, severity: str, words: str):
    text, _, level = copy_words(lines, asked, refusal)
    assert level == severity and words in text


# The keys ------------------------------------------------------------------------------------


async def test_slash_searches_and_n_and_shift_n_move_between_matches() -> None:
    app = make_app(source())
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_output(pilot)
        await search(pilot, "error")
        assert [m.line for m in pane.matches] == list(ERRORS)
        assert pane.border_subtitle == "match 1 of 3: error"
        assert not pane.query_one(Input).display  # the input closes on Enter
        await pilot.press("n")
        assert pane.count_words() == "match 2 of 3: error"
        await settle(pilot)
        top = pane.scroller.scroll_y
        assert top <= ERRORS[1] < top + pane.scroller.size.height  # scrolled to it
        await pilot.press("n", "n")
        assert pane.count_words() == "match 1 of 3: error"  # wrapped
        await pilot.press("N")
        assert pane.count_words() == "match 3 of 3: error"


async def test_matches_read_without_colour() -> None:
    app = make_app(source())
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_output(pilot)
        await search(pilot, "ERROR")
        lines = pane.rendered().split("\n")
        assert lines[ERRORS[0]].plain.startswith("▶ ")
        assert lines[ERRORS[1]].plain.startswith("• ")
        assert lines[0].plain.startswith("  ")
        styles = {str(span.style) for span in lines[ERRORS[1]].spans}
        assert "reverse" in styles  # an attribute, not a colour


async def test_a_search_with_no_match_says_so() -> None:
    app = make_app(source())
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_output(pilot)
        await search(pilot, "segfault")
        assert pane.border_subtitle == "no match: segfault"
        said = notified(app)
        await pilot.press("n")
        assert said == ["no match: segfault"]


async def test_escape_in_the_search_puts_the_last_query_back() -> None:
    app = make_app(source())
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_output(pilot)
        await search(pilot, "error")
        await pilot.press("slash", "x", "y", "z")  # the old query is selected: typing replaces it
        assert pane.search_text == "xyz" and not pane.matches
        await pilot.press("escape")
        await settle(pilot)
        assert pane.search_text == "error" and len(pane.matches) == 3
        assert isinstance(app.screen, DetailScreen)  # Escape closed the search, not the screen


async def test_n_without_a_search_is_a_note() -> None:
    app = make_app(source())
    async with app.run_test(size=(100, 30)) as pilot:
        await open_output(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, NoteScreen)


async def test_a_hidden_pane_keeps_none_of_its_keys() -> None:
    app = make_app(source())
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_output(pilot)
        await search(pilot, "error")
        await pilot.press("o")  # hidden again
        await settle(pilot)
        assert not pane.scroller.has_focus
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, NoteScreen)  # a note, not the next match


async def test_shift_g_and_g_go_to_the_end_and_the_start() -> None:
    app = make_app(source())
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_output(pilot)
        await pilot.press("g")
        await settle(pilot)
        assert pane.scroller.scroll_y == 0
        await pilot.press("G")
        await settle(pilot)
        assert pane.scroller.scroll_y == pane.scroller.max_scroll_y > 0


async def test_c_copies_the_last_lines_escaped() -> None:
    app = make_app(source())
    async with app.run_test(size=(100, 30)) as pilot:
        pane = await open_output(pilot)
        pane.copy_lines = 3
        said = notified(app)
        await pilot.press("c")
        assert app.clipboard == (
            "12:01:57 loaded batch 117 of 120\n"
            "12:01:58 loaded batch 118 of 120\n"
            "done \\x1b]0;pwned\\x07 bye"
        )
        assert said and "the last 3 lines" in said[0]


async def test_copy_lines_comes_from_the_app() -> None:
    app = make_app(source())
    app.copy_lines = 7
    async with app.run_test(size=(100, 30)) as pilot:
        await open_output(pilot)
        await pilot.press("c")
        assert len(app.clipboard.split("\n")) == 7


async def test_c_with_no_output_says_so() -> None:
    app = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await open_output(pilot)
        said = notified(app)
        await pilot.press("c")
        assert said == ["no output to copy"]
        assert app.clipboard == ""


# What it looks like ----------------------------------------------------------------------------


def _searched(words: str, *, typing: bool = False):
    async def run_before(pilot: Pilot[None]) -> None:
        await open_output(pilot)
        if typing:
            await pilot.press("slash", *words)
        else:
            await search(pilot, words)
            await pilot.press("n")
        await settle(pilot)
        await steady_cursor(pilot)

    return run_before


def test_output_search_80x24(snap_compare):
    """export-2031's detail with its output pane open and 'error' searched, then n: the pane's
    subtitle reads 'match 2 of 3: error'; the line of batch 75 is marked '▶ ' with ERROR in
    reverse and underlined, the other two ERROR lines '• '; the footer starts with / Search,
    n Next, N Previous, G End, g Start, c Copy."""
    assert snap_compare(make_app(source()), terminal_size=(80, 24), run_before=_searched("error"))


def test_output_search_typing_160x48(snap_compare):
    """The same at 160x48 while 'timeout' is typed into the search input at the pane's foot:
    'match 1 of 3: timeout', the first ERROR line (batch 30) marked '▶ ' with 'timeout' in
    reverse, the pane scrolled to it; the last line reads 'done \\x1b]0;pwned\\x07 bye'."""
    assert snap_compare(
        make_app(source()), terminal_size=(160, 48), run_before=_searched("timeout", typing=True)
    )
