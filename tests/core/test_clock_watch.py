"""``ClockWatch`` alone: when the ages one look of the watchdog reads can be trusted.

Each test gives it the store's time, this host's monotonic clock before and after the poll
and its wall clock, look after look, as the watchdog does; no store, no watchdog. The
watchdog's own tests (test_clock_jump.py) show the same faults end to end.
"""

from __future__ import annotations

import pytest

from zombietop.watch.clock_watch import AGREE_AGAIN, Beat, ClockVerdict, ClockWatch

START = 1_000_000.0
"""The store's time at the first look."""
HOUR = 3600.0


class Looks:
    """Drive a ClockWatch look by look: the store's clock, the monotonic and the wall clock."""

    def __init__(self, watch: ClockWatch) -> None:
        self.watch = watch
        self.store = START
        self.mono = 0.0
        self.wall = START

    def look(self, beats: tuple[Beat, ...] = (), *, poll: float = 0.1) -> ClockVerdict:
        """One look whose poll took ``poll`` seconds (the store's time read within it)."""
        return self.watch.check(self.store, beats, (self.mono, self.mono + poll), self.wall)

    def wait(self, seconds: float, *, store: float = 0.0, wall: float = 0.0) -> None:
        """Let ``seconds`` pass on every clock, the store's moving ``store`` more, the wall
        clock ``wall`` more."""
        self.store += seconds + store
        self.mono += seconds
        self.wall += seconds + wall


def remote() -> Looks:
    """A store whose clock is read elsewhere (PostgreSQL): this process's clock is not checked."""
    return Looks(ClockWatch(local=False))


def test_clocks_that_agree_are_trusted_from_the_first_look() -> None:
    looks = remote()
    for _ in range(3):
        verdict = looks.look()
        assert verdict.withheld is None and verdict.said == () and verdict.recorded is None
        looks.wait(30)


def test_a_jump_of_the_stores_clock_withholds_that_look_only_and_is_remembered() -> None:
    looks = remote()
    looks.look()
    looks.wait(30, store=HOUR)
    verdict = looks.look()
    assert verdict.withheld is not None
    assert verdict.withheld.startswith(
        "the store's clock jumped +1h00m between two looks 30s apart"
    )
    assert verdict.recorded == verdict.withheld  # for the event log, said as it happens
    looks.wait(30)
    assert looks.look().withheld is None  # one round withheld, not more
    # A stage that began before the jump ran an hour less than the store's clock says.
    assert looks.watch.jumped_since(START) == pytest.approx(HOUR, abs=1)
    assert looks.watch.jumped_since(looks.store) == 0.0


def test_a_slow_poll_is_no_jump() -> None:
    """The store's time is read somewhere within the poll: a poll of 40 s widens the window."""
    for poll, jumped in ((0.1, True), (40.0, False)):
        looks = remote()
        looks.look()
        looks.wait(30, store=35)  # the store's clock moved 65 s
        assert (looks.look(poll=poll).withheld is not None) is jumped, poll


def test_a_step_of_the_wall_clock_alone_is_said_and_withholds_nothing() -> None:
    looks = remote()
    looks.look()
    looks.wait(30, wall=HOUR)
    verdict = looks.look()
    assert verdict.withheld is None
    assert verdict.said == (
        "this host's wall clock stepped +1h00m; ages are measured on the store's clock, "
        "which did not move: nothing withheld",
    )


def test_a_beat_older_than_the_time_between_two_looks_means_the_store_is_read_wrong() -> None:
    looks = remote()
    looks.look((Beat(task_id="t1", seq=1, written_at=START - 5),))
    looks.wait(30)
    # It beat since the last look (seq 2), yet it looks an hour old.
    wrong = (Beat(task_id="t1", seq=2, written_at=looks.store - HOUR),)
    first = looks.look(wrong)
    assert first.withheld is not None
    assert first.withheld.startswith(
        "1 task(s) beat since the last look 30s ago yet look 1h00m old (t1): this host reads "
        "the store's clock wrong"
    )
    assert first.recorded == first.withheld
    looks.wait(30)
    wrong = (Beat(task_id="t1", seq=3, written_at=looks.store - HOUR),)
    again = looks.look(wrong)
    assert again.withheld is not None and again.recorded is None  # recorded once per stretch
    looks.wait(30)
    agreed = looks.look((Beat(task_id="t1", seq=4, written_at=looks.store - 1),))
    assert agreed.withheld is None and agreed.said == (AGREE_AGAIN["beats"],)


def test_a_task_that_did_not_beat_since_the_last_look_is_no_evidence() -> None:
    looks = remote()
    silent = (Beat(task_id="t1", seq=7, written_at=START - HOUR),)
    looks.look(silent)
    looks.wait(30)
    assert looks.look(silent).withheld is None  # old, but it did not beat: a stall, not a clock


def test_a_process_that_reads_its_boot_clock_off_the_kernels_count_withholds_at_once() -> None:
    """No look before it is needed: the kernel's count in /proc/uptime is the reference."""
    off = [HOUR]
    watch = ClockWatch(local=True, boottime=lambda: 500.0 + off[0], uptime=lambda: 500.0)
    looks = Looks(watch)
    first = looks.look()
    assert first.withheld is not None
    assert first.withheld.startswith(
        "this process reads the boot clock +1h00m off the kernel's own count (/proc/uptime)"
    )
    assert first.recorded == first.withheld
    looks.wait(30)
    assert looks.look().recorded is None  # still off: withheld, not recorded again
    off[0] = 0.0
    looks.wait(30)
    agreed = looks.look()
    assert agreed.withheld is None and agreed.said == (AGREE_AGAIN["process"],)


def test_a_store_read_elsewhere_does_not_check_this_process_clock() -> None:
    watch = ClockWatch(local=False, boottime=lambda: 500.0 + HOUR, uptime=lambda: 500.0)
    assert Looks(watch).look().withheld is None


def test_an_unknown_process_clock_is_no_reason_to_withhold() -> None:
    watch = ClockWatch(local=True, boottime=lambda: None, uptime=lambda: 500.0)
    assert watch.process_clock_error() is None
    assert Looks(watch).look().withheld is None
