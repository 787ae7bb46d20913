"""The Wilson interval of a proportion: how sure a share of k in n is.

Asked of many small counts (the report card's analysts, the leakage audit's
prompts, the look-ahead probes), so it lives at the bottom of the house and
needs only the standard library (``statistics.NormalDist``): the same
bounds as scipy's ``binomtest(k, n).proportion_ci(method="wilson")``
(tests/test_significance.py compares them).
"""

from __future__ import annotations

import math
from statistics import NormalDist


def wilson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The two-sided Wilson score interval of ``k/n`` at ``level`` (NaN, NaN for n = 0)."""
    if n <= 0:
        return float("nan"), float("nan")
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    phat = k / n
    denom = 1.0 + z * z / n
    centre = (phat + z * z / (2 * n)) / denom
    half = z * math.sqrt(phat * (1.0 - phat) / n + z * z / (4.0 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)
