"""`slurm_actions` never ends what runs: a started reservation with jobs in it is changed in
place or kept to its end, one starting exactly now counts as started, running jobs keep their
GPUs to their limits, and what Slurm holds (read back) is what the commands start from.

CHAT_ONLY (test_actions_slurm): three 4-GPU hosts a-0..a-2, slots of one hour from
2026-12-01T00:00Z, now = 02:00; chat's replica is a whole host's 4 GPUs.
"""

from __future__ import annotations

from datetime import UTC, datetime

from test_actions_slurm import CHAT_ONLY, EMPTY, OPTIONS, _chat_plan, _commands, _instance

from horizon_opt.actions import SlurmOptions, slurm_actions
from horizon_opt.actions.slurm_state import SlurmState

FIRST = "hopt-chat-20261201T0200-4gpu"
BUSY = SlurmState(occupied={FIRST: ("42",)})
LATER = {**CHAT_ONLY, "now": 5}


def _first(options: SlurmOptions = OPTIONS) -> dict[str, dict[str, str]]:
    return slurm_actions(_instance(CHAT_ONLY), _chat_plan([("a-0", 0, 8)]), options).desired


def _ends_or_deletes(got: list[tuple[str, dict[str, str]]], name: str) -> bool:
    return any(
        f.get("reservationname") == name
        and (kind == "delete reservation" or "endtime" in f)
        and (kind == "delete reservation" or f.get("endtime") == "now")
        for kind, f in got
    )


def test_a_started_reservation_with_jobs_in_it_is_kept_when_the_plan_moves_away() -> None:
    moved = _chat_plan([("a-1", 0, 8)])
    for state in (BUSY, None):  # None: squeue not read, so jobs may run in it
        actions = slurm_actions(_instance(LATER), moved, OPTIONS, _first(), state)
        got = _commands(actions)
        assert not _ends_or_deletes(got, FIRST)
        assert f"reservation/{FIRST}" in actions.desired  # it goes on, and the ledger keeps it
        assert [f["nodes"] for k, f in got if k == "create reservation"] == ["a-1"]
        assert any(FIRST in n and "goes on unchanged" in n for n in actions.notes)
    empty = _commands(slurm_actions(_instance(LATER), moved, OPTIONS, _first(), EMPTY))
    assert ("update reservation", {"reservationname": FIRST, "endtime": "now"}) in empty


def test_a_started_reservation_with_jobs_in_it_never_ends_earlier() -> None:
    shorter = _chat_plan([("a-0", 0, 6)])
    busy = _commands(slurm_actions(_instance(LATER), shorter, OPTIONS, _first(), BUSY))
    assert not [f for _, f in busy if f.get("reservationname") == FIRST]
    same = _chat_plan([("a-0", 0, 8)])
    assert slurm_actions(_instance(LATER), same, OPTIONS, _first(), BUSY).actions == ()
    empty = _commands(slurm_actions(_instance(LATER), shorter, OPTIONS, _first(), EMPTY))
    assert empty == [
        ("update reservation", {"reservationname": FIRST, "endtime": "2026-12-01T06:00:00"})
    ]


def test_a_reservation_starting_exactly_now_is_ended_not_deleted() -> None:
    """Cron at 02:00:00: the 02:00 reservation has started; Slurm refuses to delete it."""
    moved = _chat_plan([("a-1", 0, 8)])
    got = _commands(slurm_actions(_instance(CHAT_ONLY), moved, OPTIONS, _first(), EMPTY))
    assert ("update reservation", {"reservationname": FIRST, "endtime": "now"}) in got
    assert ("delete reservation", {"reservationname": FIRST}) not in got


def test_whole_node_reservations_with_jobs_in_them_move_in_place() -> None:
    options = SlurmOptions(users=("svc",), granularity="node")
    name = "hopt-chat-20261201T0200"
    first = _first(options)
    moved = _chat_plan([("a-1", 0, 8)])
    got = _commands(
        slurm_actions(_instance(LATER), moved, options, first, SlurmState(occupied={name: ("7",)}))
    )
    assert got == [("update reservation", {"reservationname": name, "nodes": "a-1"})]


def test_no_reservation_on_gpus_a_running_job_holds_before_its_limit() -> None:
    """Job 9 holds all of a-0 until 04:00 (its limit; an estimate said it ends sooner)."""
    held = SlurmState(held={"a-0": ((4, datetime(2026, 12, 1, 4, tzinfo=UTC)),)})
    plan = _chat_plan([("a-0", 0, 8)])
    actions = slurm_actions(_instance(CHAT_ONLY), plan, OPTIONS, None, held)
    got = _commands(actions)
    assert [(f["reservationname"], f["starttime"]) for _, f in got] == [
        ("hopt-chat-20261201T0400-4gpu", "2026-12-01T04:00:00")
    ]
    assert any("a-0" in n and "time limits" in n for n in actions.notes)


def test_slurm_before_23_11_gets_whole_node_reservations() -> None:
    actions = slurm_actions(
        _instance(CHAT_ONLY),
        _chat_plan([("a-0", 0, 8)]),
        OPTIONS,
        None,
        SlurmState(version=(22, 5)),
    )
    got = _commands(actions)
    assert [f["reservationname"] for _, f in got] == ["hopt-chat-20261201T0200"]
    assert all("tresspernode" not in f and "tres" not in f for _, f in got)
    assert any("22.05" in n and "whole nodes" in n for n in actions.notes)


def test_what_slurm_holds_read_back_is_what_the_commands_start_from() -> None:
    """Slurm lost the 05:00 reservation (deleted by hand) and holds an orphan at 07:00 that no
    plan wants; the applied ledger says otherwise and is overruled."""
    plan = _chat_plan([("a-0", 0, 4), ("a-1", 5, 8)])
    first = slurm_actions(_instance(CHAT_ONLY), plan, OPTIONS).desired
    held = {t: p for t, p in first.items() if "T0500" not in t}
    held["reservation/hopt-chat-20261201T0700-4gpu"] = {
        "service": "chat",
        "start": "2026-12-01T07:00:00Z",
        "end": "2026-12-01T08:00:00Z",
        "nodes": "a-2",
        "gpus_per_node": "4",
    }
    state = SlurmState(reservations=held, occupied={})
    got = _commands(slurm_actions(_instance(CHAT_ONLY), plan, OPTIONS, first, state))
    assert [(k, f["reservationname"]) for k, f in got] == [
        ("delete reservation", "hopt-chat-20261201T0700-4gpu"),
        ("create reservation", "hopt-chat-20261201T0500-4gpu"),
    ]
    again = SlurmState(reservations=first, occupied={})
    assert slurm_actions(_instance(CHAT_ONLY), plan, OPTIONS, {}, again).actions == ()


def test_a_period_that_began_before_the_clock_starts_now() -> None:
    """The snapshot is 02:20: slurmctld refuses a start more than minutes in the past."""
    clock = SlurmState(clock=datetime(2026, 12, 1, 2, 20, tzinfo=UTC))
    got = _commands(
        slurm_actions(_instance(CHAT_ONLY), _chat_plan([("a-0", 0, 8)]), OPTIONS, None, clock)
    )
    assert [(f["starttime"], f["endtime"]) for _, f in got] == [("now", "2026-12-01T08:00:00")]


def test_a_changed_whole_node_reservation_takes_only_the_hosts_left() -> None:
    """Started at 02:00 on a-0 and at 04:00 on a-1 (jobs in both); at 05:00 the plan drops a-0
    for a-2. The 04:00 one keeps a-1; the 02:00 one moves to a-2 in place, not onto a-1."""
    options = SlurmOptions(users=("svc",), granularity="node")
    plan = _chat_plan([("a-0", 0, 8), ("a-1", 4, 8)])
    first = slurm_actions(_instance(CHAT_ONLY), plan, options).desired
    names = ["hopt-chat-20261201T0200", "hopt-chat-20261201T0400"]
    assert sorted(first) == [f"reservation/{n}" for n in names]
    busy = SlurmState(occupied={n: ("1",) for n in names})
    moved = _chat_plan([("a-1", 0, 8), ("a-2", 0, 8)])
    got = _commands(slurm_actions(_instance(LATER), moved, options, first, busy))
    assert got == [("update reservation", {"reservationname": names[0], "nodes": "a-2"})]


def test_a_reservation_about_to_start_is_not_deleted() -> None:
    """At 01:59:30 the 02:00 reservation the plan drops would have started by the time a delete
    reached Slurm ("Reservation request busy"): it is left to the next cycle."""
    moved = _chat_plan([("a-1", 0, 8)])
    early = SlurmState(clock=datetime(2026, 12, 1, 1, 59, 30, tzinfo=UTC), occupied={})
    got = _commands(slurm_actions(_instance(CHAT_ONLY), moved, OPTIONS, _first(), early))
    assert not [f for _, f in got if f.get("reservationname") == FIRST]
    late = SlurmState(clock=datetime(2026, 12, 1, 1, 50, tzinfo=UTC), occupied={})
    got = _commands(slurm_actions(_instance(CHAT_ONLY), moved, OPTIONS, _first(), late))
    assert ("delete reservation", {"reservationname": FIRST}) in got
