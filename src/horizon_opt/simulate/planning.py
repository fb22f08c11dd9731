"""What a replay's planners plan on: the instance they are told, with an open end."""

from __future__ import annotations

from horizon_opt.model.compiler import compile_instance
from horizon_opt.model.instance import Instance
from horizon_opt.model.spec import InstanceSpec


def open_ended(instance: Instance, spec: InstanceSpec | None = None) -> Instance:
    """`spec` (default: the instance's) compiled with an open end, with the instance's forecast:
    what a replay's planners plan on. A loop re-plans, so the end of the horizon it replays is
    no deadline of its own: with the horizon closed, a job longer than what is left of it would
    wait, re-plan after re-plan, while GPUs it could use sit idle (FORMAT.md, "Open end")."""
    spec = spec or instance.spec
    horizon = spec.horizon.model_copy(update={"open_end": True})
    written = instance.written_slots or instance.slots
    demands = {s.index: s.demand[:written].tolist() for s in instance.services}
    return compile_instance(spec.model_copy(update={"horizon": horizon}), demands)
