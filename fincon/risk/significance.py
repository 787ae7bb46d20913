"""How sure is a Sharpe ratio, and how many trials stand behind it?

One Wilcoxon test of per-window returns does not answer what a referee
trained by López de Prado, White and Hansen asks. This module does, each
figure from a well-kept library where one exists:

* :func:`sharpe_interval`: a stationary block-bootstrap 95 % interval of the
  Sharpe ratio, and of its difference against a benchmark on the same days
  (``arch.bootstrap.StationaryBootstrap``, Politis & Romano);
* :func:`psr`, :func:`min_track_record`, :func:`expected_max_sharpe`,
  :func:`dsr`: the probabilistic Sharpe ratio, the minimum track record
  length and the deflated Sharpe ratio (Bailey & López de Prado, 2012 and
  2014), written here from the papers' formulas and checked against their
  worked example (tests/test_significance.py); DSR needs the true number of
  trials, which the trial ledger counts;
* :func:`spa`: Hansen's SPA p-value of each strategy against a benchmark, and
  Romano & Wolf's StepM set of strategies that beat it (``arch.bootstrap.SPA``,
  ``StepM``), on daily losses;
* :func:`pbo`: the probability of backtest overfitting by combinatorially
  symmetric cross-validation (Bailey, Borwein, López de Prado & Zhu, 2015):
  no maintained package ships it, so it is written here (pure noise gives
  about 0.5, a planted real edge about 0);
* :func:`adjust`: Holm and Benjamini-Hochberg adjusted p-values across
  tickers and universes: ``statsmodels.stats.multitest``'s numbers, written
  out (its Holm runs a full ``gc.collect()`` on every call).

Sharpe ratios here are per period (daily) unless a name says annualised:
the formulas of PSR and DSR are in the units of the sample.
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Mapping, Sequence

import numpy as np
from scipy.stats import kurtosis, norm, skew

EULER_GAMMA = 0.5772156649015329


#: daily returns closer than this are the same series (float noise of two computations of one book)
_SAME = 1e-12


def sharpe(r: np.ndarray) -> float:
    """Per-period Sharpe ratio (mean over sample standard deviation, ddof 1)."""
    r = np.asarray(r, dtype=float)
    sd = r.std(ddof=1) if len(r) > 1 else 0.0
    return float(r.mean() / sd) if sd > 0 else 0.0


def moments(r: np.ndarray) -> tuple[float, float]:
    """Skewness and (non-excess) kurtosis of a return series, as PSR reads them."""
    r = np.asarray(r, dtype=float)
    if len(r) < 3 or r.std() == 0:
        return 0.0, 3.0
    return float(skew(r)), float(kurtosis(r, fisher=False))


def psr(sr: float, n: int, skewness: float = 0.0, kurt: float = 3.0, sr_star: float = 0.0) -> float:
    """P(true SR > ``sr_star``) given an observed per-period ``sr`` over ``n``
    observations with this skewness and kurtosis (Bailey & López de Prado 2012)."""
    if n < 2:
        return float("nan")
    denom = 1.0 - skewness * sr + (kurt - 1.0) / 4.0 * sr * sr
    if denom <= 0:
        return float("nan")
    return float(norm.cdf((sr - sr_star) * math.sqrt(n - 1) / math.sqrt(denom)))


def min_track_record(
    sr: float, skewness: float = 0.0, kurt: float = 3.0, sr_star: float = 0.0, alpha: float = 0.05
) -> float:
    """Observations needed for PSR(``sr_star``) >= 1 - ``alpha`` (inf when ``sr`` <= ``sr_star``)."""
    if sr <= sr_star:
        return float("inf")
    z = norm.ppf(1.0 - alpha)
    return float(1.0 + (1.0 - skewness * sr + (kurt - 1.0) / 4.0 * sr * sr) * (z / (sr - sr_star)) ** 2)


def expected_max_sharpe(n_trials: int, var_trials: float) -> float:
    """E[max SR] of ``n_trials`` independent trials whose Sharpe ratios vary by
    ``var_trials`` around zero (the False Strategy theorem): the bar a best
    trial must clear."""
    if n_trials < 2:
        return 0.0
    a = norm.ppf(1.0 - 1.0 / n_trials)
    b = norm.ppf(1.0 - 1.0 / (n_trials * math.e))
    return float(math.sqrt(max(var_trials, 0.0)) * ((1.0 - EULER_GAMMA) * a + EULER_GAMMA * b))


def dsr(sr: float, n: int, skewness: float, kurt: float, n_trials: int, var_trials: float) -> float:
    """The deflated Sharpe ratio: PSR against the expected best of ``n_trials``."""
    return psr(sr, n, skewness, kurt, expected_max_sharpe(n_trials, var_trials))


def track_record(r: np.ndarray, n_trials: int, var_trials: float) -> dict[str, float]:
    """A return series' per-period Sharpe and what it can claim: PSR (P(true SR > 0)), the minimum
    track record length and the DSR against ``n_trials`` whose Sharpe ratios vary by ``var_trials``.
    A series that never moved (a strategy that never held a position) has no Sharpe ratio to be
    unsure of, and two returns no skewness or kurtosis: PSR, MinTRL and DSR are NaN there, not a
    coin's 0.5."""
    r = np.asarray(r, dtype=float)
    s = sharpe(r)
    if len(r) < 3 or not r.std() > 0:
        return {"sharpe_daily": s, "psr": math.nan, "min_track_record_days": math.nan, "dsr": math.nan}
    sk, ku = moments(r)
    return {
        "sharpe_daily": s,
        "psr": psr(s, len(r), sk, ku),
        "min_track_record_days": min_track_record(s, sk, ku),
        "dsr": dsr(s, len(r), sk, ku, n_trials, var_trials),
    }


def same_series(series: Mapping[str, np.ndarray]) -> list[list[str]]:
    """The names of ``series`` grouped by their daily returns, in order of first appearance: two
    configurations whose every daily return agrees to within ``_SAME`` (float noise of two computations
    of one book) traded identically."""
    groups: list[tuple[np.ndarray, list[str]]] = []
    for name, r in series.items():
        r = np.asarray(r, dtype=float)
        for k, names in groups:
            if len(k) == len(r) and np.allclose(k, r, rtol=0.0, atol=_SAME, equal_nan=True):
                names.append(name)
                break
        else:
            groups.append((r, [name]))
    return [names for _, names in groups]


def distinct_series(series: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """One entry per distinct daily return series (:func:`same_series`), the first name kept: two
    configurations that traded identically are one trial, not two independent ones."""
    return {names[0]: np.asarray(series[names[0]], dtype=float) for names in same_series(series)}


def trials_and_variance(series: Mapping[str, np.ndarray]) -> tuple[int, float]:
    """DSR's N and V over one set: the distinct series among ``series``
    (:func:`distinct_series`) and the variance (ddof 1) of their Sharpe ratios."""
    kept = distinct_series(series)
    srs = [sharpe(r) for r in kept.values()]
    return len(kept), float(np.var(srs, ddof=1)) if len(srs) > 1 else 0.0


def sharpe_interval(
    r: np.ndarray,
    benchmark: np.ndarray | None = None,
    *,
    reps: int = 10_000,
    block: int | None = None,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, Any]:
    """Stationary block-bootstrap intervals (percentile) of the per-period
    Sharpe ratio and, with ``benchmark`` (same days), of the difference: one
    strategy's :func:`sharpe_intervals`."""
    series = {"r": r} if benchmark is None else {"r": r, "b": benchmark}
    return sharpe_intervals(series, None if benchmark is None else "b", reps=reps, block=block, seed=seed, level=level)[
        "r"
    ]


def sharpe_intervals(
    returns: Mapping[str, np.ndarray],
    benchmark: str | None = None,
    *,
    reps: int = 10_000,
    block: int | None = None,
    seed: int = 0,
    level: float = 0.95,
) -> dict[str, dict[str, Any]]:
    """:func:`sharpe_interval` for several strategies on the same days at
    once: one set of stationary-bootstrap index draws (arch) resamples every
    strategy jointly, so the difference against ``benchmark`` is of the same
    days, and the Sharpe ratios of all strategies are computed per draw in
    one array operation (what makes a 36-window table's statistics cheap)."""
    from arch.bootstrap import StationaryBootstrap

    names = list(returns)
    m = np.column_stack([np.asarray(returns[n], dtype=float) for n in names])
    t = len(m)
    block = block or max(2, int(round(t ** (1 / 3))))
    if t < 10:
        nan = [float("nan"), float("nan")]
        return {n: {"sharpe_ci": nan, "diff_ci": None, "block": block, "reps": reps, "n": t} for n in names}
    bs = StationaryBootstrap(block, m[:, 0], seed=np.random.default_rng(seed))
    draws = np.empty((reps, len(names)))
    chunk = max(1, min(reps, 2_000_000 // max(1, t * len(names))))
    for lo in range(0, reps, chunk):
        idx = np.stack([bs.update_indices() for _ in range(min(chunk, reps - lo))])
        x = m[idx]  # draws x days x strategies
        sd = x.std(axis=1, ddof=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            draws[lo : lo + len(idx)] = np.where(sd > 0, x.mean(axis=1) / sd, 0.0)
    q = [100 * (1 - level) / 2, 100 * (1 + level) / 2]
    out = {}
    b = names.index(benchmark) if benchmark in names else None
    for j, n in enumerate(names):
        lo_hi = np.percentile(draws[:, j], q)
        diff = None
        if b is not None and j != b:
            d = np.percentile(draws[:, j] - draws[:, b], q)
            diff = [float(d[0]), float(d[1])]
        out[n] = {
            "sharpe_ci": [float(lo_hi[0]), float(lo_hi[1])],
            "diff_ci": diff,
            "block": block,
            "reps": reps,
            "n": t,
        }
    return out


def spa(
    benchmark: np.ndarray,
    models: Mapping[str, np.ndarray],
    *,
    reps: int = 10_000,
    block: int | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """Hansen's SPA p-value of each model against ``benchmark`` (daily returns;
    losses are their negatives) and StepM's set of models that beat it at 5 %."""
    from arch.bootstrap import SPA

    b = -np.asarray(benchmark, dtype=float)
    block = block or max(2, int(round(len(b) ** (1 / 3))))
    p: dict[str, float] = {}
    # a series with a value that is not a number is not tested (NaN): one skipped the exact branch below and
    # reached arch, whose p-value was then 0.0 ("superior"); a benchmark's, none is
    finite = bool(np.isfinite(b).all())
    p.update({n: math.nan for n, r in models.items() if not finite or not np.isfinite(np.asarray(r, float)).all()})
    for name, r in models.items():
        # A constant gap to the benchmark (above all none: a single-asset Markowitz or equal
        # weight *is* buy-and-hold) has no variance to studentise: arch's statistic is then
        # 0/0 and its p-value 0.0, "beats the benchmark for sure". The answer is exact instead.
        gap = np.asarray(r, dtype=float) + b
        if name not in p and np.ptp(gap) <= _SAME:
            p[name] = 0.0 if gap.mean() > _SAME else 1.0
    tested = [n for n in models if n not in p]
    for name in tested:
        test = SPA(b, -np.asarray(models[name], dtype=float)[:, None], block_size=block, reps=reps,
                   seed=np.random.default_rng(seed))  # fmt: skip
        test.compute()
        p[name] = float(test.pvalues["consistent"])
    superior = [n for n in models if n not in tested and p[n] == 0.0]  # NaN is never 0.0
    if tested:  # StepM's step-down on arch's SPA: arch 8.0's StepM goes on past the last model and raises
        losses = -np.column_stack([np.asarray(models[n], dtype=float) for n in tested])
        step = SPA(b, losses, block_size=block, reps=reps, seed=np.random.default_rng(seed))
        found: list[int] = []
        while len(found) < len(tested):
            keep = np.ones(len(tested), dtype=bool)
            keep[found] = False
            step.subset(keep)
            step.compute()
            new = [int(i) for i in step.better_models(0.05)]
            if not new:
                break
            found += new
        superior += [tested[i] for i in found]
    return {"p_values": {n: p[n] for n in models}, "stepm": sorted(superior), "block": block, "reps": reps}


def pbo(returns: np.ndarray, splits: int = 16, *, noise_reps: int = 200, seed: int = 0) -> dict[str, Any]:
    """Probability of backtest overfitting by CSCV: ``returns`` is T x N (T
    periods, N configurations); the rows are cut into ``splits`` blocks and
    every half of them in turn is the in-sample set. PBO is the share of the
    combinations in which the configuration best in sample ranks below the
    median out of sample (its relative rank's logit < 0), a logit of exactly
    0 (the median rank itself, which an odd N has) counting one half: with
    "<= 0" pure noise would give 0.5 + 1/(2N), 0.67 at N = 3, instead of 0.5.

    One PBO is a noisy figure: ``noise_sd`` is the standard deviation of the
    PBO of ``noise_reps`` panels of independent Gaussian noise of the same
    shape and splits (seeded), ``noise_mean`` their mean (0.5 by
    construction), so a reader sees how far from chance the figure is."""
    m = np.asarray(returns, dtype=float)
    t, n = m.shape
    if n < 2 or splits < 2 or splits % 2 or t < 2 * splits:
        return {"pbo": float("nan"), "splits": splits, "combinations": 0, "configurations": n}
    blocks = np.array_split(np.arange(t), splits)
    combos = np.array(list(itertools.combinations(range(splits), splits // 2)))
    mask = np.zeros((len(combos), splits), dtype=bool)
    mask[np.arange(len(combos))[:, None], combos] = True
    lam = _cscv_logits(m, blocks, mask)
    out = {
        "pbo": _overfit_share(lam),
        "splits": splits,
        "combinations": len(lam),
        "configurations": n,
        "logit_median": float(np.median(lam)),
    }
    if noise_reps > 0:
        rng = np.random.default_rng(seed)
        # each noise panel on a seeded subset of at most 1,024 combinations: its PBO moves by at most
        # sqrt(0.25 / 1024) = 0.016 against a spread of about 0.2 (the sd grows by under 0.001), for a
        # twelfth of the work at 16 splits
        sub = mask[np.sort(rng.choice(len(mask), 1024, replace=False))] if len(mask) > 1024 else mask
        null = [_overfit_share(_cscv_logits(rng.standard_normal((t, n)), blocks, sub)) for _ in range(noise_reps)]
        out.update(noise_mean=float(np.mean(null)), noise_sd=float(np.std(null, ddof=1)), noise_reps=noise_reps)
    return out


def _overfit_share(lam: np.ndarray) -> float:
    """The share of logits below 0, each logit of exactly 0 counting one half."""
    return float(np.mean(lam < 0) + 0.5 * np.mean(lam == 0))


def _cscv_logits(m: np.ndarray, blocks: list[np.ndarray], mask: np.ndarray) -> np.ndarray:
    """Each combination's logit of the in-sample best's relative rank out of sample."""
    n = m.shape[1]
    # each block's count, sum and sum of squares per configuration: a half's Sharpe ratios follow
    # from adding its blocks' (no pass over the rows per combination)
    cnt = np.array([len(b) for b in blocks], dtype=float)
    s1 = np.stack([m[b].sum(axis=0) for b in blocks])
    s2 = np.stack([(m[b] ** 2).sum(axis=0) for b in blocks])

    def sharpes(sel: np.ndarray) -> np.ndarray:
        k = sel @ cnt
        mean = (sel @ s1) / k[:, None]
        var = ((sel @ s2) - k[:, None] * mean**2) / (k[:, None] - 1)
        sd = np.sqrt(np.maximum(var, 0.0))
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(sd > 0, mean / sd, 0.0)

    sr_in, sr_out = sharpes(mask.astype(float)), sharpes((~mask).astype(float))
    best = np.argmax(sr_in, axis=1)
    chosen = sr_out[np.arange(len(mask)), best][:, None]
    rank = (np.sum(sr_out < chosen, axis=1) + 0.5 * (np.sum(sr_out == chosen, axis=1) - 1) + 1) / (n + 1)
    return np.log(rank / (1.0 - rank))


def adjust(p_values: Sequence[float], method: str) -> list[float]:
    """Holm (``holm``) or Benjamini-Hochberg (``fdr_bh``) adjusted p-values;
    a missing p-value stays missing.

    The same floats as statsmodels' ``multipletests(p, method=...)[1]``, step
    for step (tests/test_significance.py compares them on random and tied
    p-values), written out because its Holm branch runs a full
    ``gc.collect()`` on every call: in a process holding an experiment's
    objects that was 35 s of the test suite's CPU (py-spy), and a pause in
    every experiment's statistics."""
    if method not in ("holm", "fdr_bh"):
        raise ValueError(f"adjust: method {method!r} is not 'holm' or 'fdr_bh'")
    idx = [i for i, p in enumerate(p_values) if p is not None and not math.isnan(p)]
    out: list[float] = [float("nan")] * len(p_values)
    if idx:
        p = np.asarray([p_values[i] for i in idx], dtype=np.float64)
        order = np.argsort(p)
        ranked = p[order]
        m = len(ranked)
        if method == "holm":  # step down: (m - i) p_(i), made non-decreasing
            adj = np.maximum.accumulate(ranked * np.arange(m, 0, -1))
        else:  # step up: p_(i) m / i, made non-increasing from the largest
            adj = np.minimum.accumulate((ranked / (np.arange(1, m + 1) / float(m)))[::-1])[::-1]
        adj[adj > 1] = 1
        for i, a in zip(np.asarray(idx)[order], adj):
            out[int(i)] = float(a)
    return out
