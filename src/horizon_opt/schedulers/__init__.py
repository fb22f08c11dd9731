"""What horizon-opt and a scheduler both speak, whichever way the data goes: Slurm's notations
(`slurm.py`: hostlists, GRES, dependencies) and the names horizon-opt reads and writes on Kueue's
objects (`kueue.py`: annotations, API versions). The importers read them from the queue and the
actions write them back; keeping them here, apart from both, lets neither know the other."""
