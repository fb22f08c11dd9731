"""horizon-opt: plan GPU allocation over a horizon, with inference kept at its forecast."""

from horizon_opt.check import Violation, check
from horizon_opt.errors import InputError, InstanceError, PlanError
from horizon_opt.export import (
    plot_gantt,
    plot_utilization,
    read_csv,
    read_inference_csv,
    write_csv,
    write_report,
)
from horizon_opt.instance import Instance, compile_instance
from horizon_opt.io import load_instance
from horizon_opt.metrics import evaluate
from horizon_opt.params import SearchParams
from horizon_opt.plan import Metrics, Plan
from horizon_opt.solvers import SOLVERS, Progress, SolveOptions, solve
from horizon_opt.validate import validate
from horizon_opt.version import __version__

__all__ = [
    "SOLVERS",
    "InputError",
    "Instance",
    "InstanceError",
    "Metrics",
    "Plan",
    "PlanError",
    "Progress",
    "SearchParams",
    "SolveOptions",
    "Violation",
    "__version__",
    "check",
    "compile_instance",
    "evaluate",
    "load_instance",
    "plot_gantt",
    "plot_utilization",
    "read_csv",
    "read_inference_csv",
    "solve",
    "validate",
    "write_csv",
    "write_report",
]
