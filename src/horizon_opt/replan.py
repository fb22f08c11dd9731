"""Re-planning from the cluster's state without breaking near promises.

A re-plan starts from an instance at `now` (running jobs placed, finished jobs left out) and the
plan it replaces. Starts that the previous plan promised within the freeze window are held, like
Slurm's reservations: those jobs are placed where they were promised, so no solver moves them.
The rest is planned again, cpsat starting from the previous plan, and the new plan reports its
churn against the previous one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from horizon_opt.churn import churn
from horizon_opt.instance import Instance
from horizon_opt.plan import Plan
from horizon_opt.solvers import SolveOptions, solve
from horizon_opt.state import hold_starts

DEFAULT_FREEZE_MINUTES = 120  # Slurm's backfill window is often a few hours; 2 h is one shift


@dataclass(frozen=True)
class Replan:
    plan: Plan  # with `churn` set
    held: tuple[str, ...]  # jobs whose promised start was held
    not_held: tuple[str, ...]  # one line per promise in the window that the state no longer allows


def replan(
    instance: Instance,
    previous: Plan,
    solver: str = "cpsat",
    options: SolveOptions | None = None,
    *,
    freeze_slots: int | None = None,
) -> Replan:
    """Plan `instance` again from its `now`, holding the previous plan's starts in
    [now, now + freeze_slots) (default: DEFAULT_FREEZE_MINUTES, rounded up to slots)."""
    if freeze_slots is None:
        freeze_slots = -(-DEFAULT_FREEZE_MINUTES // instance.slot_minutes)
    if freeze_slots < 0:
        raise ValueError(f"freeze_slots must be >= 0, got {freeze_slots}")
    held_instance, held, not_held = hold_starts(instance, previous, instance.now + freeze_slots)
    options = options or SolveOptions()
    if options.hint is None:
        options = replace(options, hint=previous)
    plan = solve(held_instance, solver, options)
    changes = churn(instance, previous, plan).model_copy(update={"held": len(held)})
    return Replan(plan.model_copy(update={"churn": changes}), tuple(held), tuple(not_held))
