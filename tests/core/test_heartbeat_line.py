"""The heartbeat line: examples, every documented error, and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zombietop.errors import HeartbeatParseError
from zombietop.heartbeat_line import KNOWN_KEYS, BeatLine, format_line, parse_line


def test_the_seed_line() -> None:
    beat = parse_line("stage=transform p=61 eta=42m rows=8200000 at=2026-11-29T03:42:00Z")
    assert beat.stage == "transform"
    assert beat.progress == 61
    assert beat.eta_s == 42 * 60
    assert beat.counters == {"rows": 8200000}
    assert beat.at == 1795923720.0
    assert format_line(beat) == "stage=transform p=61 eta=42m rows=8200000 at=2026-11-29T03:42:00Z"


def test_known_keys_and_quoting() -> None:
    beat = parse_line(
        'stage="load warehouse" p=99.5 checkpoint=/data/ckpt-41 req=s3.put '
        "req_at=2026-11-29T03:40:00+01:00 trace=abc123 bytes=1.5e3\n"
    )
    assert beat.stage == "load warehouse"
    assert beat.progress == 99.5
    assert beat.checkpoint == "/data/ckpt-41"
    assert beat.request == "s3.put"
    assert beat.request_at == 1795920000.0
    assert beat.trace == "abc123"
    assert beat.counters == {"bytes": 1500}
    assert parse_line(format_line(beat)) == beat


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("", "empty line"),
        ("   ", "empty line"),
        ("transform", "'transform' is not key=value"),
        ("=5", "'' is not a valid key"),
        ("9lives=1", "'9lives' is not a valid key"),
        ("p=61 p=62", "'p' appears twice"),
        ("p=abc", "p='abc' is not a number"),
        ("p=101", "p=101 is outside 0..100"),
        ("p=-1", "outside 0..100"),
        ("p=nan", "not a finite number"),
        ("rows=12k", "rows='12k' is not a number"),
        ("eta=soon", "eta='soon' is not a duration"),
        ("at=yesterday", "is not an ISO 8601 time"),
        ("at=2026-11-29T03:42:00", "has no zone; end it with Z"),
        ('stage="unterminated', "unterminated quote"),
        ('stage="a"b', "text right after the closing quote"),
        ('stage=a"b', "stray quote"),
        ("stage=", "stage is empty"),
        ("stage=x\x00", "control characters"),
        ("stage=\x1b]2;owned\x07", "control characters"),
        ("stage=del\x7f", "control characters"),
        ("stage=c1\x9b2J", "control characters"),
        ("stage=c1\x85next", "control characters"),
        ("p=1 " + "x" * 9000, "longer than 8192"),
    ],
)
def test_each_documented_error_carries_the_line(line: str, problem: str) -> None:
    with pytest.raises(HeartbeatParseError) as caught:
        parse_line(line)
    assert problem in str(caught.value)
    assert caught.value.line == line.rstrip("\r\n")


def test_non_text_is_a_parse_error_too() -> None:
    with pytest.raises(HeartbeatParseError):
        parse_line(b"p=1")  # type: ignore[arg-type]


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_yields_a_beat_or_the_documented_error(text: str) -> None:
    try:
        beat = parse_line(text)
    except HeartbeatParseError as exc:
        assert exc.line is not None
        return
    assert isinstance(beat, BeatLine)


_token_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=12
)
_pieces = st.one_of(
    st.sampled_from(["stage=", "p=", "eta=", "at=", "rows=", "req=", "=", '"', "\\", " ", "\t"]),
    st.from_regex(r"[a-z_]{1,6}=[-0-9.e]{0,6}", fullmatch=True),
    _token_text,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_pieces, max_size=12).map("".join))
def test_near_miss_lines_yield_a_beat_or_the_documented_error(text: str) -> None:
    try:
        parse_line(text)
    except HeartbeatParseError:
        pass


_counter_name = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True).filter(
    lambda k: k not in KNOWN_KEYS
)
_words = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=20)
_beats = st.builds(
    BeatLine,
    stage=st.none() | _words,
    progress=st.none()
    | st.integers(0, 100)
    | st.floats(0, 100, allow_nan=False).filter(lambda f: not f.is_integer()),
    eta_s=st.none() | st.integers(0, 10**6).map(float),
    at=st.none() | st.integers(0, 4 * 10**9).map(float),
    checkpoint=st.none() | _words,
    request=st.none() | _words,
    trace=st.none() | _words,
    counters=st.dictionaries(_counter_name, st.integers(0, 2**53 - 1), max_size=4),
)


@settings(max_examples=300, deadline=None)
@given(_beats)
def test_format_then_parse_gives_the_beat_back(beat: BeatLine) -> None:
    if beat == BeatLine():
        return
    assert parse_line(format_line(beat)) == beat
