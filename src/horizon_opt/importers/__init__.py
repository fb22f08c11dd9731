"""Importers: a scheduler's queue (Slurm, Kueue, a CSV table) and a cluster file become an
instance file. Each reads its source, maps what the source has, and notes what it could not."""

from horizon_opt.importers.cluster import ClusterFile, instance_document, read_cluster
from horizon_opt.importers.result import Imported, Note

__all__ = ["ClusterFile", "Imported", "Note", "instance_document", "read_cluster"]
