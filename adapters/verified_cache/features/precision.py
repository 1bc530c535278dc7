"""The precision the verifier reads its features at: every feature rounded to a fixed
number of decimal places, the same function in training, in the training-data hash
and at inference.

Why: the embedding cosines carry the floating-point noise of the CPU they were
computed on. ONNX Runtime and numpy pick their vector kernels (AVX2, AVX-512) at
run time, and a different kernel sums in a different order, so the same text gives
cosines a few 1e-7 apart on two x86-64 machines. Unrounded, that noise changes the
hash of the training data and, through LightGBM's bin edges, the model's bytes.
Rounded to :data:`DECIMALS` places it vanishes except for a value that falls
within the noise of a rounding midpoint (a handful in the ~12,000 embedding
values of a training run); those are what the committed feature table
(:mod:`adapters.verified_cache.reproduce`) reports, value by value.

Four places: a step of 1e-4 is about 300 times the cross-CPU noise (at most 3e-7
measured on the embedding features), and far below the cosine differences the
verifier's trees separate, so rounding moves P(HIT) by little and decisions by
almost nothing (the figures are in the commit that introduced it).

>>> quantize(0.123456789), quantize(-0.000004), quantize(float("nan"))
(0.1235, 0.0, nan)
>>> quantize(quantize(0.98765)) == quantize(0.98765)
True
"""

from __future__ import annotations

import math
from collections.abc import Iterable

#: Decimal places every feature is rounded to.
DECIMALS = 4
#: The rounding step: two rounded values differ by a multiple of it.
STEP = 10.0**-DECIMALS


def quantize(value: float) -> float:
    """``value`` rounded to :data:`DECIMALS` places, half to even on its exact binary
    value (Python's ``round``: correctly rounded, the same on every platform).

    Idempotent: the result is the double nearest a decimal of ``DECIMALS`` places,
    which rounds to that decimal again. ``-0.0`` becomes ``0.0`` (a cosine of
    -1e-9 and one of +1e-9 are the same feature, and must hash the same); NaN
    (a missing feature) and infinities pass through.
    """
    x = float(value)
    if not math.isfinite(x):
        return x
    return round(x, DECIMALS) + 0.0


def quantize_features(values: Iterable[float]) -> tuple[float, ...]:
    """Every value of a feature vector through :func:`quantize`."""
    return tuple(quantize(v) for v in values)
