"""Slurm accounts as the instance's teams.

A job's team is the cluster file's team whose `accounts` lists the job's `account`, else the
team named like the account. A cluster file without teams gives no job a team and says
nothing; one with teams says, once per account, which imported jobs belong to no team (their
GPUs count against no team's limit), since that is a gap in the cluster file, not in the job.
"""

from __future__ import annotations

from collections.abc import Iterable

from horizon_opt.importers.cluster import ClusterFile
from horizon_opt.importers.result import Note, some_jobs

__all__ = ["account_team", "unmatched_accounts"]


def account_team(cluster: ClusterFile, account: str) -> str | None:
    """The team of a Slurm account; None without one (or without an account)."""
    return cluster.team_of(account, "accounts") if account else None


def unmatched_accounts(cluster: ClusterFile, jobs: Iterable[tuple[str, str]]) -> list[Note]:
    """One note per account (jobs: (payload job id, account)) that maps to no team of the
    cluster file, naming its jobs; none when the cluster file has no teams."""
    if not cluster.teams:
        return []
    orphans: dict[str, list[str]] = {}
    for job, account in jobs:
        if account_team(cluster, account) is None:
            ids = orphans.setdefault(account, [])
            if job not in ids:
                ids.append(job)
    notes = []
    for account, ids in orphans.items():
        if account:
            why = (
                f"{account!r} is in no team's `accounts` of the cluster file and no team has "
                "its name"
            )
        else:
            why = "not set"
        notes.append(Note("", "account", f"{why}: planned without a team ({some_jobs(ids)})"))
    return notes
