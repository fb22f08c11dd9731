"""Every importer fixture, imported, compiles and is planned by every solver into a plan the
independent checker accepts: what an import writes is a state the planners can act on."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from horizon_opt import SOLVERS, check, solve
from horizon_opt.importers import Imported, read_cluster
from horizon_opt.importers.kueue import (
    import_kueue,
    read_clusterqueues,
    read_localqueues,
    read_workloads,
)
from horizon_opt.importers.slurm import import_slurm
from horizon_opt.importers.source import read_json
from horizon_opt.solvers import SolveOptions

DATA = Path(__file__).parents[1] / "data"
SLURM_SNAPSHOT = datetime(2026, 12, 1, 10, 20, tzinfo=UTC)
KUEUE_SNAPSHOT = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
FAST = SolveOptions(time_limit=1.0, workers=2, seed=0)


def _slurm(squeue: str, sacct: str | None, cluster: str = "cluster.yaml") -> Imported:
    folder = DATA / "slurm"
    return import_slurm(
        read_json(folder / squeue, "squeue"),
        read_cluster(folder / cluster),
        sacct=None if sacct is None else read_json(folder / sacct, "sacct"),
        snapshot=SLURM_SNAPSHOT,
    )


def _kueue(workloads: str, teams: bool = False) -> Imported:
    """With `teams`: the cluster file's team and the ClusterQueues' (limits every plan keeps)."""
    folder = DATA / "kueue"
    return import_kueue(
        read_workloads(folder / workloads),
        read_cluster(folder / ("cluster-teams.yaml" if teams else "cluster.yaml")),
        snapshot=KUEUE_SNAPSHOT,
        localqueues=read_localqueues(folder / "localqueues.yaml") if teams else None,
        clusterqueues=read_clusterqueues(folder / "clusterqueues.yaml") if teams else None,
    )


FIXTURES = {
    "slurm/squeue.json+sacct.json": lambda: _slurm("squeue.json", "sacct.json"),
    "slurm/squeue-v0.0.38.json+sacct": lambda: _slurm("squeue-v0.0.38.json", "sacct-v0.0.38.json"),
    "slurm/squeue-spread.json": lambda: _slurm("squeue-spread.json", None),
    "slurm/squeue-teams.json": lambda: _slurm("squeue-teams.json", None, "cluster-teams.yaml"),
    "kueue/workloads.json": lambda: _kueue("workloads.json"),
    "kueue/workloads-v1beta2.json": lambda: _kueue("workloads-v1beta2.json"),
    "kueue/workloads-v1beta2.yaml": lambda: _kueue("workloads-v1beta2.yaml"),
    "kueue/workloads.json+teams": lambda: _kueue("workloads.json", teams=True),
}


@pytest.mark.parametrize("fixture", sorted(FIXTURES))
@pytest.mark.parametrize("solver", sorted(SOLVERS))
def test_every_fixture_round_trips_through_every_solver(fixture: str, solver: str) -> None:
    instance = FIXTURES[fixture]().compile()
    plan = solve(instance, solver, FAST)
    assert check(instance, plan) == []
