"""Several solvers on one instance, side by side, relative to the first (the reference)."""

from __future__ import annotations

from collections.abc import Sequence

from horizon_opt.instance import Instance
from horizon_opt.plan import Plan
from horizon_opt.solvers import SolveOptions, solve
from horizon_opt.spec import JOB_KINDS

_KIND_ABBREV = {
    "training": "train",
    "batch_inference": "b-inf",
    "quantization": "quant",
    "evaluation": "eval",
    "other": "other",
}


def compare_plans(instance: Instance, solvers: Sequence[str], options: SolveOptions) -> list[Plan]:
    """Solve with each solver; cpsat starts from the best plan of the others when no hint is given."""
    plans: list[Plan] = []
    for name in solvers:
        opts = options
        if name == "cpsat" and options.hint is None and plans:
            best = max(plans, key=lambda p: p.objective)
            opts = SolveOptions(**{**options.__dict__, "hint": best})
        plans.append(solve(instance, name, opts))
    return plans


def format_comparison(instance: Instance, plans: Sequence[Plan]) -> str:
    """A plain-text table: one column per plan, deltas against the first plan."""
    ref = plans[0]
    ref_util = ref.metrics["utilization"]
    total = len(instance.jobs)

    def pct(value: float, base: float) -> str:
        return "" if base <= 0 else f" ({100 * (value - base) / base:+.0f}%)"

    rows: list[tuple[str, list[str]]] = [
        (
            "utilization",
            [
                f"{100 * p.metrics['utilization']:.1f}%"
                + (
                    f" ({100 * (p.metrics['utilization'] - ref_util):+.1f} pp)"
                    if p is not ref
                    else ""
                )
                for p in plans
            ],
        ),
        (
            "pwo",
            [
                f"{p.objective:,.1f}" + (pct(p.objective, ref.objective) if p is not ref else "")
                for p in plans
            ],
        ),
        ("jobs on time", [f"{p.metrics['completed']} / {total}" for p in plans]),
    ]
    for kind in JOB_KINDS:
        if any(j.kind == kind for j in instance.jobs):
            n = sum(1 for j in instance.jobs if j.kind == kind)
            rows.append(
                (
                    f"  {_KIND_ABBREV[kind]}",
                    [f"{p.metrics['completed_by_kind'][kind]} / {n}" for p in plans],
                )
            )
    rows += [
        ("mean wait (h)", [f"{p.metrics['mean_wait_hours']:.2f}" for p in plans]),
        ("reserved idle GPU-h", [f"{p.metrics['reserved_idle_gpu_hours']:,.1f}" for p in plans]),
        ("proven bound", ["-" if p.bound is None else f"{p.bound:,.1f}" for p in plans]),
        ("gap", ["-" if p.gap is None else f"{100 * p.gap:.2f}%" for p in plans]),
        ("status", [p.status for p in plans]),
        ("solve time (s)", [f"{p.wall_seconds:.2f}" for p in plans]),
    ]
    header = ("", [p.solver for p in plans])
    width0 = max(len(r[0]) for r in [header, *rows])
    widths = [max(len(r[1][i]) for r in [header, *rows]) for i in range(len(plans))]
    lines = []
    for label, cells in [header, *rows]:
        lines.append(
            "  ".join(
                [label.ljust(width0), *(c.rjust(w) for c, w in zip(cells, widths, strict=True))]
            )
        )
    lines.insert(1, "-" * len(lines[0]))
    return (
        f"{instance.name}: {total} jobs, {instance.num_nodes} nodes, {instance.slots} slots\n"
        + "\n".join(lines)
    )
