"""A fake `kubectl` in front of a fake Kueue, for end-to-end tests of `horizon-opt run`.

The world is a JSON file (FAKE_KUEUE_STATE): a clock (epoch seconds), the nodes of each
ResourceFlavor, one ClusterQueue object and the Workloads, both as the API server holds them
(kueue.x-k8s.io/v1beta1), each Workload's real run time beside it (`run_minutes`, by
`namespace/name`), and a log of every command received. What it answers:

- `kubectl get workloads -A -o json`: a `List` of the workloads created by the clock and not
  finished, pending or admitted (deactivated ones too: they still exist);
- `kubectl get clusterqueue NAME -o json`: the ClusterQueue;
- `kubectl patch clusterqueue NAME --type=json -p JSON`: a JSON Patch (RFC 6902) of `test`
  and `replace` operations, all or nothing; a failing `test` or a path that is not there exits
  1, as the API server answers 422;
- `kubectl patch workload NAME -n NS --type=merge -p JSON`: a merge patch (RFC 7386) of
  `metadata.annotations` and `spec.active`. Kueue's validating webhook does not refuse
  `spec.active: false` on an admitted workload (pkg/webhooks/workload_webhook.go checks pod sets,
  admission and reclaimable pods, not `active`): Kueue evicts it (condition `Evicted`, reason
  `Deactivated`). So the fake applies it, evicts the workload and records it in `evicted`; every
  patch of a workload that holds quota is also recorded in `patched_admitted`, for the test to
  check that horizon-opt sends none.

`tick(state, minutes)` advances the clock: admitted workloads end after their run time
(condition `Finished`), then pending, active workloads are admitted in priority order (then
creation order; one that does not fit does not block the next, as BestEffortFIFO) on the first
flavor of the ClusterQueue's GPU resource group whose `nominalQuota` leaves room for them: the
GPUs admitted workloads hold per flavor never exceed it, Kueue's quota check without a cohort.

Run as `python tests/fake/kueue.py kubectl ARGS...` (the test writes a `kubectl` wrapper onto
PATH) or `python tests/fake/kueue.py tick MINUTES`.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

GPU = "nvidia.com/gpu"
GROUP = "kueue.x-k8s.io"


class Refused(Exception):
    """What the API server (or kubectl) answers with a non-zero exit."""


def _load() -> tuple[Path, dict[str, Any]]:
    path = Path(os.environ["FAKE_KUEUE_STATE"])
    return path, json.loads(path.read_text())


def _save(path: Path, state: dict[str, Any]) -> None:
    path.write_text(json.dumps(state, indent=1))


def iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _epoch(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp())


def wid(workload: dict[str, Any]) -> str:
    meta = workload["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def condition(workload: dict[str, Any], kind: str) -> dict[str, Any] | None:
    conditions: list[dict[str, Any]] = workload.get("status", {}).get("conditions", [])
    return next((c for c in conditions if c["type"] == kind), None)


def is_true(workload: dict[str, Any], kind: str) -> bool:
    c = condition(workload, kind)
    return c is not None and c["status"] == "True"


def is_admitted(workload: dict[str, Any]) -> bool:
    """Holds quota and runs: admitted, not finished, not evicted."""
    return (
        is_true(workload, "Admitted")
        and not is_true(workload, "Finished")
        and not is_true(workload, "Evicted")
    )


def is_active(workload: dict[str, Any]) -> bool:
    return workload["spec"].get("active", True) is not False


def gpus(workload: dict[str, Any]) -> int:
    """GPUs of all its pods (one container a pod here)."""
    total = 0
    for ps in workload["spec"]["podSets"]:
        per_pod = sum(
            int(c.get("resources", {}).get("requests", {}).get(GPU, 0))
            for c in ps["template"]["spec"]["containers"]
        )
        total += ps["count"] * per_pod
    return total


def admitted_flavor(workload: dict[str, Any]) -> str:
    return str(workload["status"]["admission"]["podSetAssignments"][0]["flavors"][GPU])


def _set_condition(
    workload: dict[str, Any], kind: str, status: str, reason: str, message: str, now: int
) -> None:
    conditions = workload.setdefault("status", {}).setdefault("conditions", [])
    new = {
        "lastTransitionTime": iso(now),
        "message": message,
        "observedGeneration": workload["metadata"].get("generation", 1),
        "reason": reason,
        "status": status,
        "type": kind,
    }
    for i, c in enumerate(conditions):
        if c["type"] == kind:
            if c["status"] == status:  # no transition: the time stays
                new["lastTransitionTime"] = c["lastTransitionTime"]
            conditions[i] = new
            return
    conditions.append(new)


# ---- the ClusterQueue


def gpu_flavors(cq: dict[str, Any]) -> list[tuple[str, int]]:
    """(flavor, nominalQuota of GPUs), in the order Kueue tries them."""
    out = []
    for group in cq["spec"]["resourceGroups"]:
        if GPU not in group["coveredResources"]:
            continue
        for flavor in group["flavors"]:
            for res in flavor["resources"]:
                if res["name"] == GPU:
                    out.append((flavor["name"], quantity(res["nominalQuota"])))
    return out


def quantity(value: Any) -> int:
    """A whole-number quantity (`"24"`, `24`); Refused otherwise, as the CRD's pattern does."""
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise Refused(f"invalid quantity {value!r}")
    if not re.fullmatch(r"\+?[0-9]+", str(value)):
        raise Refused(f"quantities must match the regular expression, got {value!r}")
    return int(value)


def quota(state: dict[str, Any], flavor: str) -> int:
    return dict(gpu_flavors(state["clusterqueue"]))[flavor]


def flavor_gpus(state: dict[str, Any], flavor: str) -> int:
    """GPUs of the nodes of `flavor` (its ResourceFlavor's nodeLabels select them)."""
    return sum(node["gpus"] for node in state["nodes"][flavor].values())


def used(state: dict[str, Any]) -> dict[str, int]:
    """GPUs the admitted workloads hold, per flavor."""
    out: dict[str, int] = {}
    for w in state["workloads"]:
        if is_admitted(w):
            f = admitted_flavor(w)
            out[f] = out.get(f, 0) + gpus(w)
    return out


# ---- kubectl


def visible(state: dict[str, Any]) -> list[dict[str, Any]]:
    """The workloads `kubectl get` lists: created by now, not finished."""
    return [
        w
        for w in state["workloads"]
        if _epoch(w["metadata"]["creationTimestamp"]) <= state["clock"]
        and not is_true(w, "Finished")
    ]


def _options(args: list[str]) -> tuple[list[str], dict[str, str]]:
    """Positional arguments and options (`-n X`, `--namespace=X`, `-A`, `-o json`, ...)."""
    short = {"-n": "namespace", "-o": "output", "-p": "patch", "-A": "all-namespaces"}
    flags = {"all-namespaces"}
    positional: list[str] = []
    options: dict[str, str] = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a.startswith("--") and "=" in a:
            key, _, value = a[2:].partition("=")
            options[key] = value
        elif a in short or a.startswith("--"):
            key = short.get(a, a[2:])
            if key in flags:
                options[key] = "true"
            else:
                if i + 1 >= len(args):
                    raise Refused(f"error: flag needs an argument: {a}")
                i += 1
                options[key] = args[i]
        else:
            positional.append(a)
        i += 1
    return positional, options


def kubectl(state: dict[str, Any], args: list[str]) -> str:
    """The output of `kubectl ARGS` on the world (changed in place); Refused when it fails."""
    state["log"].append(["kubectl", *args])
    positional, options = _options(args)
    verb, rest = (positional[0], positional[1:]) if positional else ("", [])
    kind = _kind(rest[0]) if rest else ""
    if verb == "get" and kind == "workload" and len(rest) == 1:
        if options.get("all-namespaces") != "true" or options.get("output") != "json":
            raise Refused("fake kubectl: only `get workloads -A -o json` is answered")
        items = [copy.deepcopy(w) for w in visible(state)]
        return json.dumps(
            {
                "apiVersion": "v1",
                "items": items,
                "kind": "List",
                "metadata": {"resourceVersion": ""},
            }
        )
    if verb == "get" and kind == "clusterqueue" and len(rest) == 2:
        if options.get("output") != "json":
            raise Refused("fake kubectl: only `get clusterqueue NAME -o json` is answered")
        return json.dumps(_clusterqueue(state, rest[1]))
    if verb == "patch" and kind == "clusterqueue" and len(rest) == 2:
        if options.get("type") != "json" or "patch" not in options:
            raise Refused("fake kubectl: clusterqueues are patched with --type=json -p JSON")
        cq = _clusterqueue(state, rest[1])
        changed = json_patch(cq, _patch_text(options["patch"]))
        gpu_flavors(changed)  # the CRD's validation: quantities
        return _patched(state, "clusterqueue", cq, changed, rest[1])
    if verb == "patch" and kind == "workload" and len(rest) == 2:
        if options.get("type") != "merge" or "patch" not in options:
            raise Refused("fake kubectl: workloads are patched with --type=merge -p JSON")
        namespace = options.get("namespace", "default")
        return _patch_workload(state, rest[1], namespace, _patch_text(options["patch"]), args)
    raise Refused(f"fake kubectl: unexpected command {args!r}")


def _kind(resource: str) -> str:
    """`workloads`, `workload.kueue.x-k8s.io`, `wl` -> workload; likewise clusterqueue (`cq`)."""
    name = resource.split(".", 1)[0].lower()
    short = {"workloads": "workload", "wl": "workload", "clusterqueues": "clusterqueue"}
    return short.get(name, "clusterqueue" if name == "cq" else name)


def _clusterqueue(state: dict[str, Any], name: str) -> dict[str, Any]:
    cq: dict[str, Any] = state["clusterqueue"]
    if cq["metadata"]["name"] != name:
        raise Refused(f'Error from server (NotFound): clusterqueues.{GROUP} "{name}" not found')
    return cq


def _patch_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise Refused(f"error: unable to parse {text!r}: {exc}") from None


def _patched(
    state: dict[str, Any], kind: str, old: dict[str, Any], new: dict[str, Any], name: str
) -> str:
    if new == old:
        return f"{kind}.{GROUP}/{name} patched (no change)\n"
    meta = new["metadata"]
    meta["resourceVersion"] = str(int(meta.get("resourceVersion", "1")) + 1)
    if new.get("spec") != old.get("spec"):
        meta["generation"] = int(meta.get("generation", 1)) + 1
    old.clear()
    old.update(new)
    return f"{kind}.{GROUP}/{name} patched\n"


def _pointer(doc: Any, path: str) -> tuple[Any, str | int]:
    """The container of the JSON Pointer's target and its key; Refused when it is not there."""
    if not path.startswith("/"):
        raise Refused(f"invalid JSON Pointer {path!r}")
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]
    node = doc
    for part in parts[:-1]:
        node = _step(node, part, path)
    last = parts[-1]
    if isinstance(node, list):
        if not last.isdigit() or int(last) >= len(node):
            raise Refused(f"path {path!r}: no such element")
        return node, int(last)
    if not isinstance(node, dict) or last not in node:
        raise Refused(f"path {path!r}: no such member")
    return node, last


def _step(node: Any, part: str, path: str) -> Any:
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    if isinstance(node, dict) and part in node:
        return node[part]
    raise Refused(f"path {path!r}: no such element")


def json_patch(doc: dict[str, Any], ops: Any) -> dict[str, Any]:
    """`doc` after the operations (`test`, `replace`), all or nothing; Refused as the API
    server's 422 when one fails."""
    if not isinstance(ops, list):
        raise Refused("The request is invalid: a JSON patch is a list of operations")
    out = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "path" not in op or "value" not in op:
            raise Refused(f"The request is invalid: malformed operation {op!r}")
        try:
            node, key = _pointer(out, op["path"])
        except Refused as exc:
            raise Refused(
                f"The request is invalid: the server rejected our request due to an error in our "
                f"request ({exc})"
            ) from None
        if op.get("op") == "test":
            if node[key] != op["value"]:
                raise Refused(
                    "The request is invalid: the server rejected our request due to an error in "
                    f"our request (testing value {op['path']} failed)"
                )
        elif op.get("op") == "replace":
            node[key] = copy.deepcopy(op["value"])
        else:
            raise Refused(f"fake kubectl: JSON patch operation {op.get('op')!r} is not modelled")
    return out


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _patch_workload(
    state: dict[str, Any], name: str, namespace: str, patch: Any, args: list[str]
) -> str:
    found = [
        w
        for w in state["workloads"]
        if w["metadata"]["name"] == name
        and w["metadata"]["namespace"] == namespace
        and _epoch(w["metadata"]["creationTimestamp"]) <= state["clock"]
    ]
    if not found:
        raise Refused(f'Error from server (NotFound): workloads.{GROUP} "{name}" not found')
    w = found[0]
    if not isinstance(patch, dict):
        raise Refused("error: a merge patch is a JSON object")
    allowed = {"metadata": {"annotations"}, "spec": {"active"}}
    for top, value in patch.items():
        inner = set(value) if isinstance(value, dict) else {"(the whole object)"}
        if top not in allowed or inner - allowed[top]:
            raise Refused(f"fake kubectl: a merge patch of {top}.{sorted(inner)} is not modelled")
    if is_true(w, "QuotaReserved") and not is_true(w, "Finished"):
        state["patched_admitted"].append(["kubectl", *args])
    new = merge_patch(w, patch)
    if new["metadata"].get("annotations") == {}:
        del new["metadata"]["annotations"]  # the API server drops an empty map
    if not isinstance(new["spec"].get("active", True), bool):
        raise Refused("The Workload is invalid: spec.active: must be a boolean")
    out = _patched(state, "workload", w, new, name)
    if is_admitted(w) and not is_active(w):  # Kueue evicts a deactivated workload
        now = state["clock"]
        state["evicted"].append(wid(w))
        _set_condition(w, "Evicted", "True", "Deactivated", "The workload is deactivated", now)
        _set_condition(w, "QuotaReserved", "False", "Pending", "The workload is deactivated", now)
        _set_condition(
            w, "Admitted", "False", "NoReservation", "The workload has no reservation", now
        )
        w["status"].pop("admission", None)
    return out


# ---- time


def tick(state: dict[str, Any], minutes: int) -> None:
    """Advance the clock: admitted workloads that reach their run time finish, then pending,
    active workloads are admitted in priority order where their flavor's quota leaves room."""
    state["clock"] += 60 * minutes
    now = state["clock"]
    for w in state["workloads"]:
        if not is_admitted(w):
            continue
        admitted = condition(w, "Admitted")
        assert admitted is not None
        start = _epoch(admitted["lastTransitionTime"])
        if start + 60 * state["run_minutes"][wid(w)] <= now:
            _set_condition(w, "Finished", "True", "Succeeded", "Job finished successfully", now)
    taken = used(state)
    pending = [
        w
        for w in state["workloads"]
        if _epoch(w["metadata"]["creationTimestamp"]) <= now
        and not is_admitted(w)
        and not is_true(w, "Finished")
        and is_active(w)
    ]
    pending.sort(key=lambda w: (-w["spec"].get("priority", 0), w["metadata"]["creationTimestamp"]))
    for w in pending:
        need = gpus(w)
        flavor = next(
            (f for f, q in gpu_flavors(state["clusterqueue"]) if taken.get(f, 0) + need <= q),
            None,
        )
        if flavor is None:
            message = (
                f"couldn't assign flavors to pod set {w['spec']['podSets'][0]['name']}: "
                f"insufficient unused quota for {GPU}"
            )
            _set_condition(w, "QuotaReserved", "False", "Pending", message, now)
            continue
        admit(state, w, flavor, now)
        taken[flavor] = taken.get(flavor, 0) + need


def admit(state: dict[str, Any], w: dict[str, Any], flavor: str, now: int) -> None:
    """Admit `w` on `flavor` at `now`, as Kueue writes it (status.admission, conditions)."""
    cq = state["clusterqueue"]["metadata"]["name"]
    assignments = []
    for ps in w["spec"]["podSets"]:
        requests = ps["template"]["spec"]["containers"][0]["resources"]["requests"]
        assignments.append(
            {
                "name": ps["name"],
                "count": ps["count"],
                "flavors": {r: (flavor if r == GPU else "default-flavor") for r in requests},
                "resourceUsage": {r: _times(v, ps["count"]) for r, v in requests.items()},
            }
        )
    w.setdefault("status", {})["admission"] = {
        "clusterQueue": cq,
        "podSetAssignments": assignments,
    }
    for kind in ("Evicted", "Requeued"):
        if condition(w, kind) is not None:
            _set_condition(w, kind, "False", "QuotaReserved", "Previously evicted", now)
    _set_condition(w, "QuotaReserved", "True", "QuotaReserved", f"Quota reserved in {cq}", now)
    _set_condition(w, "Admitted", "True", "Admitted", "The workload is admitted", now)


def _times(value: str, count: int) -> str:
    match = re.fullmatch(r"([0-9]+)(.*)", str(value))
    assert match is not None
    return f"{int(match.group(1)) * count}{match.group(2)}"


def main(argv: list[str]) -> int:
    path, state = _load()
    command, args = argv[0], argv[1:]
    if command == "tick":
        tick(state, int(args[0]))
        _save(path, state)
        return 0
    if command == "kubectl":
        try:
            out = kubectl(state, args)
        except Refused as exc:
            sys.stderr.write(f"{exc}\n")
            return 1
        finally:
            _save(path, state)
        sys.stdout.write(out)
        return 0
    raise SystemExit(f"fake kueue: unknown command {command}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
