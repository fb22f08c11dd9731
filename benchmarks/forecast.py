#!/usr/bin/env python3
"""Demand forecasts against what happened: coverage and over-reservation on public traces.

    .venv/bin/python benchmarks/forecast.py                  # ServeGen (the package's traces)
    .venv/bin/python benchmarks/forecast.py --azure FILE.csv # also an Azure LLM request trace

Day-ahead forecasts of the hourly request rate from rolling origins (each midnight of the last
week of the history, each fit on the history before it), scored against the hourly mean rate
that followed: `SeasonalQuantile` at p90/p95/p99 (horizon_opt.forecast), alone and pooled with
the 2 hours on either side (`neighbours=2`), the same without its level (the plain quantile of
past days), and two naive baselines: yesterday's same hour, and the
static peak of the history (what a static reservation holds). With statsforecast installed (not
a project dependency: `pip install statsforecast`), its AutoETS and MSTL prediction intervals are
scored on the same origins too.

Columns: coverage = share of scored hours whose actual mean rate stayed at or under the
forecast; over = sum of (forecast - actual) where positive / sum of actual (replica-hours
reserved in vain per replica-hour used, whatever the replica throughput, before rounding up to
whole replicas); under = the demand above the forecast, as a share of demand; 10-min cov =
share of the 10-minute windows inside the scored hours whose rate stayed under the hourly
forecast (the bursts an hourly slot averages away); h95 = the headroom that would have lifted
coverage to 95% on these very hours (in-sample, so optimistic), and over@h95 the over-reservation
with it: the price of 95% coverage, comparable across methods.

ServeGen rows with gap=1 (collection gaps) are left out of fitting and scoring. An Azure trace
(`TIMESTAMP` per request, as in Azure/AzurePublicDataset) is counted into 10-minute windows.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from horizon_opt.forecast import (
    BacktestRow,
    Forecaster,
    History,
    LastPeriod,
    SeasonalQuantile,
    StaticPeak,
    backtest,
    epoch_seconds,
    headroom_for,
    read_history,
    summarize,
    to_datetime,
)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TRACES = ROOT / "src" / "horizon_opt" / "data" / "traces"  # the traces the package ships
# Without --out, results go to bench-results/ (ignored by git): a run never rewrites the
# committed benchmarks/results/ unless told to with --out.
DEFAULT_OUT = ROOT / "bench-results" / "forecast.md"
QUANTILES = (0.90, 0.95, 0.99)
DAY = 86_400
WINDOW = 600  # seconds: the traces' 10-minute windows
LEGEND = """\
- coverage: share of scored hours whose actual mean rate stayed at or under the forecast.
- over: sum of (forecast - actual) where positive / sum of actual: replica-hours reserved in vain
  per replica-hour used, whatever the replica throughput (before rounding up to whole replicas).
- under: demand above the forecast, as a share of the demand.
- 10-min cov: share of the 10-minute windows inside the scored hours whose rate stayed under the
  hour's forecast (the bursts an hourly slot averages away).
- h95: the headroom that would have lifted coverage to 95% on these very hours (in-sample, so
  optimistic); over@h95: the over-reservation with it, the price of 95% coverage.

"""
AZURE = """
### Azure LLM inference traces

The 2023 traces in Azure/AzurePublicDataset (`data/AzureLLMInferenceTrace_conv.csv`,
`data/AzureLLMInferenceTrace_code.csv`) hold about an hour of requests each: far too short for a
daily cycle (above, when passed with `--azure`). The 2024 week (`AzureLLMInferenceTrace_conv_1week.csv`,
`..._code_1week.csv`) is hosted outside the repository and could not be fetched here; the
multimodal 2025 week (`AzureLMMInferenceTrace_multimodal.csv.gz`) is in the repository but was
left out of the snapshot available here (too large). With either file at hand,
`--azure FILE.csv` (a `TIMESTAMP` per request; gunzip the multimodal one) backtests it the same way.
"""


# -- statsforecast, when it is installed ------------------------------------------------------


@dataclass(frozen=True)
class LibraryForecaster:
    """A statsforecast model's upper prediction bound as a quantile forecast: the central
    interval at level 2q - 1 ends at the q quantile. Gaps are filled by linear interpolation."""

    name: str
    make: Callable[[], Any]
    quantile: float
    slot_minutes: int = 60
    cache: dict[tuple[str, float, int], dict[str, Any]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def fit(self, history: History) -> LibraryFit:
        return LibraryFit(self, *history.slotted(self.slot_minutes))


@dataclass(frozen=True)
class LibraryFit:
    params: LibraryForecaster
    first: int
    y: np.ndarray

    def predict(self, start: float | datetime, slots: int) -> np.ndarray:
        p = self.params
        j0 = int(epoch_seconds(start) // (p.slot_minutes * 60))
        lag = j0 - (self.first + len(self.y))
        known = ~np.isnan(self.y)
        x = np.arange(len(self.y))
        y = np.interp(x, x[known], self.y[known])
        key = (p.name, epoch_seconds(start), slots)
        if key not in p.cache:
            levels = [round(100 * (2 * q - 1)) for q in QUANTILES]
            p.cache[key] = p.make().forecast(y=y, h=lag + slots, level=levels)
        level = round(100 * (2 * p.quantile - 1))
        out: np.ndarray = np.maximum(p.cache[key][f"hi-{level}"][lag:], 0.0)
        return out


def library_forecasters() -> list[tuple[str, Callable[[float], Forecaster]]]:
    try:
        from statsforecast.models import (  # type: ignore[import-not-found,unused-ignore]
            MSTL,
            AutoETS,
        )
    except ImportError:
        return []
    ets: dict[tuple[str, float, int], dict[str, Any]] = {}
    mstl: dict[tuple[str, float, int], dict[str, Any]] = {}
    return [
        (
            "statsforecast AutoETS (season 24 h)",
            lambda q: LibraryForecaster("ets", lambda: AutoETS(season_length=24), q, cache=ets),
        ),
        (
            "statsforecast MSTL (24 h) + AutoETS trend",
            lambda q: LibraryForecaster(
                "mstl",
                lambda: MSTL(season_length=24, trend_forecaster=AutoETS(model="ZZN")),
                q,
                cache=mstl,
            ),
        ),
    ]


# -- scoring --------------------------------------------------------------------------------------


def window_coverage(rows: Sequence[BacktestRow], history: History) -> float:
    """Share of the history's samples (10-minute windows) in scored slots that stay under the
    slot's reservation."""
    hits = total = 0
    for r in rows:
        slot = r.slot_minutes * 60
        origin = r.origin.timestamp()
        k = np.floor((history.times - origin) / slot).astype(int)
        inside = (k >= 0) & (k < len(r.reserved))
        inside[inside] &= r.scored[k[inside]]
        hits += int((history.values[inside] <= r.reserved[k[inside]] + 1e-9).sum())
        total += int(inside.sum())
    return hits / total if total else math.nan


def score(history: History, forecaster: Forecaster, first: float) -> dict[str, float]:
    rows = backtest(history, forecaster, first=first)
    total = summarize(rows)
    h95 = headroom_for(rows, 0.95)
    at95 = summarize(backtest(history, forecaster, first=first, headroom=h95))
    return {
        "origins": total.origins,
        "hours": total.slots,
        "coverage": total.coverage,
        "over": total.over,
        "under": total.under,
        "window_coverage": window_coverage(rows, history),
        "h95": h95,
        "over_h95": at95.over,
    }


def pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{100 * x:.1f}%"


def table(results: list[tuple[str, dict[str, float]]]) -> list[str]:
    lines = [
        "| forecast | coverage | over | under | 10-min cov | h95 | over@h95 |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results:
        lines.append(
            f"| {name} | {pct(r['coverage'])} | {pct(r['over'])} | {pct(r['under'])} "
            f"| {pct(r['window_coverage'])} | {pct(r['h95'])} | {pct(r['over_h95'])} |"
        )
    return lines


def evaluate(name: str, history: History, with_library: bool) -> list[str]:
    """The section of one series: its tables, or why it is too short."""
    days = (history.end - history.start) / DAY
    first = math.floor(history.end / DAY) * DAY - 7 * DAY  # the last week's midnights
    head = f"### {name}\n\n"
    if first < history.start + 1 * DAY:
        return [
            head + f"Too short: {days * 24:.1f} hours of history "
            f"({len(history.times):,} windows). A day-ahead backtest over the last week "
            "needs at least 8 days (one to fit, seven to score); none is reported.\n"
        ]
    results: list[tuple[str, dict[str, float]]] = []
    for neighbours in (0, 2):
        for q in QUANTILES:
            model = SeasonalQuantile(q, neighbours=neighbours)
            label = f"SeasonalQuantile p{round(q * 100)}" + (
                f", neighbours {neighbours}" if neighbours else ""
            )
            results.append((label, score(history, model, first)))
    results.append(
        (
            "p95, no level (plain quantile)",
            score(history, SeasonalQuantile(0.95, level=False), first),
        )
    )
    results.append(("yesterday's same hour", score(history, LastPeriod(), first)))
    results.append(("static peak of the history", score(history, StaticPeak(), first)))
    if with_library:
        for label, make in library_forecasters():
            for q in QUANTILES:
                results.append((f"{label} p{round(q * 100)}", score(history, make(q), first)))
    r0 = results[0][1]
    return [
        head + f"{days:.0f} days of history; {r0['origins']:.0f} origins, {r0['hours']:.0f} scored "
        f"hours.\n\n" + "\n".join(table(results)) + "\n"
    ]


# -- the traces -----------------------------------------------------------------------------------


def servegen(traces: Path) -> list[tuple[str, History]]:
    path = traces / "inference_servegen.csv"
    with path.open() as fh:
        models = list(dict.fromkeys(row["model"] for row in csv.DictReader(fh)))
    return [
        (
            f"ServeGen {m}",
            read_history(path, "time_s", "rate_rps", where={"model": m, "gap": "0"}),
        )
        for m in models
    ]


def azure(path: Path) -> tuple[str, History]:
    """Requests per second in 10-minute windows of a per-request trace (column TIMESTAMP)."""
    with path.open(newline="") as fh:
        stamps = [
            epoch_seconds(datetime.fromisoformat(row["TIMESTAMP"].strip()[:26]))
            for row in csv.DictReader(fh)
        ]
    t = np.sort(np.asarray(stamps))
    first = math.floor(t[0] / WINDOW) * WINDOW
    counts = np.bincount(((t - first) // WINDOW).astype(int))
    times = first + WINDOW * np.arange(len(counts), dtype=np.float64)
    span = f"from {to_datetime(t[0]).isoformat(' ', 'seconds')[:19]}, {len(t):,} requests"
    return f"Azure {path.stem} ({span})", History(times, counts / WINDOW, WINDOW, str(path))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--traces", type=Path, default=TRACES)
    parser.add_argument("--azure", type=Path, action="append", default=[])
    parser.add_argument("--no-library", action="store_true", help="skip statsforecast")
    parser.add_argument("-o", "--out", "--output", dest="output", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    began = time.perf_counter()
    with_library = not args.no_library and bool(library_forecasters())
    series = servegen(args.traces) + [azure(p) for p in args.azure]
    sections = [line for name, history in series for line in evaluate(name, history, with_library)]
    command = "benchmarks/forecast.py" + "".join(f" --azure {p.name}" for p in args.azure)
    if with_library:
        from importlib.metadata import version

        library = f"statsforecast {version('statsforecast')}'s AutoETS and MSTL included"
    else:
        library = (
            "statsforecast not installed: its rows left out; run with an interpreter that has "
            "it and the project's dependencies, `PYTHONPATH=src`, to include them"
        )
    text = (
        "# Demand forecasts: coverage and over-reservation\n\n"
        f"`{command}` ({library}; {time.perf_counter() - began:.0f} s). Hourly slots, day-ahead "
        "forecasts from each midnight of the last week of each history, fit on the history "
        "before it (window 28 days: all of it here).\n\n" + LEGEND + "\n".join(sections) + AZURE
    )
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
