"""What-if capacity on a hand-sized instance, with the arithmetic next to each assertion, and the
`horizon-opt whatif` command.

The instance: 4 slots of 1 hour from 2026-12-01T00:00Z (h = 1). Pool a: `nodes` nodes of 4 GPUs
(3 unless said). Service chat on a, 4 GPUs per replica, demand 1 at every slot: one whole node
all the time. Jobs (value = priority x GPUs x duration x h):
  big   training,   4 GPUs, 4 slots, priority 2, deadline 4   value 2 x 4 x 4 = 32
  wide  evaluation, 4 GPUs, 2 slots, priority 1, deadline 4   value 1 x 4 x 2 = 8
With 3 nodes, chat takes one and each job a node of its own: pwo 32 + 8 = 40. With 2 nodes only
one node is free for the whole horizon: big takes it (more value), wide cannot end by its
deadline, pwo 32. Every solver finds these plans; the tests use greedy, and cpsat once.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from horizon_opt import check
from horizon_opt.analysis.whatif import (
    Change,
    ChangeKind,
    WhatIf,
    apply_changes,
    check_what_if,
    format_what_if,
    parse_change,
    what_if,
    what_if_instances,
    what_if_json,
)
from horizon_opt.cli import app
from horizon_opt.errors import InputError
from horizon_opt.model.spec import InstanceSpec
from horizon_opt.plans.plan import Plan, Unscheduled
from horizon_opt.solvers import SolveOptions
from horizon_opt.solvers.assemble import stamp

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
FAST = SolveOptions(time_limit=1.0, workers=1)

SPEC: dict[str, Any] = {
    "name": "whatif",
    "horizon": {"slots": 4, "slot_minutes": 60, "start": "2026-12-01T00:00:00Z"},
    "pools": [{"name": "a", "gpu_type": "A", "nodes": 3, "gpus_per_node": 4}],
    "services": [{"name": "chat", "pool": "a", "gpus_per_replica": 4, "demand": [1, 1, 1, 1]}],
    "jobs": [
        {"id": "big", "kind": "training", "priority": 2, "gpus": 4, "duration": 4, "deadline": 4},
        {
            "id": "wide",
            "kind": "evaluation",
            "priority": 1,
            "gpus": 4,
            "duration": 2,
            "deadline": 4,
        },
    ],
}


def spec(nodes: int = 3, **fields: Any) -> InstanceSpec:
    data = copy.deepcopy(SPEC)
    data["pools"][0]["nodes"] = nodes
    return InstanceSpec.model_validate({**data, **fields})


def run(kind: ChangeKind, text: str, nodes: int = 3, solver: str = "greedy") -> WhatIf:
    w = what_if(spec(nodes), [parse_change(text, kind)], solver, FAST)
    # every what-if plan is valid for its own instance
    assert list(check(w.base_instance, w.base)) == []
    assert list(check(w.changed_instance, w.changed)) == []
    return w


def test_add_a_node_fits_the_job_that_did_not_fit() -> None:
    # 2 nodes -> 3: wide gets the new node a-2, newly on time; pwo 32 -> 40.
    # Utilization: 2 nodes: (16 batch + 16 chat) / (2 x 4 x 4 = 32) = 1.0;
    # 3 nodes: (16 + 8 batch + 16 chat) / 48 = 0.8333.
    w = run("add", "a=1", nodes=2)
    assert w.changed_instance.node_names == ("a-0", "a-1", "a-2")
    d = w.diff
    assert (d.pwo.a, d.pwo.b, d.on_time.a, d.on_time.b) == (32.0, 40.0, 1, 2)
    assert d.pwo.relative == 0.25
    assert d.utilization.a == pytest.approx(1.0)
    assert d.utilization.b == pytest.approx(40 / 48)
    assert (d.newly_on_time, d.no_longer_on_time) == (("wide",), ())
    assert [c.job for c in d.added] == ["wide"]


def test_remove_a_node_drops_a_job() -> None:
    # 3 nodes -> 2 (a-2 goes): only big fits, wide is no longer on time; pwo 40 -> 32 (-20%).
    w = run("remove", "a=1")
    assert w.changed_instance.node_names == ("a-0", "a-1")
    d = w.diff
    assert (d.pwo.a, d.pwo.b) == (40.0, 32.0)
    assert d.pwo.relative == -0.2
    assert (d.newly_on_time, d.no_longer_on_time) == ((), ("wide",))
    assert [c.job for c in d.dropped] == ["wide"]


def test_outage_moves_a_job() -> None:
    # a-2 down in slots 0-1: big keeps a-1 for 4 slots, wide waits for a-2 and runs 2-4, still
    # on time (4 <= 4): moved 2 slots = 2 h later, pwo unchanged at 40.
    w = run("outage", "a-2:0-2")
    d = w.diff
    assert d.pwo.change == 0.0
    assert [(c.job, c.shift_slots, c.shift_hours) for c in d.moved] == [("wide", 2, 2.0)]
    assert (d.newly_on_time, d.no_longer_on_time) == ((), ())
    # the same outage in ISO times: slot 0 is 00:00, slot 2 is 02:00
    iso = run("outage", "a-2:2026-12-01T00:00:00Z-2026-12-01T02:00:00Z")
    assert iso.changed_instance.up.tolist() == w.changed_instance.up.tolist()
    assert iso.diff.moved == d.moved


def test_outage_drops_a_job() -> None:
    # a-2 down in slots 1-2: it is free only at slots 0 and 3, never 2 slots in a row; wide
    # cannot run, pwo 40 -> 32.
    d = run("outage", "a-2:1-3").diff
    assert (d.pwo.b, d.no_longer_on_time) == (32.0, ("wide",))


def test_demand_scaled() -> None:
    # chat x 2: 2 replicas of 4 GPUs at every slot = two whole nodes, one node left: wide drops.
    w = run("demand", "chat*2")
    assert w.changed_instance.services[0].req.tolist() == [2, 2, 2, 2]
    assert w.base_instance.services[0].req.tolist() == [1, 1, 1, 1]
    assert w.diff.no_longer_on_time == ("wide",)
    # x 1.5: demand 1.5 needs ceil(1.5) = 2 replicas too
    assert run("demand", "chat*1.5").changed_instance.services[0].req.tolist() == [2, 2, 2, 2]


def test_cpsat_reports_bound_and_gap() -> None:
    # The tiny instance is solved exactly: bound = pwo, gap 0, for both plans.
    w = run("add", "a=1", nodes=2, solver="cpsat")
    assert (w.base.bound, w.changed.bound) == (32.0, 40.0)
    assert (w.base.gap, w.changed.gap) == (0.0, 0.0)
    data = what_if_json(w)
    assert (data["base"]["bound"], data["changed"]["gap"]) == (32.0, 0.0)
    text = format_what_if(w)
    assert "proven bound" in text and "32.0" in text


def test_changes_apply_in_order_to_the_spec() -> None:
    # add and remove add up (3 + 2 - 1 = 4 nodes); the outage names a node that only the add
    # creates; the spec itself is not changed.
    original = spec()
    changes = [
        parse_change("a-3:0-1", "outage"),
        parse_change("a=1", "remove"),
        parse_change("a=2", "add"),
    ]
    changed = apply_changes(original, changes)
    assert changed.pools[0].nodes == 4
    assert [(o.node, o.start, o.end) for o in changed.outages] == [("a-3", 0, 1)]
    assert original.pools[0].nodes == 3 and original.outages == []


@pytest.mark.parametrize(
    ("kind", "text", "change"),
    [
        ("add", "h100=2", Change("add", "h100", nodes=2)),
        ("remove", " a = 1 ", Change("remove", "a", nodes=1)),
        ("outage", "a-1:3-10", Change("outage", "a-1", start=3, end=10)),
        (
            "outage",
            "a-1:2026-12-01T01:00Z-2026-12-01T02:30:00+00:00",
            Change("outage", "a-1", start="2026-12-01T01:00Z", end="2026-12-01T02:30:00+00:00"),
        ),
        (
            "outage",
            "a-1:5-2026-12-01T06:00Z",
            Change("outage", "a-1", start=5, end="2026-12-01T06:00Z"),
        ),
        ("demand", "chat*1.2", Change("demand", "chat", factor=1.2)),
        ("demand", "a*b*3", Change("demand", "a*b", factor=3.0)),
    ],
)
def test_parse_change(kind: ChangeKind, text: str, change: Change) -> None:
    assert parse_change(text, kind) == change


def test_change_as_an_option() -> None:
    assert str(Change("add", "h100", nodes=2)) == "--add h100=2"
    assert str(Change("outage", "a-1", start=3, end=10)) == "--outage a-1:3-10"
    assert str(Change("demand", "chat", factor=1.25)) == "--demand chat*1.25"


# Every bad option: (kind, text, message after "error: ").
BAD: list[tuple[ChangeKind, str, str]] = [
    ("add", "a", "--add a: expected POOL=N, e.g. h100=2"),
    ("add", "=2", "--add =2: expected POOL=N"),
    ("add", "a=0", "--add a=0: N must be a positive integer, got '0'"),
    ("add", "a=-1", "--add a=-1: N must be a positive integer, got '-1'"),
    ("add", "a=two", "--add a=two: N must be a positive integer, got 'two'"),
    ("add", "a=1.5", "--add a=1.5: N must be a positive integer, got '1.5'"),
    ("add", "a=" + "9" * 40, f"--add a={'9' * 40}: N must be at most 100,000"),
    ("add", "gpu=1", "--add gpu=1: unknown pool 'gpu' (pools: a)"),
    ("remove", "gpu=1", "--remove gpu=1: unknown pool 'gpu' (pools: a)"),
    ("remove", "a=3", "--remove a=3: would leave pool 'a' with no nodes (it has 3)"),
    ("outage", "a-1", "--outage a-1: expected NODE:FROM-TO"),
    ("outage", "a-1:5", "--outage a-1:5: FROM-TO is not two times"),
    ("outage", "a-1:x-y", "--outage a-1:x-y: FROM-TO is not two times"),
    ("outage", "a-1:4-2", "--outage a-1:4-2: FROM must be before TO, got 4-2"),
    ("outage", "a-9:0-1", "--outage a-9:0-1: unknown node 'a-9' (nodes: a-0..a-2)"),
    ("outage", "a-1:7-9", "--outage a-1:7-9: wholly outside the horizon"),
    (
        "outage",
        "a-1:2026-12-01T03:00Z-2026-12-01T02:00Z",
        "--outage a-1:2026-12-01T03:00Z-2026-12-01T02:00Z: end: must be after start (2 <= 3)",
    ),
    ("demand", "chat", "--demand chat: expected SERVICE*FACTOR, e.g. chat*1.2"),
    ("demand", "chat*0", "--demand chat*0: FACTOR must be a finite number above 0, got '0'"),
    ("demand", "chat*-1", "--demand chat*-1: FACTOR must be a finite number above 0, got '-1'"),
    ("demand", "chat*inf", "--demand chat*inf: FACTOR must be a finite number above 0, got 'inf'"),
    ("demand", "chat*nan", "--demand chat*nan: FACTOR must be a finite number above 0, got 'nan'"),
    ("demand", "chat*lots", "--demand chat*lots: FACTOR must be a number, got 'lots'"),
    ("demand", "mail*2", "--demand mail*2: unknown service 'mail' (services: chat)"),
    ("demand", "chat*1e7", "--demand chat*1e+07: demand would exceed 1,000,000 replicas per slot"),
    (
        "demand",
        "chat*4",
        "with --demand chat*4: services[0].demand: service 'chat' needs more replicas than pool "
        "'a' can hold even with no batch work, at slots 0-3",
    ),
]


@pytest.mark.parametrize(("kind", "text", "message"), BAD)
def test_bad_changes(kind: ChangeKind, text: str, message: str) -> None:
    with pytest.raises(InputError) as exc:
        what_if_instances(spec(), [parse_change(text, kind)])
    assert len(exc.value.problems) == 1
    assert message in exc.value.problems[0]


def test_iso_times_need_a_horizon_start() -> None:
    no_start = spec(horizon={"slots": 4})
    change = parse_change("a-1:2026-12-01T00:00Z-2026-12-01T01:00Z", "outage")
    with pytest.raises(InputError, match=r"ISO times need horizon\.start in the instance"):
        apply_changes(no_start, [change])


def test_remove_keeps_named_nodes() -> None:
    # a-2 is named by an outage, or holds a placed (running) job: removing it is refused.
    with_outage = spec(outages=[{"node": "a-2", "start": 0, "end": 1}])
    with pytest.raises(
        InputError, match=r"--remove a=1: would remove a-2, which outages\[0\] names"
    ):
        apply_changes(with_outage, [parse_change("a=1", "remove")])
    jobs = copy.deepcopy(SPEC["jobs"])
    jobs[1]["placed"] = {"pool": "a", "start": 0, "gpus": {"a-2": [0, 1, 2, 3]}}
    running = spec(now=1, jobs=jobs)
    with pytest.raises(
        InputError, match=r"--remove a=1: would remove a-2, where placed job 'wide' \(jobs\[1\]\)"
    ):
        apply_changes(running, [parse_change("a=1", "remove")])


# -- CSV demand ---------------------------------------------------------------------------------


@pytest.fixture
def csv_instance(tmp_path: Path) -> Path:
    """The instance with chat's demand in a CSV beside it (3 nodes), in its own folder."""
    folder = tmp_path / "cluster"
    folder.mkdir()
    (folder / "chat.csv").write_text("time,replicas\n0,1\n1,1\n2,1\n3,1\n")
    data = copy.deepcopy(SPEC)
    data["services"][0]["demand"] = {"csv": "chat.csv", "column": "replicas"}
    path = folder / "whatif.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_csv_demand_is_read_beside_the_instance(csv_instance: Path) -> None:
    # The CSV is found from the instance file's folder, not the current one, for the instance
    # as written, as changed, and when its demand is scaled.
    w = what_if(csv_instance, [parse_change("chat*2", "demand")], "greedy", FAST)
    assert w.changed_instance.services[0].demand.tolist() == [2.0, 2.0, 2.0, 2.0]
    assert w.diff.no_longer_on_time == ("wide",)
    w = what_if(csv_instance, [parse_change("a=1", "remove")], "greedy", FAST)
    assert w.changed_instance.services[0].demand.tolist() == [1.0, 1.0, 1.0, 1.0]
    assert w.diff.no_longer_on_time == ("wide",)


# -- the command -------------------------------------------------------------------------------


@pytest.fixture
def instance_file(tmp_path: Path) -> Path:
    path = tmp_path / "whatif.yaml"
    data = copy.deepcopy(SPEC)
    data["pools"][0]["nodes"] = 2
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_cli_text(instance_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "changed.json"
    result = runner.invoke(
        app, ["whatif", str(instance_file), "--add", "a=1", "--solver", "greedy", "-o", str(out)]
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "whatif, greedy: what if --add a=1"
    assert lines[2].split() == ["base", "changed"]
    assert lines[4].split()[:3] == ["utilization", "100.0%", "83.3%"]
    assert lines[5].split() == ["pwo", "32.0", "40.0", "(+25%)"]
    assert lines[6].split() == ["jobs", "on", "time", "1", "/", "2", "2", "/", "2"]
    assert "newly on time (1): wide" in lines
    assert "no longer on time, late or not run (0): -" in lines
    assert (
        "jobs: 1 added, 0 dropped, 0 moved, 0 on other nodes or GPUs, 1 unchanged "
        "(--format json lists them)" in lines
    )
    assert lines[-1] == f"plan of the changed instance written to {out}"
    # the plan written is the changed instance's, and valid for it
    plan = Plan.read(out)
    _, changed = what_if_instances(instance_file, [parse_change("a=1", "add")])
    assert list(check(changed, plan)) == []
    assert plan.objective == 40.0


def test_cli_json(instance_file: Path) -> None:
    result = runner.invoke(
        app,
        ["whatif", str(instance_file), "--add", "a=1", "--solver", "greedy", "--format", "json"],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == ["instance", "solver", "changes", "base", "changed", "kept_base", "diff"]
    assert (data["instance"], data["solver"], data["changes"]) == (
        "whatif",
        "greedy",
        ["--add a=1"],
    )
    assert list(data["base"]) == [
        "nodes",
        "status",
        "pwo",
        "utilization",
        "on_time",
        "scheduled",
        "late",
        "bound",
        "gap",
        "wall_seconds",
    ]
    assert (data["base"]["nodes"], data["changed"]["nodes"]) == (2, 3)
    assert (data["base"]["pwo"], data["changed"]["pwo"]) == (32.0, 40.0)
    assert (data["base"]["bound"], data["base"]["gap"]) == (None, None)
    assert data["diff"]["newly_on_time"] == ["wide"]
    assert data["diff"]["pwo"]["change"] == 8.0


def test_cli_every_kind_at_once(instance_file: Path) -> None:
    # 2 nodes + 2 = 4, - 1 = 3; a-3 does not exist after that, a-2 does: down in slot 3 only,
    # when wide (2 slots, by 4) can run on it from slot 0 anyway. chat x 1 changes nothing.
    result = runner.invoke(
        app,
        [
            "whatif",
            str(instance_file),
            "--add=a=2",
            "--remove=a=1",
            "--outage=a-2:3-4",
            "--demand=chat*1",
            "--solver=greedy",
            "-f",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["changes"] == ["--add a=2", "--remove a=1", "--outage a-2:3-4", "--demand chat*1"]
    assert data["changed"]["nodes"] == 3
    assert data["diff"]["newly_on_time"] == ["wide"]


@pytest.mark.parametrize(("kind", "text", "message"), BAD)
def test_cli_bad_options(
    instance_file: Path, tmp_path: Path, kind: ChangeKind, text: str, message: str
) -> None:
    # The file has 2 nodes: `--remove a=3` still leaves none, and the messages are the same.
    message = message.replace("a-0..a-2", "a-0..a-1").replace("(it has 3)", "(it has 2)")
    if (kind, text) == ("remove", "a=3"):
        text, message = "a=2", message.replace("a=3", "a=2")
    out = tmp_path / "out.json"
    args = ["whatif", str(instance_file), f"--{kind}", text, "--solver", "greedy", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert f"error: {message}" in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.output
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--add", "a=1", "--solver", "nope"], "error: --solver: unknown solver 'nope'"),
        (["--add", "a=1", "--solver", "greedy", "-f", "xml"], "error: --format: unknown format"),
        (["--solver", "greedy"], "error: give at least one change (--add, --remove"),
        (["--add", "a=1"], "error: --solver: needed to plan the changed instance"),
        (["--prices", "-o", "x.json"], "error: --output: there is no changed instance to plan"),
        (["--add", "a=1", "--solver", "greedy", "-o", "-"], "error: --output: '-'"),
    ],
)
def test_cli_other_bad_options(instance_file: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["whatif", str(instance_file), *args])
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_cli_output_is_checked_before_solving(instance_file: Path, tmp_path: Path) -> None:
    # -o naming the instance itself is refused, and nothing is written.
    before = instance_file.read_text()
    args = ["whatif", str(instance_file), "--add", "a=1", "--solver", "greedy"]
    result = runner.invoke(app, [*args, "-o", str(instance_file)])
    assert result.exit_code == 2
    assert "refusing to overwrite an input" in result.stderr
    assert instance_file.read_text() == before


def test_cli_csv_instance_from_another_folder(csv_instance: Path) -> None:
    # The command runs from the repository, the instance and its CSV live elsewhere.
    args = ["whatif", str(csv_instance), "--demand", "chat*2", "--solver", "greedy", "-f", "json"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["diff"]["no_longer_on_time"] == ["wide"]


def test_cli_prices_alone_and_with_a_change(instance_file: Path) -> None:
    alone = runner.invoke(app, ["whatif", str(instance_file), "--prices"])
    assert alone.exit_code == 0, alone.output
    assert "Capacity prices from the time-indexed LP" in alone.stdout
    assert "one more a node" in alone.stdout.lower()
    data = runner.invoke(app, ["whatif", str(instance_file), "--prices", "-f", "json"])
    assert data.exit_code == 0, data.output
    assert [p["name"] for p in json.loads(data.stdout)["pools"]] == ["a"]
    both = runner.invoke(
        app,
        ["whatif", str(instance_file), "--add", "a=1", "--solver", "greedy", "--prices"],
    )
    assert both.exit_code == 0, both.output
    assert "newly on time" in both.stdout and "Capacity prices" in both.stdout
    as_json = runner.invoke(
        app,
        [
            "whatif",
            str(instance_file),
            "--add",
            "a=1",
            "--solver",
            "greedy",
            "--prices",
            "-f",
            "json",
        ],
    )
    assert as_json.exit_code == 0, as_json.output
    assert "pools" in json.loads(as_json.stdout)["prices"]


def test_which_requests_make_sense() -> None:
    """The library refuses what the command refuses, with the same messages: nothing asked, a
    change without a solver, a plan to write without a change."""
    add = [Change("add", "a", nodes=1)]
    check_what_if(add, "greedy", prices=False, writes_plan=True)
    check_what_if([], None, prices=True, writes_plan=False)
    cases = [
        (
            [],
            "greedy",
            False,
            False,
            "give at least one change (--add, --remove, --outage, --demand, --limit) or --prices",
        ),
        (add, None, True, False, "--solver: needed to plan the changed instance"),
        ([], None, True, True, "--output: there is no changed instance to plan"),
    ]
    for changes, solver, prices, writes_plan, message in cases:
        with pytest.raises(InputError) as caught:
            check_what_if(changes, solver, prices, writes_plan)
        assert caught.value.problems == [message]


def test_added_capacity_never_shows_a_loss() -> None:
    """The demo with one more a100 node, cpsat with one worker and 2 s: the changed solve starts
    from the plan as written, which stays valid with more capacity, so the changed plan is worth
    at least as much (a solve from scratch once reported 12,779 -> 12,175)."""
    w = what_if(
        ROOT / "instances" / "demo.yaml",
        [parse_change("a100=1", "add")],
        "cpsat",
        SolveOptions(time_limit=2.0, workers=1, seed=0),
    )
    assert check(w.changed_instance, w.changed) == []
    assert w.changed.objective >= w.base.objective
    assert w.changed.bound is None or w.changed.bound >= w.changed.objective


def test_a_better_plan_as_written_is_kept_and_said(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the changed solve is worth less than the plan as written and that plan is still
    valid (here greedy told to plan nothing on the changed instance: an empty plan is valid),
    the plan as written is the changed plan, and the view says so."""
    import horizon_opt.analysis.whatif as whatif_module

    real = whatif_module.solve
    calls: list[int] = []

    def second_plans_nothing(instance: Any, solver: str, options: Any) -> Any:
        plan = real(instance, solver, options)
        calls.append(1)
        if len(calls) == 1:
            return plan
        return stamp(
            instance,
            plan.model_copy(
                update={
                    "assignments": [],
                    "unscheduled": [
                        *plan.unscheduled,
                        *(Unscheduled(job=a.job, reason="left out") for a in plan.assignments),
                    ],
                }
            ),
            started=0.0,
            bound=None,
            build_seconds=None,
        )

    monkeypatch.setattr(whatif_module, "solve", second_plans_nothing)
    w = what_if(ROOT / "instances" / "demo.yaml", [parse_change("a100=1", "add")], "greedy")
    assert w.kept_base and w.changed.objective == w.base.objective
    assert check(w.changed_instance, w.changed) == []
    assert "that one is shown" in format_what_if(w)
    assert what_if_json(w)["kept_base"] is True
