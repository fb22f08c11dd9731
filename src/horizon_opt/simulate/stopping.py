"""What stops a running job in a replay before its end: an outage on its nodes, inference that
needs its GPUs, a planned start or a reservation that needs GPUs it holds on borrowed time (past
the end its plan bet on), and a team taking its quota back. A stopped job loses its progress
and waits again."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from horizon_opt.model.instance import Instance
from horizon_opt.simulate.bets import RunTimeBets
from horizon_opt.simulate.live_runs import LiveRuns
from horizon_opt.simulate.predictions import PredictionLog
from horizon_opt.simulate.quota_reclaim import Holding, reclaim_victims
from horizon_opt.simulate.serving import Serving
from horizon_opt.solvers.reclaim import quotas_bind


class Stopper:
    """Stops the replay's running jobs (`live`), telling the run-time log and the bets; counts
    per team the runs preempted for quota (`reclaimed`)."""

    def __init__(
        self,
        instance: Instance,
        live: LiveRuns,
        serving: Serving,
        predictions: PredictionLog,
        bets: RunTimeBets | None,
    ) -> None:
        self.inst = instance
        self.live = live
        self.serving = serving
        self.predictions = predictions
        self.bets = bets
        self.reclaimed: dict[int, int] = defaultdict(int)  # team -> its runs preempted for quota
        self.quotas = quotas_bind(instance)  # without a quota, nothing is reclaimed

    def overrunning(self, j: int, t: int) -> bool:
        """Whether running job `j` is past the end its plan bet on (on borrowed time)."""
        return self.bets is not None and self.bets.overrunning(j, t)

    def stop(self, j: int, t: int) -> None:
        """Preempt running job `j` at `t`: it loses its progress and waits again."""
        self.live.preempt(j, t)
        self.predictions.stopped(j)
        if self.bets is not None:
            self.bets.stopped(j)

    def on_outages(self, t: int) -> bool:
        """Stop the runs on a node that is down at `t` (only a run that outlived the end its plan
        believed can be there); returns whether one was stopped."""
        stopped = [j for j, r in self.live.running.items() if self.live.down_from(r, t) == t]
        for j in stopped:
            self.stop(j, t)
        return bool(stopped)

    def preempt_for_replica(self, pool: int, t: int, gpus: int, room: dict[int, int]) -> bool:
        """Stop batch work so that one replica of `gpus` GPUs fits on a node of `pool` (`room`:
        what each node has for it already), as Kubernetes' scheduler preempts for a pod: on
        the node whose victims are worth least (the most valuable victim, then their sum, then
        how many), victims on borrowed time first, then the lowest-value ones, latest start
        first among equals. Returns whether any was stopped; none is when no node can fit it."""
        best: tuple[tuple[bool, float, float, int], list[int]] | None = None
        for n, has in room.items():
            victims = self._victims_on(n, t, gpus - has)
            if victims:
                values = [self.inst.jobs[k].value for k in victims]
                on_time = not all(self.overrunning(k, t) for k in victims)
                cost = (on_time, max(values), sum(values), len(victims))
                if best is None or cost < best[0]:
                    best = (cost, victims)
        if best is None:
            return False
        for k in best[1]:
            self.stop(k, t)
        return True

    def _victims_on(self, n: int, t: int, short: int) -> list[int]:
        """The running jobs on node `n` to stop, in preemption order, until `short` more GPUs
        are free there; none when even all of them would not free that many."""
        if short <= 0:
            return []
        on_node = sorted(
            (k for k, r in self.live.running.items() if n in r.gpus),
            key=lambda k: (
                not self.overrunning(k, t),
                self.inst.jobs[k].value,
                -self.live.running[k].start,
                k,
            ),
        )
        victims: list[int] = []
        for k in on_node:
            victims.append(k)
            short -= len(self.live.running[k].gpus[n])
            if short <= 0:
                return victims
        return []

    def quotas_back(self, t: int, ready: Sequence[int]) -> bool:
        """Preempt the running borrowers that keep `ready` jobs out of their teams' quotas at `t`
        (`simulate.quota_reclaim`); returns whether one was stopped."""
        inst = self.inst
        spare = np.maximum(
            inst.capacity[:, t] - self.live.gpus_used() - self.serving.reserved[:, t], 0
        )
        free = np.bincount(inst.node_pool, weights=spare, minlength=len(inst.pools))
        held = {j: Holding(r.pool, r.start) for j, r in self.live.running.items()}
        victims = reclaim_victims(inst, held, list(ready), free.astype(np.int64), t)
        for j in victims:
            self.stop(j, t)
            team = inst.jobs[j].team
            assert team is not None  # a borrower is a team's job
            self.reclaimed[team] += 1
        return bool(victims)

    def for_start(self, gpus: dict[int, tuple[int, ...]], t: int) -> bool:
        """Preempt the jobs on borrowed time that hold any of `gpus` (a planned start needs
        them); returns whether one was stopped."""
        takers = [
            k
            for k, r in self.live.running.items()
            if self.overrunning(k, t)
            and any(set(r.gpus.get(n, ())) & set(g) for n, g in gpus.items())
        ]
        for k in takers:
            self.stop(k, t)
        return bool(takers)

    def for_inference(self, t: int) -> None:
        """Preempt jobs on borrowed time on the nodes where the plan's inference reservation at
        `t` needs their GPUs."""
        used = self.live.gpus_used()
        for n in np.flatnonzero(
            used + self.serving.reserved[:, t] > self.inst.capacity[:, t]
        ).tolist():
            for k in [k for k, r in self.live.running.items() if n in r.gpus]:
                over = (
                    self.live.gpus_used()[n] + self.serving.reserved[n, t]
                    > self.inst.capacity[n, t]
                )
                if over and self.overrunning(k, t):
                    self.stop(k, t)
