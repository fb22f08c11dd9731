"""HiGHS, set up the way every LP and MIP of the relaxation uses it: silent, one thread."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import highspy
import numpy as np
import numpy.typing as npt


def new_highs() -> highspy.Highs:
    """A HiGHS instance that prints nothing and runs on one thread."""
    with _quiet_stdout():  # highspy prints a banner to fd 1 when constructed
        h = highspy.Highs()  # type: ignore[no-untyped-call]
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    return h


def as_int32(a: npt.ArrayLike) -> npt.NDArray[np.int32]:
    """Indices as HiGHS's bindings take them."""
    return np.asarray(a, dtype=np.int32)


@contextmanager
def _quiet_stdout() -> Iterator[None]:
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
