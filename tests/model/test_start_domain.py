"""A job's allowed starts (`windows.StartDomain`) and the `blackout` field that punches holes in
them, worked out by hand."""

from __future__ import annotations

import re
from typing import Any

import pytest

import horizon_opt as ho
from horizon_opt.errors import InstanceError
from horizon_opt.model.load import parse_spec
from horizon_opt.model.windows import StartDomain, allowed_starts

DOMAIN = StartDomain(((0, 2), (5, 5), (8, 9)))


def test_first_from_last_and_membership() -> None:
    assert [DOMAIN.first_from(t) for t in (-3, 1, 3, 5, 6, 9, 10)] == [0, 1, 5, 5, 8, 9, None]
    assert DOMAIN.last() == 9 and StartDomain().last() is None
    assert [s for s in range(-1, 11) if s in DOMAIN] == [0, 1, 2, 5, 8, 9]
    assert DOMAIN.array().tolist() == [0, 1, 2, 5, 8, 9]
    assert not StartDomain() and StartDomain().array().tolist() == []


def test_without_cuts_intervals() -> None:
    assert DOMAIN.without(2, 8) == StartDomain(((0, 1), (9, 9)))
    assert DOMAIN.without(3, 4) == DOMAIN and DOMAIN.without(-5, 20) == StartDomain()
    assert StartDomain.span(3, 2) == StartDomain()


def test_a_blackout_forbids_every_start_whose_run_touches_it() -> None:
    """Runs of 2 slots, ending by 8, blackout [1, 3): a start s runs over [s, s + 2), which
    misses [1, 3) when s + 2 <= 1 or s >= 3: no start of 0..2 (0 runs through slot 1), so 3..6."""
    assert allowed_starts(2, 0, 8, [(1, 3)]) == StartDomain(((3, 6),))
    # [1, 2) and [5, 6) with 1-slot runs: 0, 2..4, 6..7
    assert allowed_starts(1, 0, 8, [(1, 2), (5, 6)]) == StartDomain(((0, 0), (2, 4), (6, 7)))


def spec(*blackout: dict[str, Any], start: str | None = None) -> dict[str, Any]:
    return {
        "name": "blackout",
        "horizon": {"slots": 8, **({"start": start} if start else {})},
        "pools": [{"name": "a", "gpu_type": "h100", "nodes": 1, "gpus_per_node": 8}],
        "jobs": [{"id": "j", "priority": 1, "gpus": 8, "duration": 2, "blackout": list(blackout)}],
    }


def test_blackouts_compile_sorted_and_merged_into_the_window() -> None:
    inst = ho.compile_instance(
        parse_spec(spec({"start": 5, "end": 6}, {"start": 1, "end": 3}, {"start": 2, "end": 4}))
    )
    assert inst.jobs[0].blackouts == ((1, 4), (5, 6))
    # 2-slot runs within [0, 8) missing [1, 4) and [5, 6): only a start at 6
    assert inst.windows[0].starts(0) == StartDomain(((6, 6),))


def test_timestamps_cover_every_slot_they_touch() -> None:
    """Hourly slots from midnight: 01:30 to 02:10 covers slots 1 and 2, as an outage would."""
    window = {"start": "2026-01-01T01:30:00Z", "end": "2026-01-01T02:10:00Z"}
    inst = ho.compile_instance(parse_spec(spec(window, start="2026-01-01T00:00:00Z")))
    assert inst.jobs[0].blackouts == ((1, 3),)


def test_without_a_blackout_the_domain_is_the_interval() -> None:
    inst = ho.compile_instance(parse_spec(spec()))
    assert inst.windows[0].starts(0) == StartDomain(((0, 6),))


@pytest.mark.parametrize(
    ("blackout", "message"),
    [
        ({"start": 3, "end": 3}, "jobs[0].blackout[0].end: must be after start (3 <= 3)"),
        ({"start": 1}, "jobs[0].blackout[0].end: required field is missing"),
        ({"start": 1, "end": 2, "at": 0}, "jobs[0].blackout[0].at: unknown field"),
        ({"start": "soon", "end": 2}, "jobs[0].blackout[0].start: timestamp 'soon' needs"),
    ],
)
def test_bad_blackouts_are_named_by_their_field(blackout: dict[str, Any], message: str) -> None:
    with pytest.raises(InstanceError, match=re.escape(message)):
        ho.compile_instance(parse_spec(spec(blackout)))
