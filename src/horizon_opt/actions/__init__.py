"""The plan as the commands a scheduler takes: Slurm reservations and job hints, Kueue quotas
and workload holds, only for what changed since the last applied cycle. Nothing is executed:
`Actions.to_script()` and `Actions.to_json()` are for review and for a service to apply."""

from horizon_opt.actions.core import (
    ACTIONS_FORMAT,
    Action,
    Actions,
    Desired,
    Render,
    changes,
    parse_desired,
    read_desired,
)
from horizon_opt.actions.kueue import HELD_ANNOTATION, KueueOptions, kueue_actions, quota_path
from horizon_opt.actions.slurm import RESERVATION_FLAGS, SlurmOptions, slurm_actions

__all__ = [
    "ACTIONS_FORMAT",
    "HELD_ANNOTATION",
    "RESERVATION_FLAGS",
    "Action",
    "Actions",
    "Desired",
    "KueueOptions",
    "Render",
    "SlurmOptions",
    "changes",
    "kueue_actions",
    "parse_desired",
    "quota_path",
    "read_desired",
    "slurm_actions",
]
