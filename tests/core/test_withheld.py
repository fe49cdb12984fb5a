"""``WithheldStretch`` alone: a stretch of looks whose verdicts are withheld is said once as it
starts and once as it ends, with how long it lasted and how many looks it took."""

from __future__ import annotations

from zombietop.watch.withheld import WithheldStretch


def test_a_stretch_is_said_as_it_starts_and_as_it_ends() -> None:
    stretch = WithheldStretch()
    assert stretch.look(None, 0.0) is None and not stretch.open
    assert stretch.look("store lags", 10.0) == "verdicts withheld: store lags"
    assert stretch.open
    assert stretch.look("store lags", 40.0) is None  # once per stretch, not per look
    assert stretch.look("another reason", 70.0) is None
    assert stretch.look(None, 100.0) == "verdicts acted on again, after 1m30s withheld (3 looks)"
    assert not stretch.open
    assert stretch.look(None, 130.0) is None


def test_a_reason_said_already_is_not_said_twice_but_its_stretch_still_ends() -> None:
    stretch = WithheldStretch()
    assert stretch.look("the store's clock jumped", 0.0, told=True) is None
    assert stretch.open
    assert stretch.look(None, 30.0) == "verdicts acted on again, after 30s withheld (1 looks)"
