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

from horizon_opt.actions import Actions, Desired, read_desired
from horizon_opt.service.folder import StateFolder

LEDGER = "applied.json"

Run = Callable[[list[str], str], str]  # (argv, what) -> output; raises Exception on failure


@dataclass(frozen=True)
class Applied:
    done: int  # commands that succeeded
    failed: int  # commands that failed (0 or 1: the first failure stops the rest)
    error: str | None


def apply_actions(folder: StateFolder, actions: Actions, run: Run) -> Applied:
    """Run the actions in order, stopping at the first that fails; the ledger records each
    command as it succeeds, and the whole desired state once all have."""
    text = folder.applied()
    ledger: Desired = {} if text is None else dict(read_desired(text, LEDGER))
    done = 0
    for action in actions.actions:
        try:
            run(list(action.argv), f"apply {action.kind} {action.target}")
        except Exception as exc:  # the caller's runner says why; the rest are not run
            return Applied(done, 1, str(exc))
        done += 1
        if action.target in actions.desired:
            ledger[action.target] = actions.desired[action.target]
        else:
            ledger.pop(action.target, None)
        _write(folder, ledger)
    _write(folder, dict(actions.desired))  # the scheduler now holds the whole desired state
    return Applied(done, 0, None)


def _write(folder: StateFolder, ledger: Desired) -> None:
    folder.write(LEDGER, json.dumps(ledger, indent=2, sort_keys=True) + "\n")
