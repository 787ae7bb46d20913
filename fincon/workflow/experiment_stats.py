"""The statistics of one experiment (issue 32 item 2), as a rolling
evaluation has them per universe (fincon.workflow.rolling_stats), over the
test window's daily returns:

* per team variant (its median repeat) and per baseline: a stationary
  block-bootstrap 95 % interval of the daily Sharpe ratio and of its
  difference against buy-and-hold, the probabilistic Sharpe ratio, the
  minimum track record length and the deflated Sharpe ratio, deflated by
  the distinct return series among the configurations this experiment ran
  (every variant's repeats and the baselines; repeats that traded
  identically, an ablation that changed nothing, a one-ticker equal weight
  that is buy-and-hold: one trial each) with the variance of the Sharpe
  ratios taken over the same distinct series. The trial ledger's count for
  the study's family is not written into the results: it depends on what
  else was run on this machine, and the same config and cache must give the
  same files; the CLI prints it beside the table (``fincon ledger`` lists
  the trials);
* Hansen's SPA p-value against buy-and-hold and against the best non-LLM
  baseline, and StepM's set of strategies that beat buy-and-hold;
* PBO by CSCV over every configuration the experiment ran (each variant's
  repeats and the baselines, one column each: the selection a reader of the
  table makes);
* the variants' Wilcoxon p-values against the best baseline adjusted across
  variants by Holm and by Benjamini-Hochberg (one experiment compares many).

Written into ``summary.csv`` (one row per strategy) and ``results.json``
(``significance``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from fincon.risk import significance as sig
from fincon.workflow import trials
from fincon.workflow.experiment_config import ExperimentConfig
from fincon.workflow.experiment_units import Unit, baseline_dir
from fincon.workflow.rolling_stats import run_returns, universe_statistics

UNIVERSE = "experiment"


def significance(
    exp: ExperimentConfig, root: Path, results: dict[str, Any], *, reps: int, splits: int = 16
) -> dict[str, Any]:
    """The statistics of the experiment under ``root`` (module docstring);
    writes ``summary.csv`` and returns results.json's ``significance``."""

    # every run the experiment made, read once: each variant's repeats (named fincon-VARIANT-rR: the
    # team's rows are never taken for a baseline) and the baselines
    every = on_common_days(
        {
            **{
                f"{team_row(v)}-r{r}": run_returns(Unit("test", m["ablation"], r, m["protocol"]).path(root))
                for v, m in results["median"].items()
                for r in range(1, exp.repeats + 1)
            },
            **{b: run_returns(baseline_dir(root, exp, b)) for b in exp.baselines},
        }
    )
    n = len(next(iter(every.values())))
    series = {team_row(v): every[f"{team_row(v)}-r{m['repeat']}"] for v, m in results["median"].items()}
    series.update({b: every[b] for b in exp.baselines})
    study = trials.study_of(exp.tickers, str(exp.test.start), str(exp.test.end))
    ahead = frozenset(b for b, m in results["baselines"].items() if m.get("lookahead"))  # never the best
    every = {k: s for k, s in every.items() if k not in ahead}  # nor a configuration tried (a control)
    n_trials, var = sig.trials_and_variance(every)
    rows, extra = universe_statistics(UNIVERSE, series, (n_trials, var), reps, splits, exp.seed, ahead, every)
    extra["pbo"] = {
        **extra["pbo"],
        "over": "every configuration run: each variant's repeats and the baselines (a lookahead baseline is a control, not one)",
    }
    names = list(results["median"])
    p = [(results["median"][v].get("wilcoxon") or {}).get("p_value") for v in names]
    holm, bh = sig.adjust(p, "holm"), sig.adjust(p, "fdr_bh")
    adjusted = {team_row(v): (pv, h, b) for v, pv, h, b in zip(names, p, holm, bh)}
    for row in rows:
        row["wilcoxon_p"], row["wilcoxon_p_holm"], row["wilcoxon_p_bh"] = adjusted.get(row["strategy"], (None,) * 3)
    table = pd.DataFrame(rows)
    if ahead:  # its row is marked as in the results table; an experiment without one keeps its columns
        table["lookahead"] = table.strategy.isin(ahead)
    table.to_csv(root / "summary.csv", index=False, float_format="%.6g", lineterminator="\n")
    return {
        "summary": json_rows(table),
        "trials": n_trials,
        "configurations": len(every),
        "study": study,
        "days": n,
        **{k: v for k, v in extra.items() if k != "pbo"},
        "pbo": extra["pbo"],
        "bootstrap_reps": reps,
        # the configurations that traded identically on the test window (each group of two or more): an
        # ablation that changed no decision, repeats that measured no spread (fincon.workflow.tables)
        "identical": [g for g in sig.same_series(every) if len(g) > 1],
    }


def on_common_days(runs: dict[str, pd.Series]) -> dict[str, Any]:
    """Each run's daily returns on the days every run traded, by date (one calendar: a run that stopped
    early, its days only; each was once cut to its last n days, so a run stopped after n days was paired
    with the others' last n)."""
    days = sorted(set.intersection(*(set(s.index) for s in runs.values())))
    return {k: s.loc[days].to_numpy() for k, s in runs.items()}


def team_row(variant: str) -> str:
    """A team variant's row name (``full`` -> ``fincon-full``, ``scm-full`` -> ``fincon-scm-full``)."""
    return f"fincon-{variant}"


def json_rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """The table's rows as JSON values (NaN as null)."""

    return json.loads(table.to_json(orient="records"))
