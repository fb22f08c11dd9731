"""Plan files that are wrong in type, range or encoding: PlanError naming the field, exit code 2 in
every command that reads a plan, never a traceback; and `check`'s true total and its line for a
plan made for another instance.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import tiny_plan_data
from typer.testing import CliRunner

from horizon_opt.cli import app
from horizon_opt.errors import PlanError
from horizon_opt.model.instance import Instance
from horizon_opt.plans.check import check
from horizon_opt.plans.plan import MAX_EXTRA_DEPTH, PLAN_INT_MAX, Metrics, Plan

Data = dict[str, Any]
runner = CliRunner()
FORMAT_MD = Path(__file__).parents[2] / "docs" / "FORMAT.md"


def problems_of(data: Data) -> list[str]:
    with pytest.raises(PlanError) as info:
        Plan.parse(data)
    return info.value.problems


def read_problems(path: Path) -> list[str]:
    with pytest.raises(PlanError) as info:
        Plan.read(path)
    return info.value.problems


def names(problems: list[str], where: str, *words: str) -> bool:
    """Some problem is about the field `where` and says all of `words`."""
    return any(p.startswith(f"{where}: ") and all(w in p for w in words) for p in problems)


def gpu_index(value: Any) -> Callable[[Data], None]:
    return lambda d: d["assignments"][0]["gpus"]["a-1"].__setitem__(0, value)


def field(*path: str | int, value: Any) -> Callable[[Data], None]:
    def change(d: Data) -> None:
        target: Any = d
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


# -- integers: strict, non-negative, at most PLAN_INT_MAX -----------------------------------------


@pytest.mark.parametrize("value", ["0", True, False, 1.0, 1e20, None])
def test_gpu_index_must_be_a_json_integer(tiny_plan_dict: Data, value: Any) -> None:
    gpu_index(value)(tiny_plan_dict)
    assert names(problems_of(tiny_plan_dict), "assignments[0].gpus.a-1[0]", "integer")


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("assignments[0].start", field("assignments", 0, "start", value="0")),
        ("assignments[0].end", field("assignments", 0, "end", value=True)),
        ("inference[0].start", field("inference", 0, "start", value=0.0)),
        ("inference[0].replicas", field("inference", 0, "replicas", value=1e20)),
        ("inference[0].replicas", field("inference", 0, "replicas", value="2")),
        ("metrics.completed", field("metrics", "completed", value=True)),
        ("metrics.late", field("metrics", "late", value=1.0)),
        (
            "metrics.completed_by_kind.training",
            field("metrics", "completed_by_kind", value={"training": "1"}),
        ),
    ],
)
def test_plan_integers_are_strict(
    tiny_plan_dict: Data, where: str, change: Callable[[Data], None]
) -> None:
    tiny_plan_dict["metrics"] = {}
    change(tiny_plan_dict)
    assert names(problems_of(tiny_plan_dict), where, "integer")


@pytest.mark.parametrize(
    ("where", "change"),
    [
        ("assignments[0].start", field("assignments", 0, "start", value=-1)),
        ("assignments[1].end", field("assignments", 1, "end", value=-2)),
        ("assignments[0].gpus.a-1[0]", gpu_index(-1)),
        ("inference[0].replicas", field("inference", 0, "replicas", value=-1)),
        ("metrics.scheduled", field("metrics", "scheduled", value=-3)),
    ],
)
def test_negative_integers_are_rejected(
    tiny_plan_dict: Data, where: str, change: Callable[[Data], None]
) -> None:
    tiny_plan_dict["metrics"] = {}
    change(tiny_plan_dict)
    assert names(problems_of(tiny_plan_dict), where, "greater than or equal to 0")


@pytest.mark.parametrize("value", [PLAN_INT_MAX + 1, 2**62, 2**70, 10**400])
def test_integers_above_the_limit_are_rejected(tiny_plan_dict: Data, value: int) -> None:
    tiny_plan_dict["inference"][0]["replicas"] = value
    gpu_index(value)(tiny_plan_dict)
    problems = problems_of(tiny_plan_dict)
    assert names(problems, "inference[0].replicas", f"less than or equal to {PLAN_INT_MAX}")
    assert names(problems, "assignments[0].gpus.a-1[0]", f"less than or equal to {PLAN_INT_MAX}")


def test_the_limit_itself_loads(tiny_plan_dict: Data) -> None:
    tiny_plan_dict["inference"][0].update(end=PLAN_INT_MAX, replicas=PLAN_INT_MAX)
    assert Plan.parse(tiny_plan_dict).inference[0].replicas == PLAN_INT_MAX


def test_a_5000_digit_integer_names_its_field(tmp_path: Path, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["inference"][0]["replicas"] = 7
    tiny_plan_dict["objective"] = 8
    tiny_plan_dict["metrics"] = {"other_tool": 9}
    text = json.dumps(tiny_plan_dict)
    for key, number in [("replicas", "7"), ("objective", "8"), ("other_tool", "9")]:
        text = text.replace(f'"{key}": {number}', f'"{key}": {"9" * 5000}', 1)
    path = tmp_path / "plan.json"
    path.write_text(text)
    problems = read_problems(path)
    assert names(problems, "inference[0].replicas", f"from 0 to {PLAN_INT_MAX}")
    assert names(problems, "objective", "finite")
    assert names(problems, "metrics", "other_tool", "finite")


# -- numbers: finite --------------------------------------------------------------------------


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize(
    ("where", "key"),
    [
        ("objective", ("objective",)),
        ("bound", ("bound",)),
        ("gap", ("gap",)),
        ("wall_seconds", ("wall_seconds",)),
        ("metrics.pwo", ("metrics", "pwo")),
        ("metrics.utilization", ("metrics", "utilization")),
    ],
)
def test_numbers_must_be_finite(
    tiny_plan_dict: Data, where: str, key: tuple[str, ...], value: float
) -> None:
    tiny_plan_dict["metrics"] = {}
    field(*key, value=value)(tiny_plan_dict)
    assert names(problems_of(tiny_plan_dict), where, "finite")


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_nan_and_infinity_in_a_file_name_the_field(
    tmp_path: Path, tiny_plan_dict: Data, literal: str
) -> None:
    tiny_plan_dict["bound"] = 12.5
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(tiny_plan_dict).replace('"bound": 12.5', f'"bound": {literal}'))
    assert names(read_problems(path), "bound", "finite")


def test_times_are_not_negative(tiny_plan_dict: Data) -> None:
    tiny_plan_dict.update(wall_seconds=-1.0, build_seconds=-0.5)
    problems = problems_of(tiny_plan_dict)
    assert names(problems, "wall_seconds", "greater than or equal to 0")
    assert names(problems, "build_seconds", "greater than or equal to 0")


def test_extra_metrics_must_be_finite_and_shallow(tiny_plan_dict: Data) -> None:
    tiny_plan_dict["metrics"] = {"cost": {"eur": [1.0, float("nan")]}}
    assert names(problems_of(tiny_plan_dict), "metrics", "cost.eur[1]: not a finite number")
    deep: Any = 1
    for _ in range(MAX_EXTRA_DEPTH + 5):
        deep = [deep]
    tiny_plan_dict["metrics"] = {"deep": deep}
    assert names(problems_of(tiny_plan_dict), "metrics", f"nested more than {MAX_EXTRA_DEPTH}")


# -- text and encoding ------------------------------------------------------------------------


def test_binary_file_is_not_utf8_text(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    (problem,) = read_problems(path)
    assert problem.startswith(f"{path}: not UTF-8 text")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-32"])
def test_utf16_file_is_not_utf8_text(tmp_path: Path, tiny_plan_dict: Data, encoding: str) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(json.dumps(tiny_plan_dict).encode(encoding))
    (problem,) = read_problems(path)
    assert problem.startswith(f"{path}: not UTF-8 text")


def test_a_byte_order_mark_is_fine(tmp_path: Path, tiny_plan_dict: Data) -> None:
    path = tmp_path / "plan.json"
    path.write_bytes(json.dumps(tiny_plan_dict).encode("utf-8-sig"))
    assert Plan.read(path) == Plan.parse(tiny_plan_dict)


def test_json_nested_thousands_deep(tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text('{"metrics": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert read_problems(path) == [f"{path}: not valid JSON: nested too deeply"]


def test_duplicate_keys_are_rejected(tmp_path: Path, tiny_plan_dict: Data) -> None:
    path = tmp_path / "plan.json"
    text = json.dumps(tiny_plan_dict).replace('"start": 0,', '"start": 0, "start": 1,', 1)
    path.write_text(text)
    assert read_problems(path) == [f"{path}: not valid JSON: key 'start' appears twice"]


def test_lone_surrogates_are_not_text(tiny_plan_dict: Data) -> None:
    tiny_plan_dict["solver"] = "\ud800"
    tiny_plan_dict["unscheduled"] = [{"job": "x", "reason": "a\udfffb"}]
    problems = problems_of(tiny_plan_dict)
    assert names(problems, "solver", "lone surrogate")
    assert names(problems, "unscheduled[0].reason", "lone surrogate")


def test_unicode_text_loads(tmp_path: Path, tiny_plan_dict: Data) -> None:
    tiny_plan_dict["unscheduled"] = [
        {"job": "x", "reason": "pas de GPU libre \u00e0 temps \U0001f680"}
    ]
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(tiny_plan_dict, ensure_ascii=False), encoding="utf-8")
    assert Plan.read(path).unscheduled[0].reason.endswith("\U0001f680")


# -- old files still load; writing is strict JSON ------------------------------------------


def test_formats_example_loads() -> None:
    section = FORMAT_MD.read_text(encoding="utf-8").split("## Plan file (JSON)", 1)[1]
    example = re.search(r"```json\n(.*?)```", section, re.S)
    assert example is not None
    plan = Plan.parse(json.loads(example.group(1)))
    assert plan.assignments[0].gpus["h100-1"] == list(range(8))


def test_written_plans_never_hold_nan_or_infinity(tmp_path: Path, tiny_plan: Plan) -> None:
    path = tmp_path / "plan.json"
    tiny_plan.write(path)
    before = path.read_text()
    for broken in (
        tiny_plan.model_copy(update={"objective": float("nan")}),  # model_copy skips validation
        tiny_plan.model_copy(update={"gap": float("inf")}),
    ):
        with pytest.raises(RuntimeError, match="internal error"):
            broken.write(path)
    assert path.read_text() == before
    assert [p.name for p in tmp_path.iterdir()] == ["plan.json"]


def test_metrics_built_in_python_are_checked_too() -> None:
    with pytest.raises(ValueError, match="finite"):
        Metrics(pwo=float("nan"))
    with pytest.raises(ValueError, match="finite"):
        Metrics(cost=float("inf"))


# -- the checker never crashes, even on plans built without validation --------------------------


def test_checker_survives_huge_values_built_in_python(tiny: Instance, tiny_plan: Plan) -> None:
    block = tiny_plan.inference[0].model_copy(update={"replicas": 10**30})
    plan = tiny_plan.model_copy(update={"inference": [*tiny_plan.inference, block, block]})
    lines = [str(v) for v in check(tiny, plan)]
    assert any(line.startswith("rule 5: a-0 uses more GPUs than it has") for line in lines)


# -- the commands -----------------------------------------------------------------------------


@pytest.fixture
def instance_file(tmp_path: Path, tiny_spec: Data) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_spec, sort_keys=False))
    return path


def _file(tmp_path: Path, data: Data | str | bytes) -> Path:
    path = tmp_path / "plan.json"
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def _bad_plans(tiny_plan_dict: Data) -> dict[str, tuple[Data | str | bytes, str]]:
    """Bad plan file content -> a piece of the message that must name what is wrong."""

    def changed(change: Callable[[Data], None]) -> Data:
        data: Data = json.loads(json.dumps(tiny_plan_dict))
        change(data)
        return data

    replicas_5000 = json.dumps(changed(field("inference", 0, "replicas", value=7))).replace(
        '"replicas": 7', '"replicas": ' + "9" * 5000, 1
    )
    nan = json.dumps(changed(field("objective", value=12.0))).replace("12.0", "NaN", 1)
    return {
        "gpu-index-text": (changed(gpu_index("0")), "assignments[0].gpus.a-1[0]: "),
        "gpu-index-bool": (changed(gpu_index(True)), "assignments[0].gpus.a-1[0]: "),
        "replicas-1e20": (
            changed(field("inference", 0, "replicas", value=1e20)),
            "inference[0].replicas: ",
        ),
        "replicas-5000-digits": (replicas_5000, "inference[0].replicas: "),
        "objective-nan": (nan, "objective: "),
        "binary": (b"\x00\xff\xfe binary", "not UTF-8 text"),
        "utf-16": (json.dumps(tiny_plan_dict).encode("utf-16"), "not UTF-8 text"),
        "deep": ("[" * 50_000 + "]" * 50_000, "nested too deeply"),
    }


BAD = [
    "gpu-index-text",
    "gpu-index-bool",
    "replicas-1e20",
    "replicas-5000-digits",
    "objective-nan",
    "binary",
    "utf-16",
    "deep",
]


def test_every_bad_case_is_run() -> None:
    assert sorted(BAD) == sorted(_bad_plans(tiny_plan_data()))


def _commands(instance: Path, plan: Path, out: Path) -> dict[str, list[str]]:
    return {
        "check": ["check", str(instance), str(plan)],
        "report": ["report", str(instance), str(plan), "-o", str(out / "report.html")],
        "export": ["export", str(plan), "-i", str(instance), "-f", "csv", "-o", str(out / "p.csv")],
    }


@pytest.mark.parametrize("command", ["check", "report", "export"])
@pytest.mark.parametrize("case", BAD)
def test_bad_plan_exits_2_with_the_field_named(
    tmp_path: Path, instance_file: Path, tiny_plan_dict: Data, command: str, case: str
) -> None:
    content, message = _bad_plans(tiny_plan_dict)[case]
    plan = _file(tmp_path, content)
    out = tmp_path / "out"
    result = runner.invoke(app, _commands(instance_file, plan, out)[command])
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # not an uncaught error
    assert "Traceback" not in result.output
    assert any(
        line.startswith("error: ") and message in line for line in result.stderr.splitlines()
    ), result.stderr
    assert not out.exists()  # nothing written


def test_check_of_a_plan_for_another_instance(
    tmp_path: Path, instance_file: Path, tiny_plan_dict: Data
) -> None:
    # 30 jobs of another instance: 30 unknown jobs (rule 1, capped at 20 listed) and the 3 jobs
    # of tiny missing (rule 1 too): 33 violations, 21 of them listed.
    tiny_plan_dict.update(
        instance="elsewhere",
        assignments=[],
        inference=[],
        unscheduled=[{"job": f"other-{i}", "reason": "?"} for i in range(30)],
    )
    result = runner.invoke(app, ["check", str(instance_file), str(_file(tmp_path, tiny_plan_dict))])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (
        "warning: the plan is for instance 'elsewhere', not 'tiny': 30 of its 30 jobs are not "
        "in this instance, 3 of this instance's 3 jobs are missing from it"
    )
    assert "rule 1: ... and 13 more of this rule" in lines
    # rule 6 (chat has no replicas) adds its one violation to the 33 of rule 1
    assert lines[-1] == "INVALID: 34 violation(s)"
    assert len([line for line in lines if line.startswith("rule ")]) == 22


def test_check_prints_the_true_total_when_capped(
    tmp_path: Path, instance_file: Path, tiny_plan_dict: Data
) -> None:
    tiny_plan_dict["unscheduled"] = [{"job": f"ghost{i}", "reason": "?"} for i in range(45)]
    result = runner.invoke(app, ["check", str(instance_file), str(_file(tmp_path, tiny_plan_dict))])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[-2:] == ["rule 1: ... and 25 more of this rule", "INVALID: 45 violation(s)"]
    assert not lines[0].startswith("warning")  # the plan names this instance


def test_check_of_a_valid_plan_is_unchanged(
    tmp_path: Path, instance_file: Path, tiny_plan_dict: Data
) -> None:
    result = runner.invoke(app, ["check", str(instance_file), str(_file(tmp_path, tiny_plan_dict))])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("VALID: 3 jobs assigned, 0 unscheduled")
