"""The run sections of the report: the metrics table, the equity and drawdown
chart, and the decision timeline of each team run.

Reads only the :class:`~fincon.report.load.ReportData` handed in (each run's
metrics.json, equity curve, decisions) and returns HTML text.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from fincon.agents.records import format_day
from fincon.llm.knowledge import AUDITED
from fincon.report.load import ReportData
from fincon.report.parts import (
    ALERT_COLOR,
    BENCHMARK_STYLE,
    COLORS,
    alerts,
    day_risk,
    day_strings,
    esc,
    num,
    plot_div,
    table,
    timeline_id,
    timeline_runs,
)
from fincon.report.table import COST_ROWS, ROWS, cost_cells, short_window_flags
from fincon.risk.metrics import drawdown_series
from fincon.workflow.tables import optimizer_flags


def _metric_rows() -> tuple[list[str], dict[str, tuple[str, str]]]:
    """The terminal's rows, each cost's after the sum of them."""
    at = [k for k, _, _ in ROWS].index("costs_paid") + 1
    rows = [*ROWS[:at], *COST_ROWS, *ROWS[at:]]
    return [k for k, _, _ in rows], {k: (label, fmt) for k, label, fmt in rows}


def _cells(metrics: dict[str, Any]) -> dict[str, Any]:
    """A column's metrics as the table shows them: the model_knowledge block as words, the costs block
    as one row a figure."""
    out = _knowledge(metrics)
    if isinstance(out.get("costs"), dict):
        out = {**{k: v for k, v in out.items() if k != "costs"}, **cost_cells(out["costs"])}
    return out


def _knowledge(metrics: dict[str, Any]) -> dict[str, Any]:
    """``metrics`` with its model_knowledge block shown as its label, the cutoff
    and, for a masked run, the leakage audit's result (blind / inconclusive / not blind), so
    the reviewer reading the HTML report sees what the card's temporal point
    rests on."""
    block = metrics.get("model_knowledge")
    if not isinstance(block, dict):
        return metrics
    cut = f" (cutoff {block['cutoff']})" if block.get("cutoff") else ""
    audit = block.get("audit") or {}
    result = audit.get("result")
    if result in AUDITED:
        cut += f"; masked, leakage audit: {result} ({audit.get('firm_and_day')}/{audit.get('prompts')} prompts give away firm and day)"
    return {**metrics, "model_knowledge": f"{block.get('label')}{cut}"}


def _columns(data: ReportData) -> dict[str, dict[str, Any]]:
    cols: dict[str, dict[str, Any]] = {}
    for s in data.sources:
        for r in s.runs:
            cols[r.label] = _cells(r.metrics)
    for b in data.benchmarks:
        if b.run is None and b.metrics is not None:
            cols[b.label] = {"status": "complete", **_cells(b.metrics)}
    for s in data.sources:
        for name, m in s.columns.items():
            cols[name if name not in cols else f"{s.path.name}/{name}"] = _cells(m)
    return cols


def section_metrics(data: ReportData) -> str:
    cols = _columns(data)
    if not cols:  # a rolling evaluation alone: its own section has the tables, no run has metrics
        return ""
    order, known = _metric_rows()
    keys: list[str] = [k for k in order if any(k in c for c in cols.values())]
    extra = sorted({k for c in cols.values() for k in c} - set(keys) - {"strategy", "stop_reason"})  # reason: a note
    keys += extra
    rows = []
    for k in keys:
        label, fmt = known.get(k, (k, "{:.3f}"))
        rows.append(
            [f"{esc(label)} <code>{esc(k)}</code>" if label != k else f"<code>{esc(k)}</code>"]
            + [esc(num(c.get(k), fmt)) if k in c else "" for c in cols.values()]
        )
    out = [
        '<section id="metrics"><h2>Metrics</h2>',
        "<p class=\"note\">From each run's <code>metrics.json</code> (every key it holds; the README's "
        "Metrics section defines them). The paper's Sharpe, Sortino and volatility use daily log returns, "
        "the <code>*_empyrical</code> keys daily simple returns.</p>",
        table(["metric", *cols], rows, raw=True),
    ]
    notes = []
    for r in data.runs:
        reason = r.summary.get("stop_reason") or r.metrics.get("stop_reason")
        if reason:
            notes.append(f"{r.label} stopped early on {r.summary.get('last_day', '?')}: {reason}")
    for s in data.sources:
        for name, m in s.columns.items():
            if m.get("status") == "failed":
                notes.append(f"{name} finished no day: {m.get('stop_reason', '')}")
    notes += [f"FLAG: {f}" for f in short_window_flags(cols)]
    notes += [
        f"FLAG: {f}" for f in optimizer_flags({r.label: r.summary.get("strategy_summary") or {} for r in data.runs})
    ]
    out += [f'<p class="note">{esc(" ".join(n.split()))}</p>' for n in notes]
    out.append("</section>")
    return "\n".join(out)


def section_curves(data: ReportData) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.7, 0.3], vertical_spacing=0.05)
    timelines = {id(r): timeline_id(i) for i, r in enumerate(timeline_runs(data))}
    bench_runs = {id(b.run) for b in data.benchmarks if b.run is not None}

    def add(name: str, series: pd.Series, line: dict[str, Any] | None, meta: str | None, group: str) -> None:
        x = day_strings(series.index)
        fig.add_trace(
            go.Scatter(
                x=x,
                y=series.to_numpy(dtype=float),
                name=name,
                mode="lines",
                line=line,
                legendgroup=group,
                meta=meta,
                hovertemplate="%{x}<br>%{y:,.0f}<extra>" + esc(name) + "</extra>",
            ),
            row=1,
            col=1,
        )
        dd = -100.0 * drawdown_series(series.to_numpy(dtype=float))
        fig.add_trace(
            go.Scatter(
                x=x,
                y=dd,
                name=name,
                mode="lines",
                line=line,
                legendgroup=group,
                meta=meta,
                showlegend=False,
                hovertemplate="%{x}<br>%{y:.2f}%<extra>" + esc(name) + "</extra>",
            ),
            row=2,
            col=1,
        )

    alerts_html = []
    for n, r in enumerate(data.runs):
        if r.equity is None or id(r) in bench_runs:
            continue
        add(r.label, r.equity, {"width": 1.8, "color": COLORS[n % len(COLORS)]}, timelines.get(id(r)), f"run{n}")
        days = alerts(r)
        if days:
            when = pd.DatetimeIndex(pd.to_datetime([d for d, _ in days]))
            keep = [(d, a) for (d, a), t in zip(days, when) if t in r.equity.index]
            text = [
                esc(
                    f"CVaR alert: {a.get('reason', '')}"
                    + (f" (rho {a['rho']:.3f}%)" if isinstance(a.get("rho"), (int, float)) else "")
                )
                for _, a in keep
            ]
            fig.add_trace(
                go.Scatter(
                    x=[d for d, _ in keep],
                    y=[float(r.equity.loc[pd.Timestamp(d)]) for d, _ in keep],
                    name=f"{r.label}: CVaR alert ({len(keep)})",
                    mode="markers",
                    legendgroup=f"run{n}",
                    marker={"symbol": "triangle-down", "size": 11, "color": ALERT_COLOR},
                    meta=timelines.get(id(r)),
                    text=text,
                    hovertemplate="%{x}<br>%{text}<extra></extra>",
                ),
                row=1,
                col=1,
            )
            alerts_html.append(f"{esc(r.label)}: {len(keep)} CVaR alert day(s): " + ", ".join(esc(d) for d, _ in keep))
    notes = []
    for b in data.benchmarks:
        if b.equity is not None:
            add(b.label, b.equity, BENCHMARK_STYLE, None, f"bench-{b.label}")
        if b.note:
            notes.append(f"{b.label}: curve {b.note}")
    fig.update_layout(
        template="plotly_white",
        hovermode="closest",
        margin={"l": 70, "r": 20, "t": 40, "b": 40},
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0},
    )
    curves = [r.equity for r in data.runs] + [b.equity for b in data.benchmarks]
    if not any(c is not None and (pd.DatetimeIndex(c.index).day_of_week >= 5).any() for c in curves):
        # no flat line over weekends; a coin's weekend bars would fall in the break and vanish
        fig.update_xaxes(rangebreaks=[{"bounds": ["sat", "mon"]}])
    fig.update_yaxes(title_text="portfolio value ($)", tickformat=",.0f", row=1, col=1)
    fig.update_yaxes(title_text="drawdown (%)", row=2, col=1)
    out = [
        '<section id="curves"><h2>Equity and drawdown</h2>',
        '<p class="note">Portfolio value at each close and its drawdown from the running peak; the benchmark '
        "dashed. Red triangles: days the team's CVaR alert fired. Click a point of a team's curve to open "
        "that day in the decision timeline.</p>",
        f'<div class="chart">{plot_div(fig, "equity-chart", "640px")}</div>',
    ]
    out += [f'<p class="note">{a}</p>' for a in alerts_html]
    out += [f'<p class="note">{esc(n)}</p>' for n in notes]
    out.append("</section>")
    return "\n".join(out)


# -- decision timeline ---------------------------------------------------------------


def _day_text(entry: dict[str, Any], config: dict[str, Any]) -> str:
    return format_day(entry, (config.get("broker") or {}).get("fill"))


def _day_label(entry: dict[str, Any]) -> str:
    acts = entry.get("actions") or ((entry.get("record") or {}).get("manager") or {}).get("actions") or {}
    if isinstance(acts, dict) and acts:
        return ", ".join(f"{t} {a}" for t, a in sorted(acts.items()))
    return "keep" if entry.get("weights") is None else "rebalance"


def section_timeline(data: ReportData) -> str:
    runs = timeline_runs(data)
    if not runs:
        return ""
    out = [
        '<section id="decisions"><h2>Decisions</h2>',
        '<p class="note">Click a day: what the team saw, said and did, with the evidence each claim cites '
        "(the text of <code>fincon explain RUN --date DAY</code>). Red: a CVaR alert made the manager "
        "risk-averse that day.</p>",
    ]
    for i, r in enumerate(runs):
        days = [d for d in r.decisions if isinstance(d.get("record"), dict)]
        items, details = [], []
        for d in days:
            day = esc(str(d.get("date")))
            risk = day_risk(d) or {}
            alert = bool(risk.get("alert"))
            items.append(
                f'<li><button type="button" class="day{" alert" if alert else ""}" data-day="{day}" '
                f'aria-pressed="false"><span class="d">{day}</span> {esc(_day_label(d))}'
                + (' <span class="flag">CVaR alert</span>' if alert else "")
                + "</button></li>"
            )
            head = f'<h4>{day} <span class="muted">{esc(r.label)}</span></h4>'
            if alert:
                head += f'<p class="alert-line">CVaR alert: {esc(str(risk.get("reason", "")))}</p>'
            try:
                text = "\n".join(x for x in (_day_text(d, r.config), r.masked_note(str(d.get("date")))) if x)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a record of another format
                text = f"(this day's record could not be laid out: {type(exc).__name__}; as stored)\n" + json.dumps(
                    d, indent=1, sort_keys=True
                )
            details.append(
                f'<article class="day-detail" data-day="{day}" hidden>{head}<pre>{esc(text)}</pre></article>'
            )
        out.append(
            f'<div class="timeline" id="{timeline_id(i)}"><h3>{esc(r.label)}</h3><div class="tl-grid">'
            f'<ol class="days">{"".join(items)}</ol><div class="detail">'
            '<p class="placeholder muted">Click a day on the left (or a point of this run\'s equity curve) '
            "to see that day.</p>" + "".join(details) + "</div></div></div>"
        )
    out.append("</section>")
    return "\n".join(out)
