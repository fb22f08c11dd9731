"""`import slurm`: Slurm's queue (`squeue --json`) and history (`sacct --json`) as an instance.

The package's parts, bottom up: `payload.py` (squeue or sacct, which data_parser), `reader.py`
(squeue's pydantic models, Slurm's number types; problems named by JSON path), `history.py`
(sacct's models: run-time estimates, finished jobs' outcomes), `jobs_core.py`, `jobs.py`,
`jobs_running.py` (one job mapped), `teams.py` (accounts as teams) and `importer.py` (the
payload's records, then all jobs together; its text is the mapping's table). Slurm's string
notations are in `horizon_opt.schedulers.slurm`.
"""

from horizon_opt.importers.slurm.history import (
    MIN_HISTORY,
    History,
    estimate_minutes,
    read_history,
)
from horizon_opt.importers.slurm.importer import MAX_ARRAY_TASKS, import_slurm, scale_priority

__all__ = [
    "MAX_ARRAY_TASKS",
    "MIN_HISTORY",
    "History",
    "estimate_minutes",
    "import_slurm",
    "read_history",
    "scale_priority",
]
