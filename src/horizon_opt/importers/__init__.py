"""Importers: a scheduler's queue (Slurm, Kueue, a CSV table) and a cluster file become an
instance file. Each reads its source, maps what the source has, and notes what it could not.

One package per source (`slurm/`, `kueue/`, `table/`) over a core they share: the cluster file
(`cluster.py`), the horizon's clock (`clock.py`), the job drafts (`draft.py`), running jobs'
parts and GPU indices (`parts.py`, `result.py`), and what an import returns (`Imported`, `Note`).
A problem in the input is named by its field path (`errors.Problem`), and so is a compile problem
of the instance an importer wrote, which it then says against its own input."""

from horizon_opt.importers.cluster import ClusterFile, instance_document, read_cluster
from horizon_opt.importers.result import Imported, Note

__all__ = ["ClusterFile", "Imported", "Note", "instance_document", "read_cluster"]
