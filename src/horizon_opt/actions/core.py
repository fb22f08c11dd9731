"""What every scheduler's actions share: the `Action`, the desired state it moves a cluster to,
the diff that turns two desired states into actions, and the script and JSON they are shown as.

A re-planning service calls `slurm_actions` or `kueue_actions` once per cycle with the desired
state it applied the cycle before; only targets whose desired properties changed get an action,
so a plan that keeps its promises costs the scheduler nothing. Nothing here runs a command: the
script and the JSON are for a person or a service to review and apply.
"""

from __future__ import annotations

import json
import shlex
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from horizon_opt.errors import InputError
from horizon_opt.model.instance import Instance, Job
from horizon_opt.plans.plan import Assignment, Plan

__all__ = [
    "ACTIONS_FORMAT",
    "Action",
    "Actions",
    "Desired",
    "Render",
    "changes",
    "parse_desired",
    "read_desired",
]

ACTIONS_FORMAT = "horizon-opt.actions/1"

Desired = dict[str, dict[str, str]]
"""Target (`reservation/<name>`, `job/<id>`, ...) -> its properties, all strings: JSON as is."""

Render = Callable[[str, str, Mapping[str, str] | None, Mapping[str, str] | None], list["Action"]]
"""(op, target, before, after) -> the commands for one changed target; op is `create` (before is
None), `update` or `delete` (after is None). It may return nothing (a target that ended by itself)
or several commands."""


@dataclass(frozen=True)
class Action:
    """One command for the scheduler: `argv` is run as is (no shell), `why` says it to a person."""

    kind: str  # create | update | delete | release | hold | activate | clear | quota
    target: str
    argv: tuple[str, ...]
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "target": self.target, "argv": list(self.argv), "why": self.why}


@dataclass(frozen=True)
class Actions:
    """The commands of one cycle, in the order to run them, and the desired state they reach
    (store it and pass it back as `applied` next cycle, once the commands have run)."""

    desired: Desired
    actions: tuple[Action, ...]
    scheduler: str = ""
    notes: tuple[str, ...] = ()

    def by_kind(self) -> dict[str, int]:
        """How many actions of each kind, in kind order (for summaries and metrics)."""
        return dict(sorted(Counter(a.kind for a in self.actions).items()))

    def to_script(self, applying: bool = False) -> str:
        """A POSIX shell script: one command a line, each after a comment saying why; `set -eu`
        stops at the first command that fails, so a later one never runs on a state it assumed.
        `applying`: the cycle applies them itself (`run --apply`), and the header says so."""
        said = (
            "Applied by this cycle, command by command: what ran is in applied.json."
            if applying
            else "Generated for review: nothing has been applied."
        )
        lines = [
            "#!/bin/sh",
            f"# horizon-opt: {len(self.actions)} {self.scheduler} command(s) that make the "
            "scheduler follow the plan,",
            f"# only for what changed since the last applied state. {said}",
        ]
        lines += [f"# note: {_one_line(n)}" for n in self.notes]
        lines += ["set -eu", ""]
        for action in self.actions:
            lines.append(f"# {_one_line(action.why)}")
            lines.append(shlex.join(action.argv))
        return "\n".join(lines) + "\n"

    def to_json(self) -> str:
        """Machine-readable: keys sorted, actions in run order, the desired state with them."""
        data = {
            "format": ACTIONS_FORMAT,
            "scheduler": self.scheduler,
            "actions": [a.to_dict() for a in self.actions],
            "desired": self.desired,
            "notes": list(self.notes),
        }
        return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str, where: str = "actions") -> Actions:
        """Read back what `to_json` wrote; InputError naming the field when it is malformed."""
        data = _load(text, where)
        if not isinstance(data, dict) or data.get("format") != ACTIONS_FORMAT:
            raise InputError([f"{where}: not a {ACTIONS_FORMAT} document"])
        raw = data.get("actions")
        if not isinstance(raw, list):
            raise InputError([f"{where}: actions: expected a list"])
        actions = tuple(_action(item, f"{where}: actions[{i}]") for i, item in enumerate(raw))
        notes = data.get("notes", [])
        scheduler = data.get("scheduler", "")
        if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
            raise InputError([f"{where}: notes: expected a list of strings"])
        if not isinstance(scheduler, str):
            raise InputError([f"{where}: scheduler: expected a string"])
        desired = parse_desired(data.get("desired"), f"{where}: desired")
        return cls(desired, actions, scheduler, tuple(notes))


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _load(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError([f"{where}: not valid JSON: {exc}"]) from None


def _action(item: Any, where: str) -> Action:
    if not isinstance(item, dict) or set(item) != {"kind", "target", "argv", "why"}:
        raise InputError([f"{where}: expected an object with kind, target, argv and why"])
    argv = item["argv"]
    texts = (item["kind"], item["target"], item["why"])
    if not all(isinstance(t, str) for t in texts):
        raise InputError([f"{where}: kind, target and why must be strings"])
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise InputError([f"{where}: argv: expected a non-empty list of strings"])
    return Action(item["kind"], item["target"], tuple(argv), item["why"])


def parse_desired(data: Any, where: str = "desired state") -> Desired:
    """A desired state from parsed JSON (or a mapping a caller kept): target -> {key: text}."""
    if not isinstance(data, Mapping):
        raise InputError([f"{where}: expected an object of targets, got {type(data).__name__}"])
    problems = []
    out: Desired = {}
    for target, props in data.items():
        if not isinstance(target, str) or not target:
            problems.append(f"{where}: a target must be a non-empty string, got {target!r}")
        elif not isinstance(props, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in props.items()
        ):
            problems.append(f"{where}.{target}: expected an object of string properties")
        else:
            out[target] = dict(props)
    if problems:
        raise InputError(problems)
    return out


def read_desired(text: str, where: str = "desired state") -> Desired:
    """The desired state stored after the last applied cycle, from the text of its file: an
    actions JSON document (its `desired`) or the bare mapping. InputError naming `where` (the
    file) and the field when it is malformed."""
    data = _load(text, where)
    if isinstance(data, dict) and data.get("format") == ACTIONS_FORMAT:
        return Actions.from_json(text, where).desired
    return parse_desired(data, where)


def changes(before: Desired | None, after: Desired, render: Render) -> list[Action]:
    """The actions from `before` to `after`: deletes first (they free what creates may need),
    then creates and updates, each group by target; unchanged targets give nothing."""
    old = before or {}
    out: list[Action] = []
    for target in sorted(old.keys() - after.keys()):
        out += render("delete", target, old[target], None)
    for target in sorted(after):
        if target not in old:
            out += render("create", target, None, after[target])
        elif dict(old[target]) != dict(after[target]):
            out += render("update", target, old[target], after[target])
    return out


# ---- what both schedulers read from the instance and the plan


def wall_clock(instance: Instance) -> datetime:
    """The time of `now`; actions speak to a scheduler in times, not slots."""
    when = instance.slot_time(instance.now)
    if when is None:
        raise InputError(
            [
                "actions need horizon.start (the wall-clock time of slot 0): a scheduler takes "
                "times, not slot numbers"
            ]
        )
    return when


def is_running(instance: Instance, job: Job) -> bool:
    """Placed and started before `now`: the scheduler already runs it, so it is never touched."""
    return job.placed is not None and job.placed.start < instance.now


def check_plan(instance: Instance, plan: Plan) -> dict[str, Assignment]:
    """The plan's assignments by job, after checking that the plan speaks of this instance."""
    problems = []
    if plan.instance != instance.name:
        problems.append(f"plan.instance: {plan.instance!r} is not the instance {instance.name!r}")
    services = {s.name for s in instance.services}
    for i, block in enumerate(plan.inference):
        if block.service not in services:
            problems.append(f"plan.inference[{i}].service: unknown service {block.service!r}")
        if block.node not in instance.node_index:
            problems.append(f"plan.inference[{i}].node: unknown node {block.node!r}")
    for i, a in enumerate(plan.assignments):
        if a.job not in instance.job_index:
            problems.append(f"plan.assignments[{i}].job: unknown job {a.job!r}")
        problems += [
            f"plan.assignments[{i}].gpus: unknown node {n!r}"
            for n in a.gpus
            if n not in instance.node_index
        ]
    if problems:
        raise InputError(problems)
    return {a.job: a for a in plan.assignments}


def checked_applied(applied: Mapping[str, Mapping[str, str]] | None) -> Desired | None:
    """`applied` as a Desired, checked like a file: a caller may pass what it read itself."""
    return None if applied is None else parse_desired(applied, "applied")
