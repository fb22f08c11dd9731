"""Forecast the per-slot replica demand of an inference service from its history.

A history is a series of request rates (or replicas) with timestamps, read from a CSV file
(`read_history`). A forecaster turns it into one value per slot of a horizon; `replicas` turns a
rate into the instance's `demand` (fractional replicas); `write_demand_csv` and `patch_instance`
put it into an instance; `backtest` says, on the history itself, how often a forecast would have
covered the actual demand and how much it would have reserved in vain.

The method (`SeasonalQuantile`). The history is first put onto the slot grid (the mean rate over
each slot, slots aligned to midnight UTC). For each slot to forecast, the samples are the same
time of day on past days (or the same time of week on past weeks) within the window, optionally
with the slots on either side (`neighbours`), and the forecast is their empirical quantile (p95
by default; the Weibull order statistic, whose expected coverage of a new sample is the quantile
itself). With `level=True` (the default) each sample is first divided by the mean of the day
before it (the 24 hours ending as far before the sample as the forecast's origin is before the
slot), and the quantile is multiplied by the mean of the last 24 hours of history: the quantile
is then one of the day-over-day ratio, so a series that grows or shrinks is followed instead of
lagging behind by half the window.

Why this method and not a forecasting library: it needs nothing beyond numpy, its quantile is
exact (no distribution assumed for bursty, skewed LLM traffic), every number can be traced to
the past slots it came from, and on the public serving traces it reserves less for the same
coverage than the library intervals tried and than the naive baselines; without the level it
lags growing traffic. The numbers, and the command that measures them, are in
benchmarks/README.md ("Demand forecasts").

Units. Values are whatever the history holds (requests per second, or replicas); `replicas`
divides a rate by the throughput of one replica and keeps the fraction, because the instance's
`demand` is fractional and the compiler applies `headroom` and rounds up itself
(`req = ceil(demand * (1 + headroom))`, docs/FORMAT.md).

The package: `history` (the series and reading it), `models` (the forecasters, `replicas`,
`demand_for`), `backtest` (scoring a forecaster on its history), `demand` (writing a forecast
demand: CSV, instance patch). Every name is re-exported here.
"""

from horizon_opt.forecast.backtest import (
    BacktestRow,
    BacktestSummary,
    backtest,
    headroom_for,
    summarize,
)
from horizon_opt.forecast.demand import (
    demand_csv_text,
    forecast_horizon,
    history_gap,
    history_gap_warning,
    patch_instance,
    write_demand_csv,
)
from horizon_opt.forecast.history import (
    TIME_COLUMNS,
    History,
    TimeLike,
    epoch_seconds,
    read_history,
    to_datetime,
)
from horizon_opt.forecast.models import (
    QMETHOD,
    Fitted,
    Forecaster,
    LastPeriod,
    LastPeriodFit,
    SeasonalFit,
    SeasonalQuantile,
    StaticPeak,
    StaticPeakFit,
    demand_for,
    replicas,
    seasonality_of,
)

__all__ = [
    "QMETHOD",
    "TIME_COLUMNS",
    "BacktestRow",
    "BacktestSummary",
    "Fitted",
    "Forecaster",
    "History",
    "LastPeriod",
    "LastPeriodFit",
    "SeasonalFit",
    "SeasonalQuantile",
    "StaticPeak",
    "StaticPeakFit",
    "TimeLike",
    "backtest",
    "demand_csv_text",
    "demand_for",
    "epoch_seconds",
    "forecast_horizon",
    "headroom_for",
    "history_gap",
    "history_gap_warning",
    "patch_instance",
    "read_history",
    "replicas",
    "seasonality_of",
    "summarize",
    "to_datetime",
    "write_demand_csv",
]
