"""Type aliases shared by the generator's modules."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

Rng = np.random.Generator
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
InstanceData = dict[str, Any]  # an instance as plain data, following FORMAT.md (ready for YAML)
