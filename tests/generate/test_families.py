"""Generator families `hetero`, `deadline` and `trace` (and `enterprise` left as it was).

Every family is deterministic per (family, size, seed) down to the written file, loads and
validates at small and medium, matches the table's size, has the traits its docstring promises,
and gives fifo / greedy plans that pass the checker. `trace` reads the traces that ship with the
package (or --traces DIR / $HORIZON_OPT_TRACES), so its tests run everywhere.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import typer.main
import yaml
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.generate import (
    FAMILIES,
    SIZES,
    TRACE_MODELS,
    TRACES_ENV,
    GeneratorError,
    find_traces,
    generate,
    generate_file,
    load_trace_inference,
    load_trace_jobs,
)
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.load import parse_spec

FAMILY_NAMES = ["enterprise", "hetero", "deadline", "trace", "enterprise-teams", "trace-teams"]
TEAM_FAMILIES = {"enterprise-teams", "trace-teams"}
BENCH = Path(__file__).resolve().parents[2] / "instances" / "bench"


def batch_load(inst: Instance) -> float:
    h = inst.hours_per_slot
    available = float(inst.capacity.sum()) * h
    reserved = sum(float(s.req.sum()) * s.gpus_per_replica * h for s in inst.services)
    return sum(j.work_hours for j in inst.jobs) / (available - reserved)


def test_registry_has_the_six_families() -> None:
    assert list(FAMILIES) == FAMILY_NAMES


# -- enterprise is unchanged -------------------------------------------------------------------

# sha256 of json.dumps(generate("enterprise", size, seed), sort_keys=True), taken before the other
# families were added: adding families must not move a single draw of enterprise.
ENTERPRISE_PINS = {
    ("small", 0): "c4a61b7f2c5e47b7611cfc6ac5b24965a75fd7cd160ebbb800915969c1818294",
    ("medium", 1): "fa68eaa91b7aa9522980afc515c2cef6ed88188a485a2bafca75c44b14c4f12b",
}


# -- determinism -------------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILY_NAMES)
@pytest.mark.parametrize("size", ["small", "medium"])
def test_same_seed_writes_the_same_file(family: str, size: str, tmp_path: Path) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    generate_file(family, size, 3, a)
    generate_file(family, size, 3, b)
    assert a.read_bytes() == b.read_bytes()
    assert generate(family, size, 3) == generate(family, size, 3)


@pytest.mark.parametrize("family", FAMILY_NAMES)
def test_different_seeds_differ(family: str) -> None:
    a, b = generate(family, "small", 0), generate(family, "small", 1)
    assert a["name"] == f"{family}-small-s0" and b["name"] == f"{family}-small-s1"
    assert a["jobs"] != b["jobs"]
    assert a["services"] != b["services"]


# -- validity and size -------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILY_NAMES)
@pytest.mark.parametrize("size", ["small", "medium"])
def test_loads_validates_and_baselines_pass_check(family: str, size: str, tmp_path: Path) -> None:
    path = tmp_path / f"{family}-{size}.yaml"
    generate_file(family, size, 0, path)
    inst = ho.load_instance(path)
    table = SIZES[size]
    assert inst.name == f"{family}-{size}-s0"
    assert (inst.slots, inst.slot_minutes) == (table.slots, table.slot_minutes)
    assert int(inst.node_gpus.sum()) == table.gpus
    assert len(inst.jobs) == table.jobs
    assert len(inst.services) == table.services
    assert all(1 <= j.priority <= 10 for j in inst.jobs)
    for solver in ("fifo", "greedy"):
        plan = ho.solve(inst, solver)
        assert ho.check(inst, plan) == [], (family, size, solver)
        assert plan.metrics.pwo > 0


# -- hetero ------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", ["small", "medium"])
def test_hetero_has_three_generations_with_per_job_speeds(size: str) -> None:
    inst = compile_instance(parse_spec(generate("hetero", size, 0)))
    names = [p.name for p in inst.pools]
    assert names == ["h100", "a100", "v100"]
    assert [p.gpu_type for p in inst.pools][2].startswith("V100")
    assert batch_load(inst) == pytest.approx(2.0, rel=0.1)
    restricted = 0
    ratios: list[float] = []
    for job in inst.jobs:
        by = {inst.pools[p].name: d for p, d in job.durations.items()}
        restricted += len(by) < 3
        if job.gpus >= 16:
            assert "v100" not in by
        if "h100" in by and "a100" in by:
            assert by["a100"] > by["h100"]
            if by["h100"] >= 8:  # long enough for rounding not to matter
                ratios.append(by["a100"] / by["h100"])
        if "a100" in by and "v100" in by:
            assert by["v100"] >= by["a100"]
    assert 0 < restricted < len(inst.jobs)
    if ratios:
        assert min(ratios) >= 1.4 and max(ratios) <= 3.1


def test_hetero_small_keeps_four_nodes() -> None:
    data = generate("hetero", "small", 0)
    assert [(p["name"], p["nodes"]) for p in data["pools"]] == [
        ("h100", 2),
        ("a100", 1),
        ("v100", 1),
    ]


# -- deadline ----------------------------------------------------------------------------------


@pytest.mark.parametrize("size", ["small", "medium"])
def test_deadline_most_jobs_due_tight_and_loose(size: str) -> None:
    inst = compile_instance(parse_spec(generate("deadline", size, 0)))
    assert batch_load(inst) == pytest.approx(1.5, rel=0.1)
    due = [j for j in inst.jobs if j.deadline is not None]
    assert len(due) >= 0.75 * len(inst.jobs)
    slack: list[float] = []
    for j in due:
        shortest = min(j.durations.values())
        assert j.deadline is not None and j.deadline >= j.release + shortest  # achievable
        slack.append((j.deadline - j.release - shortest) / shortest)
    assert min(slack) < 0.6 and max(slack) >= 1.0  # tight ones and loose ones
    tight = [j for j, s in zip(due, slack, strict=True) if s < 0.5 and not j.after]
    assert tight and np.mean([j.priority for j in tight]) >= 5


# -- trace -------------------------------------------------------------------------------------


def test_trace_jobs_are_a_run_of_real_jobs() -> None:
    folder = str(find_traces())
    trace = load_trace_jobs(folder)
    data = generate("trace", "medium", 0)
    jobs = data["jobs"]
    assert all("after" not in j for j in jobs)
    assert {j["kind"] for j in jobs} <= {"training", "batch_inference", "evaluation"}
    gangs = np.array([j["gpus"] for j in jobs])
    # Skipped jobs are those whose gang the cluster cannot place: all larger than any chosen one.
    placeable = trace.gpus[trace.gpus <= gangs.max()]
    windows = np.lib.stride_tricks.sliding_window_view(placeable, len(gangs))
    assert (windows == gangs).all(axis=1).any(), "gang sizes are not a run of the trace"
    releases = [j.get("release", 0) for j in jobs]
    assert releases == sorted(releases) and max(releases) < 0.6 * data["horizon"]["slots"]


def test_trace_demand_follows_a_day_of_servegen() -> None:
    folder = str(find_traces())
    rates = load_trace_inference(folder)
    data = generate("trace", "small", 0)
    slots = data["horizon"]["slots"]
    per_slot = data["horizon"]["slot_minutes"] // 10
    for k, service in enumerate(data["services"]):
        series = rates[TRACE_MODELS[k % len(TRACE_MODELS)]]
        demand = np.array(service["demand"])
        candidates = []
        for day in range(max(1, len(series) // 144)):
            idx = (day * 144 + np.arange(slots * per_slot)) % len(series)
            shape = series[idx].reshape(slots, per_slot).mean(axis=1)
            candidates.append(shape * demand.max() / shape.max())
        assert min(np.abs(c - demand).max() for c in candidates) <= 0.011


def test_trace_file_is_self_contained_and_attributed(tmp_path: Path) -> None:
    find_traces()
    path = tmp_path / "sub" / "t.yaml"
    generate_file("trace", "small", 0, path)
    text = path.read_text()
    assert "microsoft/elasticflow-traces" in text and "MIT" in text
    assert "alibaba/ServeGen" in text and "Apache-2.0" in text
    assert "csv" not in text.split("services:")[1]  # demand inline, no CSV reference
    assert ho.load_instance(path).name == "trace-small-s0"


def test_traces_ship_with_the_package_with_their_licences() -> None:
    folder = find_traces()
    assert folder.parent.parent == Path(ho.__file__).resolve().parent  # horizon_opt/data/traces
    readme = (folder / "README.md").read_text()
    assert "MIT" in readme and "Apache-2.0" in readme and "Keep this attribution" in readme


def test_trace_missing_files_give_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(GeneratorError, match=r"needs jobs_msitp_cluster02\.csv.*--traces"):
        generate("trace", "small", 0, traces=tmp_path)
    monkeypatch.setenv(TRACES_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(GeneratorError, match="nowhere"):
        generate("trace", "small", 0)


def test_committed_trace_instances_load_without_the_traces(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(TRACES_ENV, str(tmp_path))  # no CSVs there
    files = sorted(BENCH.glob("trace-small-*.yaml"))
    assert files
    inst = ho.load_instance(files[0])
    assert inst.name == files[0].stem


# -- the committed benchmark set ---------------------------------------------------------------


def test_committed_small_instances_match_the_generator() -> None:
    files = sorted(BENCH.glob("*-small-s*.yaml"))
    # (the team families are generated by benchmarks/teams.py, not committed)
    assert {f.stem.split("-")[0] for f in files} == set(FAMILY_NAMES) - TEAM_FAMILIES
    for f in files:
        family, size, seed = f.stem.split("-")
        expected = json.dumps(generate(family, size, int(seed[1:])), sort_keys=True)
        assert json.dumps(yaml.safe_load(f.read_text()), sort_keys=True) == expected, f.name


# -- CLI ---------------------------------------------------------------------------------------


def test_cli_generate_writes_a_loadable_file(tmp_path: Path) -> None:
    out = tmp_path / "h.yaml"
    result = CliRunner().invoke(
        app, ["generate", "hetero", "--size", "small", "--seed", "2", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "hetero-small-s2: 40 jobs, 4 nodes, 48 slots" in result.output
    assert ho.load_instance(out).name == "hetero-small-s2"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["generate", "nope", "-o", "x.yaml"], "unknown family 'nope'"),
        (["generate", "deadline", "--size", "huge", "-o", "x.yaml"], "unknown size 'huge'"),
    ],
)
def test_cli_generate_rejects_bad_family_or_size(
    args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "x.yaml").exists()


def test_enterprise_pinned() -> None:
    for (size, seed), digest in ENTERPRISE_PINS.items():
        data = generate("enterprise", size, seed)
        assert hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest() == digest


# -- teams -------------------------------------------------------------------------------------


@pytest.mark.parametrize("base", ["enterprise", "trace"])
def test_teams_families_are_the_base_instance_with_teams(base: str) -> None:
    with_teams, plain = generate(f"{base}-teams", "small", 2), generate(base, "small", 2)
    assert [{k: v for k, v in j.items() if k != "team"} for j in with_teams["jobs"]] == plain[
        "jobs"
    ]
    assert {k: v for k, v in with_teams.items() if k not in ("name", "jobs", "teams")} == {
        k: v for k, v in plain.items() if k not in ("name", "jobs")
    }
    names = [t["name"] for t in with_teams["teams"]]
    assert names == ["research", "product", "data"]
    assert {j["team"] for j in with_teams["jobs"]} <= set(names)
    for team in with_teams["teams"]:
        largest = max(
            (j["gpus"] for j in with_teams["jobs"] if j["team"] == team["name"]), default=0
        )
        for pool in with_teams["pools"]:
            total = pool["nodes"] * pool["gpus_per_node"]
            assert team["quota"][pool["name"]] <= team["limit"][pool["name"]] <= total
            assert team["limit"][pool["name"]] >= min(largest, total)


def test_generate_help_names_every_family_and_size() -> None:
    """The help lists the registries the code reads, so a new family or size shows in it."""
    command = typer.main.get_command(app).commands["generate"]
    helps = {p.name: getattr(p, "help", None) or "" for p in command.params}
    assert all(name in helps["family"] for name in FAMILIES)
    assert all(name in helps["size"] for name in SIZES)
    assert helps["size"] == "small, medium, large, xl or xxl."
