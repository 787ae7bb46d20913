"""The report's rolling section: a rolling evaluation across windows.

From a rolling directory's windows.csv and summary.csv (already loaded by
:mod:`fincon.report.load`): per universe, a heatmap of windows x strategies
coloured by the excess CR over buy-and-hold on the same window and tickers,
a line of each strategy's excess CR by window, and the summary table
(medians, share of windows beating buy-and-hold, the paired test). Returns
HTML text; reads no file itself.
"""

from __future__ import annotations

import pandas as pd

from fincon.report.load import ReportData, Rolling
from fincon.report.parts import COLORS, esc, num, placebo_table, plot_div, significance_table, table
from fincon.workflow.tables import rolling_flags, rolling_summary

BENCH = "buy-and-hold"


def _heatmap(w: pd.DataFrame, div_id: str) -> str:
    import plotly.graph_objects as go

    grid = w.pivot(index="strategy", columns="test_start", values="excess_cr_pct")
    grid = grid.loc[[s for s in dict.fromkeys(w.strategy) if s != BENCH]]
    cr = w.pivot(index="strategy", columns="test_start", values="cr_pct").loc[grid.index, grid.columns]
    z = grid.to_numpy(dtype=float)
    text = [
        [f"{num(float(e), '{:+.2f}')} pp (CR {num(float(c), '{:.2f}')} %)" for e, c in zip(er, cr_row)]
        for er, cr_row in zip(z, cr.to_numpy(dtype=float))
    ]
    top = max(1e-9, float(pd.Series(z.ravel()).abs().max()))
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[str(c) for c in grid.columns],
            y=list(grid.index),
            text=text,
            texttemplate="%{text}",
            colorscale="RdBu",
            zmid=0.0,
            zmin=-top,
            zmax=top,
            colorbar={"title": "excess CR (pp)"},
            hovertemplate="%{y}, window from %{x}: %{text}<extra></extra>",
        )
    )
    fig.update_layout(template="plotly_white", margin={"l": 140, "r": 20, "t": 20, "b": 60})
    fig.update_xaxes(title_text="test window (first day)", type="category")
    return plot_div(fig, div_id, f"{120 + 40 * len(grid.index)}px")


def _lines(w: pd.DataFrame, div_id: str) -> str:
    import plotly.graph_objects as go

    fig = go.Figure()
    for n, name in enumerate(s for s in dict.fromkeys(w.strategy) if s != BENCH):
        s = w[w.strategy == name]
        fig.add_trace(
            go.Scatter(
                x=[str(x) for x in s.test_start],
                y=s.excess_cr_pct.astype(float).tolist(),
                mode="lines+markers",
                name=name,
                line={"color": COLORS[n % len(COLORS)]},
                hovertemplate="%{x}: %{y:+.2f} pp<extra>" + esc(name) + "</extra>",
            )
        )
    fig.add_hline(y=0.0, line={"dash": "dash", "color": "#6e7781"})
    fig.update_layout(
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 20, "b": 60},
        legend={"orientation": "h", "y": 1.08, "x": 0},
    )
    fig.update_xaxes(title_text="test window (first day)", type="category")
    fig.update_yaxes(title_text="CR minus buy-and-hold's (pp)")
    return plot_div(fig, div_id, "380px")


def _one(r: Rolling, i: int) -> list[str]:
    res = r.results
    out = [
        f"<h3>{esc(r.label)}" + (f' <span class="muted">({esc(str(r.status))})</span>' if r.status else "") + "</h3>",
        f'<p class="note">{esc(str(res.get("window", "?")))} windows stepped by {esc(str(res.get("step", "?")))} '
        f"in {esc(' .. '.join(map(str, res.get('span') or [])))}; brain {esc(str(res.get('brain', '?')))}, "
        f"{esc(num(res.get('episodes')))} training episode(s) on the window before each. "
        f"{esc(str(res.get('beats', '')))}; p: {esc(str(res.get('test', '')))}.</p>",
    ]
    s = r.summary
    heads, cells, text_cols = rolling_summary(s.to_dict("records"))
    out.append(table(heads, cells, text_cols=text_cols))
    out += [
        f'<ul class="note"><li>{esc(f"FLAG: {f}")}</li></ul>'
        for f in rolling_flags(s.to_dict("records"), res.get("windows") or ())
    ]
    out.append(significance_table(s.to_dict("records"), "each universe's test windows, each day once"))
    out.append(placebo_table(res, "medians over windows, each window its median repeat"))
    for j, universe in enumerate(dict.fromkeys(r.windows.universe)):
        w = r.windows[r.windows.universe == universe]
        picks = w.drop_duplicates("window")[["test_start", "test_end", "tickers"]]
        out.append(f"<h4>universe {esc(str(universe))}</h4>")
        out.append(f'<div class="chart">{_heatmap(w, f"rolling-{i + 1}-{j + 1}-heat")}</div>')
        out.append(f'<div class="chart">{_lines(w, f"rolling-{i + 1}-{j + 1}-lines")}</div>')
        out.append(
            "<details><summary>tickers of each window (picked at its start)</summary>"
            + table(
                ["test window", "tickers"],
                [[f"{a} .. {b}", t] for a, b, t in picks.itertuples(index=False)],
                text_cols=[1],
            )
            + "</details>"
        )
    return out


def section_rolling(data: ReportData) -> str:
    rolls = [s.rolling for s in data.sources if s.rolling is not None]
    if not rolls:
        return ""
    out = [
        '<section id="rolling"><h2>Rolling evaluation</h2>',
        '<p class="note">Every strategy on successive test windows; each cell of a heatmap is a strategy\'s CR '
        "minus buy-and-hold's on the same window and tickers (percentage points; blue above, red below).</p>",
    ]
    for i, r in enumerate(rolls):
        out += _one(r, i)
    out.append("</section>")
    return "\n".join(out)
