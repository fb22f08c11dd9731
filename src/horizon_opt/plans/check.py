"""The independent plan checker: FORMAT.md's nine validity rules, written from the rules alone.

It reads only the compiled instance data (durations, release, blackouts, now, placed jobs,
nodes up, req) and the plan file.
It deliberately shares no placement or reservation code with the solvers, so that a bug there
cannot hide itself here.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from horizon_opt.errors import InputError
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan

MAX_PER_RULE = 20  # one broken plan can break a rule at thousands of (node, slot) pairs
_CAP = 2**40  # above any node's GPUs or any demand; counts capped there cannot wrap int64 sums


@dataclass(frozen=True)
class Violation:
    rule: int
    message: str

    def __str__(self) -> str:
        return f"rule {self.rule}: {self.message}"


class Violations(list[Violation]):
    """What `check` lists (at most MAX_PER_RULE per rule, then "... and N more"), plus what the
    list cannot say: `total`, every violation found, and `other_instance`, one line when the plan
    names another instance (which explains a flood of rule 1 violations), else None.

    A list, so that code written when `check` returned a plain list keeps working.
    """

    def __init__(self, listed: Iterable[Violation], total: int, other_instance: str | None) -> None:
        super().__init__(listed)
        self.total = total
        self.other_instance = other_instance


def _slots(mask: np.ndarray) -> str:
    idx = np.flatnonzero(mask)
    if len(idx) == 1:
        return f"slot {idx[0]}"
    return f"slots {idx[0]}..{idx[-1]} ({len(idx)} slots)"


def expected_holding(gpus: int, gpus_per_node: int) -> tuple[int, int]:
    """(nodes, GPUs held on each) for a gang under FORMAT.md's placement rule, derived here from
    the rule alone: the solvers read the compiled `Job.gangs`, and a test checks both agree."""
    if gpus <= gpus_per_node:
        return 1, gpus
    return gpus // gpus_per_node, gpus_per_node


class _Checker:
    def __init__(self, instance: Instance, plan: Plan) -> None:
        self.inst = instance
        self.plan = plan
        self.out: list[Violation] = []
        self.count: dict[int, int] = defaultdict(int)

    def report(self, rule: int, message: str) -> None:
        self.count[rule] += 1
        if self.count[rule] <= MAX_PER_RULE:
            self.out.append(Violation(rule, message))

    def run(self) -> list[Violation]:
        valid = self.rule1_each_job_once()
        self.rule2_runs(valid)
        self.rule3_dependencies(valid)
        held = self.rule4_gpu_indices(valid)
        self.rule5_node_capacity(held)
        self.rule6_inference()
        self.rule7_placed(valid)
        self.rule8_team_limits(valid)
        self.rule9_quotas(valid)
        for rule, n in sorted(self.count.items()):
            if n > MAX_PER_RULE:
                self.out.append(Violation(rule, f"... and {n - MAX_PER_RULE} more of this rule"))
        return self.out

    def rule1_each_job_once(self) -> dict[str, int]:
        """Returns job id -> assignment index for the jobs assigned exactly once."""
        seen: dict[str, int] = defaultdict(int)
        for a in self.plan.assignments:
            seen[a.job] += 1
        for u in self.plan.unscheduled:
            seen[u.job] += 1
        for job_id, n in seen.items():
            if job_id not in self.inst.job_index:
                self.report(1, f"job {job_id!r} is not in the instance")
            elif n > 1:
                self.report(1, f"job {job_id!r} appears {n} times")
        for job in self.inst.jobs:
            if job.id not in seen:
                self.report(1, f"job {job.id!r} is neither assigned nor unscheduled")
        return {
            a.job: i
            for i, a in enumerate(self.plan.assignments)
            if seen[a.job] == 1 and a.job in self.inst.job_index
        }

    def rule2_runs(self, assigned: dict[str, int]) -> None:
        S = self.inst.slots
        for job_id, i in assigned.items():
            a = self.plan.assignments[i]
            job = self.inst.jobs[self.inst.job_index[job_id]]
            pool_idx = self.inst.pool_index.get(a.pool)
            if job.placed is not None and pool_idx != job.placed.pool:
                continue  # rule 7 says it left its placed pool; its duration elsewhere is unknown
            if pool_idx is None or pool_idx not in job.durations:
                self.report(2, f"job {job_id!r}: pool {a.pool!r} is not allowed for it")
                continue
            pool = self.inst.pools[pool_idx]
            d = job.durations[pool_idx]
            # A placed job's compiled release is its placed start, which rule 7 checks exactly.
            # A free job may not start in the past, whatever its compiled release says; a
            # negative start is reported on its own below.
            if job.placed is None and 0 <= a.start < self.inst.now:
                self.report(
                    2, f"job {job_id!r}: starts at {a.start}, before now (slot {self.inst.now})"
                )
            elif job.placed is None and a.start < job.release:
                self.report(
                    2, f"job {job_id!r}: starts at {a.start}, before its release {job.release}"
                )
            if a.start < 0:
                self.report(2, f"job {job_id!r}: starts at negative slot {a.start}")
            for lo, hi in job.blackouts if job.placed is None else ():
                if a.start < hi and lo < a.start + d:
                    self.report(
                        2,
                        f"job {job_id!r}: runs [{a.start}, {a.start + d}) through its blackout "
                        f"[{lo}, {hi})",
                    )
            if a.end != a.start + d:
                self.report(
                    2, f"job {job_id!r}: end {a.end} != start {a.start} + duration {d} on {a.pool}"
                )
            if a.end > S:
                self.report(2, f"job {job_id!r}: ends at {a.end}, after the horizon ({S} slots)")
            G = pool.gpus_per_node
            for node, idx in a.gpus.items():
                n = self.inst.node_index.get(node)
                if n is None or int(self.inst.node_pool[n]) != pool.index:
                    self.report(
                        2, f"job {job_id!r}: node {node!r} is not a node of pool {pool.name!r}"
                    )
                if len(set(idx)) != len(idx) or any(not 0 <= g < G for g in idx):
                    self.report(
                        2,
                        f"job {job_id!r}: GPU indices {idx} on {node} are not distinct indices in 0..{G - 1}",
                    )
            nodes, per_node = expected_holding(job.gpus, G)
            if nodes == 1:
                sizes = [len(set(v)) for v in a.gpus.values()]
                if len(a.gpus) != 1 or sizes != [per_node]:
                    self.report(
                        2,
                        f"job {job_id!r}: a gang of {job.gpus} on pool {pool.name} must hold exactly {job.gpus} GPUs of one node, holds {dict(a.gpus)}",
                    )
            else:
                whole = all(sorted(set(v)) == list(range(G)) for v in a.gpus.values())
                if len(a.gpus) != nodes or not whole:
                    self.report(
                        2,
                        f"job {job_id!r}: a gang of {job.gpus} on pool {pool.name} must hold {nodes} whole nodes of {G} GPUs",
                    )

    def rule3_dependencies(self, assigned: dict[str, int]) -> None:
        for job_id, i in assigned.items():
            a = self.plan.assignments[i]
            job = self.inst.jobs[self.inst.job_index[job_id]]
            for p in job.after:
                pred = self.inst.jobs[p].id
                if pred not in assigned:
                    self.report(3, f"job {job_id!r} runs after {pred!r}, which is not assigned")
                    continue
                pred_end = self.plan.assignments[assigned[pred]].end
                if pred_end > a.start:
                    self.report(
                        3, f"job {job_id!r} starts at {a.start}, before {pred!r} ends at {pred_end}"
                    )

    def rule4_gpu_indices(self, assigned: dict[str, int]) -> np.ndarray:
        """Returns jobs' GPUs held per [node, slot] (for rule 5).

        A GPU's runs are compared as intervals (sorted by start, each against the latest end
        before it), never as a [GPU, slot] grid: a 1,024-GPU node over a long horizon would need
        gigabytes.
        """
        inst = self.inst
        S = inst.slots
        held = np.zeros((inst.num_nodes, S + 1), dtype=np.int64)  # a difference array
        runs: list[tuple[np.ndarray, int, int, int, int]] = []  # (GPUs, node, lo, hi, holder)
        for job_id, i in assigned.items():
            a = self.plan.assignments[i]
            lo, hi = max(a.start, 0), min(a.end, S)
            for node, idx in a.gpus.items():
                n = inst.node_index.get(node)
                if n is None or hi <= lo:
                    continue
                G = int(inst.node_gpus[n])
                valid = np.array(sorted(g for g in set(idx) if 0 <= g < G), dtype=np.int64)
                runs.append((valid, n, lo, hi, i))
                held[n, lo] += len(valid)
                held[n, hi] -= len(valid)
                down = ~inst.up[n, lo:hi]
                if down.any():
                    self.report(
                        4,
                        f"job {job_id!r} holds GPUs of {node} while it is down ({_slots(np.r_[np.zeros(lo, bool), down])})",
                    )
        if runs:
            self.shared_gpus(runs)
        out: np.ndarray = np.cumsum(held, axis=1)[:, :S]
        return out

    def shared_gpus(self, runs: list[tuple[np.ndarray, int, int, int, int]]) -> None:
        """Rule 4's other half: no GPU held by two jobs at once."""
        inst, S = self.inst, self.inst.slots
        sizes = [len(r[0]) for r in runs]
        gpu = np.concatenate([r[0] for r in runs])
        node, lo, hi, holder = (np.repeat([r[k] for r in runs], sizes) for k in (1, 2, 3, 4))
        G = int(inst.node_gpus.max(initial=1)) + 1
        group = node * G + gpu  # one id per (node, GPU)
        order = np.lexsort((lo, group))
        group, lo, hi, holder = group[order], lo[order], hi[order], holder[order]
        # Within a group, runs sorted by start overlap when one starts before the latest end so
        # far; offsetting by the group keeps the running maximum from crossing groups.
        base = group * (S + 2)
        latest = np.maximum.accumulate(base + hi)
        clash = np.r_[False, base[1:] + lo[1:] < latest[:-1]]
        for g_id in dict.fromkeys(group[clash].tolist()):
            mine = group == g_id
            count = np.zeros(S + 1, dtype=np.int64)
            np.add.at(count, lo[mine], 1)
            np.add.at(count, hi[mine], -1)
            busy = np.cumsum(count)[:S] > 1
            holders = [
                self.plan.assignments[int(k)].job
                for k, a, b in zip(holder[mine], lo[mine], hi[mine], strict=True)
                if busy[a:b].any()
            ]
            n, g = divmod(int(g_id), G)
            self.report(
                4,
                f"GPU {g} of {inst.node_names[n]} is held by several jobs at {_slots(busy)}: {', '.join(holders)}",
            )

    def rule5_node_capacity(self, held: np.ndarray) -> None:
        """Capacity is every physical GPU of a node that is up, computed here: `inst.capacity` of
        a residual instance leaves out GPUs of placed jobs, which this plan holds itself."""
        inst = self.inst
        S = inst.slots
        capacity = inst.node_gpus[:, None] * inst.up
        used = held.copy()
        for b in self.plan.inference:
            n = inst.node_index.get(b.node)
            svc = next((s for s in inst.services if s.name == b.service), None)
            if svc is None:
                self.report(6, f"inference block for unknown service {b.service!r}")
                continue
            if n is None or int(inst.node_pool[n]) != svc.pool:
                self.report(
                    6,
                    f"service {b.service!r}: node {b.node!r} is not in its pool {inst.pools[svc.pool].name!r}",
                )
                continue
            if not 0 <= b.start < b.end <= S or b.replicas < 0:
                self.report(
                    6,
                    f"service {b.service!r} on {b.node}: bad block [{b.start}, {b.end}) x {b.replicas}",
                )
                continue
            row = used[n, b.start : b.end]
            row += min(b.replicas * svc.gpus_per_replica, _CAP)
            np.minimum(row, _CAP, out=row)
        over = used > capacity
        for node in np.flatnonzero(over.any(axis=1)):
            n = int(node)
            t = int(np.flatnonzero(over[n])[0])
            state = "up" if inst.up[n, t] else "down"
            self.report(
                5,
                f"{inst.node_names[n]} uses more GPUs than it has at {_slots(over[n])} (slot {t}: {used[n, t]} used, {capacity[n, t]} available, node {state})",
            )

    def rule6_inference(self) -> None:
        inst = self.inst
        totals = {s.name: np.zeros(inst.slots, dtype=np.int64) for s in inst.services}
        for b in self.plan.inference:
            n = inst.node_index.get(b.node)
            svc = next((s for s in inst.services if s.name == b.service), None)
            if svc is None or n is None or int(inst.node_pool[n]) != svc.pool:
                continue  # reported in rule 5's pass over the blocks
            if 0 <= b.start < b.end <= inst.slots and b.replicas >= 0:
                row = totals[b.service][b.start : b.end]
                row += min(b.replicas, _CAP)
                np.minimum(row, _CAP, out=row)
        for s in inst.services:
            short = totals[s.name] < s.req
            if short.any():
                t = int(np.flatnonzero(short)[0])
                self.report(
                    6,
                    f"service {s.name!r} has fewer replicas than required at {_slots(short)} (slot {t}: {totals[s.name][t]} < {s.req[t]})",
                )

    def rule7_placed(self, assigned: dict[str, int]) -> None:
        """A running job cannot be moved, and a reservation is a promise: both keep their pool,
        slots and nodes. Only a reservation may take other GPU indices of its nodes, since it
        holds none yet."""
        inst = self.inst
        left_out = Counter(u.job for u in self.plan.unscheduled)
        in_assignments = {a.job for a in self.plan.assignments}
        for job in inst.jobs:
            p = job.placed
            if p is None:
                continue
            started = p.start < inst.now
            what = f"job {job.id!r} " + (
                f"is placed (running since slot {p.start})"
                if started
                else f"holds a reserved start at slot {p.start}"
            )
            if job.id not in assigned:
                if left_out[job.id] == 1 and job.id not in in_assignments:
                    self.report(7, f"{what} but the plan leaves it unscheduled")
                continue  # missing or listed twice: rule 1 says so
            a = self.plan.assignments[assigned[job.id]]
            pool = inst.pools[p.pool].name
            if a.pool != pool:
                self.report(
                    7,
                    f"{what} but the plan runs it on pool {a.pool!r}, not its placed pool {pool!r}",
                )
            if (a.start, a.end) != (p.start, p.end):
                self.report(
                    7,
                    f"{what} but the plan runs it in slots [{a.start}, {a.end}), not its placed slots [{p.start}, {p.end})",
                )
            if a.pool != pool:
                continue  # then its nodes differ too: the pool says it all
            want = {inst.node_names[n]: idx for n, idx in p.gpus.items()}
            if set(a.gpus) != set(want):
                self.report(
                    7,
                    f"{what} but the plan puts it on nodes {', '.join(a.gpus)}, not its placed nodes {', '.join(want)}",
                )
            if not started:
                continue
            for node, idx in a.gpus.items():
                if node in want and set(idx) != set(want[node]):
                    self.report(
                        7,
                        f"{what} but the plan gives it GPUs {list(idx)} of {node}, not the GPUs {list(want[node])} it runs on",
                    )

    def rule8_team_limits(self, assigned: dict[str, int]) -> None:
        """A team's jobs hold at most its limit on a pool at every slot, or what its placed jobs
        alone hold there, when that is more (a limit lowered under running work)."""
        inst = self.inst
        S = inst.slots
        limited = {(t.index, p): cap for t in inst.teams for p, cap in t.limit.items()}
        if not limited:
            return
        used = {key: np.zeros(S, dtype=np.int64) for key in limited}
        placed = {key: np.zeros(S, dtype=np.int64) for key in limited}
        for job_id, i in assigned.items():
            a = self.plan.assignments[i]
            job = inst.jobs[inst.job_index[job_id]]
            pool = inst.pool_index.get(a.pool)
            if job.team is not None and pool is not None and (job.team, pool) in used:
                used[job.team, pool][max(a.start, 0) : min(a.end, S)] += job.gpus
        for job in inst.jobs:
            p = job.placed
            if p is not None and job.team is not None and (job.team, p.pool) in placed:
                placed[job.team, p.pool][max(p.start, 0) : min(p.end, S)] += job.gpus
        for (team, pool), cap in limited.items():
            allowed = np.maximum(placed[team, pool], cap)
            over = used[team, pool] > allowed
            if over.any():
                t = int(np.flatnonzero(over)[0])
                self.report(
                    8,
                    f"team {inst.teams[team].name!r} holds more GPUs of pool {inst.pools[pool].name!r} than its limit at {_slots(over)} (slot {t}: {used[team, pool][t]} held, limit {allowed[t]})",
                )

    def rule9_quotas(self, assigned: dict[str, int]) -> None:
        """No job waits within its team's quota while other teams' borrowing holds the GPUs
        it needs (FORMAT.md, rule 9; `kept_out`)."""
        inst = self.inst
        blocked = kept_out(inst, self.plan, assigned)
        for team, pool in zip(*np.nonzero(blocked.any(axis=2)), strict=True):
            slots = blocked[team, pool]
            self.report(
                9,
                f"team {inst.teams[team].name!r} has a job waiting within its quota on pool {inst.pools[pool].name!r} while other teams hold the GPUs it needs above their quotas, at {_slots(slots)}",
            )


def kept_out(
    inst: Instance, plan: Plan, assigned: dict[str, int] | None = None
) -> npt.NDArray[np.bool_]:
    """[teams, P, S] where a team's job is kept out of its quota (FORMAT.md, rule 9), from the
    plan's valid assignments (`assigned`: job id -> its assignment; default every one) and its
    inference blocks."""
    T, P, S = len(inst.teams), len(inst.pools), inst.slots
    out = np.zeros((T, P, S), dtype=bool)
    quota = np.zeros((T, P), dtype=np.int64)
    for team in inst.teams:
        for p, q in team.quota.items():
            quota[team.index, p] = q
    if not quota.any():
        return out
    if assigned is None:
        assigned = {a.job: i for i, a in enumerate(plan.assignments)}
    runs: dict[int, tuple[int, int, int]] = {}  # job index -> (pool, start, end)
    for job_id, i in assigned.items():
        a = plan.assignments[i]
        pool = inst.pool_index.get(a.pool)
        if pool is not None and job_id in inst.job_index:
            runs[inst.job_index[job_id]] = (pool, max(a.start, 0), min(a.end, S))
    used, movable, free = _pool_use(inst, plan, runs)
    above = np.maximum(used - quota[:, :, None], 0)
    lent = np.minimum(above, movable)  # what each team could give back
    for job in inst.jobs:
        if job.team is None or job.placed is not None:
            continue
        ends = [runs[q][2] if q in runs else None for q in job.after]
        if None in ends:
            continue
        first = max([job.release, inst.now, *(e for e in ends if e is not None)])
        last = runs[job.index][1] if job.index in runs else S
        A = job.team
        for p, d in job.durations.items():
            ts = np.arange(first, min(last, S - d + 1))
            within = used[A, p, ts] + job.gpus <= quota[A, p]
            others = lent[:, p, ts].sum(axis=0) - lent[A, p, ts]
            short = (free[p, ts] < job.gpus) & (free[p, ts] + others >= job.gpus)
            out[A, p, ts[within & short]] = True
    return out


def _pool_use(
    inst: Instance, plan: Plan, runs: dict[int, tuple[int, int, int]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """GPUs per team, pool and slot (all its jobs', and those of its jobs that can move: neither
    placed nor run after by a placed job), and the GPUs free per pool and slot: its up nodes'
    less the plan's replicas and jobs."""
    T, P, S = len(inst.teams), len(inst.pools), inst.slots
    used = np.zeros((T, P, S), dtype=np.int64)
    movable = np.zeros((T, P, S), dtype=np.int64)
    free = np.zeros((P, S), dtype=np.int64)
    for k in range(inst.num_nodes):
        free[inst.node_pool[k]] += np.where(inst.up[k], inst.node_gpus[k], 0)
    services = {s.name: s for s in inst.services}
    for b in plan.inference:
        n = inst.node_index.get(b.node)
        if b.service in services and n is not None and 0 <= b.start < b.end <= S:
            free[inst.node_pool[n], b.start : b.end] -= (
                b.replicas * services[b.service].gpus_per_replica
            )
    pinned: set[int] = set()  # jobs a placed job runs after, directly or not: they stay
    stack = [q for job in inst.jobs if job.placed is not None for q in job.after]
    while stack:
        q = stack.pop()
        if q not in pinned:
            pinned.add(q)
            stack.extend(inst.jobs[q].after)
    for j, (pool, start, end) in runs.items():
        job = inst.jobs[j]
        free[pool, start:end] -= job.gpus
        if job.team is not None:
            used[job.team, pool, start:end] += job.gpus
            if job.placed is None and j not in pinned:
                movable[job.team, pool, start:end] += job.gpus
    return used, movable, free


def _other_instance(instance: Instance, plan: Plan) -> str | None:
    if plan.instance == instance.name:
        return None
    planned = {a.job for a in plan.assignments} | {u.job for u in plan.unscheduled}
    unknown = sum(job not in instance.job_index for job in planned)
    missing = sum(job.id not in planned for job in instance.jobs)
    return (
        f"the plan is for instance {plan.instance!r}, not {instance.name!r}: "
        f"{unknown} of its {len(planned)} jobs are not in this instance, "
        f"{missing} of this instance's {len(instance.jobs)} jobs are missing from it"
    )


def check(instance: Instance, plan: Plan) -> Violations:
    """All violations of FORMAT.md's validity rules; an empty list means the plan is valid."""
    checker = _Checker(instance, plan)
    listed = checker.run()
    return Violations(listed, sum(checker.count.values()), _other_instance(instance, plan))


FIRST_VIOLATIONS = 3  # an invalid plan is refused with this many of its violations shown


def ensure_valid(instance: Instance, plan: Plan, source: str) -> None:
    """Raise InputError, naming `source` and its first violations, when `plan` is not valid for
    `instance`: a diff or an explanation of an invalid plan would describe a plan that cannot
    run."""
    violations = check(instance, plan)
    if not violations:
        return
    lines = [
        f"{source} is not a valid plan for instance {instance.name!r} "
        f"({violations.total} violation(s); horizon-opt check lists them all)"
    ]
    if violations.other_instance is not None:
        lines.append(f"{source}: {violations.other_instance}")
    lines += [f"{source}: {v}" for v in violations[:FIRST_VIOLATIONS]]
    raise InputError(lines)
