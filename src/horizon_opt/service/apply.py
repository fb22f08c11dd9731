"""Running a cycle's commands, one by one, with the ledger written after each.

`applied.json` in the state folder is the ledger: target -> the properties the scheduler holds
for it as far as this tool knows (the desired state of `horizon_opt.actions`). It is rewritten
(atomically) after every command that succeeds, so a run killed between two commands, or a
command whose answer was lost, leaves a ledger that says what did run; the next cycle starts
from it, and, on Slurm, from the reservations read back, which overrule it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from horizon_opt.actions import Action, Actions, Desired, read_desired
from horizon_opt.service.folder import StateFolder

LEDGER = "applied.json"

Run = Callable[[list[str], str], str]  # (argv, what) -> output; raises Exception on failure
Guard = Callable[[Action], str | None]  # why not to run an action now (None: run it)


@dataclass(frozen=True)
class Applied:
    done: int  # commands that succeeded
    failed: int  # commands that failed (0 or 1: the first failure stops the rest)
    error: str | None
    skipped: tuple[str, ...] = ()  # what the guard held back, and why


def apply_actions(
    folder: StateFolder, actions: Actions, run: Run, guard: Guard | None = None
) -> Applied:
    """Run the actions in order, stopping at the first that fails; the ledger records each
    command as it succeeds, and the whole desired state once all have. An action `guard`
    gives a reason against is not run, and its target keeps what the ledger had."""
    text = folder.applied()
    ledger: Desired = {} if text is None else dict(read_desired(text, LEDGER))
    old = dict(ledger)
    done = 0
    skipped: list[str] = []
    for action in actions.actions:
        why = None if guard is None else guard(action)
        if why is not None:
            skipped.append(f"{action.kind} {action.target} not run: {why}")
            continue
        try:
            run(list(action.argv), f"apply {action.kind} {action.target}")
        except Exception as exc:  # the caller's runner says why; the rest are not run
            return Applied(done, 1, str(exc), tuple(skipped))
        done += 1
        if action.target in actions.desired:
            ledger[action.target] = actions.desired[action.target]
        else:
            ledger.pop(action.target, None)
        _write(folder, ledger)
    final = dict(actions.desired)  # the scheduler now holds the whole desired state
    for action in actions.actions:  # but what was held back
        if any(line.startswith(f"{action.kind} {action.target} ") for line in skipped):
            final.pop(action.target, None)
            if action.target in old:
                final[action.target] = old[action.target]
    _write(folder, final)
    return Applied(done, 0, None, tuple(skipped))


def _write(folder: StateFolder, ledger: Desired) -> None:
    folder.write(LEDGER, json.dumps(ledger, indent=2, sort_keys=True) + "\n")
