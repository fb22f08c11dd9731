"""The quota reclaim (`solvers.reclaim.keep_quotas`): a job kept out of its quota takes the room
given back, even where that run ends later than the run the plan had for it elsewhere."""

from __future__ import annotations

import copy
from typing import Any

import horizon_opt as ho
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.inference import elastic_layout
from horizon_opt.solvers.assemble import Placement
from horizon_opt.solvers.reclaim import keep_quotas

# Pool f (node 0) and pool s (node 1), one 8-GPU node each, 8 slots. Red's quota is all of s;
# blue has none. Red's `r0` holds f at 0-2, and the plan puts red's `r` (2 slots on f, 5 on s)
# on f at 2-4 while blue's `b` borrows s at 0-3. At slot 0, `r` waits within red's quota on s
# and only blue's borrowing holds it: `r` is kept out (rule 9). Blue gives s back, and `r`
# takes it at 0 (ending at 5, later than on f at 4); `b` runs after it, 5-8.
MOVES: dict[str, Any] = {
    "name": "moves",
    "horizon": {"slots": 8},
    "pools": [
        {"name": "f", "gpu_type": "x", "nodes": 1, "gpus_per_node": 8},
        {"name": "s", "gpu_type": "y", "nodes": 1, "gpus_per_node": 8},
    ],
    "teams": [{"name": "red", "quota": {"s": 8}}, {"name": "blue"}],
    "jobs": [
        {"id": "r0", "priority": 1, "gpus": 8, "duration": 2, "pools": ["f"], "team": "red"},
        {"id": "r", "priority": 2, "gpus": 8, "duration": {"f": 2, "s": 5}, "team": "red"},
        {"id": "b", "priority": 1, "gpus": 8, "duration": 3, "pools": ["s"], "team": "blue"},
    ],
}


def _kept(data: dict[str, Any], extra: list[tuple[str, int, int]]) -> dict[str, tuple[int, int]]:
    """(pool, start) per job once `keep_quotas` has run on the plan described above, plus
    `extra` placements (job, pool, start; each pool's node is its index)."""
    inst = ho.compile_instance(parse_spec(data))
    runs = [("r0", 0, 0), ("r", 0, 2), ("b", 1, 0), *extra]
    placements = [Placement(inst.job_index[j], p, s, (p,)) for j, p, s in runs]
    kept = keep_quotas(inst, placements, elastic_layout(inst))
    return {inst.jobs[p.job].id: (p.pool, p.start) for p in kept}


def test_the_job_kept_out_takes_the_room_given_back() -> None:
    assert _kept(MOVES, []) == {"r0": (0, 0), "r": (1, 0), "b": (1, 5)}


def test_it_stays_where_a_longer_run_would_end_after_a_job_that_runs_after_it() -> None:
    # `e` runs after `r`, on f at 4-5: `r` on s would end at 5, after `e` starts, so it stays on
    # f at 2-4. At slots 0 and 1 `b` leaves s again and comes back one slot later each time;
    # from slot 2 `r` runs and nobody waits: `b` runs 2-5.
    data = copy.deepcopy(MOVES)
    data["jobs"].append(
        {"id": "e", "priority": 1, "gpus": 8, "duration": 1, "pools": ["f"], "after": ["r"]}
    )
    assert _kept(data, [("e", 0, 4)]) == {"r0": (0, 0), "r": (0, 2), "b": (1, 2), "e": (0, 4)}
