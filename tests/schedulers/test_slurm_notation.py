"""Slurm's notations (horizon_opt.schedulers.slurm): GRES and TRES GPU counts, per-node GPU
detail, hostlists, ranges and dependencies, each read on its own, as squeue, sacct and scontrol
write them."""

from __future__ import annotations

import pytest

from horizon_opt.schedulers.slurm import (
    Dependency,
    Gpus,
    NodeGpus,
    expand_hostlist,
    expand_ranges,
    parse_dependency,
    parse_gpus,
    parse_gres_detail,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gres/gpu:8", Gpus(8)),
        ("gres/gpu=8", Gpus(8)),
        ("gres/gpu:h100:4", Gpus(4, frozenset({"h100"}))),
        ("gres/gpu:h100=4", Gpus(4, frozenset({"h100"}))),
        ("cpu=8,mem=64G,node=1,billing=8,gres/gpu=8,gres/gpu:h100=8", Gpus(8, frozenset({"h100"}))),
        ("gres/gpu:a100=2,gres/gpu:h100=4", Gpus(6, frozenset({"a100", "h100"}))),
        ("gpu:8", Gpus(8)),
        ("gres/gpu", Gpus(1)),
        ("gres/gpu:0", Gpus(0)),
        ("cpu=8,mem=64G,node=1", None),
        ("gres/gpumem=80G,gres/shard:2", None),
        ("", None),
    ],
)
def test_parse_gpus(text: str, expected: Gpus | None) -> None:
    assert parse_gpus(text) == expected


@pytest.mark.parametrize("text", ["gres/gpu:a:b:4", "gres/gpu:h 100:2", "gres/gpu:="])
def test_parse_gpus_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ValueError, match="not a GPU count"):
        parse_gpus(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("gpu:h100:4(IDX:0-3)", NodeGpus(4, (0, 1, 2, 3), frozenset({"h100"}))),
        ("gpu:2(IDX:0,2)", NodeGpus(2, (0, 2))),
        ("gpu:3(IDX:0-1,5)", NodeGpus(3, (0, 1, 5))),
        ("gpu(CNT:4)", NodeGpus(4, None)),
        ("gpu:h100:2(IDX:6-7),nic:1(IDX:0)", NodeGpus(2, (6, 7), frozenset({"h100"}))),
        ("gpu:0(IDX:N/A)", NodeGpus(0, ())),
        ("nic:1(IDX:0)", NodeGpus(0, ())),
        ("gpu:4", NodeGpus(4, None)),  # no indices at all
        ("gpu:4(IDX:0-1)", NodeGpus(4, None)),  # the count disagrees: indices unknown
    ],
)
def test_parse_gres_detail(text: str, expected: NodeGpus) -> None:
    assert parse_gres_detail(text) == expected


@pytest.mark.parametrize(
    ("text", "hosts"),
    [
        ("gpu-h100-01", ["gpu-h100-01"]),
        ("gpu-h100-[01-02,05]", ["gpu-h100-01", "gpu-h100-02", "gpu-h100-05"]),
        ("n[8-11]", ["n8", "n9", "n10", "n11"]),
        ("n[008-010]", ["n008", "n009", "n010"]),
        ("a1,b[1-2],c", ["a1", "b1", "b2", "c"]),
        ("r[1-2]n[1-2]", ["r1n1", "r1n2", "r2n1", "r2n2"]),
        ("gpu-[1-2]-ib", ["gpu-1-ib", "gpu-2-ib"]),
        ("", []),
    ],
)
def test_expand_hostlist(text: str, hosts: list[str]) -> None:
    assert expand_hostlist(text) == hosts


@pytest.mark.parametrize("text", ["n[1-", "n]1[", "n[[1]]", "n[a-b]", "n[3-1]", "n[1-100000000]"])
def test_expand_hostlist_refuses_bad_lists(text: str) -> None:
    with pytest.raises(ValueError):
        expand_hostlist(text)


def test_expand_ranges_steps_and_padding() -> None:
    assert expand_ranges("0-15:4") == ["0", "4", "8", "12"]
    assert expand_ranges("1,3,05-07") == ["1", "3", "05", "06", "07"]


@pytest.mark.parametrize(
    ("text", "deps", "either"),
    [
        ("", [], False),
        ("(null)", [], False),
        ("afterok:12(unfulfilled)", [Dependency("afterok", "12")], False),
        (
            "afterok:12:13,afterany:14_*(unfulfilled)",
            [
                Dependency("afterok", "12"),
                Dependency("afterok", "13"),
                Dependency("afterany", "14_*"),
            ],
            False,
        ),
        ("afterok:10_3(failed)", [Dependency("afterok", "10_3", "failed")], False),
        ("after:5+10(unfulfilled)", [Dependency("after", "5", delay=10)], False),
        ("singleton(unfulfilled)", [Dependency("singleton", "")], False),
        (
            "afterok:1(unfulfilled)?afternotok:2(unfulfilled)",
            [Dependency("afterok", "1"), Dependency("afternotok", "2")],
            True,
        ),
    ],
)
def test_parse_dependency(text: str, deps: list[Dependency], either: bool) -> None:
    assert parse_dependency(text) == (deps, either)


@pytest.mark.parametrize("text", ["afterok", "afterok:x(unfulfilled)", "AFTEROK:1", "afterok:1("])
def test_parse_dependency_refuses(text: str) -> None:
    if text == "afterok":  # a type without a job is singleton's form: read, then noted
        assert parse_dependency(text) == ([Dependency("afterok", "")], False)
        return
    with pytest.raises(ValueError):
        parse_dependency(text)
