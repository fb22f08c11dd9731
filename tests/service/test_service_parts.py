"""The re-planning service's parts on their own: the run configuration, the state folder's lock
and cycles, a plan moved onto a later horizon, and metrics.prom read by Prometheus' own parser."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from horizon_opt.errors import InputError
from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.load import parse_spec
from horizon_opt.plans.plan import Plan
from horizon_opt.service.config import read_config
from horizon_opt.service.folder import Busy, StateFolder
from horizon_opt.service.metrics import plan_metrics, status_metrics
from horizon_opt.service.rebase import rebased
from horizon_opt.solvers import solve

START = datetime(2026, 12, 1, 8, tzinfo=UTC)


def _instance(start: datetime = START, now: int = 0):
    return compile_instance(
        parse_spec(
            {
                "name": "svc",
                "horizon": {"slots": 8, "slot_minutes": 60, "start": start.isoformat()},
                "now": now,
                "pools": [{"name": "h100", "gpu_type": "H100", "nodes": 2, "gpus_per_node": 8}],
                "services": [
                    {"name": "chat", "pool": "h100", "gpus_per_replica": 2, "demand": [2] * 8}
                ],
                "jobs": [
                    {"id": "a", "priority": 3, "gpus": 8, "duration": 2},
                    {"id": "b", "priority": 1, "gpus": 8, "duration": 3},
                    {"id": "c", "priority": 2, "gpus": 4, "duration": 2, "release": 4},
                ],
            }
        )
    )


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(text)
    return path


def test_config_paths_are_relative_to_the_config_file(tmp_path: Path) -> None:
    config = read_config(
        _config(
            tmp_path,
            "scheduler: slurm\ncluster: c.yaml\nqueue: {file: q.json}\nstate: st\nfreeze: 0\n"
            "slurm: {users: [svc]}\n",
        )
    )
    assert config.cluster == tmp_path / "c.yaml"
    assert config.queue.file == tmp_path / "q.json"
    assert config.state == tmp_path / "st"
    assert config.minutes("freeze") == 0 and config.minutes("every") == 15


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("scheduler: lsf\ncluster: c\nqueue: {file: q}\n", "scheduler"),
        ("scheduler: slurm\ncluster: c\nqueue: {file: q, command: [squeue]}\n", "queue"),
        ("scheduler: slurm\ncluster: c\nqueue: {file: q}\nevery: soon\n", "every"),
        ("scheduler: slurm\ncluster: c\nqueue: {file: q}\ntime_limit: .inf\n", "time_limit"),
        ("scheduler: kueue\ncluster: c\nqueue: {file: q}\n", "kueue"),
        (
            "scheduler: kueue\ncluster: c\nqueue: {file: q}\nkueue: {cluster_queue: batch}\n",
            "cluster_queue_object",
        ),
        ("scheduler: slurm\ncluster: c\nqueue: {file: q}\nsolver: magic\n", "magic"),
        ("scheduler: slurm\ncluster: c\nqueue: {file: q}\n", "slurm.users: the inference"),
        ("scheduler: slurm\ncluster: c\nqueue: {file: q}\ncolour: red\n", "colour"),
    ],
)
def test_a_bad_config_names_the_field(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(InputError) as err:
        read_config(_config(tmp_path, text))
    assert any(field in p for p in err.value.problems), err.value.problems


def test_two_runs_never_overlap(tmp_path: Path) -> None:
    one, two = StateFolder(tmp_path / "state"), StateFolder(tmp_path / "state")
    with one.locked(), pytest.raises(Busy, match="holds"), two.locked():
        pass
    with two.locked():  # released when the first run ends
        pass


def test_cycles_are_committed_whole_and_pruned(tmp_path: Path) -> None:
    folder = StateFolder(tmp_path)
    with folder.locked():
        for k in range(4):
            folder.commit_cycle(f"2026120{k}T000000Z", {"plan.json": str(k)}, keep=2)
    kept = sorted(p.name for p in folder.cycles.iterdir())
    assert kept == ["20261202T000000Z", "20261203T000000Z"]
    last = folder.last_cycle()
    assert last is not None and (last / "plan.json").read_text() == "3"


def test_a_plan_moves_onto_the_next_horizon() -> None:
    before = _instance()
    plan = solve(before, "fifo")
    after = _instance(datetime(2026, 12, 1, 10, tzinfo=UTC))
    moved = rebased(plan, START, 60, after)
    assert moved is not None
    old = {a.job: a for a in plan.assignments}
    for (
        a
    ) in moved.assignments:  # two slots earlier on the new grid; what started before slot 0 is out
        assert (a.start, a.end) == (old[a.job].start - 2, old[a.job].end - 2)
    assert {a.job for a in moved.assignments} == {a.job for a in plan.assignments if a.start >= 2}
    assert all(b.start >= 0 and b.end <= after.slots for b in moved.inference)


def test_a_plan_on_another_grid_is_not_moved() -> None:
    plan = solve(_instance(), "fifo")
    half_slot = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
    assert rebased(plan, half_slot, 60, _instance()) is None
    assert rebased(plan, START, 30, _instance()) is None


def test_metrics_parse_with_prometheus_own_parser() -> None:
    inst = _instance(now=1)
    plan: Plan = solve(inst, "greedy")
    text = status_metrics(START, True, START) + plan_metrics(inst, plan, {"start": 2})
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert families["horizon_opt_cycle_success"].samples[0].value == 1
    starts = families["horizon_opt_job_predicted_start_timestamp_seconds"].samples
    planned = {a.job: a.start for a in plan.assignments if a.start >= inst.now}
    assert {s.labels["job"]: s.value for s in starts} == {
        j: START.timestamp() + 3600 * t for j, t in planned.items()
    }
    reserved = families["horizon_opt_inference_reserved_gpus"].samples[0]
    required = families["horizon_opt_inference_required_gpus"].samples[0]
    assert reserved.labels == {"service": "chat"} and required.value == 4
    assert reserved.value >= required.value


def test_a_cycle_on_an_instance_file_writes_plan_actions_and_metrics(tmp_path: Path) -> None:
    """The queue may be an instance file (your own exporter's); the demo's state at noon."""
    from horizon_opt.model.load import load_instance
    from horizon_opt.plans.check import check
    from horizon_opt.service.cycle import run_cycle

    demo = Path(__file__).resolve().parents[2] / "instances" / "demo-state.yaml"
    config = read_config(
        _config(
            tmp_path,
            f"scheduler: slurm\nqueue: {{file: {demo}, format: instance}}\nstate: st\n"
            "solver: greedy\nslurm: {users: [svc]}\n",
        )
    )
    cycle = run_cycle(config)
    assert cycle.ok and cycle.folder is not None and cycle.actions is not None
    instance = load_instance(cycle.folder / "instance.yaml")
    assert not check(instance, Plan.read(cycle.folder / "plan.json"))
    assert cycle.actions.actions and all(a.argv[2] == "scontrol" for a in cycle.actions.actions)
    status = (tmp_path / "st" / "status.json").read_text()
    assert '"ok": true' in status
    again = run_cycle(config)  # not applied: the same commands again, from the plan kept
    assert again.plan is not None and again.plan.churn is not None and again.actions is not None
    assert [a.argv for a in again.actions.actions] == [a.argv for a in cycle.actions.actions]


def _demo_config(tmp_path: Path) -> Path:
    demo = Path(__file__).resolve().parents[2] / "instances" / "demo-state.yaml"
    return _config(
        tmp_path,
        f"scheduler: slurm\nqueue: {{file: {demo}, format: instance}}\nstate: st\n"
        "solver: greedy\nslurm: {users: [svc]}\n",
    )


def test_run_every_keeps_cycling_until_its_count(tmp_path: Path) -> None:
    """`--every 1s`: a cadence in seconds (refused before)."""
    from typer.testing import CliRunner

    from horizon_opt.cli import app

    result = CliRunner().invoke(
        app, ["run", str(_demo_config(tmp_path)), "--every", "1s", "--cycles", "2"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.count("cycle ") == 2
    assert len(list((tmp_path / "st" / "cycles").iterdir())) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--every", "soon"], "--every: not a duration"),
        (["--now", "noon"], "--now: not an ISO-8601 time"),
    ],
)
def test_run_refuses_bad_options_with_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    from typer.testing import CliRunner

    from horizon_opt.cli import app

    result = CliRunner().invoke(app, ["run", str(_demo_config(tmp_path)), *args])
    assert result.exit_code == 2 and message in result.stderr, result.output
    assert not (tmp_path / "st").exists()  # nothing written


def test_demand_past_the_gpus_running_jobs_leave_is_planned_with_what_fits(
    tmp_path: Path,
) -> None:
    """One 8-GPU node; a running job holds 6 GPUs until slot 4; chat needs 2 replicas of 2 GPUs
    at every slot. Not an instance (FORMAT.md refuses it), but a cycle must still plan: 1
    replica fits until slot 4, 2 after, and the cycle says where inference will be short."""
    from horizon_opt.service.cycle import run_cycle

    state = tmp_path / "state.yaml"
    state.write_text(
        "name: tight\nhorizon: {slots: 8, start: '2026-12-01T00:00:00Z'}\nnow: 1\n"
        "pools: [{name: p, gpu_type: H100, nodes: 1, gpus_per_node: 8}]\n"
        "services: [{name: chat, pool: p, gpus_per_replica: 2, demand: [2, 2, 2, 2, 2, 2, 2, 2]}]\n"
        "jobs:\n"
        "  - {id: r, priority: 1, gpus: 6, duration: 4,\n"
        "     placed: {pool: p, start: 0, gpus: {p-0: [0, 1, 2, 3, 4, 5]}}}\n"
    )
    config = read_config(
        _config(
            tmp_path,
            f"scheduler: slurm\nqueue: {{file: {state}, format: instance}}\nstate: st\n"
            "solver: greedy\nslurm: {users: [svc]}\n",
        )
    )
    cycle = run_cycle(config)
    assert cycle.ok and cycle.plan is not None
    assert any("'chat'" in line and "short" in line for line in cycle.lines), cycle.lines
    replicas = {
        t: sum(b.replicas for b in cycle.plan.inference if b.start <= t < b.end)
        for t in range(1, 8)
    }
    assert replicas == {1: 1, 2: 1, 3: 1, 4: 2, 5: 2, 6: 2, 7: 2}
    metrics = (tmp_path / "st" / "metrics.prom").read_text()
    # what the forecast requires, not what fits: 2 replicas of 2 GPUs, beside the 2 reserved
    assert 'horizon_opt_inference_required_gpus{service="chat"} 4' in metrics
    assert 'horizon_opt_inference_reserved_gpus{service="chat"} 2' in metrics


# -- the promise ledger ------------------------------------------------------------------------


def test_the_ledger_takes_starts_two_hours_ahead_and_keeps_the_first() -> None:
    """At 08:00 (slot 0), the plan's starts at slot 2 (2 h ahead) or later are promised, the
    earlier ones not; c's earlier promise (13:00) stays as first told, and a job that left the
    queue (`gone`) leaves the ledger. With no history, each new promise's P50 is its start and
    its P90 as far past it as it is ahead."""
    from horizon_opt.service.promises import Ledger, Told, updated

    inst = _instance()
    plan = solve(inst, "greedy")
    starts = {a.job: a.start for a in plan.assignments}
    c = datetime(2026, 12, 1, 13, tzinfo=UTC)
    told = {"c": Told(START, c, c, c), "gone": Told(START, START, START, START)}
    ledger = updated(inst, plan, Ledger(told))
    expected = {j: inst.slot_time(s) for j, s in starts.items() if s >= 2 and j != "c"}
    assert ledger.starts() == expected | {"c": c}
    for job, when in expected.items():
        assert when is not None
        assert ledger.told[job].p50 == when and ledger.told[job].p90 == when + (when - START)


def test_promises_that_came_true_late_widen_the_next_ones() -> None:
    """Ten earlier promises, each made 4 h ahead, came true 2 h late (lateness 0.5): a new one
    made 2 h ahead gets P50 = P90 = its start + 1 h. Job a, promised at 07:00 for 09:00 and
    running since 08:00 (slot 0; now is slot 1), joins the history with the start seen (an hour
    early: lateness -0.5, which leaves the median and the 90th percentile at 0.5)."""
    from horizon_opt.service.promises import CameTrue, Ledger, Told, updated

    inst = compile_instance(
        parse_spec(
            {
                "name": "svc",
                "horizon": {"slots": 8, "slot_minutes": 60, "start": START.isoformat()},
                "now": 1,
                "pools": [{"name": "h100", "gpu_type": "H100", "nodes": 1, "gpus_per_node": 8}],
                "jobs": [
                    {
                        "id": "a",
                        "priority": 1,
                        "gpus": 8,
                        "duration": 3,
                        "placed": {"pool": "h100", "start": 0, "gpus": {"h100-0": list(range(8))}},
                    },
                    {"id": "b", "priority": 1, "gpus": 8, "duration": 2},
                ],
            }
        )
    )
    hour = timedelta(hours=1)
    made, predicted = START - 10 * hour, START - 6 * hour
    history = tuple(
        CameTrue(f"old{k}", Told(made, predicted, predicted, predicted), predicted + 2 * hour)
        for k in range(10)
    )
    a = Told(START - hour, START + hour, START + hour, START + 3 * hour)
    plan = solve(inst, "greedy")  # b after a, at slot 3 (11:00): 2 h after now (09:00)
    assert {x.job: x.start for x in plan.assignments}["b"] == 3
    ledger = updated(inst, plan, Ledger({"a": a}, history))
    assert ledger.history[-1] == CameTrue("a", a, START)
    b = START + 3 * hour
    assert ledger.told == {"b": Told(START + hour, b, b + hour, b + hour, "5-16 GPUs")}


def test_the_ledger_on_a_later_horizon_and_on_disk(tmp_path: Path) -> None:
    """10:30 on a horizon from 08:00 in hours: the last slot that starts by then is 2."""
    from horizon_opt.service.promises import (
        PROMISES,
        CameTrue,
        Ledger,
        Told,
        promised_slots,
        promises_json,
        read_promises,
    )

    when = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
    assert promised_slots(_instance(), {"a": when, "zzz": START}) == {"a": 2}
    told = {"a": Told(START, when, when, when + timedelta(minutes=150), "1 GPU")}
    ledger = Ledger(told, (CameTrue("x", Told(START, START, START, START, "2-4 GPUs"), when),))
    # x came true after its P90 (missed); a is not due by 12:00 and missed it by 14:00
    assert ledger.missed(when) == [True]
    assert ledger.missed(when + timedelta(hours=4)) == [True, True]
    assert ledger.lateness(START) == ([("2-4 GPUs", 150.0)], [("1 GPU", -150 / 150)])
    (tmp_path / PROMISES).write_text(promises_json(ledger))
    lines: list[str] = []
    assert read_promises(tmp_path, lines) == ledger and lines == []
    (tmp_path / PROMISES).write_text(json.dumps({"promises": {"a": "2026-12-01T10:30:00Z"}}))
    assert read_promises(tmp_path, lines).told["a"].made == when - timedelta(hours=2)
    (tmp_path / PROMISES).write_text("{")
    assert read_promises(tmp_path, lines) == Ledger()
    assert "is unreadable" in lines[0] and "no promise is held" in lines[0]


def test_cycles_hold_the_promises_they_wrote(tmp_path: Path) -> None:
    from horizon_opt.service.cycle import run_cycle
    from horizon_opt.service.promises import PROMISES

    path = _demo_config(tmp_path)
    path.write_text(
        path.read_text().replace(
            "solver: greedy", "solver: cpsat\ntime_limit: 2\nworkers: 1\nkeep_promises: 0.5"
        )
    )
    config = read_config(path)
    first = run_cycle(config)
    assert first.ok and first.folder is not None
    written = (first.folder / PROMISES).read_text()
    second = run_cycle(config)
    assert second.ok and second.folder is not None
    assert not any("unreadable" in line for line in second.lines)
    kept = json.loads((second.folder / PROMISES).read_text())["promises"]
    told = json.loads(written)["promises"]
    assert told and kept.items() >= told.items()  # the same snapshot: every promise as told


def test_metrics_are_written_by_the_reference_client_and_escape_labels() -> None:
    """A label with a quote, a backslash and a newline reads back as written; every family is a
    gauge with its help."""
    from prometheus_client.parser import text_string_to_metric_families

    from horizon_opt.service.metrics import _Families

    out = _Families()
    odd = 'a"b\\c\nd'
    out.add("jobs", "Jobs by state.", [({"state": odd}, 2.0), ({"state": "x"}, 1.0)])
    out.add("plan_pwo", "pwo.", [({}, 12.5)])
    (jobs, pwo) = text_string_to_metric_families(out.text())
    assert (jobs.name, jobs.type, jobs.documentation) == (
        "horizon_opt_jobs",
        "gauge",
        "Jobs by state.",
    )
    assert [(s.labels["state"], s.value) for s in jobs.samples] == [(odd, 2.0), ("x", 1.0)]
    assert [s.value for s in pwo.samples] == [12.5]
