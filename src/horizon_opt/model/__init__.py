"""The problem: the instance file as written (`spec`), read (`load`) and compiled (`compiler`) into
the immutable `Instance` every other layer reads, with the rules that belong to it (windows, teams,
packing, the open end) and the warnings about it (`validate`). Imports nothing above it."""
