"""The `horizon-opt` command: thin typer commands over the library; bad input exits 2, cleanly.

This module builds the app from the command modules, in the order `--help` lists them:
plan.py (solve, replan, check, validate, compare, diff), analyse.py (whatif, explain, export,
report), data.py (forecast, schema, generate, import), run.py (simulate, bench), operate.py
(run: the re-planning cycle on a live cluster). What several
commands share: options.py (option types, value parsers), errors.py (bad input exits 2) and
solving.py (warnings, progress and options of a solve)."""

from __future__ import annotations

import warnings
from typing import Annotated, TextIO

import typer

from horizon_opt.cli import analyse, data, operate, plan, run
from horizon_opt.cli.options import SOLVER_LIST
from horizon_opt.errors import BoundWarning
from horizon_opt.version import __version__

__all__ = ["app"]

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
    warnings.showwarning = _show_warning


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A dropped bound (`BoundWarning`) is news for the user: one line on stderr. Other
    warnings are the libraries' and keep Python's form."""
    if issubclass(category, BoundWarning):
        typer.echo(f"warning: {message}", err=True)
    else:
        _PYTHON_SHOW(message, category, filename, lineno, file, line)


_PYTHON_SHOW = warnings.showwarning


app.command("solve")(plan.solve_cmd)
app.command("replan")(plan.replan_cmd)
app.command("simulate")(run.simulate_cmd)
app.command("check")(plan.check_cmd)
app.command("validate")(plan.validate_cmd)
app.command("compare")(plan.compare_cmd)
app.command("diff")(plan.diff_cmd)
app.command("whatif")(analyse.whatif_cmd)
app.command("explain")(analyse.explain_cmd)
app.command("export")(analyse.export_cmd)
app.command("report")(analyse.report_cmd)
app.command("forecast")(data.forecast_cmd)
app.command("schema")(data.schema_cmd)
app.command("generate")(data.generate_cmd)
app.command("run")(operate.run_cmd)
app.command("bench", epilog=f"Solvers a suite may name:\n\n{SOLVER_LIST}")(run.bench_cmd)

import_app = typer.Typer(help=data.IMPORT_HELP, no_args_is_help=True)
app.add_typer(import_app, name="import")
import_app.command("csv")(data.import_csv_cmd)
import_app.command("slurm")(data.import_slurm_cmd)
import_app.command("kueue")(data.import_kueue_cmd)
