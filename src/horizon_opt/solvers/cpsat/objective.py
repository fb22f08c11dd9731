"""How pwo and the ends of work become CP-SAT's integer objective, and how its values and bounds
read back as value units.

Job values become integer units (`value_scale`, `value_units`), each job's end slot a weight
(`end_weights`), and a `Weighing` sets what one unit of value is worth against one weighted end
slot: far more than every end together (a tie-break, `SearchParams.end_discount` 0), or a rate
(`end_rate`), so that a plan may give up value to end valuable work sooner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from horizon_opt.model.instance import Instance
from horizon_opt.solvers.assemble import Placement

MAX_OBJECTIVE = 2**60  # CP-SAT's objective and its bounds must fit 64-bit integers


def value_scale(instance: Instance) -> float:
    """The power of ten that turns job values into integer objective units.

    The smallest (<= 10^6) that makes every value an integer; lowered, below 1 if need be, while
    the largest objective (every unit times the end-time tie-break weight) could overflow
    CP-SAT's 64-bit integers. Units are rounded up, so CP-SAT's bounds stay valid either way.
    """
    values = [j.value for j in instance.jobs]
    values += [j.promise.bonus for j in instance.jobs if j.promise is not None]
    scale: float = 10**6
    for exact in (1, 10, 100, 1_000, 10_000, 100_000):
        if all(abs(v * exact - round(v * exact)) < 1e-6 for v in values):
            scale = exact
            break
    weight = 1 + END_WEIGHT_STEPS * len(instance.jobs) * instance.slots  # the largest tie weight
    while scale > 1e-300 and sum(value_units(v, scale) for v in values) * weight > MAX_OBJECTIVE:
        scale /= 10
    return scale


END_WEIGHT_STEPS = 1000  # a job's end-slot weight in the tie-break is 1 to this, by value


def end_weights(
    instance: Instance, order: Literal["value", "priority", "none"] = "value"
) -> tuple[int, ...]:
    """Per job, the weight of its end slot in the tie-break, on a scale of 1 to
    `END_WEIGHT_STEPS`. Plans of equal pwo then rank by weighted completion; with an open end,
    where every job can end in time, this is what ranks plans at all. Smith's rule over GPU-hours
    says what each order puts first: by value (priority times GPU-hours), the highest priority;
    by priority, the highest priority per GPU-hour, so small urgent work before large; none (1
    for every job), the smallest work."""
    if order == "none":
        return tuple(1 for _ in instance.jobs)
    weights = [j.value if order == "value" else j.priority for j in instance.jobs]
    top = max(weights, default=0.0)
    if top <= 0:
        return tuple(1 for _ in instance.jobs)
    return tuple(max(1, round(END_WEIGHT_STEPS * w / top)) for w in weights)


def end_rate(instance: Instance, discount: float) -> float:
    """The pwo a plan gives up per unit of weighted end slots (`SearchParams.end_discount`): the
    most valuable job weighs `END_WEIGHT_STEPS`, so with the value order each job loses about
    `discount` of its value per hour its end comes later."""
    top = max((j.value for j in instance.jobs), default=0.0)
    return max(discount, 0.0) * instance.hours_per_slot * top / END_WEIGHT_STEPS


def value_units(value: float, scale: float) -> int:
    """A job's value in integer objective units, rounded up so that bounds stay valid."""
    return max(1, math.ceil(value * scale - 1e-9))


def placement_units(instance: Instance, p: Placement, scale: float) -> int:
    """The objective units a placement earns in the model: its value's and its kept promise's."""
    if p.earned(instance) <= 0:
        return 0
    bonus = p.bonus(instance)
    units = value_units(instance.jobs[p.job].value, scale)
    return units + (value_units(bonus, scale) if bonus > 0 else 0)


@dataclass(frozen=True)
class Weighing:
    """The objective `M * units - K * sum(w * end)`: `per_unit` M, `per_end` K, and `ends_max`,
    the largest `sum(w * end)` the model allows."""

    per_unit: int
    per_end: int
    ends_max: int

    @classmethod
    def at_rate(cls, rate_units: float, ends_max: int) -> Weighing:
        """At an end rate of `rate_units` value units per weighted end slot: a tie-break (M above
        every sum of weighted ends, K = 1) at 0 or at a rate below a tie-break's, else integers
        whose ratio K/M is that rate, K kept small enough for 64-bit objectives."""
        if rate_units <= 0:
            return cls(1 + ends_max, 1, ends_max)
        if rate_units < 1:
            return cls(min(max(1, round(1 / rate_units)), 1 + ends_max), 1, ends_max)
        top = MAX_OBJECTIVE // (4 * max(ends_max, 1))
        return cls(1, max(1, min(round(rate_units), top)), ends_max)

    @property
    def ties_only(self) -> bool:
        """Whether the ends only break ties: then no plan of fewer units ranks above."""
        return self.per_end * self.ends_max < self.per_unit

    def units_of(self, objective: float) -> int:
        """The value units of a solution, at most: exact for a tie-break (0 <= K*sum(w*end) < M)."""
        return int(-(-round(objective) // self.per_unit))

    def units_bound(self, objective_bound: float) -> int:
        """units is an integer and 0 <= K*sum(w*end) <= K*ends_max, so units <= floor((objective
        bound + K*ends_max) / M)."""
        return int((math.floor(objective_bound) + self.per_end * self.ends_max) // self.per_unit)
