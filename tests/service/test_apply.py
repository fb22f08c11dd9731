"""Applying a cycle's commands (service/apply.py): the ledger is written after every command,
and an action the guard holds back is not run and keeps its old ledger entry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from horizon_opt.actions import Action, Actions
from horizon_opt.service.apply import apply_actions
from horizon_opt.service.folder import StateFolder

OLD = {"reservation/r0": {"nodes": "a"}, "reservation/r1": {"nodes": "b"}}
DESIRED = {"reservation/r2": {"nodes": "c"}, "reservation/r3": {"nodes": "d"}}
ACTIONS = Actions(
    DESIRED,
    (
        Action("release", "reservation/r0", ("scontrol", "update", "r0", "EndTime=now"), "why"),
        Action("delete", "reservation/r1", ("scontrol", "delete", "r1"), "why"),
        Action("create", "reservation/r2", ("scontrol", "create", "r2"), "why"),
        Action("create", "reservation/r3", ("scontrol", "create", "r3"), "why"),
    ),
    "slurm",
)


def _folder(tmp_path: Path) -> StateFolder:
    folder = StateFolder(tmp_path)
    folder.write("applied.json", json.dumps(OLD))
    return folder


def _ledger(folder: StateFolder) -> dict[str, dict[str, str]]:
    return json.loads(folder.applied() or "{}")


def test_the_ledger_is_written_after_every_command(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    seen = []

    def run(argv: list[str], what: str) -> str:
        seen.append(sorted(_ledger(folder)))
        if argv[2] == "r3":
            raise RuntimeError("killed")  # as a run killed here would leave it
        return ""

    done = apply_actions(folder, ACTIONS, run)
    assert (done.done, done.failed) == (3, 1)
    assert seen == [
        ["reservation/r0", "reservation/r1"],
        ["reservation/r1"],
        [],
        ["reservation/r2"],
    ]
    assert _ledger(folder) == {"reservation/r2": {"nodes": "c"}}


def test_an_action_the_guard_holds_back_keeps_its_target(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    ran = []

    def run(argv: list[str], what: str) -> str:
        ran.append(argv[2])
        return ""

    def guard(action: Action) -> str | None:
        return "jobs run in it (42)" if action.kind == "release" else None

    done = apply_actions(folder, ACTIONS, run, guard)
    assert ran == ["r1", "r2", "r3"] and done.failed == 0
    assert done.skipped == ("release reservation/r0 not run: jobs run in it (42)",)
    assert _ledger(folder) == {**DESIRED, "reservation/r0": {"nodes": "a"}}


@pytest.mark.parametrize("jobs", [[], [{"id": 7, "state": "RUNNING", "resv": "r0"}]])
def test_the_fake_answers_which_jobs_run_in_a_reservation(
    tmp_path: Path,
    jobs: list[dict[str, object]],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from fake import slurm as fake

    world = tmp_path / "world.json"
    world.write_text(json.dumps({"jobs": jobs}))
    monkeypatch.setenv("FAKE_SLURM_STATE", str(world))
    fake.main(["squeue", "-h", "-t", "RUNNING,CONFIGURING", "--reservation=r0", "-o", "%i"])
    assert capsys.readouterr().out.split() == [str(j["id"]) for j in jobs]
