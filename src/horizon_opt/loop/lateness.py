"""How late promised starts come true, as shares of how far ahead they were made: the P50 and
P90 a new promise is given, by the replay's promise book and by the service's ledger alike.

A promise made `lead` ahead of its predicted start that came true `late` after it has lateness
`late / lead`. A promise still waiting has only a lower bound, its lateness so far (negative
before its start): counting it as if it had come true then would favour the promises that came
true early, and the intervals would cover too little. So the shares are Kaplan-Meier quantiles,
the waiting promises right-censored at their lateness so far. A new promise made `lead` ahead
gets P50 = predicted + median share x lead and P90 = predicted + 90th percentile x lead. A
quantile the data do not reach (too many still waiting) is the largest lateness seen. Until
`MIN_RESOLVED` promises have come true or gone overdue, P50 is the prediction and P90 is as far
past it as the prediction is ahead (lateness 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_RESOLVED = 10
P90 = 0.9


def lateness_shares(came_true: Sequence[float], waiting: Sequence[float]) -> tuple[float, float]:
    """(P50, P90) of lateness from the promises that `came_true` and the lateness so far of
    those still `waiting`; (0, 1) while fewer than `MIN_RESOLVED` came true or are overdue."""
    if len(came_true) + sum(w > 0 for w in waiting) < MIN_RESOLVED:
        return 0.0, 1.0
    p50, p90 = _kaplan_meier_quantiles(np.asarray(came_true), np.asarray(waiting), (0.5, P90))
    return p50, max(p50, p90)


def _kaplan_meier_quantiles(
    events: np.ndarray, censored: np.ndarray, qs: Sequence[float]
) -> list[float]:
    """The smallest lateness by which a share `q` of promises has come true, by the
    product-limit estimate (a promise censored at `c` is still at risk at `c`)."""
    everything = np.concatenate([events, censored])
    largest = float(everything.max()) if everything.size else 0.0
    out: list[float] = []
    if events.size == 0:
        return [largest for _ in qs]
    times, deaths = np.unique(events, return_counts=True)
    at_risk = np.array(
        [(events >= t).sum() + (censored >= t).sum() for t in times], dtype=np.float64
    )
    came = 1.0 - np.cumprod(1.0 - deaths / at_risk)  # share come true by each time
    for q in qs:
        reached = np.flatnonzero(came >= q - 1e-12)
        out.append(float(times[reached[0]]) if reached.size else largest)
    return out
