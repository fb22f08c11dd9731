"""How late promised starts come true, as shares of how far ahead they were made: the P50 and
P90 a new promise is given, by the replay's promise book and by the service's ledger alike.

A promise made `lead` ahead of its predicted start that came true `late` after it has lateness
`late / lead`; one still waiting past its prediction counts with its lateness so far (a lower
bound); one not yet due does not count. A new promise made `lead` ahead gets P50 = predicted +
median lateness x lead and P90 = predicted + 90th percentile x lead. Big gangs wait for many
GPUs to free at once and slip much further than small jobs, so a promise learns from the
promises of its own size class (`size_class`) once `MIN_RESOLVED` of them count, and from all
before that. Until `MIN_RESOLVED` promises count at all, P50 is the prediction and P90 is as far
past it as the prediction is ahead (lateness 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

MIN_RESOLVED = 10
P90 = 0.9
STEP = 0.02  # how far one resolved promise moves the P90's quantile
SIZE_CLASSES = ((1, "1 GPU"), (4, "2-4 GPUs"), (16, "5-16 GPUs"))
LARGEST = "over 16 GPUs"

# (size class, lateness) of one promise
Lateness = tuple[str, float]


def size_class(gpus: int) -> str:
    """The size class a promise of a `gpus`-GPU job learns its interval from."""
    return next((name for most, name in SIZE_CLASSES if gpus <= most), LARGEST)


def calibrated_level(missed: Sequence[bool]) -> float:
    """The quantile a new P90 is read at: 0.9, moved up by every resolved promise its P90
    missed and down by every one it covered, so that the share covered comes to 90% even when
    the lateness of the past understates what is coming (adaptive conformal inference, Gibbs
    and Candes 2021)."""
    drift = sum((1.0 if m else 0.0) - (1.0 - P90) for m in missed)
    return min(max(P90 + STEP * drift, 0.5), 1.0)


def lateness_shares(
    came_true: Sequence[Lateness], waiting: Sequence[Lateness], klass: str = "", level: float = P90
) -> tuple[float, float]:
    """(P50, P90) of lateness for a promise of size class `klass`, from the promises that
    `came_true` and the lateness so far of those still `waiting` (the overdue ones count): of
    its class once `MIN_RESOLVED` of them count, else of all; (0, 1) while fewer than that."""
    known = [*came_true, *(w for w in waiting if w[1] > 0)]
    own = [late for c, late in known if c == klass]
    pool = own if len(own) >= MIN_RESOLVED else [late for _, late in known]
    if len(pool) < MIN_RESOLVED:
        return 0.0, 1.0
    p50, p90 = (float(np.quantile(pool, q)) for q in (0.5, level))
    return p50, p90
