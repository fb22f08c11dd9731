"""Kueue's ClusterQueues as the instance's teams, and each workload's team.

A workload's ClusterQueue is the one that admitted it or reserved its quota
(`status.admission.clusterQueue`); for one without an admission, the ClusterQueue its
LocalQueue (`metadata.namespace`, `spec.queueName`) feeds, from the LocalQueue objects when
given, else the one that admitted workloads of the same LocalQueue in the payload (noted), else
none (noted). A ClusterQueue's team is the cluster file's team that lists it in `queues`, else
the one named like it, else, when the ClusterQueue objects are given, the team made of it:

- `quota` per pool: the `nominalQuota` of the GPU resources over the flavors on that pool
  (`pools[].flavors` of the cluster file), capped at the pool's GPUs (noted);
- `limit` per pool: the same plus the `borrowingLimit`s; without a cohort (it cannot borrow)
  the quota; in a cohort, a flavor on the pool without `borrowingLimit` leaves the pool without
  a limit (it may borrow all the cohort's idle quota). A pool none of whose flavors (when the
  cluster file names some) the ClusterQueue gives GPU quota gets limit 0: Kueue admits its
  workloads on its own flavors only. `lendingLimit` is not modelled (noted).

Team names are `[a-z0-9_-]+`; a ClusterQueue's name may hold dots, which become `-` (noted).
Two ClusterQueues that become the same name are refused, naming both, unless the cluster file
says which team each is (`queues`). Without teams in the cluster file and without ClusterQueue
objects there are no teams: no job gets one and nothing is noted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from horizon_opt.errors import InputError
from horizon_opt.importers.cluster import ClusterFile
from horizon_opt.importers.draft import JobDraft
from horizon_opt.importers.kueue.queues import ClusterQueue, Queues
from horizon_opt.importers.kueue.workload import Workload
from horizon_opt.importers.payload_model import json_path
from horizon_opt.importers.result import some_jobs

__all__ = ["QueueTeams", "team_name"]

Notify = Callable[[Workload | None, str, str], None]  # (workload or None, field, problem)


def team_name(queue: str) -> str:
    """A ClusterQueue's name as a team name: every character outside `[a-z0-9_-]` (the dots of
    a Kubernetes name) becomes `-`, so the same queue is the same team at every import."""
    return re.sub(r"[^a-z0-9_-]", "-", queue.lower())


class QueueTeams:
    """The teams of an import from Kueue, and the team of each of its jobs."""

    def __init__(self, cluster: ClusterFile, queues: Queues, source: str, note: Notify) -> None:
        self.cluster = cluster
        self.queues = queues
        self.source = source
        self.note = note
        self.objects = {cq.name: cq for cq in queues.cluster or []}
        self.flavor_pool: dict[str, str] = {}
        for pool in cluster.pools:
            for flavor in pool.flavors:
                self.flavor_pool.setdefault(flavor, pool.name)
        self.pool_gpus = {p.name: p.nodes * p.gpus_per_node for p in cluster.pools}

    def apply(
        self, parsed: Sequence[Workload], jobs: Sequence[tuple[Workload, JobDraft]]
    ) -> list[dict[str, Any]]:
        """Set each job's `team` (jobs: (workload, its job)); the instance's teams."""
        if not self.cluster.teams and self.queues.cluster is None:
            if self.queues.local is not None:
                self.note(
                    None,
                    self.queues.local_source,
                    "not used: there are no teams (no `teams` in the cluster file, no "
                    "ClusterQueues given)",
                )
            return []
        self.check_names(parsed)
        teams = self.cluster.instance_teams() + self.made_teams()
        admitted: dict[tuple[str, str], list[str]] = {}  # LocalQueue -> its ClusterQueues
        for w in parsed:
            if w.cluster_queue is not None and w.queue is not None:
                seen = admitted.setdefault((w.namespace or "default", w.queue), [])
                if w.cluster_queue not in seen:
                    seen.append(w.cluster_queue)
        orphans: dict[str, list[str]] = {}  # a ClusterQueue of no team -> its jobs
        used: list[str] = []
        for w, job in jobs:
            queue = self.cluster_queue(w, admitted)
            if queue is None:
                continue
            team = self.team_of(queue)
            if team is None:
                orphans.setdefault(queue, []).append(w.id)
                continue
            job["team"] = team
            if queue not in used:
                used.append(queue)
        self.renamed([*self.objects, *(q for q in used if q not in self.objects)])
        for queue, ids in orphans.items():
            also = ", and no ClusterQueue object of it is given" if self.objects else ""
            self.note(
                None,
                "clusterQueue",
                f"{queue!r}: no team of the cluster file lists it in `queues` or is named "
                f"{team_name(queue)!r}{also}: planned without a team ({some_jobs(ids)})",
            )
        return teams

    def listed(self, queue: str) -> bool:
        """Whether a team of the cluster file lists the ClusterQueue in `queues`."""
        return any(queue in t.queues for t in self.cluster.teams)

    def team_of(self, queue: str) -> str | None:
        """The team of a ClusterQueue, None when it has none."""
        found = self.cluster.team_of(queue, "queues", team_name(queue))
        if found is None and queue in self.objects:
            return team_name(queue)
        return found

    def cluster_queue(
        self, w: Workload, admitted: Mapping[tuple[str, str], list[str]]
    ) -> str | None:
        """The workload's ClusterQueue; None (noted) when nothing says it."""
        if w.cluster_queue is not None:
            return w.cluster_queue
        if w.queue is None:
            self.note(w, "spec.queueName", "not set, and not admitted: no ClusterQueue, no team")
            return None
        key = (w.namespace or "default", w.queue)
        local = (self.queues.local or {}).get(key)
        if local is not None:
            return local.cluster_queue
        queue = "/".join(key)
        found = admitted.get(key)
        if found:
            others = (
                f" (and {', '.join(map(repr, found[1:]))}: took the first)" if found[1:] else ""
            )
            self.note(
                w,
                "spec.queueName",
                f"ClusterQueue {found[0]!r}{others}: the one that admitted workloads of queue "
                f"{queue} in this payload",
            )
            return found[0]
        where = (
            f"is not in {self.queues.local_source}"
            if self.queues.local is not None
            else "is not given (--localqueues)"
        )
        self.note(
            w,
            "spec.queueName",
            f"no ClusterQueue known for queue {queue}: its LocalQueue {where} and no workload "
            "of it is admitted: no team",
        )
        return None

    def made_teams(self) -> list[dict[str, Any]]:
        """A team of each ClusterQueue object the cluster file does not define."""
        teams = []
        for cq in self.objects.values():
            owner = self.cluster.team_of(cq.name, "queues", team_name(cq.name))
            if owner is None:
                teams.append(self.made_team(cq))
            else:
                self.note(
                    None,
                    f"{self.queues.cluster_source}: {cq.path}",
                    f"ClusterQueue {cq.name!r} is team {owner!r} of the cluster file, whose "
                    "quota and limit stand",
                )
        return teams

    def made_team(self, cq: ClusterQueue) -> dict[str, Any]:
        """The team of a ClusterQueue object: its GPU quota and limit per pool."""
        quota: dict[str, int] = {}
        limit: dict[str, int] = {}
        unlimited: set[str] = set()
        for f in cq.flavors:
            where = f"{self.queues.cluster_source}: {f.path}"
            pool = self.flavor_pool.get(f.flavor)
            if pool is None:
                self.note(
                    None,
                    where,
                    f"ClusterQueue {cq.name!r}: flavor {f.flavor!r} is in no pool's `flavors` "
                    f"of the cluster file: its {f.nominal} GPUs of quota are not counted",
                )
                continue
            quota[pool] = quota.get(pool, 0) + f.nominal
            if cq.cohort is not None and f.borrowing is None:
                unlimited.add(pool)
            borrowing = (f.borrowing or 0) if cq.cohort is not None else 0
            limit[pool] = limit.get(pool, 0) + f.nominal + borrowing
            if f.lending is not None:
                self.note(
                    None,
                    where,
                    f"ClusterQueue {cq.name!r}: lendingLimit {f.lending} on flavor {f.flavor!r} "
                    "is not modelled: plans may let other teams use more of its idle quota "
                    "than Kueue lends",
                )
        order = list(self.pool_gpus)
        team: dict[str, Any] = {"name": team_name(cq.name)}
        for pool in sorted(quota, key=order.index):
            if quota[pool] > self.pool_gpus[pool]:
                self.note(
                    None,
                    f"{self.queues.cluster_source}: {cq.path}",
                    f"ClusterQueue {cq.name!r}: {quota[pool]} GPUs of quota on pool {pool}, "
                    f"which has {self.pool_gpus[pool]}: counted as {self.pool_gpus[pool]}",
                )
            team.setdefault("quota", {})[pool] = min(quota[pool], self.pool_gpus[pool])
            if pool not in unlimited:
                team.setdefault("limit", {})[pool] = min(limit[pool], self.pool_gpus[pool])
        for shape in self.cluster.pools:
            if shape.flavors and shape.name not in quota:
                team.setdefault("limit", {})[shape.name] = 0  # none of its flavors: no admission
        return team

    def renamed(self, queues: Sequence[str]) -> None:
        """A note for each ClusterQueue whose team took its name with characters replaced."""
        for queue in queues:
            team = self.team_of(queue)
            if team is not None and not self.listed(queue) and team != queue:
                self.note(
                    None,
                    "clusterQueue",
                    f"ClusterQueue {queue!r} is team {team!r} (team names are [a-z0-9_-]+; "
                    "other characters become '-')",
                )

    def check_names(self, parsed: Sequence[Workload]) -> None:
        """Refuse two ClusterQueues that become the same team name, unless the cluster file
        lists them in `queues` (then it says which team each is)."""
        first: dict[str, str] = {}  # a ClusterQueue -> where it is first named
        for cq in self.objects.values():
            first.setdefault(cq.name, f"{self.queues.cluster_source}: {cq.path}")
        for local in (self.queues.local or {}).values():
            first.setdefault(local.cluster_queue, f"{self.queues.local_source}: {local.queue_path}")
        for w in parsed:
            if w.cluster_queue is not None:
                where = json_path((*w.loc, "status", "admission", "clusterQueue"))
                first.setdefault(w.cluster_queue, f"{self.source}: {where}")
        named: dict[str, str] = {}  # a team name -> the first ClusterQueue that becomes it
        problems = []
        for queue, where in first.items():
            if self.listed(queue):
                continue  # listed in `queues`: its team is the one that lists it
            other = named.setdefault(team_name(queue), queue)
            if other != queue:
                problems.append(
                    f"ClusterQueues {other!r} ({first[other]}) and {queue!r} ({where}) both "
                    f"become team {team_name(queue)!r} (team names are [a-z0-9_-]+): list them "
                    "in the `queues` of the cluster file's teams to say which team each is"
                )
        if problems:
            raise InputError(problems)
