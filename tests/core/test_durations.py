import pytest

from zombietop.durations import format_age, format_duration, parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("15m", 900.0),
        ("6h", 21600.0),
        ("1h30m", 5400.0),
        ("2d", 172800.0),
        ("250ms", 0.25),
        ("1.5s", 1.5),
        (" 10 s ", 10.0),
        ("0s", 0.0),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "15", "m", "15x", "1h 30", "-5s", "s15", "1.2.3s"])
def test_parse_duration_rejects_with_the_accepted_forms(text: str) -> None:
    with pytest.raises(ValueError, match=r"use a number and a unit"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (90, "90s"),
        (900, "15m"),
        (21600, "6h"),
        (5400, "90m"),
        (0.25, "250ms"),
        (0, "0s"),
        (86400, "1d"),
    ],
)
def test_format_duration_round_trips(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (41.9, "41s"),
        (185, "3m05s"),
        (15132, "4h12m"),
        (3 * 86400 + 7200, "3d02h"),
        (-90, "1m30s"),
    ],
)
def test_format_age(seconds: float, text: str) -> None:
    assert format_age(seconds) == text
