"""The statistics of a rolling evaluation (issue 32): per universe and
strategy, over the daily returns of its test windows, each day once (the
mean of the windows trading it, where windows overlap: :func:`overlay`).

* a stationary block-bootstrap 95 % interval of the daily Sharpe ratio and
  of its difference against buy-and-hold on the same days;
* the probabilistic Sharpe ratio (against zero), the minimum track record
  length (days) and the deflated Sharpe ratio, deflated by N trials whose
  Sharpe ratios vary by V, both taken over one set of series of the same
  length: the distinct return series this evaluation compared (identical
  series, such as a one-ticker equal-weight and buy-and-hold, are one
  trial);
* Hansen's SPA p-value against buy-and-hold and against the best non-LLM
  baseline, and whether Romano & Wolf's StepM keeps the strategy as
  beating buy-and-hold;
* the PBO of the universe (CSCV over its strategies, the days cut into
  ``splits`` blocks; a median rank counts one half, so noise gives 0.5) and
  its spread on pure noise of the same shape (``pbo_noise_sd``);
* the Wilcoxon p-values of every strategy across universes adjusted by Holm
  and by Benjamini-Hochberg.

Computed in fincon.risk.significance on daily simple returns (:func:`run_returns`), per day, without the
risk-free rate; a row with too few days gets empty cells.
"""

from __future__ import annotations

import math
import multiprocessing
import signal
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from fincon.engine.record import RunRecord
from fincon.risk import significance as sig

BENCH = "buy-and-hold"
#: the strategies whose decisions come from a model (the rest are the non-LLM baselines)
LLM_PREFIXES = ("fincon", "llm-trader", "finmem", "finsent")


def run_returns(run: Path) -> pd.Series:
    """A run's daily SIMPLE returns v_t / v_(t-1) - 1, what every statistic here reads (the table's column says
    so): the headline Sharpe is of log returns by default, less the risk-free rate, and can differ in sign."""
    eq = RunRecord(run).equity
    v = eq.to_numpy(dtype=float)
    return pd.Series(v[1:] / v[:-1] - 1.0, index=eq.index[1:])


def overlay(parts: list[pd.Series]) -> pd.Series:
    """Date-indexed daily returns of several runs as one series, each day once: the mean of the runs
    trading it (a book split evenly among them, as overlapping portfolios are held). Windows that do
    not overlap are laid end to end, their returns as they were; overlapping ones (the default 1y
    stepped by 6m) laid end to end counted every day twice, and every statistic's n with it."""
    if len(parts) == 1:
        return parts[0]
    return pd.concat(parts, axis=1).mean(axis=1).sort_index()


def window_returns(out: Path, cells, unit_dirs) -> dict[str, dict[str, pd.Series]]:
    """universe -> strategy -> the daily returns of its test windows by date (:func:`overlay`)."""
    by: dict[str, dict[str, list[pd.Series]]] = {}
    for c in cells:
        for name, path in unit_dirs(c, out).items():
            by.setdefault(c.universe, {}).setdefault(name, []).append(run_returns(path))
    return {u: {n: overlay(parts) for n, parts in s.items()} for u, s in by.items()}


def lookahead_runs(out: Path, cells, unit_dirs) -> frozenset[str]:
    """The strategies whose runs see more than buy-and-hold's on the same data (sentiment-same-day's own
    lookahead, in its metrics): shown, never the best baseline the rest are held against."""
    seen: dict[str, set] = {}
    for c in cells:
        for name, path in unit_dirs(c, out).items():
            seen.setdefault(name, set()).add(RunRecord(path).metrics.get("data_lookahead"))
    return frozenset(n for n, labels in seen.items() if labels - seen.get(BENCH, {None}))


def _is_llm(name: str) -> bool:
    return name.startswith(LLM_PREFIXES)


def universe_statistics(
    universe: str,
    series: Mapping[str, np.ndarray],
    deflate: tuple[int, float] | None,
    reps: int,
    splits: int,
    seed: int,
    ahead: frozenset[str] = frozenset(),
    tried: Mapping[str, np.ndarray] | None = None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One universe's rows and figures (run in a worker process of its own);
    ``deflate``: DSR's N and V (None: over the distinct series compared here); ``ahead``: the
    baselines that see more than the rest (:func:`lookahead_runs`), never the best one, nor a
    configuration tried (DSR's trials, the PBO's matrix: the trial ledger counts them as controls);
    ``tried``: the configurations the PBO is over (None: the series compared here, less ``ahead``;
    an experiment gives every repeat, not only the median ones)."""
    rows: list[dict[str, Any]] = []
    names = [n for n in series if n != BENCH]
    bench = series.get(BENCH)
    tried = tried if tried is not None else {n: s for n, s in series.items() if n not in ahead}
    n_trials, var = deflate or sig.trials_and_variance(tried)
    baselines = [n for n in series if not _is_llm(n) and n not in ahead]  # buy-and-hold is one
    # a baseline whose book never moved has no Sharpe ratio (the results table leaves it out of "best" too)
    moved = [n for n in baselines if np.std(series[n]) > 0]
    best = max(moved, key=lambda n: sig.sharpe(series[n]), default=None)
    spa_bh = sig.spa(bench, {n: series[n] for n in names}, reps=reps, seed=seed) if bench is not None else None
    spa_best = (
        sig.spa(series[best], {n: series[n] for n in series if n != best}, reps=reps, seed=seed)
        if best is not None
        else None
    )
    cscv = sig.pbo(np.column_stack(list(tried.values())), splits=splits)
    intervals = sig.sharpe_intervals(series, BENCH, reps=reps, seed=seed)
    extra_u = {
        "pbo": cscv,
        "stepm_beats_buy_and_hold": spa_bh["stepm"] if spa_bh else [],
        "best_non_llm_baseline": best,
        "trials": n_trials,
        "trials_sharpe_var": var,
    }
    for name, r in series.items():
        record = sig.track_record(r, n_trials, var)
        ci = intervals[name]
        rows.append(
            {
                "universe": universe,
                "strategy": name,
                "days": len(r),
                "sharpe_daily": record["sharpe_daily"],
                "sharpe_ci_lo": ci["sharpe_ci"][0],
                "sharpe_ci_hi": ci["sharpe_ci"][1],
                "sharpe_diff_bh_ci_lo": (ci["diff_ci"] or [None, None])[0],
                "sharpe_diff_bh_ci_hi": (ci["diff_ci"] or [None, None])[1],
                "psr": record["psr"],
                "min_track_record_days": record["min_track_record_days"],
                "dsr": record["dsr"],
                "dsr_trials": n_trials,
                "spa_p_vs_bh": spa_bh["p_values"].get(name) if spa_bh else None,
                "spa_p_vs_best_baseline": spa_best["p_values"].get(name) if spa_best else None,
                "stepm_beats_bh": (name in spa_bh["stepm"]) if spa_bh and name != BENCH else None,
                "pbo": cscv["pbo"],
                "pbo_noise_sd": cscv.get("noise_sd"),
                "pbo_splits": cscv["splits"],
            }
        )

    return rows, extra_u


def _ends_when_terminated() -> None:
    """A statistics worker dies on SIGTERM and SIGINT: the handlers fincon installs (fincon.stopping),
    inherited through fork, would turn the parent's terminate into an exception its pool reports and
    outlives, and a stopped evaluation waited for the bootstrap running in it (45 s for the 2019-2024
    evaluation's, minutes at 10,000 replications)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def significance(
    returns: Mapping[str, Mapping[str, np.ndarray]],
    summary: pd.DataFrame,
    *,
    deflate: Mapping[str, tuple[int, float]] | None = None,
    reps: int,
    splits: int = 16,
    seed: int = 0,
    ahead: frozenset[str] = frozenset(),
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """``summary`` with the statistics' columns, and the per-universe figures
    (PBO, StepM); ``deflate``: per universe, DSR's N and V when not the
    distinct series compared there; ``ahead``: see :func:`universe_statistics`."""

    # the universes are independent: two at a time, in forked worker processes (arch's bootstrap
    # loops hold the GIL); one universe is computed here
    rows: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    items = list(returns.items())
    if len(items) > 1:
        ctx = multiprocessing.get_context("fork")
        before = set(multiprocessing.active_children())  # children of others (a caller's): never this pool's to stop
        pool = ProcessPoolExecutor(max_workers=2, mp_context=ctx, initializer=_ends_when_terminated)
        try:
            futures = [
                pool.submit(universe_statistics, u, dict(s), (deflate or {}).get(u), reps, splits, seed, ahead)
                for u, s in items
            ]
            results = [f.result() for f in futures]
        except BaseException:  # a stop: the next run takes the statistics again; no one waits for a worker
            workers = [p for p in multiprocessing.active_children() if p not in before]
            pool.shutdown(wait=False, cancel_futures=True)
            for p in workers:
                p.terminate()
            for p in workers:
                p.join(timeout=10)
            raise
        pool.shutdown()
    else:
        results = [universe_statistics(u, s, (deflate or {}).get(u), reps, splits, seed, ahead) for u, s in items]
    for (universe, _), (r, e) in zip(items, results):
        rows += r
        extra[universe] = e
    stats = pd.DataFrame(rows)
    out = summary.merge(stats, on=["universe", "strategy"], how="left") if len(stats) else summary
    # across universes: Holm and BH on each strategy's Wilcoxon p-values (the pooled row left out)
    out["wilcoxon_p_holm"] = math.nan
    out["wilcoxon_p_bh"] = math.nan
    for _name, g in out[out.universe != "pooled"].groupby("strategy"):
        p = [None if pd.isna(x) else float(x) for x in g["wilcoxon_p"]]
        out.loc[g.index, "wilcoxon_p_holm"] = sig.adjust(p, "holm")
        out.loc[g.index, "wilcoxon_p_bh"] = sig.adjust(p, "fdr_bh")
    if ahead:  # the tables mark its rows; an evaluation without one keeps its columns
        out["lookahead"] = out.strategy.isin(ahead)
    return out, extra
