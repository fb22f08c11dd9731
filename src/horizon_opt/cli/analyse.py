"""Commands that look into plans and instances: whatif, explain, export, report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from horizon_opt.analysis.explain import explain
from horizon_opt.analysis.prices import (
    CapacityPrices,
    capacity_prices,
    format_prices,
    prices_to_json,
)
from horizon_opt.analysis.whatif import (
    METAVAR,
    Change,
    ChangeKind,
    WhatIf,
    check_what_if,
    format_what_if,
    parse_change,
    solve_what_if,
    what_if_instances,
    what_if_json,
)
from horizon_opt.cli.errors import input_errors
from horizon_opt.cli.options import (
    DEFAULT_WORKERS,
    SOLVER_LIST,
    Format,
    InstanceArg,
    PlanTimeLimit,
    Seed,
    Workers,
    check_format,
    check_solver,
    file_name,
    to_json,
)
from horizon_opt.cli.outputs import Output, check_outputs, is_stdout, writing
from horizon_opt.cli.solving import solve_options, warn
from horizon_opt.errors import InputError
from horizon_opt.export.explanations import (
    explanations_csv,
    explanations_json,
    format_explanations,
    format_one,
)
from horizon_opt.io import write_atomic
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import load_instance
from horizon_opt.plans.plan import Plan
from horizon_opt.service.promises import load_ledger
from horizon_opt.solvers.options import PER_PLAN_SECONDS

PRICES_SECONDS = 30.0  # time for the LP behind capacity prices (it converges in seconds)


def _changes(kind: ChangeKind, texts: list[str] | None) -> list[Change]:
    return [parse_change(text, kind) for text in texts or ()]


def _change_option(kind: ChangeKind, what: str) -> object:
    return typer.Option(
        f"--{kind}",
        metavar=METAVAR[kind],
        help=f"{what}. Repeat for more.",
        show_default=False,
    )


WhatIfSolver = Annotated[
    str | None,
    typer.Option(
        help=f"Plans both instances (needed with a change); one of:\n\n{SOLVER_LIST}",
        show_default=False,
    ),
]
Add = Annotated[
    list[str] | None,
    _change_option("add", "N more nodes in pool POOL, named on from its last (h100=2)"),
]
Remove = Annotated[
    list[str] | None,
    _change_option("remove", "N fewer nodes in pool POOL, from its last (h100=2)"),
]
Outage = Annotated[
    list[str] | None,
    _change_option(
        "outage",
        "NODE is also down from FROM to TO: slots (h100-3:10-20), or ISO times when the "
        "horizon has a start",
    ),
]
Demand = Annotated[
    list[str] | None,
    _change_option("demand", "SERVICE's forecast demand times FACTOR (chat*1.2)"),
]
Limit = Annotated[
    list[str] | None,
    _change_option("limit", "TEAM's hard limit on POOL set to N GPUs (product:h100=16)"),
]
WhatIfOutput = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Write the changed instance's plan here (JSON).",
        show_default=False,
        parser=file_name,
    ),
]
WhatIfPrices = Annotated[
    bool,
    typer.Option(
        "--prices",
        help="Also print capacity prices: what one more GPU or node of each pool adds to "
        "the relaxation's bound (from its duals), and when; alone, no solver is needed.",
    ),
]


def _print_what_if(
    result: WhatIf,
    before: Instance,
    priced: CapacityPrices | None,
    fmt: str,
    output: Path | None,
) -> None:
    """The comparison (and prices), after the changed instance's plan is written to `output`."""
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    if output is not None:
        with input_errors(), writing("--output", output):
            result.changed.write(output)
    if fmt == "json":
        data = what_if_json(result)
        if priced is not None:
            data["prices"] = prices_to_json(before, priced)
        typer.echo(to_json(data))
    else:
        typer.echo(format_what_if(result))
        if priced is not None:
            typer.echo("\n" + format_prices(before, priced).rstrip("\n"))
    if output is not None:
        typer.echo(f"plan of the changed instance written to {output}", err=fmt == "json")


def whatif_cmd(
    instance: InstanceArg,
    solver: WhatIfSolver = None,
    add: Add = None,
    remove: Remove = None,
    outage: Outage = None,
    demand: Demand = None,
    limit: Limit = None,
    time_limit: PlanTimeLimit = PER_PLAN_SECONDS,
    workers: Workers = DEFAULT_WORKERS,
    seed: Seed = 0,
    fmt: Format = "text",
    output: WhatIfOutput = None,
    prices: WhatIfPrices = False,
) -> None:
    """What if the cluster changed: plan the instance as written and as changed (more or fewer
    nodes, an outage, scaled demand, a team's limit) with one solver, and compare the plans; `--prices` says
    what one more node of each pool is worth."""
    with input_errors():
        check_format(fmt)
        check_outputs(
            [] if output is None else [Output("--output", output)],
            [("the instance file", instance)],
        )
        changes = [
            *_changes("add", add),
            *_changes("remove", remove),
            *_changes("outage", outage),
            *_changes("demand", demand),
            *_changes("limit", limit),
        ]
        check_what_if(changes, solver, prices, writes_plan=output is not None)
        if solver is not None:
            check_solver(solver)
        if changes:
            before, after = what_if_instances(instance, changes)
        else:
            before = load_instance(instance)
        warn(instance, before)
        options = solve_options(time_limit, workers, seed, None, None)
    priced = capacity_prices(before, PRICES_SECONDS) if prices else None
    if not changes:
        assert priced is not None
        if fmt == "json":
            typer.echo(to_json(prices_to_json(before, priced)))
        else:
            typer.echo(format_prices(before, priced).rstrip("\n"))
        return
    assert solver is not None
    result = solve_what_if(before, after, changes, solver, options)
    _print_what_if(result, before, priced, fmt, output)


EXPLAIN_FORMATS = ("text", "json", "csv")


def explain_cmd(
    instance: InstanceArg,
    plan_file: Annotated[
        Path, typer.Argument(metavar="PLAN", help="A plan of the instance (JSON).")
    ],
    job: Annotated[
        str | None, typer.Option("--job", "-j", help="Only this job.", show_default=False)
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            "-f",
            help="text (for people), json (for scripts) or csv (one row per job: every job's "
            "predicted start in one table).",
        ),
    ] = "text",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write here instead of the terminal.",
            show_default=False,
            parser=file_name,
        ),
    ] = None,
    promises: Annotated[
        Path | None,
        typer.Option(
            "--promises",
            help="A cycle's promises.json (run): each promised job's start with its P50 and P90.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """When each job starts, its earliest start alone on the cluster, and for a late or unplanned
    job: why (its cause code) and what it would take (a start by moving only lower-value work,
    the priority that would outrank the work in its way); with --promises, what people were
    told."""
    with input_errors():
        if fmt not in EXPLAIN_FORMATS:
            raise InputError(
                [f"--format: unknown format {fmt!r}; choose one of {', '.join(EXPLAIN_FORMATS)}"]
            )
        check_outputs(
            [] if output is None else [Output("--output", output, stdout=True)],
            [("the instance file", instance), ("the plan file", plan_file)]
            + ([] if promises is None else [("the promises file", promises)]),
        )
        inst = load_instance(instance)
        plan = Plan.read(plan_file)
        told = None if promises is None else load_ledger(promises).intervals()
        records = explain(inst, plan, job, source=str(plan_file))
    if fmt == "json":
        text = explanations_json(plan, records, told)
    elif fmt == "csv":
        text = explanations_csv(inst, records)
    elif job is not None:
        text = format_one(inst, records[0], told)
    else:
        text = format_explanations(inst, plan, records, told)
    if output is None or is_stdout(output):
        typer.echo(text, nl=False)
        return
    with input_errors(), writing("--output", output):
        write_atomic(output, text)
    typer.echo(f"written: {output}", err=True)


EXPORT_FORMATS = ("csv", "gantt", "utilization")

ExportPlan = Annotated[
    Path, typer.Argument(metavar="PLAN", help="Plan file (JSON).", show_default=False)
]
ExportInstance = Annotated[
    Path,
    typer.Option("--instance", "-i", help="The plan's instance file (YAML).", show_default=False),
]
ExportFormat = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help="csv, gantt or utilization (charts: PNG or SVG by -o).",
        show_default=False,
    ),
]
ExportOutput = Annotated[
    Path,
    typer.Option(
        "--output",
        "-o",
        help="File to write (.csv, .png or .svg). CSV also writes FILE-inference.csv beside "
        "it; -o - writes only the assignments table, to standard output.",
        show_default=False,
        parser=file_name,
    ),
]


def export_cmd(
    plan_file: ExportPlan, instance: ExportInstance, fmt: ExportFormat, output: ExportOutput
) -> None:
    """Export a plan: CSV tables (assignments + inference blocks), a Gantt or a utilization chart."""
    from horizon_opt.export import ensure_plan_fits, inference_path, write_chart, write_csv
    from horizon_opt.export.csv import assignments_csv

    to_stdout = fmt == "csv" and is_stdout(output)
    with input_errors():
        if fmt not in EXPORT_FORMATS:
            raise InputError(
                [f"--format: unknown format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}"]
            )
        wanted = (".csv",) if fmt == "csv" else (".png", ".svg")
        if output.suffix.lower() not in wanted and not to_stdout:
            raise InputError(
                [
                    f"--output: {fmt} needs a file name ending in {' or '.join(wanted)}, "
                    f"got {output.name!r}"
                ]
            )
        outputs = [Output("--output", output, stdout=to_stdout)]
        if fmt == "csv" and not to_stdout:
            outputs.append(Output("--output", inference_path(output)))
        check_outputs(
            outputs,
            [("the plan file (PLAN)", plan_file), ("the instance file (--instance)", instance)],
        )
        inst = load_instance(instance)
        plan = Plan.read(plan_file)
        ensure_plan_fits(inst, plan, source=str(plan_file))
        with writing("--output", output):
            if to_stdout:
                sys.stdout.write(assignments_csv(inst, plan))
                message = (
                    f"wrote {len(plan.assignments)} assignments to standard output "
                    "(the inference table needs -o FILE.csv)"
                )
            elif fmt == "csv":
                first, second = write_csv(inst, plan, output)
                message = (
                    f"wrote {first} ({len(plan.assignments)} assignments) and "
                    f"{second} ({len(plan.inference)} inference blocks)"
                )
            else:
                path = (
                    write_chart(inst, plan, "gantt", output)
                    if fmt == "gantt"
                    else write_chart(inst, plan, "utilization", output)
                )
                what = "Gantt" if fmt == "gantt" else "utilization"
                message = f"wrote {path} ({what} chart of the {plan.solver} plan for {inst.name})"
    typer.echo(message, err=to_stdout)


def report_cmd(
    instance: InstanceArg,
    plan_files: Annotated[
        list[Path],
        typer.Argument(
            metavar="PLAN",
            help="Plan files (JSON); the first is the reference.",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Where to write the report (HTML).", parser=file_name),
    ] = Path("report.html"),
    prices: Annotated[
        bool,
        typer.Option(
            "--prices",
            help="Add a heatmap of capacity prices (what one more node of each pool adds to "
            "the relaxation's bound, per slot); solves the LP, seconds on large instances.",
        ),
    ] = False,
) -> None:
    """Write one self-contained HTML report: instance, plans side by side, charts, why jobs
    wait, waits."""
    from horizon_opt.export import ensure_plan_fits, file_labels, write_report

    with input_errors():
        check_outputs(
            [Output("--output", output)],
            [("the instance file", instance), *(("a plan file (PLAN)", f) for f in plan_files)],
        )
        inst = load_instance(instance)
        plans = [Plan.read(f) for f in plan_files]
        for f, plan in zip(plan_files, plans, strict=True):
            ensure_plan_fits(inst, plan, source=str(f))
        labels = file_labels(plans, plan_files)
        priced = capacity_prices(inst, PRICES_SECONDS) if prices else None
        with writing("--output", output):
            path = write_report(inst, plans, output, labels=labels, prices=priced)
    size = path.stat().st_size
    typer.echo(f"report written to {path} ({len(plans)} plan(s), {size / 1e6:.1f} MB)")
