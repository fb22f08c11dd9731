"""The re-planning service behind `horizon-opt run`: config, state folder, cycle, metrics."""
