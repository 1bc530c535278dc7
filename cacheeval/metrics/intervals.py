"""Confidence intervals for proportions.

Only the Wilson score interval lives here: it behaves well at the edges
(k = 0 or k = n) and for small n, where the normal ("Wald") interval collapses
to a zero-width band or leaves [0, 1].
"""

from __future__ import annotations

import math

#: Two-sided 95% standard-normal quantile, Phi^-1(0.975).
Z_95 = 1.959963984540054


def wilson_interval(successes: float, n: float, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a proportion ``successes / n``.

    With p = k/n::

        centre = (p + z^2/(2n)) / (1 + z^2/n)
        half   = z / (1 + z^2/n) * sqrt(p(1-p)/n + z^2/(4 n^2))
        [lo, hi] = [centre - half, centre + half]

    ``successes`` and ``n`` may be non-integers (F1 uses an effective n, see
    :func:`cacheeval.metrics.classification.f1`). Returns None when ``n == 0``
    (no interval without trials). The bounds are exactly 0 at k = 0 and 1 at
    k = n, and clamped to [0, 1] otherwise.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes}/{n}")
    if n == 0:
        return None
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2.0 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n))
    # At k = 0 and k = n the exact bounds are 0 and 1; float rounding would
    # otherwise leave 1e-17 or 0.9999999999999999.
    lo = 0.0 if successes == 0 else max(0.0, centre - half)
    hi = 1.0 if successes == n else min(1.0, centre + half)
    return lo, hi
