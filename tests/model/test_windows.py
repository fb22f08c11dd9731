"""Each job's `StartWindow`, the one answer to "when may this job start and end", read by every
search: worked out by hand on test_placed's STATE (now = 2, a running and a reserved job)."""

from __future__ import annotations

from test_placed import STATE, compiled

from horizon_opt.model.windows import StartDomain, StartWindow
from horizon_opt.solvers.residual import residual_instance


def window(earliest: int, ready: int, latest_end: int, useful_end: int) -> tuple[int, ...]:
    return (earliest, ready, latest_end, 8, useful_end)  # the horizon is 8 slots


def fields(w: StartWindow) -> tuple[int, ...]:
    return (w.earliest, w.ready, w.latest_end, w.horizon, w.useful_end)


def test_windows_apply_now_placed_starts_deadlines_and_successors() -> None:
    inst = compiled(STATE)
    got = {job.id: fields(w) for job, w in zip(inst.jobs, inst.windows, strict=True)}
    assert got == {
        "run": window(0, 0, 8, 8),  # placed: its placed start, though before now
        "res": window(3, 3, 8, 8),
        # released at 0, not before now (2); after res's shortest run (3 + 2); deadline 7
        "next": window(2, 5, 7, 7),
        "free": window(2, 2, 8, 8),
        "whole": window(2, 2, 4, 4),
    }
    nxt = inst.windows[inst.job_index["next"]]
    # 2-slot runs on pool 0: from its earliest start to the horizon's end, every start (2..6);
    # from ready (5), ending by its deadline (7), only 5.
    assert nxt.starts(0) == StartDomain(((2, 6),))
    assert nxt.allowed(2, 5, 7) == StartDomain(((5, 5),)) and nxt.allowed(2, 6, 7).last() is None
    assert nxt.in_time_from(5) and not nxt.in_time_from(6)
    assert nxt.on_time(7) and not nxt.on_time(8)
    assert nxt.after([4, 6]) == 6 and nxt.after([]) == 2


def test_residual_windows_start_after_placed_predecessors() -> None:
    res = residual_instance(compiled(STATE))
    got = {job.id: fields(w) for job, w in zip(res.jobs, res.windows, strict=True)}
    assert got == {
        "next": window(5, 5, 7, 7),  # res, placed, ends at 5: a release in the residual
        "free": window(2, 2, 8, 8),
        "whole": window(2, 2, 4, 4),
    }
