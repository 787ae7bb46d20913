"""Equity and drawdown plots drawn with matplotlib directly (headless Agg).

backtrader's own ``cerebro.plot()`` forces a Tk backend and loses date
labels with current matplotlib, so plots are made from the run's
``equity.csv`` instead; the same function serves one run or a comparison.
A training's belief evolution (``beliefs.png``) is drawn here too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from fincon.risk.metrics import drawdown_series  # noqa: E402


def alert_days(decisions) -> list[str]:
    """Days on which the team's CVaR alert fired (``record.risk.alert`` in
    the decision entries of ``decisions.jsonl``)."""
    out = []
    for d in decisions:
        risk = (d.get("record") or {}).get("risk") or {}
        if risk.get("alert"):
            out.append(d["date"])
    return out


def plot_equity(
    curves: Mapping[str, pd.Series],
    out: Path,
    title: str = "",
    alerts: Mapping[str, list[str]] | None = None,
    software: str | None = None,
) -> Path:
    """Portfolio value (top) and drawdown (bottom) of each named curve;
    ``alerts`` (curve name -> days) are drawn as red markers on that curve.
    ``software``: the PNG's Software chunk (``fincon plot`` marks its files so
    a later plot may replace them; a run's own plots carry none)."""
    fig, (ax_v, ax_d) = plt.subplots(2, 1, figsize=(10, 6.5), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]})
    for name, series in curves.items():
        style = "--" if name.startswith("buy-and-hold") and len(curves) > 1 else "-"
        ax_v.plot(series.index, series.values, style, lw=1.4, label=name)
        ax_d.plot(series.index, -100 * drawdown_series(series.values), style, lw=1.0, label=name)
        days = pd.DatetimeIndex(pd.to_datetime((alerts or {}).get(name, []))).intersection(series.index)
        if len(days):
            ax_v.plot(
                days,
                series.loc[days].values,
                "v",
                color="tab:red",
                ms=5,
                alpha=0.8,
                label=f"{name}: CVaR alert ({len(days)})",
            )
    ax_v.set_ylabel("portfolio value ($)")
    ax_v.yaxis.set_major_formatter(matplotlib.ticker.StrMethodFormatter("{x:,.0f}"))
    ax_v.grid(alpha=0.3)
    ax_v.legend(loc="best", fontsize=9)
    ax_v.set_title(title or "Equity curves")
    ax_d.set_ylabel("drawdown (%)")
    ax_d.grid(alpha=0.3)
    locator = mdates.AutoDateLocator()
    ax_d.xaxis.set_major_locator(locator)
    ax_d.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    fig.tight_layout()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out, dpi=110, metadata={"Software": software})
    finally:
        plt.close(fig)
    return out


def plot_beliefs(rows: list[dict[str, Any]], path: Path) -> Path:
    """Belief evolution: rules weights in force, objective and tau per episode."""
    ks = [r["episode"] for r in rows]
    fig, (ax_w, ax_o) = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    names = sorted({n for r in rows for n in r.get("weights_in_force", {})})
    for n in names:
        ax_w.plot(ks, [r.get("weights_in_force", {}).get(n, float("nan")) for r in rows], "o-", label=n)
    ax_w.set_ylabel("rules weight in force")
    ax_w.legend(fontsize=8, ncol=2)
    ax_w.grid(alpha=0.3)
    ax_o.plot(ks, [r["objective"] for r in rows], "o-", color="tab:blue", label="objective (CR %)")
    ax_o.set_ylabel("objective (CR %)")
    ax_o.grid(alpha=0.3)
    ax_t = ax_o.twinx()
    ax_t.plot(
        [r["episode"] for r in rows if "tau" in r],
        [r["tau"] for r in rows if "tau" in r],
        "s--",
        color="tab:orange",
        label="tau",
    )
    ax_t.set_ylim(0, 1.05)
    ax_t.set_ylabel("tau (same action share)")
    ax_o.set_xlabel("episode")
    ax_o.set_xticks(ks)
    fig.suptitle("Belief evolution over training episodes")
    fig.tight_layout()
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return path
