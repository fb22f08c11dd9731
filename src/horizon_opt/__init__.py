"""horizon-opt: plan GPU allocation over a horizon, with inference kept at its forecast."""

from horizon_opt.analysis.explain import JobExplanation, explain
from horizon_opt.analysis.prices import CapacityPrices, capacity_prices
from horizon_opt.analysis.whatif import WhatIf, what_if
from horizon_opt.errors import InputError, InstanceError, PlanError
from horizon_opt.export import (
    plot_gantt,
    plot_utilization,
    read_csv,
    read_inference_csv,
    write_csv,
    write_report,
)
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import load_instance
from horizon_opt.model.validate import validate
from horizon_opt.params import SearchParams
from horizon_opt.plans.check import Violation, check
from horizon_opt.plans.diff import PlanDiff, plan_diff
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import Metrics, Plan
from horizon_opt.solvers import (
    SOLVERS,
    AnyOf,
    GapBelow,
    NoImprovement,
    Progress,
    SolveOptions,
    StopCriterion,
    solve,
)
from horizon_opt.version import __version__

__all__ = [
    "SOLVERS",
    "AnyOf",
    "CapacityPrices",
    "GapBelow",
    "InputError",
    "Instance",
    "InstanceError",
    "JobExplanation",
    "Metrics",
    "NoImprovement",
    "Plan",
    "PlanDiff",
    "PlanError",
    "Progress",
    "SearchParams",
    "SolveOptions",
    "StopCriterion",
    "Violation",
    "WhatIf",
    "__version__",
    "capacity_prices",
    "check",
    "compile_instance",
    "evaluate",
    "explain",
    "load_instance",
    "plan_diff",
    "plot_gantt",
    "plot_utilization",
    "read_csv",
    "read_inference_csv",
    "solve",
    "validate",
    "what_if",
    "write_csv",
    "write_report",
]
