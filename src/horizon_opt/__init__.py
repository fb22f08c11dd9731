"""horizon-opt: plan GPU allocation over a horizon, with inference kept at its forecast."""

from horizon_opt.check import Violation, check
from horizon_opt.compiler import compile_instance
from horizon_opt.diff import PlanDiff, plan_diff
from horizon_opt.errors import InputError, InstanceError, PlanError
from horizon_opt.explain import JobExplanation, explain
from horizon_opt.export import (
    plot_gantt,
    plot_utilization,
    read_csv,
    read_inference_csv,
    write_csv,
    write_report,
)
from horizon_opt.instance import Instance
from horizon_opt.io import load_instance
from horizon_opt.metrics import evaluate
from horizon_opt.params import SearchParams
from horizon_opt.plan import Metrics, Plan
from horizon_opt.prices import CapacityPrices, capacity_prices
from horizon_opt.solvers import SOLVERS, Progress, SolveOptions, solve
from horizon_opt.validate import validate
from horizon_opt.version import __version__
from horizon_opt.whatif import WhatIf, what_if

__all__ = [
    "SOLVERS",
    "CapacityPrices",
    "InputError",
    "Instance",
    "InstanceError",
    "JobExplanation",
    "Metrics",
    "Plan",
    "PlanDiff",
    "PlanError",
    "Progress",
    "SearchParams",
    "SolveOptions",
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
