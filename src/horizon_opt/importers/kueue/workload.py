"""A Kueue Workload as pydantic models: its pod sets (pods, GPUs per pod, time limit, pinned
hosts), the conditions Kueue set, and the admission (flavors, admitted pods, topology, charged
GPUs).

`Workload` is one, validated with the GPU resources to count in its context (`{"resources":
...}`; without one, `GPU_RESOURCES`): only those resources' quantities are read, as whole GPUs
(`gpu_quantity`). A malformed field is named by its JSON path
(`items[2].spec.podSets[0].count: expected an integer, got '3'`); what the importer makes of a
Workload is the table in importers/kueue/importer.py.
"""

from __future__ import annotations

import re
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, ClassVar

from pydantic import (
    Field,
    PlainValidator,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from horizon_opt.errors import InputError, Loc, Problem
from horizon_opt.importers.kueue.kube import (
    INT32,
    Flag,
    KubeModel,
    KubeObject,
    Name,
    ObjectMeta,
    Str,
    StrMap,
    Text,
    Timestamp,
    ValueMap,
    int_in,
    listed,
    needed_list,
    optional,
    required,
    what,
)
from horizon_opt.importers.kueue.topology import HOSTNAME_LEVEL, TopologyAssignment
from horizon_opt.importers.payload_model import checked, fail_at
from horizon_opt.model.spec import show

__all__ = [
    "GPU_RESOURCES",
    "Condition",
    "PodSet",
    "Workload",
    "gpu_names",
    "gpu_quantity",
    "job_hosts",
    "whole_gpus",
]

GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")
_MAX_QUANTITY = Decimal(10**9)  # more GPUs than any pod could hold: refused, not computed with
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]{1,3})?$"
)
_SUFFIX = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
    **{s: Decimal(2 ** (10 * (i + 1))) for i, s in enumerate(("Ki", "Mi", "Gi", "Ti", "Pi", "Ei"))},
}


def gpu_quantity(value: Any, path: str = "") -> int:
    """A whole number of GPUs from a Kubernetes quantity: `"8"`, `8`, `"1k"`, `"2e0"`.

    Raises InputError naming `path` when it is not a quantity, not whole, negative or huge."""
    try:
        return whole_gpus(value)
    except ValueError as exc:
        raise InputError([Problem.at(path, str(exc))]) from None


def whole_gpus(value: Any) -> int:
    """`gpu_quantity` for the models, which name the field: ValueError saying what is wrong."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise ValueError(f'expected a quantity such as "8", got {what(value)}')
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise ValueError(f"not a Kubernetes quantity: {show(value)}")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        amount = Decimal(number)
        if len(suffix) > 1 and suffix[0] in "eE":  # an exponent; a lone E is exa
            amount = amount.scaleb(int(suffix[1:]))
        else:
            amount *= _SUFFIX[suffix]
    except (InvalidOperation, ValueError):  # pragma: no cover - the pattern admits only numbers
        raise ValueError(f"not a Kubernetes quantity: {show(value)}") from None
    if amount < 0:
        raise ValueError(f"must not be negative, got {show(value)}")
    if amount > _MAX_QUANTITY:
        raise ValueError(f"more than {_MAX_QUANTITY:,} GPUs: {show(value)}")
    if amount != amount.to_integral_value():
        raise ValueError(f"expected a whole number of GPUs, got {show(value)}")
    return int(amount)


def gpu_names(info: ValidationInfo) -> tuple[str, ...]:
    """The resources counted as GPUs, from the validation context."""
    context = info.context if isinstance(info.context, dict) else {}
    return tuple(context.get("resources", GPU_RESOURCES))


def _pod_set_name(value: Any) -> str:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"expected a string, got {what(value)}")
    return value or "main"


PodSetName = Annotated[str, PlainValidator(_pod_set_name)]  # none: `main`, as Kueue names it


class Resources(KubeModel):
    """A container's resources; `gpus`: its requests of the GPU resources, or its limits
    where it requests none."""

    requests: ValueMap = Field(default_factory=dict)
    limits: ValueMap = Field(default_factory=dict)
    _gpus: int = PrivateAttr(0)

    @model_validator(mode="after")
    def _count(self, info: ValidationInfo) -> Resources:
        total = 0
        for name in gpu_names(info):
            if self.requests.get(name) is not None:
                total += checked(("requests", name), whole_gpus, self.requests[name])
            elif self.limits.get(name) is not None:
                total += checked(("limits", name), whole_gpus, self.limits[name])
        self._gpus = total
        return self

    @property
    def gpus(self) -> int:
        return self._gpus


class Container(KubeModel):
    resources: Annotated[Resources, optional] = Field(default_factory=Resources)


class PodSpec(KubeModel):
    containers: Annotated[list[Container], listed] = Field(default_factory=list)
    init_containers: Annotated[list[Container], listed] = Field(default_factory=list)
    active_deadline_seconds: Annotated[int | None, int_in(1, 2**63 - 1)] = None
    node_selector: StrMap = Field(default_factory=dict)
    affinity: Any = None  # read only for hosts it pins pods to; anything else is left alone

    @property
    def gpus(self) -> int:
        """A pod's GPUs: its containers' sum, or an init container's when more (Kubernetes'
        rule)."""
        main = sum(c.resources.gpus for c in self.containers)
        return max([main, *(c.resources.gpus for c in self.init_containers)])

    @property
    def asked(self) -> list[str]:
        """The resources its containers request or limit."""
        return [
            name
            for c in (*self.containers, *self.init_containers)
            for name in (*c.resources.requests, *c.resources.limits)
        ]

    @property
    def pinned(self) -> tuple[str, ...]:
        """The hosts a pod must run on: its nodeSelector's `kubernetes.io/hostname`, or the
        values of a required node affinity `kubernetes.io/hostname In [...]` (when every term
        says so)."""
        if HOSTNAME_LEVEL in self.node_selector:
            return (self.node_selector[HOSTNAME_LEVEL],)
        affinity = self.affinity
        node = affinity.get("nodeAffinity") if isinstance(affinity, dict) else None
        needed = node.get("requiredDuringSchedulingIgnoredDuringExecution") if node else None
        terms = needed.get("nodeSelectorTerms") if isinstance(needed, dict) else None
        hosts: list[str] = []
        for term in terms if isinstance(terms, list) else []:
            exprs = term.get("matchExpressions") if isinstance(term, dict) else None
            found = [
                e.get("values")
                for e in (exprs if isinstance(exprs, list) else [])
                if isinstance(e, dict)
                and e.get("key") == HOSTNAME_LEVEL
                and e.get("operator") == "In"
            ]
            if not found or not isinstance(found[0], list):
                return ()  # a term that allows other hosts: not pinned
            hosts += [h for h in found[0] if isinstance(h, str) and h not in hosts]
        return tuple(hosts)


class TemplateMeta(KubeModel):
    annotations: StrMap = Field(default_factory=dict)


class PodTemplate(KubeModel):
    metadata: Annotated[TemplateMeta, optional] = Field(default_factory=TemplateMeta)
    spec: Annotated[PodSpec, required]


class PodSet(KubeModel):
    name: PodSetName = "main"
    count: Annotated[int, int_in(0, INT32, needed=True)]
    template: Annotated[PodTemplate, required]

    @property
    def gpus(self) -> int:
        """GPUs per pod."""
        return self.template.spec.gpus

    @property
    def deadline(self) -> int | None:
        """activeDeadlineSeconds."""
        return self.template.spec.active_deadline_seconds

    @property
    def pinned(self) -> tuple[str, ...]:
        """Hosts its pods must run on (nodeSelector or node affinity)."""
        return self.template.spec.pinned


class WorkloadSpec(KubeModel):
    pod_sets: Annotated[list[PodSet], needed_list]
    priority: Annotated[int | None, int_in(-(2**31), INT32)] = None
    active: Flag = None
    maximum_execution_time_seconds: Annotated[int | None, int_in(0, INT32)] = None
    queue_name: Text = None

    @field_validator("pod_sets")
    @classmethod
    def _pod_sets(cls, value: list[PodSet]) -> list[PodSet]:
        """At least one, names unique."""
        if not value:
            raise ValueError("expected at least one pod set")
        names = [p.name for p in value]
        if len(set(names)) != len(names):
            raise ValueError(f"pod set names are not unique: {show(names)}")
        return value


class Condition(KubeModel):
    type: Name
    status: Name
    reason: Str = ""
    message: Str = ""
    last_transition_time: Text = None  # read (as a time) only where it is used

    @field_validator("message")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @property
    def true(self) -> bool:
        return self.status == "True"

    def why(self) -> str:
        text = self.reason or "no reason given"
        return f"{text}: {self.message}" if self.message else text


class PodSetAssignment(KubeModel):
    """One pod set's admission; `usage`: the GPUs its quota was charged (resourceUsage)."""

    name: PodSetName = "main"
    flavors: StrMap = Field(default_factory=dict)
    count: Annotated[int | None, int_in(0, INT32)] = None
    resource_usage: ValueMap = Field(default_factory=dict)
    topology_assignment: TopologyAssignment | None = None
    _usage: int | None = PrivateAttr(None)

    @model_validator(mode="after")
    def _charged(self, info: ValidationInfo) -> PodSetAssignment:
        usage = self.resource_usage
        charged = [
            checked(("resourceUsage", r), whole_gpus, usage[r])
            for r in gpu_names(info)
            if r in usage
        ]
        self._usage = sum(charged) if charged else None
        return self

    @property
    def usage(self) -> int | None:
        return self._usage

    @property
    def hosts(self) -> dict[str, int] | None:
        """Its topology assignment by hostname: host -> pods."""
        topology = self.topology_assignment
        return topology.hosts if topology is not None else None


class Admission(KubeModel):
    cluster_queue: Text = None
    pod_set_assignments: Annotated[list[PodSetAssignment], needed_list]


class WorkloadStatus(KubeModel):
    accumulated_past_exexcution_time_seconds: Annotated[int | None, int_in(0, INT32)] = None
    accumulated_past_execution_time_seconds: Annotated[int | None, int_in(0, INT32)] = None
    conditions: Annotated[list[Condition], listed] = Field(default_factory=list)
    admission: Admission | None = None  # None: Kueue has not reserved quota


class WorkloadMeta(ObjectMeta):
    creation_timestamp: Timestamp = None
    annotations: StrMap = Field(default_factory=dict)
    deletion_timestamp: Text = None


class Workload(KubeObject):
    """One Workload as read; importers/kueue/importer.py's table says what becomes of each
    field. Its annotations are the Workload's, then its pod sets' (the first that has a key)."""

    kind_name: ClassVar[str] = "Workload"
    metadata: Annotated[WorkloadMeta, required]
    spec: Annotated[WorkloadSpec, required]
    status: Annotated[WorkloadStatus, optional] = Field(default_factory=WorkloadStatus)
    _annotations: dict[str, str] = PrivateAttr(default_factory=dict)
    _annotation_locs: dict[str, Loc] = PrivateAttr(default_factory=dict)
    _conditions: dict[str, int] = PrivateAttr(default_factory=dict)  # type -> the last of it
    _uncounted: tuple[str, ...] = PrivateAttr(())

    @model_validator(mode="after")
    def _read(self, info: ValidationInfo) -> Workload:
        """Pod set assignments name pod sets; the annotations, conditions and resources that
        are not counted, gathered."""
        names = [p.name for p in self.spec.pod_sets]
        admission = self.status.admission
        for a, asg in enumerate(admission.pod_set_assignments if admission else []):
            if asg.name not in names:
                where = ("status", "admission", "podSetAssignments", a, "name")
                fail_at(where, f"no pod set {asg.name!r} in spec.podSets", asg.name)
        locs: dict[str, Loc] = {
            k: ("metadata", "annotations", k) for k in self.metadata.annotations
        }
        values = dict(self.metadata.annotations)
        for k, ps in enumerate(self.spec.pod_sets):
            for key, value in ps.template.metadata.annotations.items():
                if key not in values:
                    values[key] = value
                    locs[key] = ("spec", "podSets", k, "template", "metadata", "annotations", key)
        self._annotations, self._annotation_locs = values, locs
        self._conditions = {c.type: k for k, c in enumerate(self.status.conditions)}
        resources = gpu_names(info)
        self._uncounted = tuple(
            sorted(
                {
                    name
                    for ps in self.spec.pod_sets
                    for name in ps.template.spec.asked
                    if name not in resources
                    and "/" in name
                    and ("gpu" in name.lower() or "/mig-" in name.lower())
                }
            )
        )
        return self

    @property
    def namespace(self) -> str | None:
        return self.metadata.namespace or None

    @property
    def id(self) -> str:
        return f"{self.namespace or 'default'}/{self.metadata.name}"

    @property
    def queue(self) -> str | None:
        return self.spec.queue_name or None

    @property
    def created(self) -> datetime | None:
        return self.metadata.creation_timestamp

    @property
    def deleting(self) -> str | None:
        """metadata.deletionTimestamp: being deleted."""
        return self.metadata.deletion_timestamp

    @property
    def priority(self) -> int:
        return self.spec.priority or 0

    @property
    def active(self) -> bool:
        return self.spec.active is not False

    @property
    def max_exec(self) -> int | None:
        return self.spec.maximum_execution_time_seconds

    @property
    def accumulated(self) -> int:
        """Admitted seconds so far (v1beta1 spells the field `Exexcution`)."""
        status = self.status
        return (
            status.accumulated_past_execution_time_seconds
            or status.accumulated_past_exexcution_time_seconds
            or 0
        )

    @property
    def podsets(self) -> list[PodSet]:
        return self.spec.pod_sets

    @property
    def annotations(self) -> dict[str, str]:
        return self._annotations

    def annotation_loc(self, key: str) -> Loc:
        """Where the annotation `key` it has is, in the payload."""
        return (*self.loc, *self._annotation_locs[key])

    @property
    def uncounted(self) -> tuple[str, ...]:
        """GPU-like resources it asks for that are not counted."""
        return self._uncounted

    @property
    def cluster_queue(self) -> str | None:
        """status.admission.clusterQueue: the one that admitted it."""
        admission = self.status.admission
        return (admission.cluster_queue or None) if admission is not None else None

    @property
    def assignments(self) -> dict[str, PodSetAssignment] | None:
        """Pod set assignments by pod set name; None: Kueue has not reserved quota."""
        admission = self.status.admission
        if admission is None:
            return None
        return {a.name: a for a in admission.pod_set_assignments}

    def condition(self, kind: str) -> Condition | None:
        k = self._conditions.get(kind)
        return None if k is None else self.status.conditions[k]

    def condition_loc(self, kind: str) -> Loc:
        """Where the condition of `kind` it has is, in the payload."""
        return (*self.loc, "status", "conditions", self._conditions[kind])

    def is_true(self, kind: str) -> bool:
        cond = self.condition(kind)
        return cond is not None and cond.true

    def counts(self) -> dict[str, int]:
        """Pods of each pod set: as admitted, when Kueue says how many."""
        out = {}
        for ps in self.podsets:
            given = (self.assignments or {}).get(ps.name)
            out[ps.name] = (
                given.count if given is not None and given.count is not None else ps.count
            )
        return out


def job_hosts(w: Workload) -> dict[str, int] | None:
    """GPUs per host from the topology assignments of every GPU pod set (or the one host its
    pods are pinned to), or None."""
    out: dict[str, int] = {}
    counts = w.counts()
    for ps in w.podsets:
        if not ps.gpus or not counts[ps.name]:
            continue
        asg = (w.assignments or {}).get(ps.name)
        hosts = asg.hosts if asg is not None else None
        if hosts is None and len(ps.pinned) == 1:  # every pod pinned to one host
            hosts = {ps.pinned[0]: counts[ps.name]}
        if hosts is None:
            return None
        for host, pods in hosts.items():
            out[host] = out.get(host, 0) + pods * ps.gpus
    return out or None
