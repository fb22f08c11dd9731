"""Teams in imports: the cluster file's `teams` (with the Slurm `accounts` and Kueue `queues` of
each), a Slurm job's account and a Kueue workload's ClusterQueue as its team, ClusterQueue
objects as teams with their GPU quota and limit, and plans that keep the limits.

The fixtures: tests/data/slurm/cluster-teams.yaml and squeue-teams.json; tests/data/kueue/
cluster-teams.yaml, localqueues.yaml and clusterqueues.yaml around workloads.json (their
README.md says what each holds).
"""

from __future__ import annotations

import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

import horizon_opt as ho
from horizon_opt.cli import app
from horizon_opt.errors import InputError
from horizon_opt.importers import ClusterFile, Imported, read_cluster
from horizon_opt.importers.kueue import (
    import_kueue,
    read_clusterqueues,
    read_localqueues,
    read_workloads,
)
from horizon_opt.importers.kueue.teams import team_name
from horizon_opt.importers.slurm import import_slurm
from horizon_opt.importers.source import read_json
from horizon_opt.model.instance import Instance
from horizon_opt.plans.plan import Plan

DATA = Path(__file__).parents[1] / "data"
SLURM = DATA / "slurm"
KUEUE = DATA / "kueue"
KUEUE_SNAPSHOT = datetime(2026, 12, 1, 10, 30, tzinfo=UTC)
Json = dict[str, Any]
runner = CliRunner()


def teams_of(result: Imported) -> dict[str, str | None]:
    return {j["id"]: j.get("team") for j in result.document["jobs"]}


def lines(result: Imported) -> list[str]:
    return [str(n) for n in result.notes]


def limits_kept(instance: Instance, plan: Plan) -> int:
    """Asserts no team holds more than its limit on a pool at a slot; returns the most GPUs
    any team held against a limit (so a test can see the limit was reached)."""
    team_of = {j.id: j.team for j in instance.jobs}
    held: dict[tuple[int, int, int], int] = {}
    for a in plan.assignments:
        team = team_of.get(a.job)
        if team is None:
            continue
        gpus = sum(len(idx) for idx in a.gpus.values())
        for t in range(max(a.start, 0), a.end):
            key = (team, instance.pool_index[a.pool], t)
            held[key] = held.get(key, 0) + gpus
    most = 0
    for (team, pool, t), gpus in held.items():
        cap = instance.teams[team].limit.get(pool)
        if cap is not None:
            assert gpus <= cap, (instance.teams[team].name, pool, t, gpus, cap)
            most = max(most, gpus)
    return most


# -- the cluster file ---------------------------------------------------------------------------


def cluster_with(tmp_path: Path, teams: Any) -> Path:
    data = yaml.safe_load((SLURM / "cluster.yaml").read_text())
    data["teams"] = teams
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("teams", "problem"),
    [
        (
            [{"name": "a"}, {"name": "b", "quota": {"h200": 8}}],
            "teams[1].quota.h200: unknown pool 'h200' (pools: h100, a100)",
        ),
        (
            [{"name": "a", "quota": {"h100": 8}, "limit": {"h100": 4}}],
            "teams[0].limit.h100: limit 4 is below the quota 8: a team may always use its quota",
        ),
        ([{"name": "a"}, {"name": "a"}], "teams[1].name: duplicate team name 'a'"),
        (
            [{"name": "a", "accounts": ["ml"]}, {"name": "b", "accounts": ["x", "ml"]}],
            "teams[1].accounts[1]: 'ml' is also listed by teams[0].accounts[0]: it belongs to "
            "one team",
        ),
        (
            [{"name": "a", "queues": ["cq"]}, {"name": "b", "queues": ["cq"]}],
            "teams[1].queues[0]: 'cq' is also listed by teams[0].queues[0]: it belongs to one team",
        ),
        ([{"name": "A"}], "teams[0].name: String should match pattern '^[a-z0-9_-]+$'"),
        ([{"name": "a", "accounts": [""]}], "teams[0].accounts[0]: String should have at least"),
        ([{"name": "a", "queues": "cq"}], "teams[0].queues: Input should be a valid list"),
    ],
)
def test_cluster_file_teams_are_checked_naming_the_field(
    tmp_path: Path, teams: Any, problem: str
) -> None:
    path = cluster_with(tmp_path, teams)
    with pytest.raises(InputError) as err:
        read_cluster(path)
    assert any(p.startswith(f"{path}: {problem}") for p in err.value.problems), err.value.problems


def test_cluster_file_teams_go_to_the_instance_without_the_schedulers_names() -> None:
    result = import_slurm(
        read_json(SLURM / "squeue.json", "x"), read_cluster(SLURM / "cluster-teams.yaml")
    )
    assert result.document["teams"] == [
        {"name": "llm", "quota": {"h100": 16}, "limit": {"h100": 24}},
        {"name": "vision", "quota": {"a100": 4}, "limit": {"a100": 4}},
    ]
    assert result.compile().teams[0].name == "llm"


def test_a_bad_cluster_file_team_exits_2_with_the_field(tmp_path: Path) -> None:
    path = cluster_with(tmp_path, [{"name": "a", "quota": {"h200": 8}}])
    out = tmp_path / "inst.yaml"
    args = ["import", "slurm", str(SLURM / "squeue.json"), "-c", str(path), "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert f"error: {path}: teams[0].quota.h200: unknown pool 'h200'" in result.stderr
    assert "Traceback" not in result.output and not out.exists()


# -- Slurm: accounts ----------------------------------------------------------------------------


def slurm(cluster: str = "cluster-teams.yaml", payload: Any = None) -> Imported:
    squeue = payload if payload is not None else read_json(SLURM / "squeue-teams.json", "x")
    return import_slurm(squeue, read_cluster(SLURM / cluster), squeue_source="squeue-teams.json")


def test_slurm_account_is_the_team_listing_it_else_the_team_of_its_name() -> None:
    result = slurm()
    assert teams_of(result) == {
        "3001": "llm",  # account ml, in llm's accounts (a running job)
        "3002": "llm",  # account ml-prod, in llm's accounts
        "3003": "vision",  # the team named like the account
        "3004": "vision",
        "3005": None,  # physics: no team
        "3006": None,
        "3007": None,  # no account
    }


def test_slurm_accounts_of_no_team_are_noted_once_each() -> None:
    assert lines(slurm()) == [
        "account: 'physics' is in no team's `accounts` of the cluster file and no team has its "
        "name: planned without a team (2 jobs: 3005, 3006)",
        "account: not set: planned without a team (1 job: 3007)",
    ]


def test_slurm_without_cluster_file_teams_has_no_teams_and_no_notes() -> None:
    result = slurm("cluster.yaml")
    assert "teams" not in result.document
    assert set(teams_of(result).values()) == {None}
    assert lines(result) == []


@pytest.mark.parametrize("fixture", ["squeue.json", "squeue-v0.0.38.json", "squeue-spread.json"])
def test_existing_slurm_fixtures_import_as_before(fixture: str) -> None:
    """The fixtures' accounts are all `ml`: with the plain cluster file nothing changes, with
    the teams one every job is llm's and nothing more is noted."""
    payload = read_json(SLURM / fixture, "x")
    plain = slurm("cluster.yaml", payload)
    teams = slurm("cluster-teams.yaml", payload)
    assert "teams" not in plain.document and "team" not in json.dumps(plain.document["jobs"])
    assert set(teams_of(teams).values()) == {"llm"}
    assert lines(teams) == lines(plain)
    without = copy.deepcopy(teams.document)
    for job in without["jobs"]:
        del job["team"]
    assert {k: v for k, v in without.items() if k not in ("name", "teams")} == {
        k: v for k, v in plain.document.items() if k != "name"
    }


def test_slurm_parts_of_a_running_job_are_its_team() -> None:
    result = slurm(payload=read_json(SLURM / "squeue-spread.json", "x"))
    parts = [j for j in result.document["jobs"] if "@" in j["id"]]
    assert parts and {j["team"] for j in parts} == {"llm"}


def test_slurm_account_of_the_wrong_type_names_its_path() -> None:
    payload = read_json(SLURM / "squeue-teams.json", "x")
    payload["jobs"][2]["account"] = 5
    with pytest.raises(InputError) as err:
        slurm(payload=payload)
    assert err.value.problems == ["squeue-teams.json: jobs[2].account: expected a string, got 5"]


def test_slurm_teams_solve_with_the_limits_kept() -> None:
    instance = slurm().compile()
    plan = ho.solve(instance, "greedy")
    assert ho.check(instance, plan) == []
    assert limits_kept(instance, plan) > 0


# -- Kueue: ClusterQueues -----------------------------------------------------------------------


def clusterqueues() -> Any:
    return read_clusterqueues(KUEUE / "clusterqueues.yaml")


def localqueues() -> Any:
    return read_localqueues(KUEUE / "localqueues.yaml")


def kueue(workloads: Any = None, cluster: str = "cluster-teams.yaml", **kwargs: Any) -> Imported:
    kwargs.setdefault("localqueues_source", "localqueues.yaml")
    kwargs.setdefault("clusterqueues_source", "clusterqueues.yaml")
    return import_kueue(
        workloads if workloads is not None else read_workloads(KUEUE / "workloads.json"),
        read_cluster(KUEUE / cluster),
        snapshot=KUEUE_SNAPSHOT,
        **kwargs,
    )


def test_kueue_teams_of_the_cluster_file_and_of_the_clusterqueues() -> None:
    result = kueue(localqueues=localqueues(), clusterqueues=clusterqueues())
    assert result.document["teams"] == [
        # the cluster file's: gpu-cluster-queue is in its `queues`, so its own quota is not used
        {"name": "research", "quota": {"h100": 16}, "limit": {"h100": 24}},
        # no cohort: it cannot borrow, its limit is its quota; flavors a100 (8) and a100-spot
        # (4) are both on pool a100; it lists no flavor of h100, so it cannot run there
        {"name": "spot-cluster-queue", "quota": {"a100": 12}, "limit": {"a100": 12, "h100": 0}},
        # cohort main: h100 without borrowingLimit has no limit, a100 4 + borrowingLimit 4
        {"name": "batch-shared", "quota": {"h100": 8, "a100": 4}, "limit": {"a100": 8}},
    ]
    assert teams_of(result) == {
        "team-a/pytorchjob-pretrain-7b-3c1f2": "research",  # admitted by gpu-cluster-queue
        "team-a/job-finetune-llama-8b-9d2e4": "research",
        "team-a/job-sft-mistral-1a2b3": "research",  # pending: its LocalQueue's
        "team-b/job-eval-harness-77aa1": "batch-shared",  # LocalQueue -> batch.shared
        "team-b/job-batch-embed-5e6f7": "batch-shared",
        "team-c/job-quantize-70b-0f0e1": "spot-cluster-queue",  # quota reserved there
        "team-c/job-moe-sweep-4c4c4": "spot-cluster-queue",
        "team-b/job-rerank-6a6a6": None,  # its LocalQueue team-b-queu does not exist
    }


def test_kueue_team_notes() -> None:
    result = kueue(localqueues=localqueues(), clusterqueues=clusterqueues())
    base = set(lines(kueue(cluster="cluster.yaml")))
    assert [line for line in lines(result) if line not in base] == [
        "clusterqueues.yaml: items[0]: ClusterQueue 'gpu-cluster-queue' is team 'research' of "
        "the cluster file, whose quota and limit stand",
        "clusterqueues.yaml: items[2].spec.resourceGroups[0].flavors[1]: ClusterQueue "
        "'batch.shared': lendingLimit 2 on flavor 'a100' is not modelled: plans may let other "
        "teams use more of its idle quota than Kueue lends",
        "clusterQueue: ClusterQueue 'batch.shared' is team 'batch-shared' (team names are "
        "[a-z0-9_-]+; other characters become '-')",
        "team-b/job-rerank-6a6a6: spec.queueName: no ClusterQueue known for queue "
        "team-b/team-b-queu: its LocalQueue is not in localqueues.yaml and no workload of it is "
        "admitted: no team",
    ]


def test_kueue_pending_team_from_the_admitted_workloads_of_its_queue() -> None:
    """Without LocalQueues, a pending workload's ClusterQueue is the one that admitted the
    workloads of its queue (noted); a queue none of whose workloads is admitted gives none."""
    result = kueue(clusterqueues=clusterqueues())
    assert teams_of(result)["team-a/job-sft-mistral-1a2b3"] == "research"
    assert (
        "team-a/job-sft-mistral-1a2b3: spec.queueName: ClusterQueue 'gpu-cluster-queue': the one "
        "that admitted workloads of queue team-a/team-a-queue in this payload"
    ) in lines(result)
    assert teams_of(result)["team-b/job-eval-harness-77aa1"] is None
    assert (
        "team-b/job-eval-harness-77aa1: spec.queueName: no ClusterQueue known for queue "
        "team-b/team-b-queue: its LocalQueue is not given (--localqueues) and no workload of it "
        "is admitted: no team"
    ) in lines(result)
    # team-c-queue's admitted workload is finished, and still says the queue's ClusterQueue
    assert teams_of(result)["team-c/job-quantize-70b-0f0e1"] == "spot-cluster-queue"


def test_kueue_team_from_the_cluster_file_alone() -> None:
    """Without ClusterQueue objects the teams are the cluster file's; a ClusterQueue that is
    none of them is noted once, with its jobs."""
    result = kueue(localqueues=localqueues())
    assert [t["name"] for t in result.document["teams"]] == ["research"]
    assert teams_of(result)["team-a/job-sft-mistral-1a2b3"] == "research"
    assert teams_of(result)["team-c/job-moe-sweep-4c4c4"] is None
    assert (
        "clusterQueue: 'spot-cluster-queue': no team of the cluster file lists it in `queues` or "
        "is named 'spot-cluster-queue': planned without a team (2 jobs: "
        "team-c/job-quantize-70b-0f0e1, team-c/job-moe-sweep-4c4c4)"
    ) in lines(result)


def test_kueue_without_teams_is_unchanged() -> None:
    plain = kueue(cluster="cluster.yaml")
    assert "teams" not in plain.document
    assert set(teams_of(plain).values()) == {None}
    with_queues = kueue(cluster="cluster.yaml", localqueues=localqueues())
    assert with_queues.document == plain.document
    assert lines(with_queues) == [
        "localqueues.yaml: not used: there are no teams (no `teams` in the cluster file, no "
        "ClusterQueues given)",
        *lines(plain),
    ]


def test_kueue_teams_solve_with_the_limits_kept() -> None:
    instance = kueue(localqueues=localqueues(), clusterqueues=clusterqueues()).compile()
    plan = ho.solve(instance, "greedy")
    assert ho.check(instance, plan) == []
    # research holds 20 GPUs of h100 running; its pending 8 wait below its limit of 24
    assert limits_kept(instance, plan) == 24


# -- ClusterQueue objects, one at a time ----------------------------------------------------------


def cq(name: str = "cq", *, cohort: Json | None = None, flavors: list[Json] | None = None) -> Json:
    """A v1beta2 ClusterQueue (cohort: e.g. {"cohortName": "c"}) with the given flavors."""
    spec: Json = {
        "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": flavors or []}]
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {**spec, **(cohort or {})},
    }


def flavor(name: str, *resources: Json) -> Json:
    return {"name": name, "resources": list(resources)}


def gpu(nominal: Any, resource: str = "nvidia.com/gpu", **limits: Any) -> Json:
    return {"name": resource, "nominalQuota": nominal, **limits}


def made_team(*objects: Json) -> Imported:
    return kueue(cluster="cluster.yaml", clusterqueues={"kind": "List", "items": list(objects)})


@pytest.mark.parametrize(
    ("cohort", "limits", "limit"),
    [
        (None, {}, {"h100": 8}),  # no cohort: it cannot borrow
        ({"cohortName": "c"}, {}, {}),  # v1beta2 cohort, no borrowingLimit: no limit
        ({"cohort": "c"}, {}, {}),  # the v1beta1 field
        ({"cohortName": "c"}, {"borrowingLimit": "8"}, {"h100": 16}),
        ({"cohortName": "c"}, {"borrowingLimit": 0}, {"h100": 8}),
        ({"cohortName": "c"}, {"borrowingLimit": "64"}, {"h100": 32}),  # at most the pool's GPUs
    ],
)
def test_clusterqueue_limit(cohort: Json | None, limits: Json, limit: Json) -> None:
    result = made_team(cq(cohort=cohort, flavors=[flavor("h100", gpu("8", **limits))]))
    team = result.document["teams"][0]
    assert team["quota"] == {"h100": 8}
    # (pool a100: none of its flavors in the ClusterQueue, which cannot admit there: limit 0)
    assert team.get("limit") == {**limit, "a100": 0}


def test_clusterqueue_gpu_resources_flavors_and_quantities() -> None:
    """nvidia and amd GPUs add up, other resources do not count, quantities read as
    Kubernetes writes them, a flavor of no pool is noted, a quota above the pool is capped."""
    result = made_team(
        cq(
            "a.b",
            flavors=[
                flavor(
                    "a100", gpu("2"), gpu(2, "amd.com/gpu"), {"name": "cpu", "nominalQuota": "1k"}
                ),
                flavor("a100-spot", gpu("4e0")),
                flavor("tpu", gpu("8")),
                flavor("h100", gpu("1k")),
            ],
        )
    )
    assert result.document["teams"] == [
        {"name": "a-b", "quota": {"h100": 32, "a100": 8}, "limit": {"h100": 32, "a100": 8}}
    ]
    assert lines(result)[:3] == [
        "clusterqueues.yaml: items[0].spec.resourceGroups[0].flavors[2]: ClusterQueue 'a.b': "
        "flavor 'tpu' is in no pool's `flavors` of the cluster file: its 8 GPUs of quota are not "
        "counted",
        "clusterqueues.yaml: items[0]: ClusterQueue 'a.b': 1000 GPUs of quota on pool h100, "
        "which has 32: counted as 32",
        "clusterQueue: ClusterQueue 'a.b' is team 'a-b' (team names are [a-z0-9_-]+; other "
        "characters become '-')",
    ]
    assert result.compile().teams[0].limit  # a valid team


def test_clusterqueue_with_no_gpu_quota_admits_no_gpus() -> None:
    result = made_team(cq(flavors=[flavor("h100", {"name": "cpu", "nominalQuota": "8"})]))
    assert result.document["teams"] == [{"name": "cq", "limit": {"h100": 0, "a100": 0}}]


def test_team_names_of_clusterqueues() -> None:
    assert team_name("gpu-queue") == "gpu-queue"
    assert team_name("team.a.gpu") == "team-a-gpu"
    assert team_name("Team_A") == "team_a"


def test_two_clusterqueues_of_one_team_name_are_refused_unless_the_cluster_file_says() -> None:
    objects = {"kind": "List", "items": [cq("a.b"), cq("a-b")]}
    with pytest.raises(InputError) as err:
        kueue(cluster="cluster.yaml", clusterqueues=objects)
    assert err.value.problems == [
        "ClusterQueues 'a.b' (clusterqueues.yaml: items[0]) and 'a-b' (clusterqueues.yaml: "
        "items[1]) both become team 'a-b' (team names are [a-z0-9_-]+): list them in the "
        "`queues` of the cluster file's teams to say which team each is"
    ]
    cluster = read_cluster(KUEUE / "cluster.yaml")
    data = cluster.model_dump(mode="json")
    data["teams"] = [{"name": "ab", "queues": ["a.b"]}]
    result = import_kueue(
        read_workloads(KUEUE / "workloads.json"),
        ClusterFile.model_validate(data),
        snapshot=KUEUE_SNAPSHOT,
        clusterqueues=objects,
    )
    assert [t["name"] for t in result.document["teams"]] == ["ab", "a-b"]


DROP = object()  # as a value: the field is removed
RESOURCE = ("spec", "resourceGroups", 0, "flavors", 0, "resources", 0)
RESOURCE_PATH = "items[0].spec.resourceGroups[0].flavors[0].resources[0]"


def put(obj: Any, keys: tuple[Any, ...], value: Any) -> None:
    """Set (or with DROP remove) the field at `keys` of a parsed object."""
    for key in keys[:-1]:
        obj = obj[key]
    if value is DROP:
        del obj[keys[-1]]
    else:
        obj[keys[-1]] = value


@pytest.mark.parametrize(
    ("keys", "value", "problem"),
    [
        (
            (*RESOURCE, "nominalQuota"),
            "x",
            f"{RESOURCE_PATH}.nominalQuota: not a Kubernetes quantity: 'x'",
        ),
        (
            (*RESOURCE, "nominalQuota"),
            DROP,
            f"{RESOURCE_PATH}.nominalQuota: required field is missing",
        ),
        (
            (*RESOURCE, "borrowingLimit"),
            "1.5",
            f"{RESOURCE_PATH}.borrowingLimit: expected a whole number of GPUs, got '1.5'",
        ),
        (
            (*RESOURCE, "lendingLimit"),
            -1,
            f"{RESOURCE_PATH}.lendingLimit: must not be negative, got -1",
        ),
        (
            ("spec", "resourceGroups"),
            {"flavors": []},
            "items[0].spec.resourceGroups: expected a list, got an object",
        ),
        (
            ("spec", "resourceGroups", 0, "flavors", 0, "name"),
            DROP,
            "items[0].spec.resourceGroups[0].flavors[0].name: required field is missing",
        ),
        (("spec", "cohortName"), 3, "items[0].spec.cohortName: expected a string, got 3"),
        (("spec",), DROP, "items[0].spec: required field is missing"),
        (("metadata", "name"), DROP, "items[0].metadata.name: required field is missing"),
        (("kind",), "LocalQueue", "items[0].kind: expected a ClusterQueue, got 'LocalQueue'"),
    ],
)
def test_a_bad_clusterqueue_field_names_the_file_and_path(
    keys: tuple[Any, ...], value: Any, problem: str
) -> None:
    obj = cq(flavors=[flavor("h100", gpu("8"))])
    put(obj, keys, value)
    with pytest.raises(InputError) as err:
        made_team(obj)
    assert err.value.problems == [f"clusterqueues.yaml: {problem}"]


@pytest.mark.parametrize(
    ("keys", "value", "problem"),
    [
        (
            ("items", 1, "spec", "clusterQueue"),
            DROP,
            "items[1].spec.clusterQueue: required field is missing",
        ),
        (
            ("items", 0, "spec", "clusterQueue"),
            ["x"],
            "items[0].spec.clusterQueue: expected a string, got a list",
        ),
        (("items", 2, "spec"), DROP, "items[2].spec: required field is missing"),
        (("items",), "x", "items: expected a list, got 'x'"),
    ],
)
def test_a_bad_localqueue_field_names_the_file_and_path(
    keys: tuple[Any, ...], value: Any, problem: str
) -> None:
    objects = localqueues()
    put(objects, keys, value)
    with pytest.raises(InputError) as err:
        kueue(localqueues=objects)
    assert err.value.problems == [f"localqueues.yaml: {problem}"]


def test_a_localqueue_listed_twice_with_two_clusterqueues_is_refused() -> None:
    objects = localqueues()
    objects["items"].append({**objects["items"][0], "spec": {"clusterQueue": "other"}})
    with pytest.raises(InputError) as err:
        kueue(localqueues=objects)
    assert err.value.problems == [
        "localqueues.yaml: items[4].spec.clusterQueue: LocalQueue team-a/team-a-queue is also at "
        "items[0].spec.clusterQueue, with ClusterQueue 'gpu-cluster-queue', not 'other'"
    ]


def test_an_admission_clusterqueue_of_the_wrong_type_names_its_path() -> None:
    workloads = read_workloads(KUEUE / "workloads.json")
    workloads["items"][0]["status"]["admission"]["clusterQueue"] = 7
    with pytest.raises(InputError) as err:
        kueue(workloads)
    assert err.value.problems == [
        "workloads.json: items[0].status.admission.clusterQueue: expected a string, got 7"
    ]


# -- the command line -----------------------------------------------------------------------------


def kueue_args(out: Path, *extra: str) -> list[str]:
    return [
        "import", "kueue", str(KUEUE / "workloads.json"), "-c", str(KUEUE / "cluster-teams.yaml"),
        "-o", str(out), "--now", "2026-12-01T10:30:00Z", *extra,
    ]  # fmt: skip


def test_cli_kueue_with_localqueues_and_clusterqueues(tmp_path: Path) -> None:
    out = tmp_path / "inst.yaml"
    queues = ["--localqueues", str(KUEUE / "localqueues.yaml")]
    queues += ["--clusterqueues", str(KUEUE / "clusterqueues.yaml")]
    result = runner.invoke(app, kueue_args(out, *queues))
    assert result.exit_code == 0, result.output
    assert "lendingLimit 2 on flavor 'a100' is not modelled" in result.stderr
    instance = ho.load_instance(out)
    assert [t.name for t in instance.teams] == ["research", "spot-cluster-queue", "batch-shared"]
    plan = ho.solve(instance, "greedy")
    assert ho.check(instance, plan) == []


@pytest.mark.parametrize("option", ["--localqueues", "--clusterqueues"])
def test_cli_bad_queue_file_exits_2_and_writes_nothing(tmp_path: Path, option: str) -> None:
    bad = tmp_path / "queues.yaml"
    bad.write_text("apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n  metadata: {name: x}\n")
    out = tmp_path / "inst.yaml"
    result = runner.invoke(app, kueue_args(out, option, str(bad)))
    assert result.exit_code == 2
    kind = "LocalQueue" if option == "--localqueues" else "ClusterQueue"
    assert f"error: {bad}: items[0].kind: expected a {kind}, got 'Pod'" in result.stderr
    assert "Traceback" not in result.output and not out.exists()


def test_cli_missing_queue_file_exits_2(tmp_path: Path) -> None:
    out = tmp_path / "inst.yaml"
    result = runner.invoke(app, kueue_args(out, "--clusterqueues", str(tmp_path / "none.yaml")))
    assert result.exit_code == 2 and "none.yaml" in result.stderr
    assert "Traceback" not in result.output and not out.exists()


def test_cli_slurm_with_teams(tmp_path: Path) -> None:
    out = tmp_path / "inst.yaml"
    args = ["import", "slurm", str(SLURM / "squeue-teams.json")]
    args += ["-c", str(SLURM / "cluster-teams.yaml"), "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "note: account: 'physics' is in no team's `accounts`" in result.stderr
    instance = ho.load_instance(out)
    assert [t.name for t in instance.teams] == ["llm", "vision"]
    assert {j.id for j in instance.jobs if j.team is not None} == {"3001", "3002", "3003", "3004"}


def test_malformed_workloads_and_queues_are_listed_together() -> None:
    workloads = read_workloads(KUEUE / "workloads.json")
    workloads["items"][0]["status"]["admission"]["clusterQueue"] = 7
    objects = localqueues()
    put(objects, ("items", 1, "spec", "clusterQueue"), DROP)
    with pytest.raises(InputError) as err:
        kueue(workloads, localqueues=objects)
    assert err.value.problems == [
        "workloads.json: items[0].status.admission.clusterQueue: expected a string, got 7",
        "localqueues.yaml: items[1].spec.clusterQueue: required field is missing",
    ]
