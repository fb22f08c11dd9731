"""A plan and its judges: the plan file (`plan`), the independent checker, the metrics, what
changed between two plans, and the inference layouts a plan holds. Imports the model, never a
solver."""
