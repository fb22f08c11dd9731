"""Every value that steers the cpsat search and the relaxation, in one frozen object.

The defaults are what the benchmarks (benchmarks/README.md) were run with. A library user can
override any of them, `SolveOptions(params=SearchParams(subproblem_seconds=1.0))`, to tune the
search for their own instances; none of them changes what a valid plan is or what the proven
bound proves, only how the time is spent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class SearchParams:
    # -- the budget: shares of the time limit ---------------------------------------------------
    lp_share: float = 0.3
    """At most this share of the time limit for the LP before the search."""
    lp_steps_per_second: float = 40.0
    """In a repeatable budget (no wall clock), the LP's column-generation steps per second of
    its share, instead of its share of the wall clock."""
    bound_share: float = 0.1
    """Kept after the search to tighten the bound, when it is tightened at the end at all."""
    full_model_share: float = 0.5
    """Of the time left, for each full-model solve on small instances."""
    squeaky_share: float = 0.1
    """Of the budget at most, for squeaky-wheel passes over the LP-guided list scheduling."""
    eject_every: float = 0.2
    """Budget share of LNS between two rounds of ejection moves."""
    small_bound_share: float = 0.25
    """On small instances, HiGHS's MIP gets this share of the time left first (it often proves
    the plan optimal at once), at most `small_bound_seconds`."""
    small_bound_seconds: float = 2.0
    pool_share_small: float = 0.3
    """On small instances, the pool-level model gets this share of the time limit at once
    (elsewhere `bounding.PoolShares`): there it often closes, and with `pool_start` its
    solution's plan is then proven optimal."""
    quota_model_share: float = 0.7
    """With teams' quotas, this share of the time limit goes to the pool-level model with rule 9
    written in (`cpsat.quota_model`), the rest to the search within the quotas; 0 turns it off.
    With two or more workers and on instances that `quota_model.fits` only (elsewhere, all goes
    to the search within the quotas)."""
    quota_pool_share: float = 0.4
    """Of that model's search, the share for searching one pool alone, every other run fixed:
    the pool with the most idle GPUs first, the next when that search closes in time
    (`quota_model.quota_plan`); 0 turns it off."""
    quota_pack_share: float = 0.3
    """Of that model's time, the share kept to pack its runs on nodes (a pack proven whole
    stops early); benchmarks/README, "Teams: borrowing within rule 9", compares shares."""
    pool_start: Literal["solved", "any", "off"] = "solved"
    """Which of the pool-level model's solutions are placed on nodes as a start plan
    (`starts.pool_start`): only a solved model's (its plan, where it packs, is proven
    optimal), any (also the best one found when the model is stopped first), or none (`LOOP`,
    below: plans made in a loop)."""
    bound_min_seconds: float = 1.0
    """The bound at the end gets the time left, at least this many seconds..."""
    bound_min_share: float = 0.1
    """...or this share of the time limit, whichever is more."""

    # -- deterministic budget (workers = 1) -----------------------------------------------------
    deterministic_per_second: float = 0.15
    """CP-SAT deterministic time units per second of time limit, so that one-worker runs
    (repeatable) usually end by this budget before the wall clock stops them."""
    deterministic_per_subproblem: float = 0.005
    """Charged per LNS subproblem or ejection try for its Python side (choose, build, apply), so
    that many tiny subproblems use the budget up too."""
    deterministic_per_pass_and_job: float = 1e-5
    """Charged per squeaky-wheel pass and job."""

    # -- the plan as written ---------------------------------------------------------------------
    left_shift: bool = True
    """Start every job as early as the plan's other jobs let it, on its pool (`compact.py`):
    the same pwo, shorter waits."""
    shift_pools: bool = False
    """In the compaction, a job may move to another of its pools where it starts earlier and
    still ends no later (a slower pool left idle takes work that would wait for a faster one).
    Off: in the loop benchmarks it gained on some instances and lost more on the busiest one
    (benchmarks/README, "Starting work on another pool")."""
    fill_gaps: bool = True
    """After the compaction, place the jobs the plan leaves out where they fit and end on time
    (`compact.fill_gaps`)."""

    # -- the order of equal plans ---------------------------------------------------------------
    end_discount: float = 0.0
    """How plans weigh pwo against when work ends: 0 ranks them by pwo, then by weighted end
    slots (`end_order`); above 0, by pwo less `end_discount` of each job's value per hour its
    end comes later (with the value order; `objective.end_rate`), so a plan gives up some of the
    pwo it promises itself later for valuable work ended sooner. For plans in a loop, where
    work that arrives later competes for the GPUs a plan leaves for later, and the start a plan
    keeps deferring may never come. The proven bound is still on pwo."""
    end_order: Literal["value", "priority", "none"] = "value"
    """Plans of equal pwo rank by their end slots weighted per job (`objective.end_weights`): by
    value, the most valuable work per GPU-hour ends first; by priority, also the smallest work
    first among equal priorities; none weighs every job alike (smallest work first)."""

    # -- the full model -------------------------------------------------------------------------
    full_model_max_intervals: int = 4_000
    """Above this many (job, candidate node) intervals, no full model (nor its packing of a solved
    pool-level model's runs, `exact.pack_runs`): only the LNS, since the full model stalls on
    larger instances."""

    # -- the large-neighbourhood search ---------------------------------------------------------
    subproblem_seconds: float = 0.4
    """Time limit of one LNS subproblem (times `deterministic_per_second` with one worker): the
    neighbourhood sizes adapt to what solves in time, and many quick steps beat fewer big ones."""
    around_waiting_share: float = 0.5
    """Share of neighbourhoods cut around a waiting job (the rest: random windows)."""
    lns_nodes: int = 4
    """Nodes of a first neighbourhood; +1 after each round solved to optimality, -1 otherwise..."""
    lns_nodes_range: tuple[int, int] = (2, 64)
    """...within this range."""
    lns_free_jobs: int = 30
    """Free jobs of a first neighbourhood; +4 or -4 likewise..."""
    lns_free_jobs_range: tuple[int, int] = (10, 120)
    """...within this range."""
    lns_free_jobs_step: int = 4
    lns_waiting_min: int = 4
    """Waiting jobs offered to a neighbourhood, at least (more when it has room)."""
    lns_width_share: float = 0.25
    """Width of a random window, as a share of the horizon (at least 4 slots)."""
    lp_weight_floor: float = 0.1
    """Waiting jobs are drawn by value x (this + their LP share), so the LP steers the draw
    without starving the jobs it leaves out."""

    # -- LP-guided starts (guide.py) ------------------------------------------------------------
    selected_share: float = 0.5
    """A job is in the LP's plan when the LP runs at least this share of it."""
    target_slack: tuple[int | None, ...] = (None, 0, 2)
    """List schedulings aim at the LP's start minus this many slots (None: no aim)."""
    squeak_factor: tuple[float, float] = (0.3, 0.9)
    """A left-out LP job's position in the order is multiplied by a draw from this range."""
    squeak_share: float = 0.1
    """Share of the left-out LP jobs moved forward per pass (moving all reshuffles too much)..."""
    squeak_min: int = 5
    """...at least this many."""
    squeak_stall: int = 100
    """Squeaky-wheel passes without a better plan before it stops."""

    # -- ejection moves (eject.py) --------------------------------------------------------------
    eject_candidates: int = 3
    """Eviction windows tried per waiting job, cheapest first."""
    eject_max_cost_ratio: float = 1.5
    """Windows whose evicted value exceeds the job's by more are not tried."""

    # -- the relaxation (relaxation/) -----------------------------------------------------------
    initial_runs: int = 3
    """Runs per job and pool in the first master LP, spread from earliest to latest."""
    dependency_rows_max: int = 2_000
    """Dependency rows in all in the finer second LP..."""
    dependency_rows_min: int = 4
    """...and at least this many per dependency (the first LP has one)."""
    mip_max_columns: int = 50_000
    """HiGHS's MIP on the relaxation is tried only on models this small..."""
    mip_max_nonzeros: int = 1_000_000
    """...with at most this many matrix entries (HiGHS's memory)..."""
    mip_seconds_per_entry: float = 4e-5
    """...and when the time left covers its presolve and root LP at this rate."""
    mip_max_seconds: float = 60.0
    """Beyond this the MIP gains little, and its search tree keeps growing."""


LOOP = SearchParams(pool_start="off")
"""The search of plans made in a loop: replays (`simulate`, bench loop suites) and the
re-planning service (`run`). A solved pool-level model's plan is optimal for the durations
estimated now, and in the replays that did not pay (benchmarks/results/loop_seeds_pool_start.md),
so loop plans go without it. Loop plans keep the value order (`end_order`): weighing every end
alike realized more on the busy medium families but less on the demo, and periodic cpsat on
limits lost most of its window there (benchmarks/README, "Which order loop plans end work in")."""
