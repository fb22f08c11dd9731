"""What an anytime solver reports as it goes: to `SolveOptions.on_progress`, and to its stop
criterion (`stop.py`)."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Progress:
    """One progress report of an anytime solver."""

    elapsed: float
    objective: float
    bound: float | None
    stalled: float = 0.0
    """Seconds of the budget since the objective last improved, or since the search began
    (cpsat: after its relaxation's bound). With a repeatable budget (one worker) they are its
    deterministic seconds, not the wall clock's, so that a rerun counts them the same
    (`cpsat.budget.Budget.clock`)."""

    @property
    def gap(self) -> float | None:
        if self.bound is None:
            return None
        return (self.bound - self.objective) / max(self.bound, 1e-9)

    def shifted(self, offset: float) -> Progress:
        """The same progress with `offset` added to the objective and the bound: a residual
        instance's search seen as the whole instance's (the placed jobs' value added)."""
        bound = None if self.bound is None else self.bound + offset
        return replace(self, objective=self.objective + offset, bound=bound)
