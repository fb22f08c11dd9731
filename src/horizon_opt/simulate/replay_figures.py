"""What one policy realized in one replay: the figures `simulate` reports and compares."""

from __future__ import annotations

from dataclasses import dataclass, field

from horizon_opt.simulate.audit import Audit


@dataclass
class Replay:
    """What one policy realized in one world."""

    policy: str
    planned_pwo: float | None  # open loop: the pwo its plan promised; else None
    realized_pwo: float  # jobs that really ended, successfully and on time
    realized_utilization: float  # batch GPU-slots run + inference demand served, over capacity
    completed: int
    failed: int  # failed while running (cancelled by their user included)
    cancelled: int  # waited for a job that failed
    preemptions: int
    lost_gpu_hours: float  # work that preempted jobs lost
    slo_short_replica_hours: float  # inference demand that found no replica
    slo_short_share: float  # of all inference demand (replica-hours)
    decisions: int  # plans made (full re-plans and fills)
    replans: int  # full re-plans (the policy's solver)
    mean_moved: float  # jobs moved per full re-plan (churn against the plan before)
    solver_seconds: float  # total wall time of the plans
    max_solver_seconds: float
    cancelled_by_user: int = 0  # of `failed`: cancelled by their user while running
    # of `preemptions`: borrowers preempted for a team's quota (`simulate.quota_reclaim`), all
    # and per team of the preempted job
    reclaims: int = 0
    reclaimed_by_team: dict[str, int] = field(default_factory=dict)
    # Promises: jobs whose start a plan first predicted at least PROMISE_AHEAD_MINUTES ahead,
    # and the median of |actual start - that first prediction| (a promised job that never
    # started counts as starting at the horizon's end), as `squeue --start` would be judged.
    promised: int = 0
    promise_error_hours: float = 0.0
    # ...each with a P50 and a P90 learned from the lateness of the promises before it
    # (`simulate.promise_intervals`): the median |actual start - P50|, the share started by P90
    promise_p50_error_hours: float = 0.0
    promise_p90_coverage: float = 0.0
    # realized pwo at each slot boundary 0..S (jobs ended by then)
    realized_by_slot: list[float] = field(default_factory=list)
    audit: Audit | None = field(default=None, repr=False)  # what really ran (see `audit`)
    # The measured window [start, end) (slots) and what it realized there (`simulate.window`):
    # each completing run's value times its share inside it, and GPUs used over available.
    window_start: int = 0
    window_end: int = 0
    window_pwo: float = 0.0
    window_utilization: float = 0.0
    # Jobs that waited, ready, with idle GPUs they could use for longer than their limit
    # (`simulate.starvation`): the count, and the job ids with the longest such wait (slots)
    starved: int = 0
    # The run times planned on against the runs (`simulate.predictions`): the median absolute
    # error in hours of the runs that ended, and the share that ran longer than planned
    runtime_error_hours: float = 0.0
    runtime_under_share: float = 0.0
    starved_jobs: dict[str, int] = field(default_factory=dict)

    SERIES = (
        "realized_by_slot",
        "audit",
        "reclaimed_by_team",
        "starved_jobs",
    )  # fields that are not one figure of a table row


@dataclass
class SlotTotals:
    """GPUs summed over the replay's slots: batch in use, serving inference, up; and inference
    demand and what of it found no replica (replicas)."""

    batch: float = 0.0
    serving: float = 0.0
    available: float = 0.0
    demand: float = 0.0
    short: float = 0.0

    def add(self, batch: float, serving: float, up: float, demand: float, short: float) -> None:
        self.batch += batch
        self.serving += serving
        self.available += up
        self.demand += demand
        self.short += short
