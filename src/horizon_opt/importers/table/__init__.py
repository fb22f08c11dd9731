"""`import csv`: a plain table, one job a row (`importer.py` holds the columns' table)."""

from horizon_opt.importers.table.importer import import_table, read_table

__all__ = ["import_table", "read_table"]
