"""The scheduler registry: the cycle and the run configuration ask its entries, never a name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from horizon_opt.errors import InputError
from horizon_opt.service import config, cycle
from horizon_opt.service.config import read_config
from horizon_opt.service.registry import SCHEDULERS


def test_the_cycle_and_the_configuration_compare_no_scheduler_name() -> None:
    names = set(SCHEDULERS)
    for module in (cycle, config):
        tree = ast.parse(Path(str(module.__file__)).read_text())
        compared = {
            c.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Compare)
            for c in [node.left, *node.comparators]
            if isinstance(c, ast.Constant)
        }
        assert compared & names == set(), module.__name__


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_each_scheduler_checks_its_own_section(name: str, tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    path.write_text(f"scheduler: {name}\ncluster: c.yaml\nqueue: {{file: q.json}}\n")
    problem = SCHEDULERS[name].check(None)
    assert problem is not None
    with pytest.raises(InputError) as caught:
        read_config(path)
    assert caught.value.problems == [f"{path}: (top level): {problem}"]


def test_only_a_scheduler_with_a_history_reads_one(tmp_path: Path) -> None:
    path = tmp_path / "run.yaml"
    section = "kueue: {cluster_queue: b, cluster_queue_object: {file: x.json}}"
    path.write_text(
        f"scheduler: kueue\ncluster: c.yaml\nqueue: {{file: q}}\nhistory: {{file: h}}\n{section}\n"
    )
    assert not SCHEDULERS["kueue"].history
    with pytest.raises(InputError, match="history: only Slurm's sacct history is read"):
        read_config(path)
