"""The metrics table: which metrics a run is compared by, with their labels
and formats, in the order ``fincon backtest`` prints them and the HTML
report shows them.

One list (:data:`ROWS`) for both, so the terminal and the page never
disagree on a label or a rounding; the metrics themselves are computed in
:mod:`fincon.risk.metrics`. Plain Python (no numerical import): the CLI
imports it while it builds its parser.
"""

from __future__ import annotations

import math
from typing import Any

from fincon.engine.costs import total_paid
from fincon.workflow.tables import too_few_returns

#: (metric key, label, format)
ROWS = [
    ("status", "status", "{}"),
    # an LLM row's window against its model's training-data cutoff (fincon.llm.knowledge);
    # shown only when some column calls a model
    ("model_knowledge", "model knowledge (window vs cutoff)", "{}"),
    ("cr_pct", "CR % (sum of log returns)", "{:.3f}"),
    ("cr_paper_pct", "CR % paper eq.5 (direction)", "{:.3f}"),
    ("cum_simple_return_pct", "cumulative simple return %", "{:.3f}"),
    ("final_value", "final value ($)", "{:,.0f}"),
    # paper (FinCon A.10) on daily log returns, then the industry convention (empyrical,
    # quantstats) on daily simple returns; max drawdown and CVaR (alpha = 1/k) are the
    # same in both, VaR is eq. 3's order statistic (README, Metrics)
    ("sharpe", "Sharpe (paper: log returns)", "{:.3f}"),
    ("sharpe_empyrical", "Sharpe (empyrical: simple returns)", "{:.3f}"),
    ("sortino", "Sortino (paper: log returns)", "{:.3f}"),
    ("sortino_empyrical", "Sortino (empyrical: simple returns)", "{:.3f}"),
    ("ann_vol_pct", "annual volatility % (paper: log)", "{:.2f}"),
    ("ann_vol_empyrical_pct", "annual volatility % (empyrical: simple)", "{:.2f}"),
    ("mdd_pct", "max drawdown %", "{:.3f}"),
    ("var_pct", "VaR % (daily, alpha)", "{:.3f}"),
    ("cvar_pct", "CVaR % (daily, alpha)", "{:.3f}"),
    ("turnover", "turnover (x value)", "{:.2f}"),
    # what commission, slippage (each fill against the price it slipped from) and the borrow fee
    # took: shown only when some column paid any (a run without costs prints the table it always did)
    ("costs_paid", "costs paid ($: fees, slippage, borrow)", "{:,.2f}"),
    ("n_trades", "fills", "{:d}"),
    ("win_rate", "win rate (round trips)", "{:.2f}"),
    ("n_days", "days", "{:d}"),
]


#: the rows a run's ``costs`` block (metrics.json) gives the HTML report, one a figure: a block shown as one
#: JSON string in one cell was read by nobody, and the benchmark's costs were in no file at all
COST_ROWS = [
    ("costs", "costs in force", "{}"),
    ("costs.commission_paid", "commission paid ($)", "{:,.2f}"),
    ("costs.slippage_paid", "slippage paid ($)", "{:,.2f}"),
    ("costs.borrow_paid", "borrow fee paid ($)", "{:,.2f}"),
    ("costs.llm_charged_usd", "model spend charged ($)", "{:,.4f}"),
    ("costs.orders", "orders", "{:d}"),
    ("costs.orders_partial", "orders filled in part", "{:d}"),
    ("costs.orders_rejected", "orders refused", "{:d}"),
]


def cost_cells(block: dict[str, Any]) -> dict[str, Any]:
    """A ``costs`` block as the report's cells: the settings in words, each figure paid and the orders
    (keys of :data:`COST_ROWS`), and ``costs_paid``, their sum, as the terminal prints it."""
    cells: dict[str, Any] = {"costs": describe_costs(block)}
    keys = {key for key, _, _ in COST_ROWS}
    cells.update({f"costs.{k}": v for k, v in block.items() if f"costs.{k}" in keys})
    cells["costs_paid"] = total_paid(block)
    return cells


def describe_costs(block: dict[str, Any]) -> str:
    """The cost settings of a ``costs`` block in words ("commission 0.1 % of value per side; ...")."""
    model, parts = block.get("commission_model"), []
    if model == "per-share":
        cap = f", at most {block['commission_max'] * 100:g} % of value" if block.get("commission_max") else ""
        parts.append(
            f"commission ${block['commission_per_share']:g} a share per side (at least ${block['commission_min']:g}{cap})"
        )
    elif model == "percent" and block.get("commission"):
        parts.append(f"commission {block['commission'] * 100:g} % of value per side")
    else:
        parts.append("no commission")
    slip, slip_model = block.get("slippage") or 0.0, block.get("slippage_model")
    if slip:
        size = {"bps": f"{slip:g} bp", "range": f"{slip * 100:g} % of the day's high-low range"}
        parts.append(f"slippage {size.get(slip_model or '', f'{slip * 100:g} %')} per side")
    else:
        parts.append("no slippage")
    if block.get("participation"):
        rest = block.get("participation_rest", "cancel")
        parts.append(f"fills at most {block['participation'] * 100:g} % of a bar's volume (the rest: {rest})")
    if block.get("borrow"):
        parts.append(f"borrow {block['borrow'] * 100:g} % a year on shorts")
    return "; ".join(parts)


def format_table(columns: dict[str, dict[str, Any]]) -> str:
    """The metrics side by side; a status row appears when a column did not
    complete its window (so a stopped run is never read as a full one)."""
    names = list(columns)
    rows = [
        r
        for r in ROWS
        if (r[0] != "status" or any(c.get("status", "complete") != "complete" for c in columns.values()))
        and (r[0] != "model_knowledge" or any(c.get("model_knowledge") for c in columns.values()))
        and (r[0] != "costs_paid" or any(c.get("costs_paid") for c in columns.values()))
    ]
    labels = [label for _, label, _ in rows]
    width0 = max(len(x) for x in labels)
    cells = []
    for key, _label, fmt in rows:
        row = []
        for n in names:
            v = columns[n].get(key)
            if key == "model_knowledge" and v is None:
                v = "no-model"
            row.append("n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v))
        cells.append(row)
    widths = [max(len(n), *(len(r[i]) for r in cells)) for i, n in enumerate(names)]
    lines = ["  ".join([" " * width0] + [n.rjust(w) for n, w in zip(names, widths)])]
    for (_, label, _), row in zip(rows, cells):
        lines.append("  ".join([label.ljust(width0)] + [c.rjust(w) for c, w in zip(row, widths)]))
    return "\n".join(lines)


def short_window_flags(columns: dict[str, dict[str, Any]]) -> list[str]:
    """The ratios above from too few days to mean anything (a 10-session window printed a Sharpe of 7.9
    and a Sortino of 23 as figures like any other)."""
    days = [int(c["n_days"]) - 1 for c in columns.values() if c.get("n_days")]
    return too_few_returns(days, "Sharpe, Sortino, volatility, VaR and CVaR", "a window")
