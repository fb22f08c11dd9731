"""Promises as intervals (`simulate.promise_intervals`), by hand."""

from __future__ import annotations

import pytest

from horizon_opt.loop.lateness import (
    MIN_RESOLVED,
    STEP,
    calibrated_level,
    lateness_shares,
    size_class,
)
from horizon_opt.simulate.promise_intervals import Promise, PromiseBook
from horizon_opt.simulate.window import Window


def test_before_any_history_p50_is_the_prediction_and_p90_as_far_past_as_it_is_ahead() -> None:
    book = PromiseBook()
    book.promise(0, made=2, predicted=6)  # 4 slots ahead: P90 at 6 + 4
    assert book.first[0] == Promise(2, 6, 6, 10)
    book.promise(0, made=3, predicted=9)  # only the first promise counts
    assert book.first[0].predicted == 6


def test_later_promises_learn_the_lateness_of_those_before() -> None:
    """Ten promises made at 0 for slot 10, each started 5 slots late (lateness 0.5 of a 10-slot
    lead): a promise made at 20 for 24 (lead 4) gets P50 = P90 = 24 + 2."""
    book = PromiseBook()
    for j in range(MIN_RESOLVED):
        book.promise(j, 0, 10)
        book.start(j, 15)
    book.promise(99, 20, 24)
    assert book.first[99] == Promise(20, 24, 26, 26)


def test_overdue_promises_count_their_lateness_so_far() -> None:
    """Ten promises for slot 10 made at 0, none started by 30: lateness so far 2.0 each, so a
    promise made at 30 for 32 (lead 2) gets P50 = P90 = 32 + 4."""
    book = PromiseBook()
    for j in range(MIN_RESOLVED):
        book.promise(j, 0, 10)
    book.promise(99, 30, 32)
    assert book.first[99] == Promise(30, 32, 36, 36)


def test_figures_count_an_unstarted_job_at_the_horizon_end() -> None:
    """Promised 4 and 8 (P50 4 and 8, P90 8 and 16); started at 5 and never (horizon 20):
    errors 1 and 12 (median 6.5 slots, 3.25 h at 30 minutes); 5 <= 8 covered, 20 > 16 not."""
    book = PromiseBook()
    book.promise(0, 0, 4)
    book.promise(1, 0, 8)
    book.start(0, 5)
    book.start(2, 1)  # never promised: not counted
    assert book.figures(20, 0.5) == (2, 3.25, 3.25, pytest.approx(0.5))
    assert PromiseBook().figures(20, 0.5) == (0, 0.0, 0.0, 0.0)


def test_a_started_job_is_promised_nothing_and_waits_for_nothing() -> None:
    book = PromiseBook()
    book.start(0, 3)
    book.promise(0, 4, 9)
    book.promise(1, 4, 9)
    assert book.first.keys() == {1}
    assert book.waiting() == {1: 9}


def test_overdue_promises_count_and_promises_not_yet_due_do_not() -> None:
    """Five promises came true on time (lateness 0), five a lead late (1), ten still wait two
    leads late (2 so far), three are not yet due: over the twenty that count, P50 = 1.5 and
    P90 = 2."""

    def late(*shares: float) -> list[tuple[str, float]]:
        return [("", x) for x in shares]

    assert lateness_shares(late(*[0.0] * 5, *[1.0] * 5), late(*[2.0] * 10, *[-0.5] * 3)) == (
        1.5,
        2.0,
    )
    # Fewer than MIN_RESOLVED came true or are overdue.
    assert lateness_shares(late(*[0.2] * 5), late(*[0.3] * 4, *[-0.5] * 9)) == (0.0, 1.0)


def test_a_promise_learns_from_its_size_class_once_it_has_enough() -> None:
    """Ten 1-GPU promises came true on time (lateness 0), ten 32-GPU ones two leads late: a
    32-GPU promise reads its own class (P50 = P90 = 2), a 16-GPU one, whose class has none,
    reads all twenty (P50 = 1, P90 = 2), and a 32-GPU one with five of its class too."""
    small, big = size_class(1), size_class(32)
    history = [(small, 0.0)] * 10 + [(big, 2.0)] * 10
    assert lateness_shares(history, [], big) == (2.0, 2.0)
    assert lateness_shares(history, [], size_class(16)) == (1.0, 2.0)
    assert lateness_shares(history[:15], [], big) == (0.0, 2.0)
    assert [size_class(g) for g in (1, 2, 4, 5, 16, 17)] == [
        "1 GPU",
        "2-4 GPUs",
        "2-4 GPUs",
        "5-16 GPUs",
        "5-16 GPUs",
        "over 16 GPUs",
    ]


def test_the_p90_quantile_moves_up_with_misses_and_down_with_hits() -> None:
    """From 0.9, each miss adds 0.02 x 0.9 and each hit takes 0.02 x 0.1 away, within [0.5, 1]:
    one miss and nine hits leave it at 0.9; ten misses reach 1."""
    assert calibrated_level([]) == 0.9
    assert calibrated_level([True] + [False] * 9) == pytest.approx(0.9)
    assert calibrated_level([True]) == pytest.approx(0.9 + STEP * 0.9)
    assert calibrated_level([True] * 10) == 1.0
    assert calibrated_level([False] * 1000) == 0.5


def test_missed_p90s_widen_the_next_promises() -> None:
    """Ten promises made at 0 for 10, each with P90 20 (lateness 1 before any history): five
    start at 10 (lateness 0), four at 30 and one at 50 (2 and 4), past their P90. By 50 five
    missed: the level is 0.9 + 0.02 x (5 x 0.9 - 5 x 0.1) = 0.98, where the lateness reads
    2 + 0.82 x 2 = 3.64 (at 0.9: 2.2), so a promise made at 50 for 52 gets P90 52 + ceil(7.28)."""
    book = PromiseBook()
    for j in range(10):
        book.promise(j, 0, 10)
    for j, start in enumerate([10] * 5 + [30] * 4 + [50]):
        book.start(j, start)
    book.promise(99, 50, 52)
    assert book.first[99].p90 == 52 + 8


def test_figures_count_the_promises_made_in_the_window() -> None:
    """Promised at 0 (warm-up) and at 6 (in the window 5-15): only the second counts."""
    book = PromiseBook()
    book.promise(0, 0, 4)
    book.promise(1, 6, 10)
    book.start(0, 12)
    book.start(1, 10)
    assert book.figures(20, 0.5, Window(5, 15)) == (1, 0.0, 0.0, 1.0)
    assert book.figures(20, 0.5)[0] == 2


def test_a_job_cancelled_before_it_starts_voids_its_promise() -> None:
    """Promised 4 and 8; job 1 is cancelled (a job it waited for failed) before it starts: its
    promise leaves the book, so only job 0's counts (started at 5, by its P90 of 8)."""
    book = PromiseBook()
    book.promise(0, 0, 4)
    book.promise(1, 0, 8)
    book.start(0, 5)
    book.cancel(1)
    book.promise(1, 2, 9)  # a void job is promised nothing again
    book.cancel(0)  # started: its promise stands
    assert book.first.keys() == {0}
    assert book.waiting() == {}
    assert book.figures(20, 0.5) == (1, 0.5, 0.5, 1.0)
