"""The shims of tui/textual_compat.py. Partial updates write the dirty spans, not each line from
its widget's left edge.

Both Textual's own ``ChopsUpdate.render_segments`` and the patched one are played on a small
virtual terminal: cursor moves and text, SGR ignored, wide characters taking two cells (and
erasing their other half when half of one is overwritten, as xterm does).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import get_character_cell_size
from rich.console import Console
from rich.control import Control
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._compositor import ChopsUpdate
from textual.app import App
from textual.strip import Strip
from textual.visual import Visual, visualize

from tests.tui.helpers import make_app, settle
from zombietop.tui import textual_compat
from zombietop.tui.textual_compat import install_cropped_updates, stock_render_segments
from zombietop.tui.widgets.header import StatusHeader, clock_text
from zombietop.tui.widgets.task_list import TaskList
from zombietop.tui.widgets.text_lines import changed_cells

Span = tuple[int, int, int]
Cell = tuple[int, int]

_TOKEN = re.compile(r"\x1b\[(\d+);(\d+)H|\x1b\[[0-9;]*m|(\n)|([^\x1b\n]+)")


class VirtualScreen:
    """Cells of a terminal, fed the sequences an update writes; remembers which cells it wrote."""

    def __init__(self, width: int, height: int, fill: str = "?") -> None:
        self.width = width
        self.rows = [[fill] * width for _ in range(height)]
        self.written: set[Cell] = set()

    def feed(self, data: str) -> None:
        x = y = 0
        consumed = 0
        for token in _TOKEN.finditer(data):
            assert token.start() == consumed, f"unexpected sequence {data[consumed:][:20]!r}"
            consumed = token.end()
            if token[1] is not None:
                y, x = int(token[1]) - 1, int(token[2]) - 1
            elif token[3] is not None:
                y += 1
            elif token[4] is not None:
                for character in token[4]:
                    width = get_character_cell_size(character)
                    assert width in (1, 2), f"no zero-width characters here: {character!r}"
                    self._put(x, y, character, width)
                    x += width
        assert consumed == len(data), f"unexpected sequence {data[consumed:][:20]!r}"

    def _put(self, x: int, y: int, character: str, width: int) -> None:
        row = self.rows[y]
        for cell in range(x, x + width):
            # Overwriting either half of a wide character blanks its other half.
            if row[cell] == "":
                row[cell - 1] = " "
            elif cell + 1 < self.width and row[cell + 1] == "":
                row[cell + 1] = " "
            self.written.add((y, cell))
        row[x] = character
        if width == 2:
            row[x + 1] = ""

    def copy(self) -> VirtualScreen:
        other = VirtualScreen(self.width, len(self.rows))
        other.rows = [list(row) for row in self.rows]
        return other

    def text(self) -> list[str]:
        return ["".join(row) for row in self.rows]


def full_render(update: ChopsUpdate, console: Console) -> str:
    """Every chop of every rendered line, as a full repaint would write it."""
    move_to = Control.move_to
    return "".join(
        move_to(x, y).segment.text + strip.render(console)
        for y, line in enumerate(update.chops)
        for x, strip in line.items()
        if strip is not None
    )


def span_cover(screen: VirtualScreen, spans: Iterable[Span]) -> set[Cell]:
    """The cells of every character that overlaps a span (a wide one may cross its edge)."""
    cells: set[Cell] = set()
    for y, x1, x2 in spans:
        for x in range(x1, x2):
            cells.add((y, x))
            if screen.rows[y][x] == "":
                cells.add((y, x - 1))
            elif x + 1 < screen.width and screen.rows[y][x + 1] == "":
                cells.add((y, x + 1))
    return cells


def stale(screen: VirtualScreen, spans: Iterable[Span]) -> VirtualScreen:
    """``screen`` before the update: other text in the spans, but for characters crossing
    their edges (those were on screen already, or the terminal would show half of one)."""
    before = screen.copy()
    for y, x1, x2 in spans:
        row = before.rows[y]
        for x in range(x1, x2):
            crosses = (x == x1 and row[x] == "") or (
                x == x2 - 1 and x + 1 < screen.width and row[x + 1] == ""
            )
            if not crosses:
                row[x] = "~"
    return before


def chops_update(
    lines: Sequence[Sequence[Segment] | None], cuts: Sequence[int], width: int, spans: list[Span]
) -> ChopsUpdate:
    """A ``ChopsUpdate`` as the compositor builds one: each line divided at ``cuts``."""
    cut_set = [0, *cuts, width]
    chops: list[dict[int, Strip | None]] = []
    for segments in lines:
        if segments is None:
            chops.append(dict.fromkeys(cut_set[:-1]))
            continue
        strip = Strip(segments).crop_extend(0, width, None)
        chops.append(dict(zip(cut_set[:-1], strip.divide(cut_set[1:]), strict=True)))
    return ChopsUpdate(chops, spans, [cut_set[1:] for _ in lines])


CONSOLE = Console(width=40, color_system="truecolor", force_terminal=True)
BOLD = Style(bold=True)
RED = Style(color="red", bgcolor="black")
DIM = Style(dim=True)

# A sidebar (0-8) and a table (8-40), as a dashboard's chops would be.
LINES: list[list[Segment] | None] = [
    [
        Segment("menu    ", BOLD),
        Segment(" job-0001 ", DIM),
        Segment("in 3m", RED),
        Segment(" " * 17),
    ],
    # The span on this line starts on the right half of 中 and ends inside a styled segment.
    [
        Segment("side    "),
        Segment(" 中文 ", BOLD),
        Segment("heartbeat 41s ago", RED),
        Segment("." * 9),
    ],
    None,  # not dirty: the compositor renders no chops for it
    [Segment("x" * 8, DIM), Segment("abcdefghij", BOLD), Segment("k" * 22)],
]
CUTS = [8]
SPANS: list[Span] = [(0, 18, 23), (1, 10, 25), (3, 4, 12)]


def play(
    update: ChopsUpdate, method: textual_compat.RenderSegments
) -> tuple[str, VirtualScreen, VirtualScreen]:
    """Return what ``method`` writes, the screen after it, and the screen it should be."""
    expected = VirtualScreen(40, len(LINES))
    expected.feed(full_render(update, CONSOLE))
    screen = stale(expected, update.spans)
    screen.written.clear()
    output = method(update, CONSOLE)
    screen.feed(output)
    return output, screen, expected


def test_the_patch_writes_the_same_cells_inside_the_spans_and_none_outside() -> None:
    update = chops_update(LINES, CUTS, 40, SPANS)
    stock_output, stock_screen, expected = play(update, stock_render_segments())
    ours_output, ours_screen, _ = play(update, textual_compat.render_segments)

    assert stock_screen.text() == expected.text()
    assert ours_screen.text() == expected.text()
    cover = span_cover(expected, SPANS)
    assert ours_screen.written <= cover
    # The wide character at the start of line 1's span is written whole, from its left half.
    assert expected.rows[1][9:11] == ["中", ""]
    assert (1, 9) in ours_screen.written
    assert not stock_screen.written <= cover, "Textual itself writes outside the spans"
    assert len(ours_output.encode()) < len(stock_output.encode())


def test_a_span_starting_mid_segment_writes_from_the_span_start() -> None:
    update = chops_update(LINES, CUTS, 40, [(3, 12, 15)])
    output = textual_compat.render_segments(update, CONSOLE)
    assert output.startswith(Control.move_to(12, 3).segment.text)
    screen = VirtualScreen(40, len(LINES))
    screen.feed(output)
    assert screen.written == {(3, 12), (3, 13), (3, 14)}
    assert screen.text()[3][12:15] == "efg"


def test_whole_characters_widens_past_a_cut_wide_character() -> None:
    strip = Strip([Segment("ab"), Segment("中cd", BOLD)])  # a b 中中 c d
    assert textual_compat.whole_characters(strip, 3, 5) == (2, 5)
    assert textual_compat.whole_characters(strip, 0, 3) == (0, 4)
    assert textual_compat.whole_characters(strip, 2, 4) == (2, 4)
    assert textual_compat.whole_characters(strip, 1, 6) == (1, 6)
    # Joined emoji are measured as a whole by rich: keep such a segment whole.
    joined = Strip([Segment("ab"), Segment("👩\u200d💻x", RED), Segment("yz")])
    assert textual_compat.whole_characters(joined, 3, 4) == (2, joined.cell_length - 2)


TEXTS = st.text(alphabet="ab é中文", min_size=0, max_size=12)
SEGMENTS = st.lists(
    st.tuples(TEXTS, st.sampled_from([None, BOLD, RED, DIM])).map(lambda ts: Segment(*ts)),
    min_size=1,
    max_size=6,
)


Case = tuple[list[list[Segment] | None], list[int], int, list[Span]]


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """Lines of segments, the cuts between widgets, the screen width and the dirty spans."""
    width = draw(st.integers(min_value=4, max_value=30))
    cuts = sorted(draw(st.sets(st.integers(min_value=1, max_value=width - 1), max_size=3)))
    lines: list[list[Segment] | None] = []
    spans: list[Span] = []
    for y in range(draw(st.integers(min_value=1, max_value=4))):
        if draw(st.booleans()):
            lines.append(None)
            continue
        lines.append(draw(SEGMENTS))
        x1 = draw(st.integers(min_value=0, max_value=width - 1))
        x2 = draw(st.integers(min_value=x1 + 1, max_value=width))
        spans.append((y, x1, x2))
    if not spans:
        lines.append(draw(SEGMENTS))
        spans.append((len(lines) - 1, 0, width))
    return lines, cuts, width, spans


@settings(max_examples=300, deadline=None)
@given(cases())
def test_any_update_leaves_the_screen_right_and_writes_only_the_spans(case: Case) -> None:
    lines, cuts, width, spans = case
    update = chops_update(lines, cuts, width, spans)
    expected = VirtualScreen(width, len(lines))
    expected.feed(full_render(update, CONSOLE))
    screen = stale(expected, spans)
    screen.written.clear()
    screen.feed(textual_compat.render_segments(update, CONSOLE))
    assert screen.text() == expected.text()
    assert screen.written <= span_cover(expected, spans)


def test_install_is_idempotent_and_keeps_textuals_method() -> None:
    assert install_cropped_updates()
    assert install_cropped_updates()
    assert ChopsUpdate.render_segments is textual_compat.render_segments
    stock = stock_render_segments()
    assert stock is not textual_compat.render_segments
    assert stock.__qualname__ == "ChopsUpdate.render_segments"


def test_building_the_app_patches_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only ``zombietop`` itself (tui/launch.py) patches Textual: an app built by a test or a
    tool leaves the process as it found it."""
    from zombietop.tui.app import ZombietopApp
    from zombietop.tui.testing import SampleSource

    stock = stock_render_segments()
    monkeypatch.setattr(ChopsUpdate, "render_segments", stock)
    ZombietopApp(SampleSource())
    ZombietopApp(SampleSource(), wall=True)
    assert ChopsUpdate.render_segments is stock


def test_the_version_read_from_the_folder_name_is_the_installed_one() -> None:
    """The version comes from the name of Textual's dist-info folder, not from
    importlib.metadata (costly to import at start); both must say the same."""
    from importlib import metadata

    major, minor, *_ = metadata.version("textual").split(".")
    assert textual_compat.textual_version() == (int(major), int(minor))


def test_no_metadata_folder_leaves_the_version_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Textual with no dist-info beside it (run from a source tree) is not the tested one:
    the shims step aside."""
    package = tmp_path / "textual"
    package.mkdir()
    (tmp_path / "textual-8.2.8.egg-info").mkdir()
    monkeypatch.setattr(textual_compat.textual, "__file__", str(package / "__init__.py"))
    assert textual_compat.textual_version() is None


@pytest.mark.parametrize("version", [(8, 1), (8, 3), (9, 0), None])
def test_install_leaves_other_textual_versions_alone(
    version: tuple[int, int] | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    stock = stock_render_segments()
    monkeypatch.setattr(ChopsUpdate, "render_segments", stock)
    monkeypatch.setattr(textual_compat, "textual_version", lambda: version)
    assert not install_cropped_updates()
    assert ChopsUpdate.render_segments is stock


def test_install_leaves_a_changed_chops_update_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    stock = stock_render_segments()
    monkeypatch.setattr(ChopsUpdate, "render_segments", stock)

    def changed(self: ChopsUpdate, chops: object, spans: object) -> None:
        """A future ChopsUpdate built from other attributes."""

    monkeypatch.setattr(ChopsUpdate, "__init__", changed)
    assert not install_cropped_updates()
    assert ChopsUpdate.render_segments is stock


def test_pyproject_allows_the_tested_version_up_to_the_next_major() -> None:
    """On another minor version the shims step aside (the test above): nothing in the pin
    needs to stop at the minor they were written against."""
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    pin = next(d for d in extras["all"] if d.startswith("textual"))
    major, minor = textual_compat.TESTED
    assert pin.replace(" ", "") == f"textual>={major}.{minor},<{major + 1}"
    assert not any(d.startswith("textual") for d in pyproject["project"]["dependencies"])


async def test_on_another_textual_the_dashboard_draws_with_textuals_own_methods(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The version check fails (a Textual 8.3): the real app at 80x24 installs no shim, and a
    one-cell change still reaches the screen, through Textual's own partial update."""
    from textual.drivers.linux_driver import LinuxDriver

    from zombietop.judge.monitor import TaskView, build_snapshot
    from zombietop.tui.testing import NOW, sample_config, sample_records, sample_samples

    stock = stock_render_segments()
    monkeypatch.setattr(ChopsUpdate, "render_segments", stock)
    monkeypatch.setattr(textual_compat, "textual_version", lambda: (8, 3))
    app = make_app(read_only=True)
    assert ChopsUpdate.render_segments is stock
    assert textual_compat.quiet_driver(LinuxDriver) is LinuxDriver
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        updates = partial_updates(app)
        table = app.main.query_one(TaskList)
        task_id = "resize-9001"

        def renewed() -> tuple[TaskView, ...]:
            records = [
                replace(r, lease=replace(r.lease, expires_at=r.lease.expires_at + 300))
                if r.task.task_id == task_id and r.lease is not None and r.lease.expires_at
                else r
                for r in sample_records()
            ]
            return build_snapshot(NOW, records, sample_config(), sample_samples()).tasks

        index = table.index_of(task_id)
        assert index is not None
        lease = [c.key for c in table.shown_columns].index("lease")
        table.show(renewed(), NOW)
        await pilot.pause()
        assert updates, "the change was never sent to the terminal"
        screen = VirtualScreen(80, 24, fill="~")
        for update in updates:
            screen.feed(update.render_segments(app.console))
        left = table.region.x + sum(c.width + 2 for c in table.shown_columns[:lease])
        row = table.region.y + 1 + index
        shown = table.cells_of(task_id)[lease].plain
        assert shown in screen.text()[row][left : left + table.shown_columns[lease].width + 2]


def test_the_shims_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from textual.drivers.linux_driver import LinuxDriver

    stock = stock_render_segments()
    monkeypatch.setattr(ChopsUpdate, "render_segments", stock)
    monkeypatch.setenv("ZOMBIETOP_TEXTUAL_SHIMS", "off")
    assert not install_cropped_updates()
    assert ChopsUpdate.render_segments is stock
    assert textual_compat.quiet_driver(LinuxDriver) is LinuxDriver
    monkeypatch.setenv("ZOMBIETOP_TEXTUAL_SHIMS", "quiet_driver")
    assert textual_compat.quiet_driver(LinuxDriver) is LinuxDriver
    assert install_cropped_updates()
    monkeypatch.delenv("ZOMBIETOP_TEXTUAL_SHIMS")
    assert textual_compat.quiet_driver(LinuxDriver) is not LinuxDriver


def test_the_quiet_driver_is_only_ever_in_place_of_textuals_linux_driver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from textual.drivers.headless_driver import HeadlessDriver
    from textual.drivers.linux_driver import LinuxDriver

    assert textual_compat.quiet_driver(HeadlessDriver) is HeadlessDriver
    quiet = textual_compat.quiet_driver(LinuxDriver)
    assert issubclass(quiet, LinuxDriver) and quiet is not LinuxDriver
    monkeypatch.setattr(textual_compat, "textual_version", lambda: (8, 3))
    assert textual_compat.quiet_driver(LinuxDriver) is LinuxDriver
    monkeypatch.undo()
    monkeypatch.delattr(LinuxDriver, "run_input_thread")  # a Textual that reads input otherwise
    assert textual_compat.quiet_driver(LinuxDriver) is LinuxDriver


def partial_updates(app: App[None]) -> list[ChopsUpdate]:
    """Collect every partial screen update the app sends to its terminal from now on."""
    updates: list[ChopsUpdate] = []
    display = app._display

    def spy(screen: object, renderable: object) -> None:
        if isinstance(renderable, ChopsUpdate):
            updates.append(renderable)
        display(screen, renderable)  # type: ignore[arg-type]

    app._display = spy  # type: ignore[method-assign]
    return updates


async def test_a_one_cell_change_on_the_dashboard_writes_about_that_cell() -> None:
    """The real app at 80x24: a new lease cell in a row is written as that cell, no more."""
    from zombietop.judge.monitor import TaskView, build_snapshot
    from zombietop.tui.testing import NOW, sample_config, sample_records, sample_samples

    app = make_app(read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        updates = partial_updates(app)
        table = app.main.query_one(TaskList)

        def renewed(*task_ids: str) -> tuple[TaskView, ...]:
            records = [
                replace(r, lease=replace(r.lease, expires_at=r.lease.expires_at + 300))
                if r.task.task_id in task_ids and r.lease is not None and r.lease.expires_at
                else r
                for r in sample_records()
            ]
            return build_snapshot(NOW, records, sample_config(), sample_samples()).tasks

        # The first partial update after a full one also repaints what was marked dirty while
        # the full one was drawn (Textual keeps those regions): get that out of the way.
        table.show(renewed("train-0008"), NOW)
        await pilot.pause()
        updates.clear()
        task_id = "resize-9001"  # healthy, its lease "in 4m"
        index = table.index_of(task_id)
        assert index is not None
        before = table.cells_of(task_id)
        table.show(renewed("train-0008", task_id), NOW)
        await pilot.pause()
        lease = [c.key for c in table.shown_columns].index("lease")
        changed = [
            i
            for i, (a, b) in enumerate(zip(before, table.cells_of(task_id), strict=True))
            if a != b
        ]
        assert changed == [lease]

        assert len(updates) == 1
        (update,) = updates
        left = table.region.x + sum(c.width + 2 for c in table.shown_columns[:lease])
        width = table.shown_columns[lease].width + 2
        row = table.region.y + 1 + index  # under the header
        cell = {(row, x) for x in range(left, left + width)}

        screens: dict[str, VirtualScreen] = {}
        outputs: dict[str, str] = {}
        for name, method in (
            ("stock", stock_render_segments()),
            ("ours", textual_compat.render_segments),
        ):
            screen = VirtualScreen(80, 24, fill="~")
            outputs[name] = method(update, app.console)
            screen.feed(outputs[name])
            screens[name] = screen
        assert screens["ours"].written == cell
        assert screens["stock"].written > cell, "Textual writes the row from the table's edge"
        assert (
            table.cells_of(task_id)[lease].plain in screens["ours"].text()[row][left : left + width]
        )
        assert [screens["ours"].rows[row][x] for x in range(left, left + width)] == [
            screens["stock"].rows[row][x] for x in range(left, left + width)
        ]
        assert len(outputs["ours"]) < len(outputs["stock"]) / 3


@pytest.mark.parametrize(
    ("before", "after", "cells"),
    [
        ("at 12:55:29 UTC", "at 12:55:30 UTC", (9, 11)),
        ("at 12:55:38 UTC", "at 12:55:39 UTC", (10, 11)),
        ("at 12:59:59 UTC", "at 13:00:00 UTC", (4, 11)),
        ("● 3 at 09:00:01", "● 3 at 09:00:02", (14, 15)),
        ("short", "longer", None),
        ("same", "same", None),
    ],
)
def test_changed_cells_finds_the_ticking_span(
    before: str, after: str, cells: tuple[int, int] | None
) -> None:
    assert changed_cells(Text(before), Text(after)) == cells


async def test_a_clock_tick_writes_the_digits_that_changed_at_their_own_place() -> None:
    """The header's clock ticks every poll: only its changed digits go to the terminal, where
    the clock is (a region off by the header's padding once blanked the cell next to them)."""
    app = make_app(read_only=True)
    async with app.run_test(size=(120, 30)) as pilot:  # wide enough not to wrap the line
        await settle(pilot)
        header = app.main.query_one(StatusHeader)
        updates = partial_updates(app)
        # The first partial update after a full one also repaints what was marked dirty while
        # the full one was drawn: get that out of the way.
        start = header.now = int(header.now) // 3600 * 3600 + 20 * 60 + 28  # HH:20:28
        await settle(pilot)
        for tick, changed in ((1, 1), (32, 3)):  # to HH:20:29, then across a minute to HH:21:00
            before = clock_text(start if tick == 1 else start + 1)
            updates.clear()
            header.now = start + tick
            await pilot.pause()
            after = clock_text(start + tick)
            line = header.render().split("\n")[0].plain
            x0 = header.region.x + header.gutter.left + line.index(after)
            digits = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
            assert len(digits) == changed
            screen = VirtualScreen(120, 30)
            screen.feed(textual_compat.render_segments(updates[0], app.console))
            row = header.region.y
            on_row = {cell for cell in screen.written if cell[0] == row}
            assert on_row == {(row, x0 + i) for i in range(digits[0], digits[-1] + 1)}
            assert all(screen.rows[row][x0 + i] == after[i] for i in digits)


async def test_the_header_draws_a_ticking_clock_as_a_fresh_layout_would() -> None:
    """Second after second, across a minute and an hour, the header's first line is what
    Textual's own layout draws for it."""
    app = make_app(read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        header = app.main.query_one(StatusHeader)
        header.store = "/var/lib/zombietop/" + "deep/" * 20 + "zombietop.db"  # shortened: …
        start = int(header.now) // 3600 * 3600 + 3600 - 62  # HH:58:58
        for tick in range(70):
            header.now = start + tick
            await pilot.pause()
            line = header.render().split("\n")[0]
            fresh = Visual.to_strips(
                header, visualize(header, line), header.size.width, 1, header.visual_style
            )[0]
            assert "…" in line.plain
            assert header.render_line(0) == fresh


@pytest.mark.parametrize(
    ("room", "shown"),
    [
        (60, "/var/lib/zombietop/zombietop.db (read-only)"),
        (30, "/var/lib/…ietop.db (read-only)"),
        (3, "…y)"),
        (1, "…"),
        (0, ""),
    ],
)
def test_a_long_store_path_gives_way_in_its_middle(room: int, shown: str) -> None:
    from zombietop.tui.widgets.header import shorten_middle

    assert shorten_middle("/var/lib/zombietop/zombietop.db (read-only)", room) == shown
