"""Every instance, cluster-file and suite snippet in the docs loads as written."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import horizon_opt as ho
from horizon_opt.bench import load_suite
from horizon_opt.importers import read_cluster
from horizon_opt.service.config import read_config

ROOT = Path(__file__).parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "benchmarks/README.md"]


def yaml_blocks() -> list[tuple[str, str]]:
    """(where, text) of every ```yaml block of the docs, except FORMAT.md's schematic one."""
    out = []
    for doc in DOCS:
        if doc.name == "FORMAT.md":  # the contract: a field-by-field template with `...`
            continue
        for k, block in enumerate(re.findall(r"```yaml\n(.*?)```", doc.read_text(), re.S)):
            out.append((f"{doc.relative_to(ROOT)}#{k}", block))
    return out


BLOCKS = yaml_blocks()


def test_the_docs_have_snippets() -> None:
    assert {where.split("#")[0] for where, _ in BLOCKS} >= {"README.md", "docs/bench.md"}


@pytest.mark.parametrize(("where", "text"), BLOCKS, ids=[w for w, _ in BLOCKS])
def test_snippet_loads(where: str, text: str, tmp_path: Path) -> None:
    if text.lstrip().startswith("scheduler:"):  # a run configuration
        file = tmp_path / "run.yaml"
        file.write_text(text)
        read_config(file)
    elif text.lstrip().startswith("apiVersion:"):  # Kubernetes manifests around `run`
        for manifest in yaml.safe_load_all(text):
            _check_manifest(manifest, tmp_path)
    elif text.lstrip().startswith("groups:"):  # Prometheus alert rules on the run's metrics
        rules = [r for g in yaml.safe_load(text)["groups"] for r in g["rules"]]
        names = set(re.findall(r"horizon_opt_[a-z_]+", text))
        assert rules and all({"alert", "expr"} <= set(r) for r in rules)
        assert names <= set(
            re.findall(
                r"horizon_opt_[a-z_]+",
                (ROOT / "docs" / "operating.md").read_text().split("Example alert")[0],
            )
        )
    elif text.lstrip().startswith("teams:"):  # a cluster file's teams, on a cluster of h100
        file = tmp_path / "cluster.yaml"
        pools = "pools: [{name: h100, gpu_type: H100, nodes: 4, gpus_per_node: 8}]\n"
        file.write_text("horizon: {slots: 24}\n" + pools + text)
        read_cluster(file)
    elif "horizon:" in text and "name:" not in text.split("pools:")[0]:  # a cluster file
        shutil.copy(ROOT / "instances" / "demo-chat.csv", tmp_path / "chat.csv")
        file = tmp_path / "cluster.yaml"
        file.write_text(text)
        read_cluster(file)
    elif "horizon:" in text:  # an instance; its demand CSV is the demo's
        shutil.copy(ROOT / "instances" / "demo-chat.csv", tmp_path / "demo-chat.csv")
        file = tmp_path / "instance.yaml"
        file.write_text(text)
        ho.load_instance(file)
    else:  # a bench suite, with paths relative to benchmarks/
        (tmp_path / "instances").symlink_to(ROOT / "instances")
        (tmp_path / "benchmarks").mkdir()
        file = tmp_path / "benchmarks" / "suite.yaml"
        file.write_text(text)
        load_suite(file)


def _check_manifest(manifest: dict[str, Any], tmp_path: Path) -> None:
    """A CronJob runs `run`; a ConfigMap's run.yaml reads as a run configuration; the RBAC
    lets the service list workloads in every namespace."""
    kind = manifest["kind"]
    if kind == "CronJob":
        containers = manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
        assert containers[0]["args"][0] == "run"
    elif kind == "ConfigMap":
        file = tmp_path / "run.yaml"
        file.write_text(manifest["data"]["run.yaml"])
        assert read_config(file).scheduler == "kueue"
    elif kind == "ClusterRole":
        verbs = {r["resources"][0]: set(r["verbs"]) for r in manifest["rules"]}
        assert {"list", "patch"} <= verbs["workloads"] and "patch" in verbs["clusterqueues"]
    else:
        assert kind in ("ServiceAccount", "ClusterRoleBinding"), kind


def test_the_api_reference_lists_every_public_name() -> None:
    """docs/api/index.md's table is written by hand (mkdocstrings cannot render the package's
    re-exports): every name of `horizon_opt.__all__` must be in it."""
    text = (ROOT / "docs" / "api" / "index.md").read_text()
    missing = [name for name in ho.__all__ if f"`{name}`" not in text]
    assert missing == []


def test_the_run_configuration_page_lists_every_field() -> None:
    """docs/run-config.md is the reference of `horizon-opt run`'s configuration: every field of
    every section is in it."""
    from horizon_opt.service.config import RunConfig
    from horizon_opt.service.settings import KueueSettings, SlurmSettings, Source

    text = (ROOT / "docs" / "run-config.md").read_text()
    models: list[type] = [RunConfig, SlurmSettings, KueueSettings, Source]
    missing = [f for m in models for f in m.model_fields if f"| `{f}` |" not in text]
    assert missing == []


GLOSSARY = [
    "pool",
    "horizon",
    "slot",
    "placed",
    "pwo",
    "realized pwo",
    "oracle rung",
    "SLO",
    "LNS",
    "deterministic time",
    "hint",
    "open end",
    "measured window",
]


def test_the_glossary_defines_the_words_the_guides_use() -> None:
    terms = re.findall(r"^\*\*(.+?)\*\*", (ROOT / "docs" / "glossary.md").read_text(), re.M)
    assert [t for t in GLOSSARY if t not in terms] == []
