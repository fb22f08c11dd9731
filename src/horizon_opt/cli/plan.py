"""Commands that make and check plans: solve, replan, check, validate, compare, diff."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from horizon_opt.analysis.compare import compare_plans, format_comparison
from horizon_opt.cli.errors import input_errors
from horizon_opt.cli.options import (
    DEFAULT_WORKERS,
    SOLVER_LIST,
    Format,
    Gap,
    Hint,
    InstanceArg,
    Log,
    PlanOutput,
    Seed,
    Solver,
    Stability,
    TimeLimit,
    Workers,
    check_format,
    check_solver,
    file_name,
    time_option,
    to_json,
)
from horizon_opt.cli.outputs import Output, check_outputs, is_stdout, writing
from horizon_opt.cli.solving import solve_options, warn
from horizon_opt.errors import InputError
from horizon_opt.loop.replan import DEFAULT_FREEZE_MINUTES, replan
from horizon_opt.model.load import load_instance
from horizon_opt.model.validate import validate
from horizon_opt.plans.check import check, ensure_valid
from horizon_opt.plans.diff import format_diff, plan_diff
from horizon_opt.plans.metrics import evaluate
from horizon_opt.plans.plan import Plan
from horizon_opt.plans.tolerance import same
from horizon_opt.solvers import SOLVERS, solve
from horizon_opt.solvers.options import ONE_PLAN_SECONDS, PER_PLAN_SECONDS


def _log_outputs(log: Path | None) -> list[Output]:
    return [] if log is None else [Output("--log", log, kind="stream")]


def _solve_inputs(instance: Path, hint: Path | None) -> list[tuple[str, Path | None]]:
    return [("the instance file", instance), ("the --hint plan", hint)]


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
        f"  utilization                     {100 * m.utilization:.1f}%",
        f"  jobs on time                    {m.completed} of {total}"
        + (f" ({m.late} more scheduled late)" if m.late else ""),
        f"  mean wait                       {m.mean_wait_hours:.2f} h",
        f"  reserved idle GPU-hours         {m.reserved_idle_gpu_hours:,.1f}",
    ]
    lines += [
        f"  team {name:<27s}{f.gpu_hours:,.0f} of {f.quota_gpu_hours:,.0f} quota GPU-h "
        f"({f.borrowed_gpu_hours:,.0f} borrowed), pwo {f.pwo:,.2f}"
        for name, f in m.teams.items()
    ]
    lines.append(f"  wall time                       {plan.wall_seconds:.2f} s")
    return "\n".join(lines)


def _write_plan(plan: Plan, output: Path, summary: str) -> None:
    """The plan to its file (or standard output, the summary then going to stderr)."""
    to_stdout = is_stdout(output)
    if sys.stderr.isatty():
        sys.stderr.write("\n")  # ends the live progress line
    if to_stdout:
        typer.echo(plan.to_json(), nl=False)
    else:
        with input_errors(), writing("--output", output):
            plan.write(output)
    typer.echo(summary, err=to_stdout)
    typer.echo(f"  plan written to {'standard output' if to_stdout else output}", err=to_stdout)


def solve_cmd(
    instance: InstanceArg,
    output: PlanOutput,
    solver: Solver = "cpsat",
    time_limit: TimeLimit = ONE_PLAN_SECONDS,
    workers: Workers = DEFAULT_WORKERS,
    seed: Seed = 0,
    log: Log = None,
    hint: Hint = None,
    gap: Gap = None,
) -> None:
    """Plan one instance with one solver and write the plan file."""
    with input_errors():
        check_solver(solver)
        check_outputs(
            [Output("--output", output, stdout=True), *_log_outputs(log)],
            _solve_inputs(instance, hint),
        )
        inst = load_instance(instance)
        warn(instance, inst)
        plan = solve(inst, solver, solve_options(time_limit, workers, seed, log, hint, gap))
    _write_plan(plan, output, _summary(plan))


def _churn_lines(plan: Plan) -> list[str]:
    c = plan.churn
    if c is None:
        return []
    return [
        f"  promises compared / held        {c.compared} / {c.held}",
        f"  moved (later)                   {c.moved} ({c.later}), {c.moved_gpu_hours:,.1f} "
        f"GPU-hours, shift mean {c.mean_shift_hours:.2f} h, max {c.max_shift_hours:.2f} h",
        f"  dropped / promises broken       {c.dropped} / {c.broken}",
        f"  newly planned                   {c.new}",
    ]


def replan_cmd(
    instance: Annotated[
        Path,
        typer.Argument(
            help="The cluster's state: an instance with `now`, running jobs `placed`, finished "
            "jobs left out (FORMAT.md).",
            show_default=False,
        ),
    ],
    previous: Annotated[
        Path, typer.Option(help="The plan being replaced (its near starts are held).")
    ],
    output: PlanOutput,
    solver: Solver = "cpsat",
    freeze: Annotated[
        str,
        typer.Option(
            help="Hold the previous plan's starts within this long after now (e.g. 2h, 90m, or "
            "slots); 0 holds none."
        ),
    ] = f"{DEFAULT_FREEZE_MINUTES // 60}h",
    stability: Stability = 0.0,
    time_limit: TimeLimit = PER_PLAN_SECONDS,
    workers: Workers = DEFAULT_WORKERS,
    seed: Seed = 0,
    log: Log = None,
) -> None:
    """Plan again from the cluster's state at `now`, starting from the previous plan; report
    what moved (churn)."""
    with input_errors():
        check_solver(solver)
        check_outputs(
            [Output("--output", output, stdout=True), *_log_outputs(log)],
            [("the instance file", instance), ("the --previous plan", previous)],
        )
        inst = load_instance(instance)
        before = Plan.read(previous)
        slots = time_option(freeze, inst, "--freeze")
        warn(instance, inst)
        if before.instance != inst.name:
            typer.echo(
                f"warning: the previous plan is for instance {before.instance!r}, "
                f"not {inst.name!r}",
                err=True,
            )
        result = replan(
            inst,
            before,
            solver,
            solve_options(time_limit, workers, seed, log, previous),
            freeze_slots=slots,
            stability=stability,
        )
    for line in result.not_held:
        typer.echo(f"warning: {line}", err=True)
    plan = result.plan
    _write_plan(plan, output, "\n".join([_summary(plan), *_churn_lines(plan)]))


def check_cmd(
    instance: InstanceArg,
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN", help="Plan file (JSON).")],
) -> None:
    """Check a plan against FORMAT.md's validity rules: exit 0 when valid, 1 with the violations."""
    with input_errors():
        inst = load_instance(instance)
        plan = Plan.read(plan_file)
    violations = check(inst, plan)
    if violations.other_instance is not None:
        typer.echo(f"warning: {violations.other_instance}")
    if violations:
        for v in violations:
            typer.echo(str(v))
        typer.echo(f"INVALID: {violations.total} violation(s)")
        raise typer.Exit(1)
    pwo = evaluate(inst, plan).pwo
    typer.echo(
        f"VALID: {len(plan.assignments)} jobs assigned, {len(plan.unscheduled)} unscheduled, pwo {pwo:,.2f}"
    )
    if not same(pwo, plan.objective):
        typer.echo(
            f"warning: the plan reports objective {plan.objective:,.2f}, recomputed pwo is {pwo:,.2f}"
        )


def validate_cmd(
    instance: InstanceArg,
    strict: Annotated[
        bool, typer.Option("--strict", help="Exit 1 when there is any warning (for CI).")
    ] = False,
) -> None:
    """Check an instance without solving: errors exit 2, warnings (valid, but probably not what
    you meant) are listed and exit 0, or 1 with --strict."""
    with input_errors():
        inst = load_instance(instance)
    warnings = validate(inst)
    for warning in warnings:
        typer.echo(f"warning: {warning}")
    count = f"{len(warnings)} warning{'' if len(warnings) == 1 else 's'}"
    verdict = "FAILED (--strict)" if strict and warnings else "OK"
    slots = f"{inst.slots} slots"
    if inst.written_slots is not None:
        slots = f"{inst.written_slots} slots (open end: planned over {inst.slots})"
    typer.echo(f"{verdict}: {len(inst.jobs)} jobs, {inst.num_nodes} nodes, {slots}; {count}")
    if strict and warnings:
        raise typer.Exit(1)


def compare_cmd(
    instance: InstanceArg,
    output_dir: Annotated[
        Path | None,
        typer.Option(
            help="Folder for the plans (default: named after the instance).", parser=file_name
        ),
    ] = None,
    solvers: Annotated[
        str,
        typer.Option(
            help=f"Comma-separated solvers, the first is the reference; any of:\n\n{SOLVER_LIST}"
        ),
    ] = "fifo,greedy,cpsat",
    time_limit: TimeLimit = ONE_PLAN_SECONDS,
    workers: Workers = DEFAULT_WORKERS,
    seed: Seed = 0,
    log: Log = None,
    hint: Hint = None,
    report: Annotated[
        bool,
        typer.Option(
            "--report/--no-report", help="Write report.html (charts, tables) into the folder."
        ),
    ] = True,
) -> None:
    """Run several solvers on one instance and print their results side by side."""
    names = [s.strip() for s in solvers.split(",") if s.strip()]
    with input_errors():
        unknown = [s for s in names if s not in SOLVERS]
        if unknown or not names:
            what = f"unknown solver(s) {unknown}" if unknown else "name at least one solver"
            raise InputError([f"--solvers: {what}; choose from {', '.join(SOLVERS)}"])
        folder = output_dir if output_dir is not None else Path(f"{instance.stem}-plans")
        files = (
            *dict.fromkeys(f"{name}.json" for name in names),
            *(["report.html"] if report else []),
        )
        check_outputs(
            [Output("--output-dir", folder, kind="folder", files=files), *_log_outputs(log)],
            _solve_inputs(instance, hint),
        )
        inst = load_instance(instance)
        warn(instance, inst)
        options = solve_options(time_limit, workers, seed, log, hint)
    plans = compare_plans(inst, names, options)
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    with input_errors(), writing("--output-dir", folder):
        for plan in plans:
            plan.write(folder / f"{plan.solver}.json")
    typer.echo(format_comparison(inst, plans))
    typer.echo(f"\nplans written to {folder}/")
    if report:
        from horizon_opt.export import write_report

        with input_errors(), writing("--output-dir", folder):
            path = write_report(inst, plans, folder / "report.html")
        typer.echo(f"report written to {path}")


def diff_cmd(
    plan_a: Annotated[
        Path, typer.Argument(metavar="A", help="The plan to compare against (JSON).")
    ],
    plan_b: Annotated[Path, typer.Argument(metavar="B", help="The other plan (JSON).")],
    instance: Annotated[
        Path | None,
        typer.Option(
            "--instance",
            "-i",
            help="The plans' instance: both are checked against it, figures are recomputed, "
            "and deadlines say which jobs are newly on time.",
            show_default=False,
        ),
    ] = None,
    fmt: Format = "text",
) -> None:
    """What changed from plan A to plan B: jobs added, dropped and moved; pwo, utilization and
    jobs on time."""
    with input_errors():
        check_format(fmt)
        a, b = Plan.read(plan_a), Plan.read(plan_b)
        inst = None if instance is None else load_instance(instance)
        if inst is not None:
            ensure_valid(inst, a, str(plan_a))
            ensure_valid(inst, b, str(plan_b))
    if a.instance != b.instance:
        typer.echo(
            f"warning: {plan_a} is a plan of {a.instance!r}, {plan_b} of {b.instance!r}", err=True
        )
    result = plan_diff(a, b, inst)
    if fmt == "json":
        typer.echo(to_json(result.to_json()))
    else:
        typer.echo(format_diff(result, (str(plan_a), str(plan_b))))
