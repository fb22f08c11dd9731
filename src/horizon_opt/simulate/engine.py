"""The closed-loop replay: a policy plans from what it knows, the actual world happens.

Slot by slot over the horizon: jobs that reach their real end leave (a failed job earns nothing,
and the jobs that wait for it are cancelled); the policy decides when it is due (see `Policy`);
inference takes what it really needs, first from the reserved replicas, then from free GPUs,
then by preempting batch jobs on the node of its pool where that stops the least value (they
lose their progress and wait again), and what it still cannot get is SLO shortfall; then the
jobs the plan starts at this slot start, if their GPUs are still free. Planners see only the
jobs released so far, the running jobs as placed, the estimates and the demand forecast, unless
the policy is told more (the oracle ladder). Every run is logged for the audit
(`simulate.audit`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

import numpy as np

from horizon_opt.errors import InstanceError
from horizon_opt.loop.lateness import size_class
from horizon_opt.loop.replan import PROMISE_AHEAD_MINUTES, replan, with_held_promises
from horizon_opt.loop.snapshot import Running, instance_at
from horizon_opt.model.instance import Instance, IntArray, topological_order
from horizon_opt.params import LOOP
from horizon_opt.plans.check import check
from horizon_opt.plans.inference import plan_layout
from horizon_opt.plans.plan import Plan
from horizon_opt.simulate.audit import Audit, told_spec
from horizon_opt.simulate.bets import RunTimeBets
from horizon_opt.simulate.deadline_odds import with_deadline_odds
from horizon_opt.simulate.dispatch import Gpus, PlannedStarts, reseat
from horizon_opt.simulate.live_runs import LiveRun, LiveRuns
from horizon_opt.simulate.planning import open_ended
from horizon_opt.simulate.policy import Policy
from horizon_opt.simulate.predictions import PredictionLog
from horizon_opt.simulate.promise_intervals import PromiseBook
from horizon_opt.simulate.replay_figures import Replay, SlotTotals
from horizon_opt.simulate.serving import Serving
from horizon_opt.simulate.starvation import starved_jobs
from horizon_opt.simulate.stopping import Stopper
from horizon_opt.simulate.window import Window, WindowTally
from horizon_opt.simulate.world import World
from horizon_opt.solvers import SolveOptions, solve
from horizon_opt.solvers.alone import AloneView


def require_empty_cluster(instance: Instance, name: str | None = None) -> None:
    """A replay runs a horizon from its start: an instance with `now` or placed jobs (a state)
    is refused, naming the instance file `name` when given."""
    if instance.now or any(j.placed is not None for j in instance.jobs):
        where = f"{name}: " if name else ""
        raise InstanceError(
            [
                f"{where}simulate replays a horizon from an empty cluster: leave out `now` and "
                "`placed`"
            ]
        )


class _Replayer:
    def __init__(
        self,
        instance: Instance,
        world: World,
        policy: Policy,
        options: SolveOptions,
        on_decision: Callable[[str], None] | None,
        window: Window,
    ) -> None:
        require_empty_cluster(instance)
        self.inst = instance
        self.world = world
        # What the planners are told: the estimates, or the actual run times (`-runtimes`),
        # with an open end (`open_ended`).
        self.told = open_ended(
            instance, told_spec(instance, world) if policy.knows_runtimes else None
        )
        self.planned_slots = 0  # the horizon of the last state planned on
        self.tally = WindowTally(window)
        self.predictions = PredictionLog()
        self.bets = RunTimeBets.for_policy(self.told, policy)  # (None: it plans on limits)
        self.alone = AloneView(instance)
        self.order = topological_order(instance)
        self.policy = policy
        self.options = options
        self.on_decision = on_decision
        self.live = LiveRuns(instance)  # what runs now, and every run for the audit
        self.done: set[int] = set()  # ended successfully
        self.gone: set[int] = set()  # ended: done, failed or cancelled
        self.failed = self.cancelled = self.user_cancelled = 0
        self.serving = Serving(instance, world)  # inference: reserved, ran, served
        self.stopper = Stopper(instance, self.live, self.serving, self.predictions, self.bets)
        self.realized = 0.0
        self.plan: Plan | None = None
        self.decisions = self.replans = 0
        self.moved: list[int] = []
        self.seconds: list[float] = []
        self.planned_pwo: float | None = None
        self.planned = PlannedStarts()  # the plan's starts from now on
        self.book = PromiseBook()  # first starts predicted far enough ahead, and first starts

    # -- the state the planner sees --------------------------------------------------------------

    def known(self, t: int) -> list[int]:
        """Jobs released by `t` (all of them when the policy knows every arrival) that have not
        ended, and whose predecessors are known too; not those that will fail or be cancelled
        when the policy knows the outcomes."""
        out: set[int] = set()
        for j in self.order:
            job = self.inst.jobs[j]
            if j in self.gone or (job.release > t and not self.policy.knows_arrivals):
                continue
            if self.policy.knows_outcomes and job.id in self.world.fails:
                continue  # (the top rung knows it would earn nothing: it is never planned)
            if all(p in out or p in self.done for p in job.after):
                out.add(j)
        return sorted(out)

    def state(self, t: int) -> Instance:
        """The instance the planner sees at `t`: the known jobs (a known job waits only for
        known or done jobs, so leaving the rest out drops just the done ones from `after`), the
        running ones placed where they run."""
        running = {
            j: Running(run.pool, run.start, run.gpus) for j, run in self.live.running.items()
        }
        told = self.told
        if self.bets is not None:
            told, running = self.bets.view(
                running,
                t,
                lambda j, at: self.live.down_from(self.live.running[j], at),
                lambda: self.to_predict(t),
            )
        try:
            state = instance_at(told, t, self.known(t), running, self.planned_slots)
        except InstanceError as exc:  # the replay only builds states that its plans allow
            raise RuntimeError(
                f"internal error: the state at slot {t} does not compile: {exc}"
            ) from exc
        self.planned_slots = state.slots  # (a later state keeps them: this plan must fit it)
        if self.policy.keep_promises:
            waiting = {self.inst.jobs[j].id: s for j, s in self.book.waiting().items()}
            state = with_held_promises(state, waiting, self.policy.keep_promises)
        if self.policy.deadline_odds and self.bets is not None:
            state = with_deadline_odds(state, self.inst, self.bets.runtimes, self.policy.risk)
        return state

    # -- deciding --------------------------------------------------------------------------------

    def decide(self, t: int, due: bool) -> None:
        started = time.perf_counter()
        state = self.state(t)
        full = due or self.plan is None or self.policy.online or self.policy.at_events
        if not full:  # between re-plans: hold every promise, place the rest into the gaps
            assert self.plan is not None
            fill = replan(
                state, self.plan, self.policy.fill, self.options, freeze_slots=state.slots
            )
            new = fill.plan
        elif self.plan is not None and not self.policy.online:
            result = replan(
                state,
                self.plan,
                self.policy.solver,
                self.options,
                freeze_slots=self.policy.freeze,
                stability=self.policy.stability,
            )
            new = result.plan
            if new.churn is not None:
                self.moved.append(new.churn.moved)
        else:
            new = solve(state, self.policy.solver, self.options)
        self.seconds.append(time.perf_counter() - started)
        violations = check(state, new)
        if violations:  # every plan the replay executes is checked, as every plan elsewhere
            raise RuntimeError(
                f"internal error: {new.solver}'s plan at slot {t} is invalid: {violations[0]}"
            )
        self.decisions += 1
        self.replans += full
        if self.planned_pwo is None:
            self.planned_pwo = new.objective
        if self.on_decision is not None:
            self.on_decision(f"slot {t}: {new.solver} pwo {new.objective:,.1f}")
        self.adopt(new, t, state)

    def adopt(self, plan: Plan, t: int, state: Instance) -> None:
        """Take a plan made for `state`: its starts from `t` on and its inference reservation."""
        self.plan = plan
        inst = self.inst
        self.planned = PlannedStarts()
        ahead = -(-PROMISE_AHEAD_MINUTES // inst.slot_minutes)
        for a in plan.assignments:
            j = inst.job_index[a.job]
            if j in self.live.running or a.start < t:
                continue
            gpus = {inst.node_index[n]: tuple(g) for n, g in a.gpus.items()}
            self.planned.add(j, a.start, inst.pool_index[a.pool], gpus, a.end)
            if a.start - t >= ahead:
                self.book.promise(j, t, a.start, size_class(inst.jobs[j].gpus))
        layout = plan_layout(state, plan)
        if layout is None:  # every plan was checked: its blocks are a layout of the instance
            raise RuntimeError(f"internal error: {plan.solver}'s inference blocks are no layout")
        self.serving.adopt(layout)

    # -- the world -------------------------------------------------------------------------------

    def end_jobs(self, t: int) -> bool:
        ended = [j for j, r in self.live.running.items() if r.end == t]
        for j in ended:
            run = self.live.running.pop(j)
            job = self.inst.jobs[j]
            self.gone.add(j)
            self.predictions.ended(j, run.end - run.start)
            if self.bets is not None:
                self.bets.ended(j, run.end - run.start, job.durations[run.pool], not run.fails)
            user = job.id in self.world.cancels
            self.live.record(run, "cancelled" if user else "failed" if run.fails else "completed")
            if run.fails:
                self.failed += 1
                self.user_cancelled += user
                self.cancel_after(j)
            else:
                self.done.add(j)
                if self.inst.windows[j].on_time(run.end):
                    self.realized += job.value
                if job.ends_on_time(run.end):
                    self.tally.completed(job.value, run.start, run.end)
        return bool(ended)

    def cancel_after(self, j: int) -> None:
        for s in self.inst.successors[j]:
            if s not in self.gone:
                self.gone.add(s)
                self.book.cancel(s)
                self.cancelled += 1
                self.cancel_after(s)

    def to_predict(self, t: int) -> set[int]:
        """The waiting jobs a `-predict` policy bets on: those whose limit cannot end in time
        from `t` even alone on the cluster (see `simulate.runtimes`)."""
        return {
            j
            for j in self.known(t)
            if j not in self.live.running
            and self.inst.jobs[j].release <= t
            and not self.alone.can_start(self.inst.jobs[j], t, self.inst.windows[j].latest_end)
        }

    def reclaim_quotas(self, t: int) -> bool:
        """Take back the teams' quotas from running borrowers that keep ready jobs out at `t`;
        returns whether one was stopped."""
        if not self.stopper.quotas:
            return False
        inst = self.inst
        ready = [
            j
            for j in self.known(t)
            if j not in self.live.running
            and inst.jobs[j].release <= t
            and all(p in self.done for p in inst.jobs[j].after)
        ]
        return self.stopper.quotas_back(t, ready)

    def start_jobs(self, t: int) -> bool:
        """Start what the plan starts at `t`; returns whether a start was blocked. A start whose
        GPUs are taken tries other GPUs the plan leaves free, first beside the other starts at
        `t`, then, once those have started or are blocked too, on the GPUs the blocked ones
        were given: a blocked start does not hold its GPUs idle for a slot. Then, when the
        policy starts early, the later starts that fit now (`start_early`)."""
        used, held = self.live.holdings()
        blocked = [j for j in self.planned.at.get(t, []) if not self.start(j, t, used, held, True)]
        some_blocked = not all([self.start(j, t, used, held, False) for j in blocked])
        if self.policy.start_early:
            self.start_early(t, used, held)
        return some_blocked

    def start_early(self, t: int, used: IntArray, held: dict[int, set[int]]) -> None:
        """Start now, in the plan's order, each job it starts later that is ready and fits for
        its planned run on GPUs no other planned start needs over that run (`reseat`): GPUs
        idle now that the plan gives nobody go to a job waiting for them, as a scheduler
        backfills. A job of a team with a limit or quota waits for its slot (moving it could
        break the team's rules)."""
        room_now = self.serving.batch_room[:, t] - used - self.serving.extra
        if (room_now <= 0).all():  # (nothing is idle now: nothing fits)
            return
        for s in sorted(k for k in self.planned.at if k > t):
            for j in self.planned.at[s]:
                job = self.inst.jobs[j]
                if (
                    j in self.gone
                    or j in self.live.running
                    or job.release > t
                    or not all(p in self.done for p in job.after)
                    or self.team_bound(j)
                ):
                    continue
                seat = self.reseat(j, t, used, held, after=t + 1, planned_start=s)
                if seat is not None:
                    self.launch(j, t, *seat, used, held)

    def start(self, j: int, t: int, used: IntArray, held: dict[int, set[int]], first: bool) -> bool:
        """Start planned job `j` at `t` (`used` and `held`, the running jobs' GPUs, take its
        GPUs too) on its planned GPUs or others (`reseat`; beside every other start planned at
        `t` on the `first` try, else only beside those from `t + 1`); returns whether it
        started or needs no start."""
        if j in self.gone or j in self.live.running:
            return True
        job = self.inst.jobs[j]
        pool, gpus = self.planned.seats[j]
        end = self.planned.ends[j]
        if not all(p in self.done for p in job.after):
            return False
        # (the GPUs of the jobs it stopped are free now)
        if first and self.stopper.for_start(gpus, t):
            now_used, now_held = self.live.holdings()
            used[:] = now_used
            held.clear()
            held.update(now_held)
        fits = first and all(
            not held[n] & set(g)
            and used[n] + len(g) + self.serving.reserved[n, t] + self.serving.extra[n]
            <= self.inst.capacity[n, t]
            for n, g in gpus.items()
        )
        if not fits:
            other = self.reseat(j, t, used, held, after=t if first else t + 1)
            if other is None:
                return False
            pool, gpus, end = other  # its GPUs are taken: other GPUs the plan leaves free
        self.launch(j, t, pool, gpus, end, used, held)
        return True

    def launch(
        self,
        j: int,
        t: int,
        pool: int,
        gpus: Gpus,
        end: int,
        used: IntArray,
        held: dict[int, set[int]],
    ) -> None:
        """Job `j` runs from `t` on `gpus` of `pool`, planned to end at `end`."""
        job = self.inst.jobs[j]
        real = self.world.run_slots(job.id, job.durations[pool])
        self.live.running[j] = LiveRun(j, pool, t, t + real, dict(gpus), job.id in self.world.fails)
        self.book.start(j, t)
        self.predictions.started(j, end - t)
        if self.bets is not None:
            self.bets.started(j, end)
        for n, g in gpus.items():
            used[n] += len(g)
            held[n].update(g)

    def reseat(
        self,
        j: int,
        t: int,
        used: IntArray,
        held: dict[int, set[int]],
        after: int,
        planned_start: int | None = None,
    ) -> tuple[int, Gpus, int] | None:
        """(pool, GPUs, planned end) for job `j`, planned to start at `planned_start` (default
        `t`), to start at `t`: GPUs the plan leaves free for its planned run, beside its other
        starts from `after` on, on its planned pool or, failing that, on another of its pools
        for as long a run there (`simulate.dispatch`); None when none is free."""
        made = self.live.running.keys() | self.gone
        others = [o for o in self.planned.others(j, t, made) if o[0] >= after]
        taken, room = used + self.serving.extra, self.serving.batch_room
        for pool, end in self.seats_to_try(j, t, t if planned_start is None else planned_start):
            gang = self.inst.jobs[j].gangs[pool]
            run = (t, end)
            gpus = reseat(self.inst, pool, gang, run, taken, held, room, others)
            if gpus is not None:
                return pool, gpus, end
        return None

    def seats_to_try(self, j: int, t: int, planned_start: int) -> list[tuple[int, int]]:
        """(pool, planned end) of job `j`, planned to start at `planned_start`, started at `t`:
        its planned pool, then (unless a team's limit or quota ties it to a pool) its other
        pools, fastest first, where its planned run, scaled by the pools' limits, still ends on
        time if it did; only pools where a run up to its limit from `t` misses its blackouts."""
        pool, _ = self.planned.seats[j]
        planned = t + self.planned.ends[j] - planned_start
        job, window = self.inst.jobs[j], self.inst.windows[j]
        out = [(pool, planned)]
        if not self.team_bound(j):
            for q in sorted(job.durations, key=lambda q: (job.durations[q], q)):
                end = t + math.ceil((planned - t) * job.durations[q] / job.durations[pool] - 1e-9)
                if q != pool and (window.on_time(end) or not window.on_time(planned)):
                    out.append((q, end))
        return [
            (q, end)
            for q, end in out
            if t in window.allowed(job.durations[q], t, t + job.durations[q])
        ]

    def team_bound(self, j: int) -> bool:
        """Whether job `j`'s team has a limit or a quota: the plan's share of the team ties it
        to its planned pool and slot."""
        team = self.inst.jobs[j].team
        return team is not None and bool(self.inst.teams[team].limit or self.inst.teams[team].quota)

    def run(self) -> Replay:
        inst, policy = self.inst, self.policy
        totals = SlotTotals()
        releases = {j.release for j in inst.jobs}
        event = True
        by_slot: list[float] = []
        for t in range(inst.slots):
            event |= self.end_jobs(t)
            by_slot.append(self.realized)
            event |= t in releases
            event |= self.bets is not None and self.bets.event(t, self.live.running)
            event |= self.stopper.on_outages(t)
            event |= self.reclaim_quotas(t)
            due = policy.due(t)
            if due or (event and not policy.open_loop):
                self.decide(t, due)
            self.stopper.for_inference(t)
            served, wanted, missing, preempted = self.serving.serve(
                t,
                self.live.gpus_used,
                self.stopper.preempt_for_replica,
                self.planned.gpus_at(t, self.live.running.keys() | self.gone, inst.num_nodes),
            )
            blocked = self.start_jobs(t)
            event = preempted or blocked
            used = self.live.gpus_used()
            over = used + self.serving.reserved[:, t] + self.serving.extra > inst.capacity[:, t]
            if over.any():  # the replay's own invariant: never more GPUs than a node has
                n = int(np.flatnonzero(over)[0])
                raise RuntimeError(
                    f"internal error: replay of {policy.name} overfills {inst.node_names[n]} "
                    f"at slot {t}"
                )
            up = float(inst.capacity[:, t].sum())
            totals.add(float(used.sum()), served, up, wanted, missing)
            self.tally.slot(t, float(used.sum()) + served, up)
        self.end_jobs(inst.slots)  # the jobs that end with the horizon
        for run in self.live.running.values():  # a job planned on less than its limit may run on
            job = inst.jobs[run.job]
            if not run.fails and job.ends_on_time(run.end):
                self.tally.completed(job.value, run.start, run.end)  # (it would complete)
            self.live.record(run, "unfinished", end=inst.slots)
        by_slot.append(self.realized)
        return _figures(self, totals, by_slot)


def _figures(r: _Replayer, totals: SlotTotals, by_slot: list[float]) -> Replay:
    """What a finished replay realized, with its audit and the judgements read from it."""
    inst, policy = r.inst, r.policy
    promised, promise_error, p50_error, coverage = r.book.figures(
        inst.slots, inst.hours_per_slot, r.tally.window
    )
    audit = Audit(r.live.log, r.serving.ran_replicas, r.serving.served, r.serving.held)
    told_fails = r.world.fails if policy.knows_outcomes else frozenset()
    starved = {s.job: s.slots for s in starved_jobs(inst, audit, told_fails)}
    run_error, under = r.predictions.figures(inst.hours_per_slot)
    used = totals.batch + totals.serving
    return Replay(
        policy=policy.name,
        planned_pwo=r.planned_pwo if policy.open_loop else None,
        realized_pwo=r.realized,
        realized_utilization=used / totals.available if totals.available else 0.0,
        completed=len(r.done),
        failed=r.failed,
        cancelled=r.cancelled,
        cancelled_by_user=r.user_cancelled,
        reclaims=sum(r.stopper.reclaimed.values()),
        reclaimed_by_team={inst.teams[k].name: n for k, n in r.stopper.reclaimed.items()},
        preemptions=r.live.preemptions,
        lost_gpu_hours=r.live.lost,
        slo_short_replica_hours=totals.short * inst.hours_per_slot,
        slo_short_share=totals.short / totals.demand if totals.demand else 0.0,
        decisions=r.decisions,
        replans=r.replans,
        mean_moved=float(np.mean(r.moved)) if r.moved else 0.0,
        solver_seconds=float(sum(r.seconds)),
        max_solver_seconds=max(r.seconds, default=0.0),
        realized_by_slot=by_slot,
        promised=promised,
        promise_error_hours=promise_error,
        promise_p50_error_hours=p50_error,
        promise_p90_coverage=coverage,
        audit=audit,
        window_start=r.tally.window.start,
        window_end=r.tally.window.end,
        window_pwo=r.tally.pwo,
        window_utilization=r.tally.utilization,
        starved=len(starved),
        starved_jobs=starved,
        runtime_error_hours=run_error,
        runtime_under_share=under,
    )


def replay(
    instance: Instance,
    world: World,
    policy: Policy,
    options: SolveOptions | None = None,
    on_decision: Callable[[str], None] | None = None,
    window: Window | None = None,
) -> Replay:
    """Replay `policy` on `instance` in `world`, from an empty cluster at slot 0 (without
    `options`, plans search with `params.LOOP`), counting `window` apart (default: the middle
    half, `simulate.window`). With one worker every plan is repeatable
    (`SolveOptions.repeatable`): a rerun makes the same decisions under any load, so two
    policies differ by what they decide, not by the machine."""
    options = options or SolveOptions(params=LOOP)
    if options.workers == 1:
        options = replace(options, repeatable=True)
    window = window or Window.middle(instance.slots)
    return _Replayer(instance, world, policy, options, on_decision, window).run()


def simulate(
    instance: Instance,
    policies: Sequence[Policy],
    world: World,
    options: SolveOptions | None = None,
    on_decision: Callable[[str, str], None] | None = None,
    window: Window | None = None,
) -> list[Replay]:
    """Replay every policy in the same world (`on_decision(policy, line)` after each plan)."""
    out = []
    for p in policies:
        report = None if on_decision is None else partial(on_decision, p.name)
        out.append(replay(instance, world, p, options, report, window))
    return out
