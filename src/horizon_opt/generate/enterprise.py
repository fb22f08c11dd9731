"""Family `enterprise`: an inference-heavy company cluster, the baseline the others vary."""

from __future__ import annotations

import os

from horizon_opt.generate.aliases import InstanceData, Rng
from horizon_opt.generate.sizes import Size
from horizon_opt.generate.synthetic import synthetic


def enterprise(
    name: str, size: Size, rng: Rng, *, traces: str | os.PathLike[str] | None = None
) -> InstanceData:
    """Inference peak at 48% of the GPUs, batch load 2x; see docs/generator.md."""
    return synthetic(name, size, rng, peak_share=0.48, load=2.0)
