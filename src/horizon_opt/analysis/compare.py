"""Several solvers on one instance, side by side, relative to the first (the reference)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from horizon_opt.model.instance import Instance
from horizon_opt.plans.comparison_table import Column, compare_columns, to_text
from horizon_opt.plans.plan import Plan
from horizon_opt.solvers import SOLVERS, SolveOptions, solve


def compare_plans(instance: Instance, solvers: Sequence[str], options: SolveOptions) -> list[Plan]:
    """Solve with each solver; a solver that takes a hint starts from the best plan of the ones
    before it when no hint is given."""
    plans: list[Plan] = []
    for name in solvers:
        opts = options
        if SOLVERS[name].takes_hint and options.hint is None and plans:
            opts = replace(options, hint=max(plans, key=lambda p: p.objective))
        plans.append(solve(instance, name, opts))
    return plans


def format_comparison(instance: Instance, plans: Sequence[Plan]) -> str:
    """The terminal table: a line on the instance, then one column per plan, deltas against
    the first plan."""
    columns = [Column(p.solver, p, p.metrics) for p in plans]
    return (
        f"{instance.name}: {len(instance.jobs)} jobs, {instance.num_nodes} nodes, "
        f"{instance.slots} slots\n" + to_text(compare_columns(instance, columns))
    )
