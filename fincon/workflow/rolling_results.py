"""The tables of a rolling evaluation, from its finished windows.

Reads each window's strategy runs (metrics.json, summary.json) and writes
windows.csv (one row per universe, window and strategy), summary.csv (per
universe and strategy, plus ``pooled`` over every universe) and
results.json (both, and how they were computed). Nothing else is touched.

Across windows, for each strategy: the median CR, Sharpe and MDD, the mean
excess CR over buy-and-hold on the same window and universe, the share of
windows where its CR beats buy-and-hold's (strictly), and a two-sided
Wilcoxon signed-rank test of its per-window CR paired with buy-and-hold's
(``scipy.stats.wilcoxon``; none when every difference is zero).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from fincon import risk, workflow
from fincon.engine.costs import total_paid
from fincon.engine.record import RunRecord
from fincon.files import json_text, write_atomic
from fincon.workflow.experiment_config import ExperimentConfig
from fincon.workflow.experiment_units import baseline_dir


class Cell(Protocol):
    """What this module needs of a rolling cell (``fincon.workflow.rolling.Cell``,
    which imports this module): its experiment and its folder."""

    exp: ExperimentConfig

    def root(self, out: Path) -> Path: ...


BENCH = "buy-and-hold"
COLUMNS = (
    "universe",
    "window",
    "test_start",
    "test_end",
    "tickers",
    "strategy",
    "model_knowledge",
    "cr_pct",
    "sharpe",
    "mdd_pct",
    "turnover",
    "n_trades",
    "llm_calls",
    "llm_cost_usd",
    "excess_cr_pct",
)


def _read(run: Path, costed: bool = False) -> dict[str, Any]:
    """A window's run as windows.csv's row holds it (``costed``: with what its costs took)."""
    rec = RunRecord(run)
    m, s = rec.metrics, rec.strategy_summary
    block = m.get("model_knowledge")
    costs = {"costs_paid": total_paid(m.get("costs") or {})} if costed else {}
    return {
        # the test window against the strategy's model cutoff (fincon.llm.knowledge)
        "model_knowledge": block.get("label") if isinstance(block, dict) else None,
        "cr_pct": m.get("cr_pct"),
        "sharpe": m.get("sharpe"),
        "mdd_pct": m.get("mdd_pct"),
        "turnover": m.get("turnover"),
        "n_trades": m.get("n_trades"),
        "llm_calls": int(s.get("llm_calls") or 0),
        "llm_cost_usd": float(s.get("llm_cost_usd") or 0.0),
        **costs,
    }


def window_rows(out: Path, cells) -> pd.DataFrame:
    # fees, slippage and the borrow fee, when the evaluation sets a cost (without one: the files it wrote)
    cells, rows, any_same = list(cells), [], False
    costed = any(c.exp.broker.sets_a_cost for c in cells)
    for c in cells:
        dirs = unit_dirs(c, out)
        per = {name: _read(path, costed) for name, path in dirs.items()}
        bench = per[BENCH]["cr_pct"]
        twins = traded_as(dirs)
        for name, m in per.items():
            rows.append(
                {
                    "universe": c.universe,
                    "window": c.window.name,
                    "test_start": c.window.test.start.isoformat(),
                    "test_end": c.window.test.end.isoformat(),
                    "tickers": " ".join(c.tickers),
                    "strategy": name,
                    **m,
                    "excess_cr_pct": None if m["cr_pct"] is None or bench is None else m["cr_pct"] - bench,
                    "traded_as": "; ".join(twins.get(name, ())),
                }
            )
            any_same = any_same or bool(twins.get(name))
    columns = list(COLUMNS)
    if costed:
        columns.insert(columns.index("turnover") + 1, "costs_paid")
    if any_same:  # a window where two strategies traded identically: said (workflow.tables.rolling_flags)
        columns.append("traded_as")
    return pd.DataFrame(rows, columns=columns)


def traded_as(dirs: dict[str, Path]) -> dict[str, list[str]]:
    """Each strategy of a window with the others whose every daily return was the same as its own. One
    that traded as buy-and-hold (an sma-cross long the whole window, an RL agent that learned to hold)
    has an excess CR of 0, counted as not beating it, and the Wilcoxon test drops the pair; two team
    variants that traded identically are one result in two rows."""
    rets = {n: RunRecord(p).equity.pct_change().dropna().to_numpy() for n, p in dirs.items()}
    return {n: [m for m in g if m != n] for g in risk.significance.same_series(rets) for n in g if len(g) > 1}


def unit_dirs(cell: Cell, out: Path) -> dict[str, Path]:
    """Each strategy's test run directory in a cell: the team variants' median
    repeats (from the cell's results.json) and the baselines."""
    res = json.loads((cell.root(out) / "results.json").read_text())
    dirs: dict[str, Path] = {}
    for v, m in res["median"].items():
        dirs[team_label(v, m.get("repeat"), cell.exp.repeats)] = cell.root(out) / m["run_dir"]
    for b in cell.exp.baselines:
        dirs[b] = baseline_dir(cell.root(out), cell.exp, b)
    return dirs


def team_label(variant: str, repeat: int | None, repeats: int) -> str:
    name = "fincon" if variant == "full" else f"fincon {variant}"
    return name if repeats == 1 else f"{name} (median of {repeats})"


def paired_test(cr: pd.Series, bench: pd.Series) -> dict[str, Any]:
    """Two-sided Wilcoxon signed-rank test of per-window CRs against buy-and-hold's."""
    from scipy.stats import wilcoxon

    d = (cr - bench).dropna()
    # pairs: the windows the test reads (scipy drops a zero difference): what the smallest p it can give
    # depends on (the windows counted, a window traded as buy-and-hold hid the flag; found in review)
    out: dict[str, Any] = {"n": int(len(d)), "pairs": int((d != 0).sum()), "statistic": None, "p_value": None}
    if len(d) == 0 or (d == 0).all():
        out["note"] = "no window differs from buy-and-hold"
        return out
    res = wilcoxon(d.to_numpy())
    out.update(statistic=float(res.statistic), p_value=float(res.pvalue))
    return out


def _finite(x: Any) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def _labels(labels: pd.Series) -> str | None:
    """How many windows carry each model-knowledge label ("in-training-data 36/36")."""
    known = labels.dropna()
    if known.empty:
        return None
    counts = known.value_counts()
    return ", ".join(f"{lab} {int(n)}/{len(labels)}" for lab, n in sorted(counts.items()))


def summarize(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    groups = [(u, df[df.universe == u]) for u in dict.fromkeys(df.universe)]
    if len(groups) > 1:
        groups.append(("pooled", df))
    for universe, g in groups:
        bench = g[g.strategy == BENCH].set_index(["universe", "window"])["cr_pct"]
        for name in dict.fromkeys(g.strategy):
            s = g[g.strategy == name].set_index(["universe", "window"])
            cr, b = s["cr_pct"].astype(float), bench.reindex(s.index).astype(float)
            # a window the strategy sat out (no return, no volatility) has no Sharpe ratio: it counts as 0,
            # or the median was of the windows that traded, shown beside the count of all (3 of 8)
            sharpe = s["sharpe"].astype(float).where(s["sharpe"].notna() | (cr != 0), 0.0)
            # pooled: one pair a window, the universes that traded it averaged (each universe's copy of a
            # window was a pair of its own: two windows of one stock in three universes gave p 0.031)
            pc, pb = (
                (cr, b)
                if universe != "pooled"
                else (cr.groupby(level="window").mean(), b.groupby(level="window").mean())
            )
            test = paired_test(pc, pb) if name != BENCH else {"n": int(len(pc)), "p_value": None}
            rows.append(
                {
                    "universe": universe,
                    "strategy": name,
                    "windows": int(len(pc)),
                    "median_cr_pct": _finite(cr.median()),
                    "median_sharpe": _finite(sharpe.median()),
                    "median_mdd_pct": _finite(s["mdd_pct"].astype(float).median()),
                    "mean_excess_cr_pct": _finite((pc - pb).mean()),
                    "share_beats_bh": None if name == BENCH else float((pc > pb).mean()),
                    "wilcoxon_p": test.get("p_value"),
                    **({"wilcoxon_pairs": test["pairs"]} if test.get("pairs", len(pc)) != len(pc) else {}),
                    "median_turnover": _finite(s["turnover"].astype(float).median()),
                    **({"costs_paid": float(s["costs_paid"].sum())} if "costs_paid" in s else {}),
                    "llm_calls": int(s["llm_calls"].sum()),
                    "llm_cost_usd": float(s["llm_cost_usd"].sum()),
                    "model_knowledge": _labels(s["model_knowledge"]),
                }
            )
    return pd.DataFrame(rows)


def _significance(out: Path, cells, summary: pd.DataFrame, reps: int) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The statistics of fincon.workflow.rolling_stats over each universe's
    daily returns (and the pooled ones: each day once, the mean of every universe's trading it)."""

    by_date = workflow.window_returns(out, cells, unit_dirs)
    if len(by_date) > 1:
        common = set.intersection(*(set(s) for s in by_date.values()))
        overlay = workflow.rolling_stats.overlay
        by_date["pooled"] = {n: overlay([by_date[u][n] for u in list(by_date)]) for n in sorted(common)}
    rets = {u: {n: r.to_numpy() for n, r in s.items()} for u, s in by_date.items()}
    # DSR's N and V over one set of the same length: the distinct pooled series compared in a universe
    # (fincon.risk.significance.trials_and_variance); the trial ledger's families count one-window trials,
    # whose Sharpe ratios spread wider than pooled ones, and depend on what else this machine ran: `fincon
    # ledger` lists them, the files do not hold them (the same config and cache give the same files)
    ahead = workflow.rolling_stats.lookahead_runs(out, cells, unit_dirs)
    return workflow.rolling_stats.significance(rets, summary, reps=reps, ahead=ahead)


def placebos(blocks: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """Each placebo across the windows (``blocks``: each window's universe and
    placebo block, as its results.json holds it, like a one-split
    experiment's): the medians over windows of the team's
    CR on the placebo, on the real corpus, of the profit gap and of the
    prediction consistency, per universe and (the keys the report card reads)
    over every window; how many windows were flagged, and a flag for the
    whole evaluation when a majority of its windows were."""

    per: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for universe, block in blocks:
        for kind, p in block.items():
            per.setdefault(kind, {}).setdefault(universe, []).append(p)

    def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
        def med(key: str) -> float | None:
            return _finite(np.nanmedian([float(r[key]) for r in rows]))

        flagged = sum(1 for r in rows if r.get("flags"))
        return {
            "windows": len(rows),
            "cr_pct_median": med("cr_pct_median"),
            "sharpe_median": med("sharpe_median"),
            "real_cr_pct": med("real_cr_pct"),
            "profit_gap_pct": med("profit_gap_pct"),
            "prediction_consistency": med("prediction_consistency"),
            "input_dependency": med("input_dependency"),
            "excess_pct": med("excess_pct"),
            "real_excess_pct": med("real_excess_pct"),
            "windows_flagged": flagged,
        }

    out_: dict[str, Any] = {}
    for kind, by_universe in per.items():
        every = [r for rows in by_universe.values() for r in rows]
        pooled = summary(every)
        flags = sorted({f for r in every for f in r.get("flags") or []})
        pooled["flags"] = (
            [f"{pooled['windows_flagged']} of {pooled['windows']} windows: {'; '.join(flags)}"]
            if pooled["windows_flagged"] * 2 > pooled["windows"]
            else []
        )
        out_[kind] = {**pooled, "universes": {u: summary(rows) for u, rows in by_universe.items()}}
    return out_


def tables(
    exp: ExperimentConfig, out: Path, cells, placebo_blocks: list[tuple[str, dict[str, Any]]], pool: dict[str, Any]
) -> dict[str, Any]:
    """windows.csv, summary.csv and results.json of a finished rolling evaluation
    (``placebo_blocks``: fincon.workflow.rolling_results.placebos; ``pool``: the candidates the
    universe rules picked from, fincon.workflow.rolling.pool_of)."""
    df = window_rows(out, cells)
    summary = summarize(df)
    summary, significance = _significance(out, cells, summary, exp.bootstrap_reps)
    df.to_csv(out / "windows.csv", index=False, float_format="%.6g", lineterminator="\n")
    summary.to_csv(out / "summary.csv", index=False, float_format="%.6g", lineterminator="\n")
    r = exp.rolling
    results = {
        "window": r.window,
        "step": r.step,
        "span": [r.start.isoformat(), r.end.isoformat()],
        "universes": r.universes,
        "pool": pool,
        "brain": exp.brain,
        "episodes": exp.episodes,
        "repeats": exp.repeats,
        "benchmark": BENCH,
        "test": "two-sided Wilcoxon signed-rank test of per-window CR % paired with buy-and-hold's",
        "beats": "share of windows whose CR % is strictly above buy-and-hold's on the same window",
        "windows": json.loads(df.to_json(orient="records")),
        "summary": json.loads(summary.to_json(orient="records")),
        "significance": significance,
        "bootstrap_reps": exp.bootstrap_reps,
    }
    if exp.placebos:
        results["placebo"] = placebos(placebo_blocks)
    write_atomic(out / "results.json", json_text(results))
    return results
