"""The `horizon-opt` command: thin typer commands over the library; bad input exits 2, cleanly."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from horizon_opt import __version__
from horizon_opt.check import check
from horizon_opt.compare import compare_plans, format_comparison
from horizon_opt.errors import InputError
from horizon_opt.io import load_instance
from horizon_opt.metrics import evaluate
from horizon_opt.plan import Plan
from horizon_opt.solvers import SOLVERS, Progress, SolveOptions, solve
from horizon_opt.spec import InstanceSpec

app = typer.Typer(
    help=(
        "Plan GPU allocation for a cluster over a time horizon: real-time inference keeps its "
        "forecast capacity slot by slot, batch jobs (training, batch inference, quantization, "
        "evaluation) fill the rest by value. Instance and plan formats: see FORMAT.md."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"horizon-opt {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
    ] = False,
) -> None:
    """horizon-opt: constraint-aware GPU allocation planner."""


@contextmanager
def _input_errors() -> Iterator[None]:
    """Bad input: one line per problem on stderr, exit code 2, no traceback."""
    try:
        yield
    except InputError as exc:
        for line in exc.problems:
            typer.echo(f"error: {line}", err=True)
        raise typer.Exit(2) from None


InstanceArg = Annotated[
    Path, typer.Argument(help="Instance file (YAML, see FORMAT.md).", show_default=False)
]
TimeLimit = Annotated[float, typer.Option("--time-limit", "-t", help="Seconds for cpsat.", min=0.1)]
Workers = Annotated[
    int, typer.Option(help="CP-SAT search workers (2 suits a 2-core machine).", min=1)
]
Seed = Annotated[int, typer.Option(help="Random seed; with --workers 1 runs are repeatable.")]
Log = Annotated[Path | None, typer.Option(help="Write the CP-SAT search log to this file.")]
Hint = Annotated[Path | None, typer.Option(help="Start cpsat from this plan file.")]


def _progress_printer() -> Callable[[Progress], None] | None:
    """Live progress on a terminal only; nothing when output is piped or logged."""
    if not sys.stderr.isatty():
        return None

    def show(p: Progress) -> None:
        bound = "-" if p.bound is None else f"{p.bound:,.1f}"
        gap = "-" if p.gap is None else f"{100 * p.gap:.2f}%"
        sys.stderr.write(
            f"\r  {p.elapsed:7.1f}s  pwo {p.objective:,.1f}  bound {bound}  gap {gap}   "
        )
        sys.stderr.flush()

    return show


def _options(
    time_limit: float, workers: int, seed: int, log: Path | None, hint: Path | None
) -> SolveOptions:
    return SolveOptions(
        time_limit=time_limit,
        workers=workers,
        seed=seed,
        log=log,
        hint=Plan.read(hint) if hint is not None else None,
        on_progress=_progress_printer(),
    )


def _summary(plan: Plan) -> str:
    m = plan.metrics
    total = len(plan.assignments) + len(plan.unscheduled)
    lines = [
        f"{plan.solver} on {plan.instance}: {plan.status}",
        f"  pwo (priority-weighted output)  {plan.objective:,.2f}",
    ]
    if plan.bound is not None and plan.gap is not None:
        lines.append(f"  proven bound / gap              {plan.bound:,.2f} / {100 * plan.gap:.2f}%")
    lines += [
        f"  utilization                     {100 * m['utilization']:.1f}%",
        f"  jobs on time                    {m['completed']} of {total}"
        + (f" ({m['late']} more scheduled late)" if m["late"] else ""),
        f"  mean wait                       {m['mean_wait_hours']:.2f} h",
        f"  reserved idle GPU-hours         {m['reserved_idle_gpu_hours']:,.1f}",
        f"  wall time                       {plan.wall_seconds:.2f} s",
    ]
    return "\n".join(lines)


@app.command("solve")
def solve_cmd(
    instance: InstanceArg,
    output: Annotated[Path, typer.Option("--output", "-o", help="Where to write the plan (JSON).")],
    solver: Annotated[str, typer.Option(help=f"One of: {', '.join(SOLVERS)}.")] = "cpsat",
    time_limit: TimeLimit = 60.0,
    workers: Workers = 2,
    seed: Seed = 0,
    log: Log = None,
    hint: Hint = None,
) -> None:
    """Plan one instance with one solver and write the plan file."""
    with _input_errors():
        if solver not in SOLVERS:
            raise InputError(
                [f"--solver: unknown solver {solver!r}; choose one of {', '.join(SOLVERS)}"]
            )
        inst = load_instance(instance)
        plan = solve(inst, solver, _options(time_limit, workers, seed, log, hint))
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    plan.write(output)
    typer.echo(_summary(plan))
    typer.echo(f"  plan written to {output}")


@app.command("check")
def check_cmd(
    instance: InstanceArg,
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN", help="Plan file (JSON).")],
) -> None:
    """Check a plan against FORMAT.md's validity rules: exit 0 when valid, 1 with the violations."""
    with _input_errors():
        inst = load_instance(instance)
        plan = Plan.read(plan_file)
    violations = check(inst, plan)
    if violations:
        for v in violations:
            typer.echo(str(v))
        typer.echo(f"INVALID: {len(violations)} violation(s)")
        raise typer.Exit(1)
    pwo = evaluate(inst, plan).pwo
    typer.echo(
        f"VALID: {len(plan.assignments)} jobs assigned, {len(plan.unscheduled)} unscheduled, pwo {pwo:,.2f}"
    )
    if abs(pwo - plan.objective) > 1e-6 * max(1.0, abs(pwo)):
        typer.echo(
            f"warning: the plan reports objective {plan.objective:,.2f}, recomputed pwo is {pwo:,.2f}"
        )


@app.command("compare")
def compare_cmd(
    instance: InstanceArg,
    output_dir: Annotated[
        Path | None, typer.Option(help="Folder for the plans (default: named after the instance).")
    ] = None,
    solvers: Annotated[
        str, typer.Option(help="Comma-separated solvers, the first is the reference.")
    ] = "fifo,greedy,cpsat",
    time_limit: TimeLimit = 60.0,
    workers: Workers = 2,
    seed: Seed = 0,
    log: Log = None,
    hint: Hint = None,
) -> None:
    """Run several solvers on one instance and print their results side by side."""
    names = [s.strip() for s in solvers.split(",") if s.strip()]
    with _input_errors():
        unknown = [s for s in names if s not in SOLVERS]
        if unknown or not names:
            raise InputError(
                [f"--solvers: unknown solver(s) {unknown}; choose from {', '.join(SOLVERS)}"]
            )
        inst = load_instance(instance)
        options = _options(time_limit, workers, seed, log, hint)
    folder = output_dir if output_dir is not None else Path(f"{instance.stem}-plans")
    plans = compare_plans(inst, names, options)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    for plan in plans:
        plan.write(folder / f"{plan.solver}.json")
    typer.echo(format_comparison(inst, plans))
    typer.echo(f"\nplans written to {folder}/")


@app.command("schema")
def schema_cmd() -> None:
    """Print the JSON Schema of the instance format (for editor validation of YAML files)."""
    typer.echo(json.dumps(InstanceSpec.model_json_schema(), indent=2))
