"""Render :class:`~fincon.report.load.ReportData` as one self-contained HTML page.

* charts: Plotly figures, with plotly.js inlined once in the page's head
  (what ``include_plotlyjs=True`` inlines), fixed ``div_id`` s so the same
  inputs give the same bytes;
* performance: ``quantstats.stats`` on each curve's daily simple returns,
  the relative statistics against the benchmark series passed in (so
  quantstats never downloads one). Not its tear sheet
  (``quantstats.reports.html`` / ``metrics``): on windows of a few weeks its
  drawdown table comes out empty (a drawdown from the first day has no
  start) and the benchmark column depends on the strategy it sits beside;
* decisions: each day of a team run as ``fincon explain`` prints it
  (:func:`fincon.agents.records.format_day`), shown when its day is clicked.

No timestamp, random id or absolute path goes into the page.
"""

from __future__ import annotations

import html
import json
import math
import warnings
from typing import Any, Iterable, Sequence

import pandas as pd

from fincon import __version__
from fincon.report import assets
from fincon.report.load import ReportData, Run, Training

esc = html.escape
PLOT_CONFIG = {"displaylogo": False, "responsive": True}
BENCHMARK_STYLE = {"dash": "dash", "color": "#6e7781", "width": 1.6}
ALERT_COLOR = "#cf222e"
#: Plotly's default colour sequence without its red, which marks CVaR alerts here
COLORS = ("#636EFA", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880", "#FF97FF", "#FECB52")


# -- formatting ------------------------------------------------------------------

def _num(v: Any, spec: str = "{:.3f}") -> str:
    if v is None:
        return "n/a"
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, int):
        return spec.format(v) if spec.endswith("d}") else f"{v:,d}"
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        try:
            return spec.format(v)
        except ValueError:
            return f"{v:.3f}"
    if isinstance(v, (list, dict)):
        return json.dumps(v, sort_keys=True)
    return str(v)


def _table(head: Sequence[str], rows: Iterable[Sequence[Any]], *, text_cols: Sequence[int] = (),
           row_classes: Sequence[str] | None = None, raw: bool = False) -> str:
    """An HTML table; cells are escaped unless ``raw``."""
    cell = (lambda x: str(x)) if raw else (lambda x: esc(str(x)))
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f'<th{" class=text" if i in text_cols else ""}>{esc(h)}</th>' for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for n, row in enumerate(rows):
        cls = row_classes[n] if row_classes and n < len(row_classes) and row_classes[n] else ""
        out.append(f'<tr{f" class={cls}" if cls else ""}>')
        out += [f'<td{" class=text" if i in text_cols else ""}>{cell(x)}</td>' for i, x in enumerate(row)]
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def _days(index: pd.DatetimeIndex) -> list[str]:
    return [d.strftime("%Y-%m-%d") for d in index]


def _plot_div(fig, div_id: str, height: str) -> str:
    import plotly.io as pio

    return pio.to_html(fig, full_html=False, include_plotlyjs=False, div_id=div_id, config=PLOT_CONFIG,
                       default_height=height, validate=True)


def day_risk(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The day's CVaR alert state: ``entry['risk']`` or the team's ``record['risk']``."""
    risk = entry.get("risk")
    if not isinstance(risk, dict):
        risk = (entry.get("record") or {}).get("risk") if isinstance(entry.get("record"), dict) else None
    return risk if isinstance(risk, dict) else None


def _alerts(run: Run) -> list[tuple[str, dict[str, Any]]]:
    return [(str(d.get("date")), r) for d in run.decisions if (r := day_risk(d)) and r.get("alert")]


def _timeline_id(i: int) -> str:
    return f"timeline-{i + 1}"


def _timeline_runs(data: ReportData) -> list[Run]:
    return [r for r in data.runs if r.team and r.timeline]


# -- sections ----------------------------------------------------------------------

def _metric_rows() -> tuple[list[str], dict[str, tuple[str, str]]]:
    from fincon.report.table import ROWS

    order = [k for k, _, _ in ROWS]
    return order, {k: (label, fmt) for k, label, fmt in ROWS}


def _columns(data: ReportData) -> dict[str, dict[str, Any]]:
    cols: dict[str, dict[str, Any]] = {}
    for s in data.sources:
        for r in s.runs:
            cols[r.label] = r.metrics
    for b in data.benchmarks:
        if b.run is None and b.metrics is not None:
            cols[b.label] = {"status": "complete", **b.metrics}
    for s in data.sources:
        for name, m in s.columns.items():
            cols[name if name not in cols else f"{s.path.name}/{name}"] = m
    return cols


def section_metrics(data: ReportData) -> str:
    cols = _columns(data)
    order, known = _metric_rows()
    keys: list[str] = [k for k in order if any(k in c for c in cols.values())]
    extra = sorted({k for c in cols.values() for k in c} - set(keys) - {"strategy", "stop_reason"})  # reason: a note
    keys += extra
    rows = []
    for k in keys:
        label, fmt = known.get(k, (k, "{:.3f}"))
        rows.append([f"{esc(label)} <code>{esc(k)}</code>" if label != k else f"<code>{esc(k)}</code>"]
                    + [esc(_num(c.get(k), fmt)) if k in c else "" for c in cols.values()])
    out = ['<section id="metrics"><h2>Metrics</h2>',
           '<p class="note">From each run\'s <code>metrics.json</code> (every key it holds; the README\'s '
           'Metrics section defines them). The paper\'s Sharpe, Sortino and volatility use daily log returns, '
           'the <code>*_empyrical</code> keys daily simple returns.</p>',
           _table(["metric", *cols], rows, raw=True)]
    notes = []
    for r in data.runs:
        reason = r.summary.get("stop_reason") or r.metrics.get("stop_reason")
        if reason:
            notes.append(f"{r.label} stopped early on {r.summary.get('last_day', '?')}: {reason}")
    for s in data.sources:
        for name, m in s.columns.items():
            if m.get("status") == "failed":
                notes.append(f"{name} finished no day: {m.get('stop_reason', '')}")
    out += [f'<p class="note">{esc(" ".join(n.split()))}</p>' for n in notes]
    out.append("</section>")
    return "\n".join(out)


def section_curves(data: ReportData) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    from fincon.risk.metrics import drawdown_series

    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, row_heights=[0.7, 0.3], vertical_spacing=0.05)
    timelines = {id(r): _timeline_id(i) for i, r in enumerate(_timeline_runs(data))}
    bench_runs = {id(b.run) for b in data.benchmarks if b.run is not None}

    def add(name: str, series: pd.Series, line: dict[str, Any] | None, meta: str | None, group: str) -> None:
        x = _days(series.index)
        fig.add_trace(go.Scatter(x=x, y=series.to_numpy(dtype=float), name=name, mode="lines", line=line,
                                 legendgroup=group, meta=meta,
                                 hovertemplate="%{x}<br>%{y:,.0f}<extra>" + esc(name) + "</extra>"), row=1, col=1)
        dd = -100.0 * drawdown_series(series.to_numpy(dtype=float))
        fig.add_trace(go.Scatter(x=x, y=dd, name=name, mode="lines", line=line, legendgroup=group, meta=meta,
                                 showlegend=False,
                                 hovertemplate="%{x}<br>%{y:.2f}%<extra>" + esc(name) + "</extra>"), row=2, col=1)

    alerts_html = []
    for n, r in enumerate(data.runs):
        if r.equity is None or id(r) in bench_runs:
            continue
        add(r.label, r.equity, {"width": 1.8, "color": COLORS[n % len(COLORS)]}, timelines.get(id(r)), f"run{n}")
        days = _alerts(r)
        if days:
            when = pd.DatetimeIndex(pd.to_datetime([d for d, _ in days]))
            keep = [(d, a) for (d, a), t in zip(days, when) if t in r.equity.index]
            text = [esc(f"CVaR alert: {a.get('reason', '')}"
                        + (f" (rho {a['rho']:.3f}%)" if isinstance(a.get("rho"), (int, float)) else ""))
                    for _, a in keep]
            fig.add_trace(go.Scatter(
                x=[d for d, _ in keep], y=[float(r.equity.loc[pd.Timestamp(d)]) for d, _ in keep],
                name=f"{r.label}: CVaR alert ({len(keep)})", mode="markers", legendgroup=f"run{n}",
                marker={"symbol": "triangle-down", "size": 11, "color": ALERT_COLOR}, meta=timelines.get(id(r)),
                text=text, hovertemplate="%{x}<br>%{text}<extra></extra>"), row=1, col=1)
            alerts_html.append(f"{esc(r.label)}: {len(keep)} CVaR alert day(s): "
                               + ", ".join(esc(d) for d, _ in keep))
    notes = []
    for b in data.benchmarks:
        if b.equity is not None:
            add(b.label, b.equity, BENCHMARK_STYLE, None, f"bench-{b.label}")
        if b.note:
            notes.append(f"{b.label}: curve {b.note}")
        elif b.run is None and b.equity is not None:
            notes.append(f"{b.label}: curve recomputed from the run's config.yaml (buy-and-hold on the same "
                         "prices and broker), matching the benchmark's recorded final value"
                         if b.metrics else f"{b.label}: curve recomputed from the run's config.yaml")
    fig.update_layout(template="plotly_white", hovermode="closest", margin={"l": 70, "r": 20, "t": 40, "b": 40},
                      legend={"orientation": "h", "yanchor": "bottom", "y": 1.02, "x": 0})
    fig.update_xaxes(rangebreaks=[{"bounds": ["sat", "mon"]}])  # no flat line over weekends
    fig.update_yaxes(title_text="portfolio value ($)", tickformat=",.0f", row=1, col=1)
    fig.update_yaxes(title_text="drawdown (%)", row=2, col=1)
    out = ['<section id="curves"><h2>Equity and drawdown</h2>',
           '<p class="note">Portfolio value at each close and its drawdown from the running peak; the benchmark '
           'dashed. Red triangles: days the team\'s CVaR alert fired. Click a point of a team\'s curve to open '
           'that day in the decision timeline.</p>',
           f'<div class="chart">{_plot_div(fig, "equity-chart", "640px")}</div>']
    out += [f'<p class="note">{a}</p>' for a in alerts_html]
    out += [f'<p class="note">{esc(n)}</p>' for n in notes]
    out.append("</section>")
    return "\n".join(out)


# -- performance (quantstats) -----------------------------------------------------

def _returns(series: pd.Series) -> pd.Series:
    """Daily simple returns of a value curve (from its second day)."""
    r = series.astype(float).pct_change().iloc[1:]
    r.index = pd.DatetimeIndex(r.index).tz_localize(None)
    return r


PCT, NUM = "{:.2%}", "{:.3f}"
#: (label, quantstats.stats function, format): each on one curve's daily simple returns
#: (max drawdown on its values, so the first day's loss counts), annualised with 252 days
QS_STATS = (
    ("cumulative return", lambda r, v, rf: qs_stats().comp(r), PCT),
    ("CAGR", lambda r, v, rf: qs_stats().cagr(r, rf=rf, periods=252), PCT),
    ("Sharpe", lambda r, v, rf: qs_stats().sharpe(r, rf=rf, periods=252), NUM),
    ("smart Sharpe (autocorrelation penalty)", lambda r, v, rf: qs_stats().smart_sharpe(r, rf=rf, periods=252), NUM),
    ("Sortino", lambda r, v, rf: qs_stats().sortino(r, rf=rf, periods=252), NUM),
    ("volatility (ann.)", lambda r, v, rf: qs_stats().volatility(r, periods=252), PCT),
    ("max drawdown", lambda r, v, rf: qs_stats().max_drawdown(v), PCT),
    ("Calmar", lambda r, v, rf: qs_stats().calmar(r, periods=252), NUM),
    ("Omega", lambda r, v, rf: qs_stats().omega(r, rf=rf, periods=252), NUM),
    ("skew", lambda r, v, rf: qs_stats().skew(r), NUM),
    ("kurtosis", lambda r, v, rf: qs_stats().kurtosis(r), NUM),
    ("daily VaR 95% (normal)", lambda r, v, rf: qs_stats().value_at_risk(r), PCT),
    ("expected shortfall 95% (cVaR, normal)", lambda r, v, rf: qs_stats().expected_shortfall(r), PCT),
    ("win days", lambda r, v, rf: qs_stats().win_rate(r), PCT),
    ("avg. win", lambda r, v, rf: qs_stats().avg_win(r), PCT),
    ("avg. loss", lambda r, v, rf: qs_stats().avg_loss(r), PCT),
    ("payoff ratio", lambda r, v, rf: qs_stats().payoff_ratio(r), NUM),
    ("profit factor", lambda r, v, rf: qs_stats().profit_factor(r), NUM),
    ("tail ratio", lambda r, v, rf: qs_stats().tail_ratio(r), NUM),
    ("best day", lambda r, v, rf: qs_stats().best(r), PCT),
    ("worst day", lambda r, v, rf: qs_stats().worst(r), PCT),
    ("ulcer index", lambda r, v, rf: qs_stats().ulcer_index(r), NUM),
    ("Kelly criterion", lambda r, v, rf: qs_stats().kelly_criterion(r), PCT),
)
#: against the benchmark, on the days both have
QS_RELATIVE = (
    ("beta", lambda r, b: qs_stats().greeks(r, b, periods=252)["beta"], NUM),
    ("alpha (ann.)", lambda r, b: qs_stats().greeks(r, b, periods=252)["alpha"], NUM),
    ("correlation", lambda r, b: r.corr(b), NUM),
    ("R²", lambda r, b: qs_stats().r_squared(r, b), NUM),
    ("information ratio", lambda r, b: qs_stats().information_ratio(r, b), NUM),
)


def _quantstats():
    """quantstats, imported without its side effects: importing it applies a
    seaborn style to matplotlib's global rcParams (which would restyle every
    equity.png drawn later in the same process) and adds warning filters."""
    import matplotlib

    with matplotlib.rc_context(), warnings.catch_warnings():
        import quantstats
    return quantstats


def qs_stats():
    return _quantstats().stats


def _fmt_stat(value: Any, fmt: str) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return "n/a" if not math.isfinite(v) else fmt.format(v)


def _stat(fn, fmt: str, *args) -> str:
    """One statistic; undefined (no losing day, no drawdown...) is n/a."""
    try:
        return _fmt_stat(fn(*args), fmt)
    except (ZeroDivisionError, FloatingPointError, ValueError, KeyError, IndexError):
        return "n/a"


def _qs_column(values: pd.Series, rf: float, bench: pd.Series | None) -> list[str]:
    import numpy as np

    r = _returns(values)
    out = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for _, fn, fmt in QS_STATS:
            out.append(_stat(fn, fmt, r, values.astype(float), rf))
        if bench is not None:
            b = _returns(bench)
            days = r.index.intersection(b.index)
            for _, fn, fmt in QS_RELATIVE:
                out.append(_stat(fn, fmt, r.loc[days], b.loc[days]) if len(days) > 2 else "n/a")
        else:
            out += [""] * len(QS_RELATIVE)
    return out


def section_performance(data: ReportData) -> str:
    """quantstats statistics for every curve; the relative ones against its window's benchmark."""
    by_window = {b.window: b for b in data.benchmarks}
    columns: dict[str, list[str]] = {}
    skipped = []
    curves = [(r.label, r.equity, r.config, r.window, r) for r in data.runs]
    configs = {r.window: r.config for r in reversed(data.runs)}  # a benchmark takes its window's risk-free rate
    curves += [(b.label, b.equity, configs.get(b.window, {}), b.window, None) for b in data.benchmarks
               if b.run is None]
    for label, values, config, window, run in curves:
        if values is None or len(values) < 3:
            skipped.append(label)
            continue
        b = by_window.get(window)
        is_bench = b is not None and (run is None or b.run is run)
        rf = float((config.get("metrics") or {}).get("risk_free", 0.0) or 0.0)
        columns[label] = _qs_column(values, rf, None if is_bench or b is None else b.equity)
    if not columns:
        return ""
    quantstats = _quantstats()
    labels = [x[0] for x in QS_STATS] + [f"{x[0]} vs benchmark" for x in QS_RELATIVE]
    rows = [[label] + [c[i] for c in columns.values()] for i, label in enumerate(labels)]
    out = ['<section id="performance"><h2>Performance (quantstats)</h2>',
           f'<p class="note">quantstats {esc(quantstats.__version__)} (<code>quantstats.stats</code>) on daily simple '
           'returns, annualised with 252 days, the run\'s risk-free rate; the last rows against the buy-and-hold '
           'benchmark of the run\'s window, on the days both have. With a zero risk-free rate its Sharpe is the '
           'table above\'s <code>sharpe_empyrical</code> (quantstats turns an annual rate into a daily one by '
           'compounding, fincon divides it by 252); its VaR and cVaR are parametric (normal), unlike the '
           'paper\'s. Annual figures extrapolate short windows.</p>',
           _table(["statistic", *columns], rows)]
    if skipped:
        out.append(f'<p class="note">fewer than three days, not computed: {esc(", ".join(skipped))}</p>')
    out.append("</section>")
    return "\n".join(out)


# -- LLM usage -------------------------------------------------------------------

VIA = ("llm", "rules", "reuse", "fallback", "empty")
USAGE = ("calls", "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd", "reasks", "fallbacks", "failures")


def _usage_by_agent(run: Run) -> tuple[list[str], dict[str, dict[str, float]]]:
    agents: dict[str, dict[str, float]] = {}

    def row(name: str) -> dict[str, float]:
        return agents.setdefault(name, {k: 0.0 for k in (*USAGE, *VIA)})

    for u in run.usage:
        a = row(str(u.get("agent", "?")))
        for k in USAGE:
            try:
                a[k] += float(u.get(k) or 0)
            except ValueError:
                pass
    for d in run.decisions:
        rec = d.get("record")
        if not isinstance(rec, dict):
            continue
        parts = list(rec.get("agents") or [])
        for key in ("selection", "manager"):
            if isinstance(rec.get(key), dict) and rec[key].get("via"):
                parts.append({"agent": rec[key].get("agent", key), "via": rec[key]["via"]})
        for p in parts:
            if isinstance(p, dict) and p.get("via") in VIA:
                row(str(p.get("agent", "?")))[p["via"]] += 1
    names = sorted(agents, key=lambda n: (n == "manager", n))
    return names, agents


def section_llm(data: ReportData) -> str:
    blocks = []
    for r in data.runs:
        if not r.usage and not r.team:
            continue
        names, agents = _usage_by_agent(r)
        if not names:
            continue
        head = ["agent"]
        if r.usage:
            head += ["model calls", "prompt tokens", "completion tokens", "cost $", "re-asks", "fallbacks", "failures"]
        head += ["reports: model", "rules", "reused", "fallback", "empty"]

        def cells(a: dict[str, float]) -> list[str]:
            out = []
            if r.usage:
                out += [f"{int(a[k]):,d}" for k in ("calls", "prompt_tokens", "completion_tokens")]
                out += [f"{a['cost_usd']:.4f}"] + [f"{int(a[k]):,d}" for k in ("reasks", "fallbacks", "failures")]
            return out + [f"{int(a[k]):,d}" for k in VIA]

        total = {k: sum(agents[n][k] for n in names) for k in (*USAGE, *VIA)}
        rows = [[n, *cells(agents[n])] for n in names] + [["total", *cells(total)]]
        s = r.summary.get("strategy_summary") or {}
        days = sum(1 for d in r.decisions if isinstance(d.get("record"), dict))
        made = sum(int(((d.get("record") or {}).get("calls") or {}).get("made", 0) or 0) for d in r.decisions
                   if isinstance(d.get("record"), dict))
        line = [f"{days} decision day(s)"]
        if r.team:
            line.append(f"{made} model call(s) made by the team"
                        + (f" ({made / days:.2f} a day)" if days else ""))
        if s.get("team_brain"):
            line.append(f"brain {s['team_brain']}")
        if s.get("llm_structured_mode"):
            line.append(f"structured output {s['llm_structured_mode']}")
        if r.usage:
            line.append(f"{int(total['total_tokens']):,d} tokens, ${total['cost_usd']:.4f}")
        else:
            line.append("no llm_usage.csv: no model was asked")
        block = [f"<h3>{esc(r.label)}</h3>", f'<p class="note">{esc("; ".join(line))}</p>',
                 _table(head, rows, row_classes=[""] * len(names) + ["total"])]
        if r.audit:
            audit_rows = []
            for e in r.audit:
                detail = e.get("reason") or e.get("error") or "; ".join(map(str, e.get("errors") or [])) or ""
                detail = " ".join(str(detail).split())
                audit_rows.append([e.get("day", ""), e.get("agent", ""), e.get("event", ""),
                                   detail[:400] + ("..." if len(detail) > 400 else "")])
            block.append(f"<details><summary>llm_audit.jsonl: {len(r.audit)} event(s) (re-asks, fallbacks, "
                         f"failures)</summary>{_table(['day', 'agent', 'event', 'detail'], audit_rows, text_cols=[3])}"
                         "</details>")
        blocks.append("\n".join(block))
    if not blocks:
        return ""
    return "\n".join(['<section id="llm"><h2>LLM usage</h2>',
                      '<p class="note">Per agent: model calls, tokens and cost from <code>llm_usage.csv</code> '
                      '(cost priced as if every call were live; 0 for local models), re-asks, fallbacks and failures '
                      'of invalid answers; then, from <code>decisions.jsonl</code>, how many of its daily reports '
                      'came from the model, from the rules brain, were reused because the inputs had not changed '
                      '(no call), fell back to the rules brain after an invalid answer, or had nothing to read.</p>',
                      *blocks, "</section>"])


# -- training ---------------------------------------------------------------------

def _training_chart(t: Training, div_id: str) -> str:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    rows = t.episodes
    ks = [r.get("episode") for r in rows]
    names = sorted({n for r in rows for n in (r.get("weights_in_force") or {})})
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08,
                        specs=[[{}], [{"secondary_y": True}]],
                        subplot_titles=("rules weight in force", "objective (CR %) and tau"))
    for i, n in enumerate(names):
        fig.add_trace(go.Scatter(x=ks, y=[(r.get("weights_in_force") or {}).get(n) for r in rows], name=n,
                                 mode="lines+markers", line={"color": COLORS[i % len(COLORS)]}), row=1, col=1)
    fig.add_trace(go.Scatter(x=ks, y=[r.get("objective") for r in rows], name="objective (CR %)",
                             mode="lines+markers", line={"color": "#1f2328"}), row=2, col=1)
    tau = [(r.get("episode"), r["tau"]) for r in rows if isinstance(r.get("tau"), (int, float))]
    fig.add_trace(go.Scatter(x=[k for k, _ in tau], y=[v for _, v in tau], name="tau (same action share)",
                             mode="lines+markers", line={"color": "#bc4c00", "dash": "dash"}),
                  row=2, col=1, secondary_y=True)
    fig.update_layout(template="plotly_white", margin={"l": 60, "r": 60, "t": 40, "b": 40})
    fig.update_xaxes(title_text="episode", dtick=1, row=2, col=1)
    fig.update_yaxes(range=[0, 1.05], tickmode="auto", showgrid=False, title_text="tau", row=2, col=1,
                     secondary_y=True)
    fig.update_yaxes(title_text="objective %", row=2, col=1, secondary_y=False)
    return f'<div class="chart">{_plot_div(fig, div_id, "520px")}</div>'


def section_training(data: ReportData) -> str:
    trainings = [t for s in data.sources for t in s.trainings]
    if not trainings:
        return ""
    out = ['<section id="training"><h2>Training (beliefs, tau, objective)</h2>',
           '<p class="note">From <code>episodes.jsonl</code> and <code>beliefs.json</code> of '
           '<code>fincon train</code>: per episode the objective (sum of daily log returns, %), tau (share of days '
           'two consecutive episodes took the same action; the belief step\'s learning rate is 1 - tau), the '
           'belief edits and the weights in force; then the learned beliefs.</p>']
    for i, t in enumerate(trainings):
        out.append(f"<h3>{esc(t.label)}" + (f' <span class="muted">({esc(str(t.status))})</span>' if t.status else "")
                   + "</h3>")
        if t.episodes:
            head = ["episode", "objective %", "tau", "CR %", "Sharpe", "MDD %", "days", "alerts", "beliefs",
                    "model calls", "tokens", "cost $"]
            rows = [[_num(r.get("episode")), _num(r.get("objective")), _num(r.get("tau")), _num(r.get("cr_pct")),
                     _num(r.get("sharpe")), _num(r.get("mdd_pct")), _num(r.get("days")), _num(r.get("alerts")),
                     f"v{r.get('beliefs_before', '?')} -> v{r.get('beliefs_after', '?')}",
                     _num(r.get("team_model_calls")), _num(r.get("llm_tokens")),
                     _num(r.get("llm_cost_usd"), "{:.4f}")] for r in t.episodes]
            out.append(_table(head, rows))
            out.append(_training_chart(t, f"training-{i + 1}"))
            updates = []
            for r in t.episodes:
                u = r.get("update")
                if not isinstance(u, dict):
                    continue
                lines = [f"<h4>episode {esc(_num(r.get('episode')))}: better episode {esc(_num(u.get('better')))}, "
                         f"worse {esc(_num(u.get('worse')))}, tau {esc(_num(u.get('tau')))}, rate "
                         f"{esc(_num(u.get('rate')))}, via {esc(str(u.get('via', '')))}, beliefs "
                         f"v{esc(_num(u.get('beliefs_version')))}</h4>"]
                if u.get("meta"):
                    lines.append(f'<p class="note">{esc(str(u["meta"]))}</p>')
                edits = u.get("edits") if isinstance(u.get("edits"), dict) else {}
                if edits:
                    lines.append(_table(["perspective", "text before", "text after", "edit size", "weight"],
                                        [[k, e.get("before", ""), e.get("after", ""), _num(e.get("size")),
                                          f"{_num(e.get('weight_before'))} -> {_num(e.get('weight_after'))}"]
                                         for k, e in sorted(edits.items()) if isinstance(e, dict)],
                                        text_cols=[1, 2]))
                else:
                    lines.append('<p class="note">no belief text edited</p>')
                w = u.get("weights") if isinstance(u.get("weights"), dict) else {}
                before, after = w.get("before") or {}, w.get("after") or {}
                if before or after:
                    lines.append(_table(["rules weight", "before", "after"],
                                        [[k, _num(before.get(k)), _num(after.get(k))]
                                         for k in sorted(set(before) | set(after))]))
                if u.get("reached"):
                    lines.append(f'<p class="note">reached: {esc(", ".join(map(str, u["reached"])))}</p>')
                updates.append("\n".join(lines))
            if updates:
                out.append(f"<details><summary>belief updates ({len(updates)})</summary>{''.join(updates)}</details>")
        b = t.beliefs
        if b:
            ps = b.get("perspectives") if isinstance(b.get("perspectives"), dict) else {}
            out.append(f"<h4>learned beliefs (beliefs.json, version {esc(_num(b.get('version')))})</h4>")
            out.append(_table(["perspective", "weight", "text"],
                              [[k, _num((p or {}).get("weight")), (p or {}).get("text", "") or "(empty)"]
                               for k, p in ps.items()], text_cols=[2]))
            refl = b.get("reflections") if isinstance(b.get("reflections"), list) else []
            if refl:
                out.append(f"<details><summary>{len(refl)} reflection(s) carried to the test stage</summary>"
                           + _table(["day", "reflection"], [[x.get("day", ""), x.get("text", "")] for x in refl
                                                            if isinstance(x, dict)], text_cols=[1])
                           + "</details>")
    out.append("</section>")
    return "\n".join(out)


# -- experiment -------------------------------------------------------------------

def section_experiment(data: ReportData) -> str:
    exps = [s.experiment for s in data.sources if s.experiment is not None]
    if not exps:
        return ""
    out = ['<section id="experiment"><h2>Experiment</h2>']
    for e in exps:
        res = e.results
        w = lambda k: (res.get(k) or {}) if isinstance(res.get(k), dict) else {}  # noqa: E731
        out.append(f"<h3>{esc(e.label)}" + (f' <span class="muted">({esc(str(e.status))})</span>' if e.status else "")
                   + "</h3>")
        out.append(f'<p class="note">{esc(", ".join(map(str, res.get("tickers") or [])))}; train '
                   f'{esc(str(w("train").get("start", "?")))}..{esc(str(w("train").get("end", "?")))}, test '
                   f'{esc(str(w("test").get("start", "?")))}..{esc(str(w("test").get("end", "?")))}; '
                   f'{esc(_num(res.get("repeats")))} repeat(s) of {esc(_num(res.get("episodes")))} episode(s), brain '
                   f'{esc(str(res.get("brain", "?")))}; {esc(str(res.get("returns", "")))}</p>')
        best = res.get("best_baseline")
        rows = []
        for ab, m in (res.get("median") or {}).items():
            if not isinstance(m, dict):
                continue
            wx = m.get("wilcoxon") if isinstance(m.get("wilcoxon"), dict) else {}
            rows.append([f"fincon {ab} (median: r{m.get('repeat', '?')})", _num(m.get("cr_pct")), _num(m.get("sharpe")),
                         _num(m.get("mdd_pct")), _num(wx.get("p_value"), "{:.4f}") if wx else "",
                         f"{_num(m.get('cr_pct_min'), '{:.2f}')} .. {_num(m.get('cr_pct_max'), '{:.2f}')}"])
        for name, m in (res.get("baselines") or {}).items():
            if isinstance(m, dict):
                rows.append([name + (" *" if name == best else ""), _num(m.get("cr_pct")), _num(m.get("sharpe")),
                             _num(m.get("mdd_pct")), "", ""])
        if rows:
            out.append(_table(["", "CR %", "Sharpe", "MDD %", f"p vs {best or 'best baseline'}", "CR % range"], rows))
            out.append('<p class="note">* best baseline by Sharpe on the test window; p: two-sided Wilcoxon '
                       'signed-rank test of the median run\'s daily log returns against it.</p>')
        units = res.get("runs") if isinstance(res.get("runs"), dict) else {}
        if units:
            out.append("<details><summary>every run</summary>" + _table(
                ["unit", "ablation", "repeat", "CR %", "Sharpe", "MDD %", "training objectives"],
                [[u, m.get("ablation", ""), _num(m.get("repeat")), _num(m.get("cr_pct")), _num(m.get("sharpe")),
                  _num(m.get("mdd_pct")), ", ".join(_num(x, "{:.2f}") for x in (m.get("train_objectives") or []))]
                 for u, m in units.items() if isinstance(m, dict)]) + "</details>")
    out.append("</section>")
    return "\n".join(out)


# -- decision timeline ---------------------------------------------------------------

def _day_text(entry: dict[str, Any]) -> str:
    from fincon.agents.records import format_day

    return format_day(entry)


def _day_label(entry: dict[str, Any]) -> str:
    acts = entry.get("actions") or ((entry.get("record") or {}).get("manager") or {}).get("actions") or {}
    if isinstance(acts, dict) and acts:
        return ", ".join(f"{t} {a}" for t, a in sorted(acts.items()))
    return "keep" if entry.get("weights") is None else "rebalance"


def section_timeline(data: ReportData) -> str:
    runs = _timeline_runs(data)
    if not runs:
        return ""
    out = ['<section id="decisions"><h2>Decisions</h2>',
           '<p class="note">Click a day: what the team saw, said and did, with the evidence each claim cites '
           '(the text of <code>fincon explain RUN --date DAY</code>). Red: a CVaR alert made the manager '
           'risk-averse that day.</p>']
    for i, r in enumerate(runs):
        days = [d for d in r.decisions if isinstance(d.get("record"), dict)]
        items, details = [], []
        for d in days:
            day = esc(str(d.get("date")))
            risk = day_risk(d) or {}
            alert = bool(risk.get("alert"))
            items.append(f'<li><button type="button" class="day{" alert" if alert else ""}" data-day="{day}" '
                         f'aria-pressed="false"><span class="d">{day}</span> {esc(_day_label(d))}'
                         + (' <span class="flag">CVaR alert</span>' if alert else "") + "</button></li>")
            head = f'<h4>{day} <span class="muted">{esc(r.label)}</span></h4>'
            if alert:
                head += f'<p class="alert-line">CVaR alert: {esc(str(risk.get("reason", "")))}</p>'
            try:
                text = _day_text(d)
            except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a record of another format
                text = (f"(this day's record could not be laid out: {type(exc).__name__}; as stored)\n"
                        + json.dumps(d, indent=1, sort_keys=True))
            details.append(f'<article class="day-detail" data-day="{day}" hidden>{head}<pre>{esc(text)}</pre>'
                           "</article>")
        out.append(f'<div class="timeline" id="{_timeline_id(i)}"><h3>{esc(r.label)}</h3><div class="tl-grid">'
                   f'<ol class="days">{"".join(items)}</ol><div class="detail">'
                   '<p class="placeholder muted">Click a day on the left (or a point of this run\'s equity curve) '
                   'to see that day.</p>' + "".join(details) + "</div></div></div>")
    out.append("</section>")
    return "\n".join(out)


# -- the page -----------------------------------------------------------------------

def section_failures(data: ReportData) -> list[str]:
    """A training or experiment that did not finish says so first: what is
    shown below are its leftovers, not its result."""
    return [f'<section class="failed"><p><strong>Not a finished result.</strong> {esc(s.path.name)} '
            f'({esc(s.kind)}) {esc(s.failure)}. Below: only what it finished; rerun its command to resume.</p>'
            "</section>" for s in data.sources if s.failure]


def _title(data: ReportData) -> tuple[str, str]:
    windows = []
    for r in data.runs:
        tickers, start, end = r.window
        w = f"{', '.join(tickers)} {start} .. {end}"
        if w not in windows:
            windows.append(w)
    kinds = []
    for s in data.sources:
        k = {"run": "run", "comparison": "comparison", "training": "training", "experiment": "experiment"}[s.kind]
        kinds.append(f"{s.path.name} ({k})")
    names = [r.label for r in data.runs]
    title = "fincon report: " + (" vs ".join(names[:4]) + (" ..." if len(names) > 4 else "") if names else
                                 ", ".join(s.path.name for s in data.sources))
    return title, "; ".join(windows) + (" | " if windows else "") + ", ".join(kinds)


def render(data: ReportData) -> str:
    """The report page."""
    from plotly import __version__ as plotly_version
    from plotly.offline import get_plotlyjs

    sections = [section_metrics(data), section_curves(data) if any(
        r.equity is not None for r in data.runs) else "", section_timeline(data), section_llm(data),
        section_training(data), section_experiment(data), section_performance(data)]
    sections = [s for s in sections if s]
    nav = []
    for sid, name in (("metrics", "Metrics"), ("curves", "Equity and drawdown"), ("decisions", "Decisions"),
                      ("llm", "LLM usage"), ("training", "Training"), ("experiment", "Experiment"),
                      ("performance", "Performance")):
        if any(f'<section id="{sid}">' in s for s in sections):
            nav.append(f'<a href="#{sid}">{name}</a>')
    title, sub = _title(data)
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{assets.CSS}</style>",
        f'<script type="text/javascript">{get_plotlyjs()}</script>',
        "</head><body>",
        f'<header><h1>{esc(title)}</h1><p class="sub">{esc(sub)}</p><nav>{"".join(nav)}</nav></header>',
        *section_failures(data),
        *sections,
        f"<footer>fincon {esc(__version__)}; plotly {esc(plotly_version)}; self-contained: no network needed to "
        "view this page.</footer>",
        f'<script type="text/javascript">{assets.JS}</script>',
        "</body></html>",
        "",
    ])
