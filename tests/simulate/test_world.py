"""The drawn worlds of a replay (synthetic and trace) and world files.

The trace world is checked against the distributions it says it draws from (`trace_model`):
with a thousand jobs per estimate, a quantile of the drawn run/limit ratios lies within
RATIO_TOLERANCE of the trace's, and the shares of failed and cancelled jobs within
SHARE_TOLERANCE (several standard errors of a share over 4,000 jobs; the draws are seeded, so
the test is deterministic either way).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

import horizon_opt as ho
from horizon_opt.errors import InputError
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec
from horizon_opt.simulate.trace_world import trace_model
from horizon_opt.simulate.world import Noise, World
from horizon_opt.simulate.world_file import MAX_PROBLEMS, WORLD_FORMAT, read_world, write_world
from horizon_opt.simulate.worlds import world_for

ROOT = Path(__file__).parents[2]
ESTIMATES_H = (2, 8, 24, 48)  # on round limits that the packaged trace fills well
JOBS_PER_ESTIMATE = 1000
RATIO_TOLERANCE = 0.05
SHARE_TOLERANCE = 0.03


def many_jobs() -> Instance:
    """One 1-hour-slot pool and JOBS_PER_ESTIMATE one-GPU jobs for each of ESTIMATES_H."""
    jobs = [
        {"id": f"j{h}-{k}", "kind": "training", "priority": 1, "gpus": 1, "duration": h}
        for h in ESTIMATES_H
        for k in range(JOBS_PER_ESTIMATE)
    ]
    spec = {
        "name": "many",
        "horizon": {"slots": 64, "slot_minutes": 60},
        "pools": [{"name": "a", "gpu_type": "A", "nodes": 1, "gpus_per_node": 8}],
        "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 1, "demand": [1.0] * 64}],
        "jobs": jobs,
    }
    return compile_instance(parse_spec(spec), {})


@pytest.fixture(scope="module")
def many() -> Instance:
    return many_jobs()


@pytest.fixture(scope="module")
def demo() -> Instance:
    return ho.load_instance(ROOT / "instances" / "demo.yaml")


def test_trace_world_is_the_same_for_the_same_instance_and_seed(demo: Instance) -> None:
    a, b, c = (world_for(demo, "trace", seed) for seed in (3, 3, 4))
    assert a.run_share == b.run_share and a.fails == b.fails and a.cancels == b.cancels
    assert all(np.array_equal(x, y) for x, y in zip(a.demand, b.demand, strict=True))
    assert a.run_share != c.run_share


def test_trace_ratios_follow_the_trace(many: Instance) -> None:
    model = trace_model()
    world = world_for(many, "trace", 1)
    for h in ESTIMATES_H:
        drawn = [
            world.run_share[j.id]
            for j in many.jobs
            if j.id.startswith(f"j{h}-") and j.id not in world.fails
        ]
        band = model.ratios[model.band(h)]
        assert model.limits_h[model.band(h)] == h
        for q in (0.1, 0.5, 0.9):
            assert abs(np.quantile(drawn, q) - np.quantile(band, q)) <= RATIO_TOLERANCE, (h, q)


def test_trace_outcome_shares_follow_the_trace(many: Instance) -> None:
    model = trace_model()
    world = world_for(many, "trace", 2)
    n = len(many.jobs)
    assert world.cancels <= world.fails
    assert abs(len(world.fails - world.cancels) / n - model.failed) <= SHARE_TOLERANCE
    assert abs(len(world.cancels) / n - model.cancelled) <= SHARE_TOLERANCE


def test_trace_failures_end_at_trace_run_times_capped_at_the_estimate(many: Instance) -> None:
    model = trace_model()
    world = world_for(many, "trace", 5)
    for h in (8, 48):
        mine = [j.id for j in many.jobs if j.id.startswith(f"j{h}-") and j.id in world.fails]
        ends = [world.run_share[j] * h for j in mine]
        capped = np.minimum(model.run_hours, h)
        for q in (0.1, 0.5, 0.9):
            assert abs(np.quantile(ends, q) - np.quantile(capped, q)) <= 0.1 * h, (h, q)


def test_trace_bands_are_nearest_on_a_log_scale() -> None:
    model = trace_model()
    assert model.limits_h[model.band(30)] == 24  # 30/24 < 48/30
    assert model.limits_h[model.band(0.1)] == model.limits_h[0]
    assert model.limits_h[model.band(10_000)] == model.limits_h[-1]


def test_trace_demand_is_the_forecast_without_noise(demo: Instance) -> None:
    world = world_for(demo, "trace", 1, Noise.parse("demand=0"))
    for s in demo.services:
        assert np.allclose(world.demand[s.index], s.demand)


# -- world files ---------------------------------------------------------------------------------


def same_world(instance: Instance, a: World, b: World) -> None:
    for job in instance.jobs:
        for estimate in set(job.durations.values()) | {1, 2, 7, 48}:
            assert a.run_slots(job.id, estimate) == b.run_slots(job.id, estimate), job.id
    assert a.fails == b.fails and a.cancels == b.cancels
    assert len(a.demand) == len(b.demand)
    assert all(np.array_equal(x, y) for x, y in zip(a.demand, b.demand, strict=True))


@pytest.mark.parametrize("kind", ["synthetic", "trace"])
def test_a_written_world_reads_back_the_same(demo: Instance, kind: str, tmp_path: Path) -> None:
    world = world_for(demo, kind, 7)
    file = tmp_path / "world.yaml"
    write_world(file, demo, world)
    back = read_world(file, demo)
    same_world(demo, world, back)
    assert back.run_share == world.run_share


def test_json_reads_as_yaml(demo: Instance, tmp_path: Path) -> None:
    world = world_for(demo, "trace", 8)
    file = tmp_path / "world.json"
    write_world(file, demo, world)
    data = yaml.safe_load(file.read_text())
    file.write_text(json.dumps(data))
    same_world(demo, world, read_world(file, demo))


def test_unlisted_jobs_run_their_estimate_and_services_their_forecast(
    demo: Instance, tmp_path: Path
) -> None:
    job = demo.jobs[0].id
    file = tmp_path / "world.yaml"
    file.write_text(
        f"format: {WORLD_FORMAT}\ninstance: {demo.name}\n"
        f"jobs:\n  {job}: {{run: 1e-1, outcome: cancelled}}\n"
    )
    world = read_world(file, demo)
    assert world.run_share[job] == 0.1 and world.fails == world.cancels == {job}
    assert all(world.run_share[j.id] == 1.0 for j in demo.jobs[1:])
    assert all(np.array_equal(world.demand[s.index], s.demand) for s in demo.services)


def valid(demo: Instance) -> dict[str, Any]:
    return {
        "format": WORLD_FORMAT,
        "instance": demo.name,
        "jobs": {demo.jobs[0].id: {"run": 0.5, "outcome": "failed"}},
        "services": {demo.services[0].name: [1.0] * demo.slots},
    }


def bad(demo: Instance, change: str) -> tuple[dict[str, Any], str]:
    """A world file's data with one mistake, and the message it must give."""
    data = valid(demo)
    job, service, slots = demo.jobs[0].id, demo.services[0].name, demo.slots
    if change == "format":
        data["format"] = "horizon-opt.plan/1"
        return data, f"format: 'horizon-opt.plan/1' is not '{WORLD_FORMAT}'"
    if change == "instance":
        data["instance"] = "other"
        return data, f"instance: the world is for instance 'other', not '{demo.name}'"
    if change == "no-format":
        del data["format"]
        return data, "format: required field is missing"
    if change == "field":
        data["seed"] = 1
        return data, "'seed': unknown field"
    if change == "job":
        data["jobs"]["nope"] = {"run": 1}
        return data, f"jobs: no job 'nope' in instance '{demo.name}'"
    if change == "job-field":
        data["jobs"][job]["ends"] = 3
        return data, f"jobs.{job}.ends: unknown field"
    if change == "negative-run":
        data["jobs"][job]["run"] = -0.5
        return data, f"jobs.{job}.run: negative run -0.5"
    if change == "nan-run":
        data["jobs"][job]["run"] = float("nan")
        return data, f"jobs.{job}.run: must be a finite number from 0 to 1, got nan"
    if change == "long-run":
        data["jobs"][job]["run"] = 1.5
        return data, f"jobs.{job}.run: 1.5 is more than 1: a job never runs past its estimate"
    if change == "text-run":
        data["jobs"][job]["run"] = "half"
        return data, f"jobs.{job}.run: not a number: 'half'"
    if change == "outcome":
        data["jobs"][job]["outcome"] = "timeout"
        return data, f"jobs.{job}.outcome: unknown outcome 'timeout'; use one of completed"
    if change == "service":
        data["services"]["nope"] = [1.0] * slots
        return data, f"services: no service 'nope' in instance '{demo.name}'"
    if change == "length":
        data["services"][service] = [1.0] * (slots - 1)
        return data, f"services.{service}: {slots - 1} numbers, but the instance has {slots} slots"
    if change == "negative-demand":
        data["services"][service][3] = -1.0
        return data, f"services.{service}[3]: negative demand -1.0"
    if change == "inf-demand":
        data["services"][service][4] = float("inf")
        return data, f"services.{service}[4]: demand must be a finite number of at most"
    raise AssertionError(change)


CHANGES = [
    "format",
    "instance",
    "no-format",
    "field",
    "job",
    "job-field",
    "negative-run",
    "nan-run",
    "long-run",
    "text-run",
    "outcome",
    "service",
    "length",
    "negative-demand",
    "inf-demand",
]


@pytest.mark.parametrize("change", CHANGES)
def test_bad_world_file_says_what_and_where(demo: Instance, change: str, tmp_path: Path) -> None:
    data, message = bad(demo, change)
    file = tmp_path / "world.yaml"
    file.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as caught:
        read_world(file, demo)
    assert len(caught.value.problems) == 1, caught.value.problems
    assert caught.value.problems[0].startswith(f"{file}: {message}"), caught.value.problems


def test_a_key_named_twice_is_refused(demo: Instance, tmp_path: Path) -> None:
    job = demo.jobs[0].id
    file = tmp_path / "world.yaml"
    file.write_text(
        f"format: {WORLD_FORMAT}\ninstance: {demo.name}\n"
        f"jobs:\n  {job}: {{run: 0.5}}\n  {job}: {{run: 0.7}}\n"
    )
    with pytest.raises(InputError, match=f"key '{job}' appears twice"):
        read_world(file, demo)


def test_not_a_mapping_and_not_yaml(demo: Instance, tmp_path: Path) -> None:
    file = tmp_path / "world.yaml"
    file.write_text("- 1\n- 2\n")
    with pytest.raises(InputError, match="expected a mapping of fields, got list"):
        read_world(file, demo)
    file.write_text("jobs: {a: [\n")
    with pytest.raises(InputError, match="not valid YAML"):
        read_world(file, demo)
    with pytest.raises(InputError, match="cannot read"):
        read_world(tmp_path / "missing.yaml", demo)


def test_a_file_wrong_everywhere_gets_a_bounded_list(demo: Instance, tmp_path: Path) -> None:
    data = valid(demo)
    data["jobs"] = {f"nope-{k}": {"run": 1} for k in range(MAX_PROBLEMS + 5)}
    file = tmp_path / "world.yaml"
    file.write_text(yaml.safe_dump(data))
    with pytest.raises(InputError) as caught:
        read_world(file, demo)
    assert len(caught.value.problems) == MAX_PROBLEMS + 1
    assert caught.value.problems[-1] == f"{file}: ... and 5 more"
