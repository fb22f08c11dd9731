"""Where the commands write: every output is checked before any work, nothing is clobbered.

Each refusal exits 2 with a message naming the option, prints no traceback, does no work (the
solvers are replaced by ones that fail the test) and leaves every file as it was.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from horizon_opt.cli import app
from horizon_opt.cli.outputs import Output, check_outputs
from horizon_opt.errors import InputError
from horizon_opt.io import write_atomic
from horizon_opt.plans.plan import Plan

runner = CliRunner()

Data = dict[str, Any]
Snapshot = dict[Path, tuple[bytes, int] | None]


@pytest.fixture
def instance_file(tmp_path: Path, tiny_spec: Data) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(tiny_spec, sort_keys=False))
    return path


@pytest.fixture
def plan_file(tmp_path: Path, tiny_plan_dict: Data) -> Path:
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(tiny_plan_dict))
    return path


@pytest.fixture
def no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """A refusal must come before any solve, comparison or bench run."""

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("work started before the outputs were checked")

    monkeypatch.setattr("horizon_opt.cli.plan.solve", fail)  # where the commands look them up
    monkeypatch.setattr("horizon_opt.cli.plan.compare_plans", fail)
    monkeypatch.setattr("horizon_opt.bench.run_suite", fail)
    monkeypatch.setattr("horizon_opt.generate.generate_file", fail)


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A folder no file can be created in, also for root (immutable when mode bits do not stop
    root). Holds one file, `old.json`."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    (folder / "old.json").write_text("{}")
    folder.chmod(0o555)
    chattr = shutil.which("chattr")
    immutable = False
    if os.access(folder, os.W_OK):
        immutable = chattr is not None and subprocess.run([chattr, "+i", folder]).returncode == 0
        if not immutable:
            folder.chmod(0o755)
            pytest.skip("cannot make a read-only folder here")
    yield folder
    if immutable:
        subprocess.run([chattr or "chattr", "-i", folder], check=True)
    folder.chmod(0o755)


def snapshot(root: Path) -> Snapshot:
    """Every entry under `root` with its bytes and mtime (None for folders, FIFOs, links)."""
    out: Snapshot = {}
    for path in sorted(root.rglob("*")):
        mode = path.lstat().st_mode
        out[path] = (path.read_bytes(), path.stat().st_mtime_ns) if stat.S_ISREG(mode) else None
    return out


def assert_refused(result: Result, option: str, *words: str) -> None:
    """Exit 2, no traceback, and a message on stderr that names the option (and `words`)."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert option in result.stderr, result.stderr
    for word in words:
        assert word in result.stderr, result.stderr


def solve(instance: Path, *args: str) -> Result:
    return runner.invoke(app, ["solve", str(instance), "--solver", "fifo", *args])


# 1. Output locations are checked before any work starts.


def test_solve_output_in_read_only_folder(
    instance_file: Path, read_only_dir: Path, no_work: None, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", str(read_only_dir / "plan.json"))
    assert_refused(result, "--output: cannot write", "is not writable")
    assert snapshot(tmp_path) == before


def test_solve_output_replacing_a_file_in_read_only_folder(
    instance_file: Path, read_only_dir: Path, no_work: None, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", str(read_only_dir / "old.json"))
    assert_refused(result, "--output", "is not writable")
    assert snapshot(tmp_path) == before


def test_solve_output_is_a_folder(instance_file: Path, no_work: None, tmp_path: Path) -> None:
    (tmp_path / "plans").mkdir()
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", str(tmp_path / "plans"))
    assert_refused(result, "--output", "is a folder")
    assert snapshot(tmp_path) == before


def test_solve_output_under_a_regular_file(
    instance_file: Path, no_work: None, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", str(tmp_path / "notes.txt" / "sub" / "plan.json"))
    assert_refused(result, "--output", "notes.txt' is not a folder")
    assert snapshot(tmp_path) == before


def test_solve_output_empty_name(instance_file: Path, no_work: None, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", "")
    assert_refused(result, "--output", "empty file name")
    assert snapshot(tmp_path) == before


def test_compare_output_dir_read_only(
    instance_file: Path, read_only_dir: Path, no_work: None, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(
        app,
        ["compare", str(instance_file), "--solvers", "fifo", "--output-dir", str(read_only_dir)],
    )
    assert_refused(result, "--output-dir", "is not writable")
    assert snapshot(tmp_path) == before


def test_compare_output_dir_is_a_file(instance_file: Path, no_work: None, tmp_path: Path) -> None:
    (tmp_path / "plans").write_text("not a folder")
    before = snapshot(tmp_path)
    result = runner.invoke(
        app,
        [
            "compare",
            str(instance_file),
            "--solvers",
            "fifo",
            "--output-dir",
            str(tmp_path / "plans"),
        ],
    )
    assert_refused(result, "--output-dir", "is not a folder")
    assert snapshot(tmp_path) == before


def test_compare_output_dir_holds_a_folder_named_like_its_report(
    instance_file: Path, no_work: None, tmp_path: Path
) -> None:
    (tmp_path / "out" / "report.html").mkdir(parents=True)
    before = snapshot(tmp_path)
    result = runner.invoke(
        app,
        ["compare", str(instance_file), "--solvers", "fifo", "--output-dir", str(tmp_path / "out")],
    )
    assert_refused(result, "--output-dir", "report.html' is a folder")
    assert snapshot(tmp_path) == before


def test_export_output_in_read_only_folder(
    instance_file: Path, plan_file: Path, read_only_dir: Path, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(
        app,
        [
            "export",
            str(plan_file),
            "-i",
            str(instance_file),
            "-f",
            "gantt",
            "-o",
            str(read_only_dir / "g.png"),
        ],
    )
    assert_refused(result, "--output", "is not writable")
    assert snapshot(tmp_path) == before


def test_report_output_under_a_regular_file(
    instance_file: Path, plan_file: Path, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(
        app, ["report", str(instance_file), str(plan_file), "-o", str(plan_file / "report.html")]
    )
    assert_refused(result, "--output", "hand.json' is not a folder")
    assert snapshot(tmp_path) == before


def test_generate_output_is_a_folder(no_work: None, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["generate", "enterprise", "-o", str(tmp_path)])
    assert_refused(result, "--output", "is a folder")
    assert snapshot(tmp_path) == before


def test_solve_write_failing_after_the_solve_exits_2(
    instance_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The checks passed, then the disk filled up: a message, not a traceback.
    def full(self: Plan, path: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Plan, "write", full)
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", str(tmp_path / "plan.json"))
    assert_refused(result, "--output", "No space left on device")
    assert snapshot(tmp_path) == before


# 2. An output never replaces an input.


def test_solve_output_is_the_instance(instance_file: Path, no_work: None, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    (tmp_path / "sub").mkdir()
    same = tmp_path / "sub" / ".." / instance_file.name  # another spelling of the same file
    result = solve(instance_file, "-o", str(same))
    assert_refused(result, "--output", "is the instance file; refusing to overwrite an input")
    assert {p: v for p, v in snapshot(tmp_path).items() if p.name != "sub"} == before


def test_solve_output_is_a_link_to_the_instance(
    instance_file: Path, no_work: None, tmp_path: Path
) -> None:
    (tmp_path / "link.yaml").symlink_to(instance_file)
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", str(tmp_path / "link.yaml"))
    assert_refused(result, "--output", "is the instance file")
    assert snapshot(tmp_path) == before


def test_solve_output_is_the_hint(
    instance_file: Path, plan_file: Path, no_work: None, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    result = solve(instance_file, "--hint", str(plan_file), "-o", str(plan_file))
    assert_refused(result, "--output", "is the --hint plan")
    assert snapshot(tmp_path) == before


def test_compare_output_dir_holds_the_hint(
    instance_file: Path, tiny_plan_dict: Data, no_work: None, tmp_path: Path
) -> None:
    hint = tmp_path / "out" / "greedy.json"
    hint.parent.mkdir()
    hint.write_text(json.dumps(tiny_plan_dict))
    before = snapshot(tmp_path)
    result = runner.invoke(
        app,
        [
            "compare",
            str(instance_file),
            "--solvers",
            "fifo,greedy",
            "--hint",
            str(hint),
            "--output-dir",
            str(hint.parent),
        ],
    )
    assert_refused(result, "--output-dir", "greedy.json' is the --hint plan")
    assert snapshot(tmp_path) == before


def test_export_output_is_the_plan(
    instance_file: Path, tiny_plan_dict: Data, tmp_path: Path
) -> None:
    plan = tmp_path / "plan.csv"  # a plan file is JSON whatever its name
    plan.write_text(json.dumps(tiny_plan_dict))
    before = snapshot(tmp_path)
    result = runner.invoke(
        app, ["export", str(plan), "-i", str(instance_file), "-f", "csv", "-o", str(plan)]
    )
    assert_refused(result, "--output", "is the plan file (PLAN)")
    assert snapshot(tmp_path) == before


def test_export_inference_table_would_replace_the_plan(
    instance_file: Path, tiny_plan_dict: Data, tmp_path: Path
) -> None:
    plan = tmp_path / "x-inference.csv"
    plan.write_text(json.dumps(tiny_plan_dict))
    before = snapshot(tmp_path)
    result = runner.invoke(
        app,
        ["export", str(plan), "-i", str(instance_file), "-f", "csv", "-o", str(tmp_path / "x.csv")],
    )
    assert_refused(result, "--output", "x-inference.csv' is the plan file (PLAN)")
    assert snapshot(tmp_path) == before


def test_report_output_is_a_plan(instance_file: Path, plan_file: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(
        app, ["report", str(instance_file), str(plan_file), "-o", str(plan_file)]
    )
    assert_refused(result, "--output", "is a plan file (PLAN)")
    assert snapshot(tmp_path) == before


def test_log_is_the_instance(instance_file: Path, no_work: None, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = solve(instance_file, "--log", str(instance_file), "-o", str(tmp_path / "p.json"))
    assert_refused(result, "--log", "is the instance file")
    assert snapshot(tmp_path) == before


def test_log_and_output_are_the_same_file(
    instance_file: Path, no_work: None, tmp_path: Path
) -> None:
    out = tmp_path / "p.json"
    result = solve(instance_file, "--log", str(out), "-o", str(out))
    assert_refused(result, "--log", "is also written by --output")
    assert not out.exists()


# 3. An output never replaces a device, a FIFO or a folder by a regular file.


def test_solve_output_is_a_fifo(instance_file: Path, no_work: None, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", str(fifo))
    assert_refused(result, "--output", "is not a regular file")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    assert snapshot(tmp_path) == before


def test_output_naming_a_device_is_refused() -> None:
    # Only the check: a test must never risk replacing a real device.
    with pytest.raises(InputError, match=r"--output: '/dev/zero' is not a regular file"):
        check_outputs([Output("--output", Path("/dev/zero"))])
    check_outputs([Output("--log", Path("/dev/zero"), kind="stream")])  # a log may stream there


def test_solve_output_dev_null_discards_the_plan(instance_file: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", os.devnull)
    assert result.exit_code == 0, result.output
    assert f"plan written to {os.devnull}" in result.stdout
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    assert snapshot(tmp_path) == before


# 4. `-o -` is standard output for solve and for export --format csv.


def test_solve_output_dash_writes_the_plan_to_stdout(
    instance_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    result = solve(instance_file, "-o", "-")
    assert result.exit_code == 0, result.output
    plan = Plan.parse(json.loads(result.stdout))
    assert (plan.solver, plan.instance) == ("fifo", "tiny")
    assert "fifo on tiny: heuristic" in result.stderr
    assert "plan written to standard output" in result.stderr
    assert snapshot(tmp_path) == before  # no file named '-'


def test_export_csv_output_dash_writes_assignments_to_stdout(
    instance_file: Path, plan_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    before = snapshot(tmp_path)
    args = ["export", str(plan_file), "-i", str(instance_file), "-f", "csv", "-o"]
    result = runner.invoke(app, [*args, "-"])
    assert result.exit_code == 0, result.output
    assert "wrote 3 assignments to standard output" in result.stderr
    assert "inference table" in result.stderr
    assert snapshot(tmp_path) == before  # no '-' and no '--inference.csv'

    files = runner.invoke(app, [*args, str(tmp_path / "out" / "plan.csv")])
    assert files.exit_code == 0, files.output
    assert result.stdout_bytes == (tmp_path / "out" / "plan.csv").read_bytes()
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert [r[0] for r in rows] == ["job", "train", "quant", "ev"]


def test_export_chart_output_dash_is_refused(
    instance_file: Path, plan_file: Path, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(
        app, ["export", str(plan_file), "-i", str(instance_file), "-f", "gantt", "-o", "-"]
    )
    assert_refused(result, "--output", "gantt needs a file name ending in .png or .svg")
    assert snapshot(tmp_path) == before


def test_generate_output_dash_is_refused(
    no_work: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["generate", "enterprise", "-o", "-"])
    assert_refused(result, "--output", "standard output) is not supported here")
    assert list(tmp_path.iterdir()) == []


# 5. bench --out.


@pytest.fixture
def suite_file(tmp_path: Path, tiny_spec: Data) -> Path:
    (tmp_path / "inst").mkdir()
    (tmp_path / "inst" / "tiny.yaml").write_text(yaml.safe_dump(tiny_spec))
    suite = {"name": "one", "solvers": ["fifo"], "instances": ["inst/tiny.yaml"]}
    path = tmp_path / "suite.yaml"
    path.write_text(yaml.safe_dump(suite))
    return path


def test_bench_out_read_only_folder(
    suite_file: Path, read_only_dir: Path, no_work: None, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["bench", str(suite_file), "--out", str(read_only_dir)])
    assert_refused(result, "--out", "is not writable")
    assert snapshot(tmp_path) == before


def test_bench_out_is_a_file(suite_file: Path, no_work: None, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["bench", str(suite_file), "--out", str(suite_file)])
    assert_refused(result, "--out", "suite.yaml' is not a folder")
    assert snapshot(tmp_path) == before


# 6. --log and seeds.


def test_log_is_a_folder(instance_file: Path, no_work: None, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = solve(instance_file, "--log", str(tmp_path), "-o", str(tmp_path / "p.json"))
    assert_refused(result, "--log", "is a folder")
    assert snapshot(tmp_path) == before


def test_log_in_read_only_folder(
    instance_file: Path, read_only_dir: Path, no_work: None, tmp_path: Path
) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(
        app,
        [
            "compare",
            str(instance_file),
            "--solvers",
            "fifo",
            "--log",
            str(read_only_dir / "s.log"),
            "--output-dir",
            str(tmp_path / "out"),
        ],
    )
    assert_refused(result, "--log", "is not writable")
    assert snapshot(tmp_path) == before


def test_log_in_missing_folder(instance_file: Path, no_work: None, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    log = tmp_path / "nowhere" / "s.log"
    result = solve(instance_file, "--log", str(log), "-o", str(tmp_path / "p.json"))
    assert_refused(result, "--log", "no folder")
    assert snapshot(tmp_path) == before


def test_generate_negative_seed(no_work: None, tmp_path: Path) -> None:
    result = runner.invoke(
        app, ["generate", "enterprise", "--seed", "-1", "-o", str(tmp_path / "x.yaml")]
    )
    assert_refused(result, "--seed")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("seed", ["-1", str(2**31), "one"])
def test_solve_invalid_seed(instance_file: Path, no_work: None, tmp_path: Path, seed: str) -> None:
    before = snapshot(tmp_path)
    result = solve(instance_file, "--seed", seed, "-o", str(tmp_path / "p.json"))
    assert_refused(result, "--seed")
    assert snapshot(tmp_path) == before


# 7. write_atomic refuses what is not a regular file and leaves no temp file behind.


def test_write_atomic_refuses_a_fifo_and_a_folder(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "dir").mkdir()
    with pytest.raises(FileExistsError, match="not a regular file"):
        write_atomic(tmp_path / "pipe", "x")
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path / "dir", "x")
    assert stat.S_ISFIFO((tmp_path / "pipe").lstat().st_mode)
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["dir", "pipe"]


def test_write_atomic_dev_null_and_links(tmp_path: Path) -> None:
    write_atomic(os.devnull, "gone")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)
    (tmp_path / "real.json").write_text("old")
    (tmp_path / "link.json").symlink_to("real.json")
    write_atomic(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink()
    assert (tmp_path / "real.json").read_text() == "new"


def test_write_atomic_leaves_no_temp_file_when_fsync_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "out.txt").write_text("old")

    def fail(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fail)
    with pytest.raises(OSError, match="Input/output error"):
        write_atomic(tmp_path / "out.txt", "new")
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
    assert (tmp_path / "out.txt").read_text() == "old"


def test_write_atomic_leaves_no_temp_file_on_bad_text(tmp_path: Path) -> None:
    with pytest.raises(UnicodeEncodeError):
        write_atomic(tmp_path / "out.txt", "\udcff")  # a lone surrogate cannot be encoded
    assert list(tmp_path.iterdir()) == []


# 8. validate, and the same warnings before a solve.


def with_idle_services(tmp_path: Path, spec: Data, count: int) -> Path:
    """The instance plus `count` services that never need a replica: one warning each."""
    spec["services"] += [
        {"name": f"idle{i}", "pool": "b", "gpus_per_replica": 1, "demand": [0, 0, 0, 0]}
        for i in range(count)
    ]
    path = tmp_path / "idle.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def idle_warning(i: int) -> str:
    return (
        f"warning: services[{i + 1}].demand: zero at every slot: the service never needs a replica"
    )


def test_validate_clean_instance(instance_file: Path, tmp_path: Path) -> None:
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["validate", str(instance_file), "--strict"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "OK: 3 jobs, 3 nodes, 4 slots; 0 warnings\n"
    assert snapshot(tmp_path) == before


def test_validate_warnings_exit_0_or_1_with_strict(tmp_path: Path, tiny_spec: Data) -> None:
    path = with_idle_services(tmp_path, tiny_spec, 2)
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        idle_warning(0),
        idle_warning(1),
        "OK: 3 jobs, 3 nodes, 4 slots; 2 warnings",
    ]
    strict = runner.invoke(app, ["validate", str(path), "--strict"])
    assert strict.exit_code == 1
    assert strict.stdout.splitlines()[-1] == (
        "FAILED (--strict): 3 jobs, 3 nodes, 4 slots; 2 warnings"
    )
    assert snapshot(tmp_path) == before


def test_validate_bad_instance_exits_2(tmp_path: Path, tiny_spec: Data) -> None:
    tiny_spec["jobs"][0]["gpus"] = "many"
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(tiny_spec))
    before = snapshot(tmp_path)
    result = runner.invoke(app, ["validate", str(path), "--strict"])
    assert_refused(result, "jobs[0].gpus")
    assert result.stdout == ""
    assert snapshot(tmp_path) == before


def test_solve_prints_at_most_ten_warnings(tmp_path: Path, tiny_spec: Data) -> None:
    path = with_idle_services(tmp_path, tiny_spec, 13)
    result = solve(path, "-o", str(tmp_path / "p.json"))
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [idle_warning(i) for i in range(10)]
    assert f"... and 3 more warnings (horizon-opt validate {path} lists them all)" in result.stderr
    assert "warning" not in result.stdout


def test_compare_prints_the_warnings(tmp_path: Path, tiny_spec: Data) -> None:
    path = with_idle_services(tmp_path, tiny_spec, 1)
    result = runner.invoke(
        app,
        [
            "compare",
            str(path),
            "--solvers",
            "fifo",
            "--no-report",
            "--output-dir",
            str(tmp_path / "out"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [idle_warning(0)]


# The two classes found last: an output that is an input through the instance's own reference,
# and a numeric option that is not a finite number.


@pytest.mark.parametrize(
    "command",
    [
        ["solve", "{instance}", "--solver", "fifo", "-o", "{csv}"],
        ["explain", "{instance}", "{plan}", "--format", "csv", "-o", "{csv}"],
    ],
)
def test_an_output_is_never_the_demand_csv_the_instance_reads(
    command: list[str], tmp_path: Path, tiny_spec: Data, plan_file: Path, no_work: None
) -> None:
    spec = dict(tiny_spec)
    slots = spec["horizon"]["slots"]
    spec["services"] = [
        {**spec["services"][0], "demand": {"csv": "demand.csv", "column": "replicas"}}
    ]
    (tmp_path / "demand.csv").write_text("replicas\n" + "1\n" * slots)
    instance = tmp_path / "tiny.yaml"
    instance.write_text(yaml.safe_dump(spec, sort_keys=False))
    before = snapshot(tmp_path)
    names = {"instance": instance, "csv": tmp_path / "demand.csv", "plan": plan_file}
    result = runner.invoke(app, [a.format(**names) for a in command])
    assert_refused(result, "--output", "demand CSV", "refusing to overwrite an input")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e999"])
@pytest.mark.parametrize("command", [["solve"], ["compare"], ["simulate", "-o", "sim"]])
def test_a_time_limit_that_is_not_a_finite_number_exits_2(
    value: str, command: list[str], instance_file: Path, no_work: None, tmp_path: Path
) -> None:
    args = [command[0], str(instance_file), *command[1:], "--time-limit", value]
    if command[0] == "solve":
        args += ["-o", str(tmp_path / "p.json")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "--time-limit" in result.stderr
