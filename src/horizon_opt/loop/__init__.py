"""Re-planning over time: the cluster's state at `now` (`state`, `snapshot`), re-planning from it
(`replan`), and how late promised starts come true (`lateness`)."""
