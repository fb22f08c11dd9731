"""`import kueue`: Kueue's Workloads (and, optionally, its LocalQueues and ClusterQueues) as an
instance.

The package's parts, bottom up: `kube.py` (the pydantic models' Kubernetes field types,
problems named by JSON path), `topology.py` (topology assignments), `workload.py` (the Workload
model), `queues.py` (the LocalQueue and ClusterQueue models), `gang.py` (a workload's pods as
one gang), `jobs_core.py`, `jobs.py`, `jobs_admitted.py` (one workload mapped), `teams.py`
(ClusterQueues as teams) and `importer.py` (the payload: running jobs' nodes, parts, the
compiler's word; its text is the mapping's table). The annotations horizon-opt reads and
writes are in `horizon_opt.schedulers.kueue`.
"""

from horizon_opt.importers.kueue.importer import GPU_RESOURCES, import_kueue, read_workloads
from horizon_opt.importers.kueue.jobs_core import kueue_priority
from horizon_opt.importers.kueue.queues import read_clusterqueues, read_localqueues
from horizon_opt.importers.kueue.teams import team_name
from horizon_opt.importers.kueue.workload import gpu_quantity

__all__ = [
    "GPU_RESOURCES",
    "gpu_quantity",
    "import_kueue",
    "kueue_priority",
    "read_clusterqueues",
    "read_localqueues",
    "read_workloads",
    "team_name",
]
