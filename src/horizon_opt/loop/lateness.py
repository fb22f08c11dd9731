"""How late promised starts come true, as shares of how far ahead they were made: the P50 and
P90 a new promise is given, by the replay's promise book and by the service's ledger alike.

A promise made `lead` ahead of its predicted start that came true `late` after it has lateness
`late / lead`; one still waiting past its prediction counts with its lateness so far (a lower
bound); one not yet due does not count. A new promise made `lead` ahead gets P50 = predicted +
median lateness x lead and P90 = predicted + 90th percentile x lead. Until `MIN_RESOLVED`
promises have come true or gone overdue, P50 is the prediction and P90 is as far past it as the
prediction is ahead (lateness 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_RESOLVED = 10
P90 = 0.9


def lateness_shares(came_true: Sequence[float], waiting: Sequence[float]) -> tuple[float, float]:
    """(P50, P90) of lateness from the promises that `came_true` and the lateness so far of
    those still `waiting` (the overdue ones count); (0, 1) while fewer than `MIN_RESOLVED`."""
    known = [*came_true, *(w for w in waiting if w > 0)]
    if len(known) < MIN_RESOLVED:
        return 0.0, 1.0
    p50, p90 = (float(np.quantile(known, q)) for q in (0.5, P90))
    return p50, p90
