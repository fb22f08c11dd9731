"""What a replay's planners believe about run times when they plan on learned ones (`-predict`,
`-expect`, `-pack`): the run times learned from ended runs, the end each running job was planned
to reach, and the instance told to the planners. The engine asks it for the planners' view and
tells it when jobs start, end or are stopped; a policy on limits has none (`for_policy`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping

from horizon_opt.loop.snapshot import Running
from horizon_opt.model.instance import Instance
from horizon_opt.simulate.policy import Policy
from horizon_opt.simulate.runtimes import Predicted, RunTimes, gang_class


class RunTimeBets:
    """Beliefs about running jobs: `believed` (a job planned on a prediction -> its planned
    end), `expected` (`-expect`: a running job -> the end the last plan saw)."""

    def __init__(self, told: Instance, policy: Policy, learned: float) -> None:
        self.policy = policy
        self.runtimes = RunTimes(learned)
        self.predicted = Predicted(told)
        self.believed: dict[int, int] = {}
        self.expected: dict[int, int] = {}
        self.predict: set[int] = set()  # the jobs the last state planned on a prediction

    @classmethod
    def for_policy(cls, told: Instance, policy: Policy) -> RunTimeBets | None:
        learned = policy.predict if policy.expect is None else policy.expect
        return None if learned is None else cls(told, policy, learned)

    def view(
        self,
        running: Mapping[int, Running],
        t: int,
        down_from: Callable[[int, int], int],
        to_predict: Callable[[], set[int]],
    ) -> tuple[Instance, dict[int, Running]]:
        """The instance the planners are told at `t` and the running jobs with the ends they
        see: with `-expect`, every job on its learned run time; else the `to_predict()` jobs."""
        if self.policy.expect is not None:
            seen = {
                j: Running(r.pool, r.start, r.gpus, self.expected_end(j, r, t, down_from))
                for j, r in running.items()
            }
            self.expected = {j: r.end for j, r in seen.items() if r.end is not None}
            told = self.predicted.told(
                self.runtimes,
                seen,
                range(len(self.predicted.instance.jobs)),
                discount=False,
                on_time_by_limit=self.policy.on_time_by_limit,
                by_class=self.policy.risk,
                due_quantile=self.policy.due_quantile,
            )
            return told, seen
        seen = {
            j: Running(r.pool, r.start, r.gpus, self.believed_end(j, t)) for j, r in running.items()
        }
        self.predict = to_predict()
        return self.predicted.told(self.runtimes, seen, self.predict), seen

    def believed_end(self, j: int, t: int) -> int | None:
        """The end a planner sees for running job `j` at `t`: a job planned on a prediction holds
        its GPUs until its planned end; past it, it runs on borrowed time, until the next slot
        as far as planners know (a start or inference that needs its GPUs preempts it)."""
        if j not in self.believed:
            return None  # planned on its limit: its estimate, where Slurm kills it
        return max(self.believed[j], t + 1)

    def expected_end(
        self, j: int, run: Running, t: int, down_from: Callable[[int, int], int]
    ) -> int:
        """The end an `-expect` planner sees for running job `j` at `t`: what the ended runs
        that lasted as long ran in all, at least the next slot, at most its limit or the first
        outage on its nodes (where it would be stopped)."""
        job = self.predicted.instance.jobs[j]
        limit = job.durations[run.pool]
        klass = gang_class(job.gpus) if self.policy.risk else ""
        share = self.runtimes.ratio_after((t - run.start) / limit, klass)
        end = run.start + max(1, math.ceil(share * limit - 1e-9))
        return min(max(end, t + 1), run.start + limit, down_from(j, t))

    def started(self, j: int, planned_end: int) -> None:
        if j in self.predict:  # planned on its prediction: an event if it outlives it
            self.believed[j] = planned_end
        if self.policy.expect is not None:
            self.expected[j] = planned_end

    def ended(self, j: int, ran: int, limit: int, completed: bool) -> None:
        self.believed.pop(j, None)
        gpus = self.predicted.instance.jobs[j].gpus
        self.runtimes.observe(ran, limit, gang_class(gpus), completed)

    def stopped(self, j: int) -> None:
        self.believed.pop(j, None)

    def overrunning(self, j: int, t: int) -> bool:
        return j in self.believed and self.believed[j] <= t

    def event(self, t: int, running: Collection[int]) -> bool:
        """Whether a belief fails at `t`: a job planned on a prediction reaches its planned end,
        or one planned on its expected run time outlives it (the plans after it must move)."""
        return any(end == t for end in self.believed.values()) or any(
            end == t and j in running for j, end in self.expected.items()
        )
