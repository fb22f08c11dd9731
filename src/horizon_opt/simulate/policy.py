"""Policies a replay compares: a solver, and when it plans.

- online (the solvers whose registry entry says `online`: fifo and the backfills): plans at every
  event (a job ends, arrives, is preempted or cannot start), as a Slurm scheduler reacts;
- periodic (`greedy`, `cpsat`): a full re-plan every `every` slots, holding the previous plan's
  starts within `freeze` slots; at events in between, a fill that holds every promised start
  and places the jobs left over (new arrivals, early ends) into the gaps, with `fill`
  (backfill);
- open loop (`<solver>-open`): one plan at slot 0 that knows every job of the horizon (the
  planner's perfect-knowledge number), executed without re-planning.

The oracle ladder: the same solver, planning when it would (online or periodic), told more of
the future than it could know: `<solver>-runtimes` each job's actual run time instead of its
estimate, `<solver>-arrivals` every job of the horizon before its release, `<solver>-oracle`
both and the outcomes (which jobs fail or are cancelled: it never plans them), the top rung. The
rungs measure what foresight is worth; none is told the actual demand.

A re-planning policy may carry its own cadence: `cpsat@30m/0` re-plans every 30 minutes and holds
no promised start (`@EVERY/FREEZE`, durations), whatever `--replan-every` and `--freeze` say.
`cpsat@event` re-plans at every event instead, as the online policies decide, each plan started
from the one before it (`@event/FREEZE` holds the promised starts within FREEZE).

Between its plans, a re-planning policy that plans on learned run times (`-expect`, `-pack`,
`-risk`) starts early: a job its plan starts later starts now when it fits, for its planned
run, on GPUs no other planned start needs over that run, as Slurm's backfill starts a job early
that delays no reservation (`start_early`). Plans on limits go without (measured, it cost them
pwo), and so do online policies, which plan at every event themselves.

`<solver>-predict` is told nothing more: it bets on the jobs whose limits cannot end in time, on
run times learned from the runs that have ended so far (`simulate.runtimes`).

`<solver>-expect` is told nothing more either: it plans every job on the run time learned from
the runs ended so far, a running job on what the runs that lasted as long ran in all, as
backfill with system-generated predictions does. A limit stays where a job is killed; a job
that outlives its prediction keeps running and is predicted again, and the starts planned on
its GPUs wait for it.

`<solver>-risk` plans as `-expect` does, learning run times per gang class (single GPU or a
gang, `runtimes.gang_class`) and counting each job's value times the share of its class's
ended runs that completed: in real clusters gangs fail far more often than single-GPU jobs,
and a start that fails earns nothing.

By default the re-plans of `-expect` and `-risk` value a job with a deadline by its chance of
ending in time (`deadline_odds`) and hold what they promised at `LEARNED_KEEP_PROMISES` times a
job's value (`keep_promises`): planning on a median run time, a plan otherwise slides a
deadline job to the last start the median allows, and its promises with it.

`<solver>-pack` plans as `-expect` does, but counts a job on time only when its limit would end
in time (its due slot moved earlier by what its limit adds to its prediction): packing on
learned run times without betting on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from horizon_opt.errors import InputError
from horizon_opt.model.instance import duration_minutes
from horizon_opt.simulate.runtimes import DEFAULT_QUANTILE
from horizon_opt.solvers import SOLVERS

# the weight of a held promise in `-expect` and `-risk` re-plans unless told otherwise
LEARNED_KEEP_PROMISES = 0.5

SUFFIXES = (
    "-open",
    "-runtimes",
    "-arrivals",
    "-oracle",
    "-predict",
    "-expect",
    "-pack",
    "-risk",
)


@dataclass(frozen=True)
class Policy:
    name: str
    solver: str
    every: int | None  # slots between full re-plans (periodic); None: online or open loop
    freeze: int = 0  # slots of the previous plan's starts that a re-plan holds
    open_loop: bool = False
    fill: str = "backfill"  # the solver that fills gaps between re-plans, holding every start
    stability: float = 0.0  # the re-plans' stability weight (see `replan`)
    # a start first predicted PROMISE_AHEAD_MINUTES ahead, as a `by` promise in every later plan
    # worth this times its job's value (`replan.with_held_promises`); 0: promises are not held
    keep_promises: float = 0.0
    knows_runtimes: bool = False  # planners see each job's actual run time, not its estimate
    knows_arrivals: bool = False  # planners see every job of the horizon before its release
    knows_outcomes: bool = False  # planners never see the jobs that will fail or be cancelled
    predict: float | None = None  # bet on this quantile of the run times seen so far
    expect: float | None = None  # plan every job on this quantile of the run times seen so far
    # (`-pack`) ...but count a job on time only when its limit would end in time: no bets
    on_time_by_limit: bool = False
    # (`-expect`) ...but count a job with a deadline on time only when this quantile of the run
    # times seen so far ends by it; None: when its learned run time does
    due_quantile: float | None = None
    # (`-risk`) ...learning run times and completions per gang class, each job's value times
    # its class's share of completed runs
    risk: bool = False
    # (`-expect`, `-risk`) ...each job with a deadline worth its chance of ending in time, read
    # off the ended runs (`simulate.deadline_odds`)
    deadline_odds: bool = False
    at_events: bool = False  # a full re-plan at every event (`@event`), none on a timer
    # jobs the plan starts later start now when they fit on GPUs no other planned start needs
    # over their planned run (`engine._Replayer.start_early`): on for re-planning policies that
    # plan on learned run times
    start_early: bool = False

    @property
    def online(self) -> bool:
        return self.every is None and not self.open_loop and not self.at_events

    def due(self, t: int) -> bool:
        """Whether a full plan is due at slot `t` (online policies plan at events instead)."""
        if self.open_loop:
            return t == 0
        return self.every is not None and t % self.every == 0


def policy(
    name: str,
    every: int,
    freeze: int,
    stability: float = 0.0,
    quantile: float = DEFAULT_QUANTILE,
    slot_minutes: int | None = None,
    keep_promises: float | None = None,
    deadline_odds: bool = True,
    start_early: bool | None = None,
) -> Policy:
    """The policy called `name`: a solver, optionally with a suffix of `SUFFIXES`, then
    optionally `@EVERY/FREEZE` (durations such as `30m/0m`, `2h/1h`): the policy's own cadence
    and freeze instead of `every` and `freeze` (slots). `slot_minutes` converts that cadence
    (None: it is only checked). `stability` and `keep_promises` apply to the re-plans of
    re-planning policies (`keep_promises` None: `LEARNED_KEEP_PROMISES` for `-expect` and
    `-risk`, none for the others), `quantile` to `-predict` and `-expect`, `deadline_odds` to
    the re-plans of `-expect` and `-risk` (`simulate.deadline_odds`), `start_early` to
    re-planning policies (None: those that plan on learned run times)."""
    base, at, cadence = name.partition("@")
    at_events = cadence.split("/")[0].strip() == "event"
    if at:
        every, freeze = _cadence(name, cadence, slot_minutes or 1)
    suffix = next((s for s in SUFFIXES if base.endswith(s)), "")
    solver = base.removesuffix(suffix) if suffix else base
    if solver not in SOLVERS or (at and (SOLVERS[solver].online or suffix == "-open")):
        raise InputError(
            [
                f"--policy: unknown policy {name!r}; use a solver ({', '.join(SOLVERS)}), "
                "optionally with -open (one plan knowing every arrival, executed as planned), "
                "-runtimes (told the actual run times), -arrivals (told every arrival), "
                "-oracle (both), -predict (bets on the jobs limits leave out, on run times "
                "learned from the runs ended so far), -expect (plans every job on those run "
                "times), -pack (as -expect, a job on time only if its limit is) or -risk (as "
                "-expect, learned per gang size, each job's value times the share of its gang "
                "size's runs that completed), then, for a "
                "re-planning solver, "
                "@EVERY/FREEZE (e.g. cpsat@30m/0m)"
            ]
        )
    if suffix == "-open":
        return Policy(name, solver, None, open_loop=True, knows_arrivals=True)
    online = SOLVERS[solver].online
    on_time_by_learned = suffix in ("-expect", "-risk")  # (-pack counts a job by its limit)
    if keep_promises is None:
        keep_promises = LEARNED_KEEP_PROMISES if on_time_by_learned else 0.0
    return Policy(
        name,
        solver,
        None if online or at_events else every,
        0 if online else freeze,
        stability=0.0 if online else stability,
        keep_promises=0.0 if online else keep_promises,
        knows_runtimes=suffix in ("-runtimes", "-oracle"),
        knows_arrivals=suffix in ("-arrivals", "-oracle"),
        knows_outcomes=suffix == "-oracle",
        predict=quantile if suffix == "-predict" else None,
        expect=quantile if suffix in ("-expect", "-pack", "-risk") else None,
        on_time_by_limit=suffix == "-pack",
        risk=suffix == "-risk",
        deadline_odds=deadline_odds and not online and on_time_by_learned,
        at_events=at_events,
        start_early=not online
        and (suffix in ("-expect", "-pack", "-risk") if start_early is None else start_early),
    )


def learning_settings(chosen: Sequence[Policy], keep_promises: float | None) -> str:
    """What a replay's heading says of held promises and deadline odds among `chosen` (made
    with `keep_promises`): empty when no re-plan holds a promise or reads the odds."""
    if not any(p.keep_promises for p in chosen):
        held = ""
    elif keep_promises is None:
        held = f", promises held at {LEARNED_KEEP_PROMISES:g} in -expect and -risk re-plans"
    else:
        held = f", promises held at {keep_promises:g}"
    return held + (", deadline odds" if any(p.deadline_odds for p in chosen) else "")


def _cadence(name: str, text: str, slot_minutes: int) -> tuple[int, int]:
    """(every, freeze) in slots from `EVERY/FREEZE` (`event[/FREEZE]`: every slot, at most, and
    no freeze unless given); a re-plan comes at least every slot."""
    parts = text.split("/")
    if parts[0].strip() == "event":
        parts = ["0", parts[1] if len(parts) == 2 else "0", *parts[2:]]
    minutes = [0.0 if p.strip() == "0" else duration_minutes(p.strip()) for p in parts]
    if len(parts) != 2 or any(m is None or m < 0 for m in minutes):
        raise InputError(
            [
                f"--policy: {name!r}: after @ give EVERY/FREEZE as durations, e.g. "
                f"cpsat@30m/0m, or event[/FREEZE], got {text!r}"
            ]
        )
    every, freeze = (math.ceil((m or 0) / slot_minutes - 1e-9) for m in minutes)
    return max(1, every), freeze
