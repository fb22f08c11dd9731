"""How late promised starts come true, as shares of how far ahead they were made: the P50 and
P90 a new promise is given, by the replay's promise book and by the service's ledger alike.

A promise made `lead` ahead of its predicted start that came true `late` after it has lateness
`late / lead`; one still waiting past its prediction has at least its lateness so far. A new
promise made `lead` ahead gets P50 = predicted + median lateness x lead and P90 = predicted +
90th percentile x lead. Until `MIN_RESOLVED` promises have resolved or gone overdue, P50 is the
prediction and P90 is as far past it as the prediction is ahead (lateness 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_RESOLVED = 10
P90 = 0.9


def lateness_shares(lateness: Sequence[float]) -> tuple[float, float]:
    """(P50, P90) of the lateness shares known, or (0, 1) while fewer than `MIN_RESOLVED`."""
    if len(lateness) < MIN_RESOLVED:
        return 0.0, 1.0
    p50, p90 = (float(np.quantile(lateness, q)) for q in (0.5, P90))
    return p50, max(p50, p90)
