"""Forecasting replica demand from a history (horizon_opt.forecast), and demand CSVs whose `time`
column is resampled onto the horizon's slots (horizon_opt.model.load.read_demand_csv).

The histories are synthetic with known answers: a constant, a pure daily cycle (exact), a cycle
that grows by a fixed factor a day (the level follows it, the plain quantile lags), i.i.d. noise
(a p95 forecast covers about 95% of slots).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest
import yaml

from horizon_opt.errors import InputError, InstanceError
from horizon_opt.forecast import (
    History,
    LastPeriod,
    SeasonalQuantile,
    StaticPeak,
    backtest,
    demand_csv_text,
    demand_for,
    forecast_horizon,
    headroom_for,
    history_gap,
    history_gap_warning,
    patch_instance,
    read_history,
    replicas,
    seasonality_of,
    summarize,
    write_demand_csv,
)
from horizon_opt.model.load import load_instance

DAY = 86_400
T0 = datetime(2026, 11, 1, tzinfo=UTC).timestamp()  # a midnight UTC


def hourly(values: Sequence[float] | np.ndarray, start: float = T0) -> History:
    times = start + 3600.0 * np.arange(len(values), dtype=np.float64)
    return History(times, np.asarray(values, dtype=np.float64))


def cycle(days: int) -> np.ndarray:
    hours = np.arange(24 * days)
    return 10 + 5 * np.sin(2 * np.pi * hours / 24)


# -- forecasts with known answers -----------------------------------------------------------------


@pytest.mark.parametrize("level", [True, False])
@pytest.mark.parametrize("seasonality", ["day", "week"])
def test_constant_history_forecasts_the_constant(level: bool, seasonality: str) -> None:
    history = hourly([7.5] * 24 * 21)
    model = SeasonalQuantile(quantile=0.95, seasonality=seasonality, level=level)  # type: ignore[arg-type]
    out = model.fit(history).predict(T0 + 21 * DAY, 48)
    assert out.tolist() == [7.5] * 48


@pytest.mark.parametrize("level", [True, False])
def test_pure_daily_cycle_is_reproduced(level: bool) -> None:
    history = hourly(cycle(14))
    out = SeasonalQuantile(level=level).fit(history).predict(T0 + 14 * DAY, 48)
    np.testing.assert_allclose(out, cycle(2), rtol=1e-12)


def test_forecast_from_noon_and_two_days_ahead() -> None:
    # Origins off midnight and slots past the first day use the same time of day on past days.
    history = hourly(cycle(10)[: 24 * 10 - 12])  # ends at noon of day 9
    out = SeasonalQuantile().fit(history).predict(T0 + 10 * DAY, 72)  # 12 h after the history
    np.testing.assert_allclose(out, cycle(3), rtol=1e-12)


def test_level_follows_growth_the_plain_quantile_lags() -> None:
    # Demand grows 5% a day: day d is 1.05**d times the cycle. The day-over-day ratio is the same
    # every day, so the level-scaled quantile is exact; the plain quantile of past days is not.
    days = 21
    growth = np.repeat(1.05 ** np.arange(days), 24)
    history = hourly(cycle(days) * growth)
    want = cycle(1) * 1.05**days
    scaled = SeasonalQuantile(quantile=0.5).fit(history).predict(T0 + days * DAY, 24)
    np.testing.assert_allclose(scaled, want, rtol=1e-9)
    plain = SeasonalQuantile(quantile=0.5, level=False).fit(history).predict(T0 + days * DAY, 24)
    assert (plain < 0.8 * want).all()


def test_week_seasonality_and_its_fallback_to_the_day() -> None:
    # Weekends (days 5, 6 of each week) at half the weekday level. With 4 weeks of history each
    # (weekday, hour) has 4 samples: the week buckets reproduce it. With 2 weeks (under
    # min_periods=3) the day buckets are used: the p95 of the day then is the weekday value.
    weekly = np.concatenate([np.full(24, 4.0 if d % 7 >= 5 else 8.0) for d in range(28)])
    model = SeasonalQuantile(seasonality="week", level=False)
    out = model.fit(hourly(weekly)).predict(T0 + 28 * DAY, 7 * 24)
    np.testing.assert_allclose(out, weekly[: 7 * 24])
    out = model.fit(hourly(weekly[: 14 * 24])).predict(T0 + 14 * DAY, 7 * 24)
    np.testing.assert_allclose(out, 8.0)


def test_quantile_of_iid_noise_covers_its_share() -> None:
    # Uniform noise around a flat level: with 28 past days per hour, the p95 (the Weibull order
    # statistic, unbiased for exchangeable samples) covers about 95% of new slots.
    rng = np.random.default_rng(7)
    days = 150
    history = hourly(100 + rng.uniform(-20, 20, 24 * days))
    model = SeasonalQuantile(quantile=0.95, level=False)
    total = summarize(backtest(history, model, first=T0 + 28 * DAY))
    assert total.slots == 24 * (days - 28)
    assert abs(total.coverage - 0.95) < 0.02
    p50 = summarize(backtest(history, SeasonalQuantile(quantile=0.5, level=False)))
    assert abs(p50.coverage - 0.5) < 0.04


def test_history_on_finer_steps_is_averaged_per_slot_and_gaps_skipped() -> None:
    # 10-minute samples, hourly slots: the slot value is the mean of its six samples; an hour
    # with fewer than half of them is a gap.
    t = T0 + 600.0 * np.arange(6 * 24 * 8, dtype=np.float64)
    v = np.tile(np.repeat(np.arange(24.0), 6), 8) + np.tile([0, 1, 2, 3, 4, 5], 24 * 8)
    keep = np.ones(len(t), bool)
    keep[6 * 5 : 6 * 5 + 4] = False  # day 0, 05:00: only 2 of 6 samples left
    history = History(t[keep], v[keep])
    assert history.step == 600
    first, y = history.slotted(60)
    assert first * 3600 == T0
    assert math.isnan(y[5])
    np.testing.assert_allclose(y[24:48], np.arange(24.0) + 2.5)
    out = SeasonalQuantile(level=False).fit(history).predict(T0 + 8 * DAY, 24)
    np.testing.assert_allclose(out, np.arange(24.0) + 2.5)


def test_baselines() -> None:
    history = hourly(cycle(7))
    np.testing.assert_allclose(LastPeriod().fit(history).predict(T0 + 7 * DAY, 24), cycle(1))
    peak = StaticPeak().fit(history).predict(T0 + 7 * DAY, 5)
    assert peak.tolist() == [cycle(1).max()] * 5


def test_predict_uses_only_the_history_before_its_start() -> None:
    history = hourly(np.concatenate([np.full(24 * 7, 5.0), np.full(24 * 7, 50.0)]))
    out = SeasonalQuantile(level=False).fit(history).predict(T0 + 7 * DAY, 24)
    assert out.tolist() == [5.0] * 24


def test_predict_refuses_an_off_grid_start_and_an_empty_window() -> None:
    fit = SeasonalQuantile().fit(hourly(cycle(3)))
    with pytest.raises(ValueError, match="not on the slot grid"):
        fit.predict(T0 + 3 * DAY + 60, 4)
    with pytest.raises(ValueError, match="no history"):
        fit.predict(T0 - DAY, 4)
    with pytest.raises(ValueError, match="divide a day"):
        SeasonalQuantile(slot_minutes=7)
    with pytest.raises(ValueError, match="quantile"):
        SeasonalQuantile(quantile=1.0)


# -- backtest -------------------------------------------------------------------------------------


def test_backtest_scores_coverage_and_over_reservation() -> None:
    # Static peak on a cycle between 5 and 15: every slot covered; idle = 15 - actual, so the
    # over-reservation is (15 - 10) / 10 = 0.5 of the demand on average.
    history = hourly(cycle(10))
    rows = backtest(history, StaticPeak(), slots_ahead=24, step=24)
    assert [r.origin for r in rows] == [
        datetime(2026, 11, d, tzinfo=UTC) for d in (8, 9, 10)
    ]  # from one week in, while a whole day is left
    total = summarize(rows)
    assert (total.origins, total.slots, total.coverage) == (3, 72, 1.0)
    assert total.over == pytest.approx(0.5)
    assert total.under == 0
    assert total.idle_hours == pytest.approx(72 * 5)
    # LastPeriod on a pure cycle: exact, no idle.
    exact = summarize(backtest(history, LastPeriod()))
    assert exact.coverage == 1.0
    assert exact.over == pytest.approx(0.0, abs=1e-9)


def test_backtest_headroom_and_replicas() -> None:
    history = hourly(np.full(24 * 9, 100.0))
    rows = backtest(history, SeasonalQuantile(), headroom=0.1, rps_per_replica=30.0)
    # 100 rps / 30 = 3.33 replicas; reserved ceil(3.33 * 1.1) = 4: idle 0.67 of 3.33.
    assert rows[0].reserved.tolist() == [4.0] * 24
    assert summarize(rows).over == pytest.approx((4 - 100 / 30) / (100 / 30))


def test_headroom_for_a_coverage() -> None:
    history = hourly(np.tile([10.0] * 23 + [20.0], 10))
    rows = backtest(history, LastPeriod(), first=T0 + 5 * DAY)
    rows = [
        type(r)(r.origin, r.slot_minutes, np.full(24, 10.0), np.full(24, 10.0), r.actual)
        for r in rows
    ]
    assert headroom_for(rows, 0.9) == 0.0  # 23 of 24 slots are met with no headroom
    assert headroom_for(rows, 1.0) == pytest.approx(1.0)  # 20 = 10 * (1 + 1)


def test_replicas_stay_fractional() -> None:
    assert replicas([0, 15, 50], 10).tolist() == [0.0, 1.5, 5.0]
    with pytest.raises(ValueError):
        replicas([1], 0)
    d = demand_for(hourly(np.full(24 * 8, 30.0)), T0 + 8 * DAY, 3, 20.0)
    assert d.tolist() == [1.5, 1.5, 1.5]


# -- reading a history ----------------------------------------------------------------------------


def test_read_history_iso_and_epoch_times(tmp_path: Path) -> None:
    path = tmp_path / "h.csv"
    path.write_text(
        "timestamp,value\n2026-11-01T01:00:00Z,2\n2026-11-01T00:00:00+00:00,1\n"
        "2026-11-01 03:00:00,4\n2026-11-01T02:00:00Z,\n"
    )
    h = read_history(path)  # any order; an empty value is a gap; a time without offset is UTC
    assert h.times.tolist() == [T0, T0 + 3600, T0 + 3 * 3600]
    assert h.values.tolist() == [1, 2, 4]
    assert h.step == 3600
    path.write_text(f"time,rps\n{T0:.0f},1.5\n{T0 + 600:.0f},2\n")
    h = read_history(path)  # `time`, and the one other column
    assert (h.values.tolist(), h.step) == ([1.5, 2.0], 600)


def test_read_history_filters_rows(tmp_path: Path) -> None:
    path = tmp_path / "many.csv"
    path.write_text("model,time_s,rate,gap\na,0,1,0\nb,0,9,0\na,600,2,1\na,1200,3,0\n")
    h = read_history(path, "time_s", "rate", where={"model": "a", "gap": "0"})
    assert (h.times.tolist(), h.values.tolist(), h.step) == ([0.0, 1200.0], [1.0, 3.0], 1200)


@pytest.mark.parametrize(
    ("text", "kwargs", "words"),
    [
        ("when,value\n1,2\n", {}, ["no time column 'timestamp' or 'time'", "when, value"]),
        ("timestamp,a,b\n1,2,3\n", {}, ["no value column 'value'"]),
        ("timestamp,value\n1,2\n", {"value_column": "rps"}, ["no value column 'rps'"]),
        ("timestamp,value\n1,2\nnoon,3\n", {}, ["row 3", "'timestamp'", "'noon'", "ISO-8601"]),
        ("timestamp,value\n1,2\n2,-1\n", {}, ["row 3", "'value'", "'-1'", ">= 0"]),
        ("timestamp,value\n1,2\n2,lots\n", {}, ["row 3", "'lots'", "not a number"]),
        ("timestamp,value\n1,2\n2,nan\n", {}, ["row 3", "'nan'"]),
        ("timestamp,value\n1,2\n2\n", {}, ["row 3", "fewer than the header"]),
        ("timestamp,value\n5,2\n1,1\n5,3\n", {}, ["rows 2 and 4", "the same time"]),
        ("timestamp,value\n1,2\n", {}, ["one sample"]),
        ("timestamp,value\n1,\n", {}, ["no rows with a value"]),
        ("", {}, ["empty file"]),
    ],
)
def test_read_history_errors_name_file_row_and_column(
    tmp_path: Path, text: str, kwargs: dict[str, str], words: list[str]
) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError) as info:
        read_history(path, **kwargs)  # type: ignore[arg-type]
    [problem] = info.value.problems
    assert problem.startswith(str(path))
    for word in words:
        assert word in problem


def test_read_history_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        read_history(tmp_path / "nope.csv")


# -- writing demand -------------------------------------------------------------------------------


INSTANCE = """\
name: fc
# a comment that must survive
horizon: {slots: 4, slot_minutes: 60, start: "2026-12-01T00:00:00Z"}
pools:
  - {name: a, gpu_type: A, nodes: 4, gpus_per_node: 4}
services:
  - name: chat
    pool: a
    gpus_per_replica: 2
    demand:
      - 1
      - 1
      - 1
      - 1
  - {name: code, pool: a, gpus_per_replica: 2, demand: [1, 1, 1, 1]}  # trailing comment
jobs: []
"""


def test_write_demand_csv_reads_back(tmp_path: Path) -> None:
    start = datetime(2026, 12, 1, tzinfo=UTC)
    path = write_demand_csv(tmp_path / "chat.csv", start, 60, [1.5, 2, 0, 3.25])
    assert path.read_text().splitlines()[:2] == ["time,replicas", "2026-12-01T00:00:00Z,1.5"]
    assert demand_csv_text(None, 60, [1, 2]) == "time,replicas\n0,1.0\n1,2.0\n"
    (tmp_path / "fc.yaml").write_text(INSTANCE)
    text = patch_instance(tmp_path / "fc.yaml", "chat", csv_path="chat.csv")
    assert "# a comment that must survive" in text and "# trailing comment" in text
    assert "demand: {csv: chat.csv, column: replicas}" in text
    (tmp_path / "fc.yaml").write_text(text)
    assert load_instance(tmp_path / "fc.yaml").services[0].demand.tolist() == [1.5, 2, 0, 3.25]


def test_patch_instance_inline(tmp_path: Path) -> None:
    (tmp_path / "fc.yaml").write_text(INSTANCE)
    text = patch_instance(tmp_path / "fc.yaml", "code", [0.5, 1, 2, 3])
    assert "# trailing comment" in text
    data = yaml.safe_load(text)
    assert [s["demand"] for s in data["services"]] == [[1, 1, 1, 1], [0.5, 1, 2, 3]]
    with pytest.raises(InputError, match="no service 'nope'"):
        patch_instance(tmp_path / "fc.yaml", "nope", [1])


# -- demand CSVs with a time column, resampled onto the horizon's slots -------------------------

DEMAND_YAML = """\
name: timed
horizon: {{slots: {slots}, slot_minutes: {minutes}, start: "2026-12-01T00:00:00Z"}}
pools:
  - {{name: a, gpu_type: A, nodes: 8, gpus_per_node: 8}}
services:
  - {{name: chat, pool: a, gpus_per_replica: 1, demand: {{csv: chat.csv, column: replicas}}}}
jobs: []
"""


def demand_of(tmp_path: Path, csv_text: str, slots: int, minutes: int) -> list[float]:
    (tmp_path / "chat.csv").write_text(csv_text)
    path = tmp_path / "timed.yaml"
    path.write_text(DEMAND_YAML.format(slots=slots, minutes=minutes))
    demand: list[float] = load_instance(path).services[0].demand.tolist()
    return demand


def problems_of(tmp_path: Path, csv_text: str, slots: int, minutes: int) -> list[str]:
    with pytest.raises(InstanceError) as info:
        demand_of(tmp_path, csv_text, slots, minutes)
    return info.value.problems


def csv_at(minutes: int, values: Sequence[float], start_minute: int = 0) -> str:
    rows = [
        f"{datetime.fromtimestamp(T0 + 30 * DAY + 60 * (start_minute + minutes * k), UTC).isoformat()},{v}"
        for k, v in enumerate(values)
    ]
    return "time,replicas\n" + "\n".join(rows) + "\n"


def test_hourly_values_onto_15_minute_slots(tmp_path: Path) -> None:
    # Each hourly row holds for its hour: the four quarter-hour slots of an hour share its value.
    got = demand_of(tmp_path, csv_at(60, [1, 2, 3]), slots=12, minutes=15)
    assert got == [1.0] * 4 + [2.0] * 4 + [3.0] * 4


def test_15_minute_values_onto_hourly_slots(tmp_path: Path) -> None:
    # An hourly slot is the mean of its four quarter-hours; rows outside the horizon are ignored.
    values = [1, 2, 3, 6, 0, 0, 0, 4, 9]
    got = demand_of(tmp_path, csv_at(15, values, start_minute=-15), slots=2, minutes=60)
    assert got == [(2 + 3 + 6 + 0) / 4, (0 + 0 + 4 + 9) / 4]


def test_timed_rows_must_cover_the_horizon(tmp_path: Path) -> None:
    late = problems_of(tmp_path, csv_at(60, [1, 1, 1], start_minute=60), slots=3, minutes=60)
    assert "row 2" in late[0] and "not the start of slot 0" in late[0]
    short = problems_of(tmp_path, csv_at(60, [1, 1]), slots=3, minutes=60)
    assert short[0].startswith("services[0].demand: chat.csv: the rows end at 2026-12-01T02:00")
    assert "no row gives the demand of slot 2" in short[0]
    gap = csv_at(15, [1, 1, 1, 1, 1, 1, 1, 1]).splitlines()
    del gap[3]  # 00:30 missing: a gap inside slot 0 of 60 minutes
    words = problems_of(tmp_path, "\n".join(gap) + "\n", slots=2, minutes=60)[0]
    assert "row 4" in words and "leaves a gap in slot 0" in words and "15 min" in words


def test_timed_rows_in_time_order_and_of_one_kind(tmp_path: Path) -> None:
    lines = csv_at(60, [1, 2, 3]).splitlines()
    swapped = "\n".join([lines[0], lines[2], lines[1], lines[3]]) + "\n"
    assert "row 3" in problems_of(tmp_path, swapped, 3, 60)[0]
    mixed = "\n".join([*lines[:2], "1,2", lines[3]]) + "\n"
    assert "slot index" in problems_of(tmp_path, mixed, 3, 60)[0]


def test_old_demand_csvs_read_as_before(tmp_path: Path) -> None:
    # One row per slot (indices, slot-start times, or no time column) reads value for value.
    values = [0.1, 0.7, 1 / 3, 2.675]
    by_time = csv_at(60, values)
    by_index = "time,replicas\n" + "".join(f"{k},{v}\n" for k, v in enumerate(values))
    plain = "replicas\n" + "".join(f"{v}\n" for v in values)
    for text in (by_time, by_index, plain):
        assert demand_of(tmp_path, text, slots=4, minutes=60) == values
    demo = load_instance(Path(__file__).parents[2] / "instances" / "demo.yaml")
    chat = next(s for s in demo.services if s.name == "chat")
    rows = (Path(__file__).parents[2] / "instances" / "demo-chat.csv").read_text().splitlines()
    assert chat.demand.tolist() == [float(r.split(",")[1]) for r in rows[1:]]


def test_where_a_forecast_goes_and_how_far_its_history_is() -> None:
    """Ten hourly samples from T0 (the last at 09:00, holding until 10:00): by default the
    first hour boundary after them, 10:00; an instance's own horizon; a given start, 40 days
    after the history ends."""
    history = hourly([1.0] * 10)
    first, slots, minutes = forecast_horizon(history)
    assert (first, slots, minutes) == (datetime(2026, 11, 1, 10, tzinfo=UTC), 24, 60)
    demo = load_instance(Path(__file__).parents[2] / "instances" / "demo.yaml")
    assert forecast_horizon(history, demo) == (demo.start, demo.slots, demo.slot_minutes)
    later = datetime(2026, 12, 11, 10, tzinfo=UTC)
    assert forecast_horizon(history, start=later)[0] == later
    assert history_gap(history, later) == timedelta(days=40)


def test_a_gap_past_a_week_is_warned_and_seasonality_is_day_or_week() -> None:
    """History ending 40 days before the forecast: warned, naming the seasonal pattern that
    carries over; a week exactly is not. Seasonality is day or week, named as the option."""
    history = hourly([1.0] * 10)  # ends 2026-11-01 10:00
    warning = history_gap_warning(history, datetime(2026, 12, 11, 10, tzinfo=UTC), "week")
    assert warning == (
        "the history ends 2026-11-01 10:00 UTC, 40 days before the forecast starts: only its "
        "weekly pattern and its latest level carry over that gap"
    )
    assert history_gap_warning(history, datetime(2026, 11, 8, 10, tzinfo=UTC), "day") is None
    assert seasonality_of("day") == "day" and seasonality_of("week") == "week"
    with pytest.raises(InputError) as caught:
        seasonality_of("month")
    assert caught.value.problems == ["--seasonality: day or week, got 'month'"]
