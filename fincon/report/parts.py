"""Shared pieces of the report page: number formatting, HTML tables, Plotly divs.

Pure functions of their arguments (no I/O): every section module builds on
these, so the same inputs give the same bytes (fixed ``div_id`` s, no
timestamps). Also the day-level reading of a team run's records that more
than one section needs (its CVaR alert state, which runs get a timeline).
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import pandas as pd

from fincon.report.card import FAIL, NONE, PASS
from fincon.report.load import ReportData, Run
from fincon.workflow.tables import placebo, placebo_flags, placebo_notes, significance, significance_flags

esc = html.escape
PLOT_CONFIG = {"displaylogo": False, "responsive": True}
BENCHMARK_STYLE = {"dash": "dash", "color": "#6e7781", "width": 1.6}
ALERT_COLOR = "#cf222e"
#: Plotly's default colour sequence without its red, which marks CVaR alerts here
COLORS = ("#636EFA", "#00CC96", "#AB63FA", "#FFA15A", "#19D3F3", "#FF6692", "#B6E880", "#FF97FF", "#FECB52")


def num(v: Any, spec: str = "{:.3f}") -> str:
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


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


def table(
    head: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    text_cols: Sequence[int] = (),
    row_classes: Sequence[str] | None = None,
    raw: bool = False,
) -> str:
    """An HTML table; cells are escaped unless ``raw``."""
    cell = (lambda x: str(x)) if raw else (lambda x: esc(str(x)))
    out = ['<div class="scroll"><table><thead><tr>']
    out += [f"<th{' class=text' if i in text_cols else ''}>{esc(h)}</th>" for i, h in enumerate(head)]
    out.append("</tr></thead><tbody>")
    for n, row in enumerate(rows):
        cls = row_classes[n] if row_classes and n < len(row_classes) and row_classes[n] else ""
        out.append(f"<tr{f' class={cls}' if cls else ''}>")
        out += [f"<td{' class=text' if i in text_cols else ''}>{cell(x)}</td>" for i, x in enumerate(row)]
        out.append("</tr>")
    out.append("</tbody></table></div>")
    return "".join(out)


def significance_table(rows: Iterable[dict[str, Any]], over: str) -> str:
    """The statistics of each strategy (a rolling universe's or an
    experiment's rows: fincon.workflow.rolling_stats), as an HTML table with
    a note that says what each column is; empty without statistics."""

    rows = list(rows)
    head, body, text_cols = significance(rows)
    if not body:
        return ""
    return (
        f"<h4>Statistics over {html.escape(over)}</h4>"
        + table(head, body, text_cols=text_cols)
        + "".join(f'<ul class="note"><li>{html.escape(f)}</li></ul>' for f in significance_flags(rows))
        + '<p class="note">CI: stationary block bootstrap; PSR: probabilistic Sharpe ratio against zero; MinTRL: '
        "minimum track record length at 95 %; DSR: deflated Sharpe ratio with the number of trials it deflates "
        "by; SPA: Hansen's test of each row alone against buy-and-hold and the best non-LLM baseline (not corrected for the rows tested: StepM is); StepM: Romano-Wolf at 5 %; "
        "PBO: probability of backtest overfitting by CSCV, ± its sd on pure noise of the same shape (noise gives "
        "0.5); p Holm / BH: the Wilcoxon p-values adjusted for the "
        "number of comparisons (docs/experiments.md).</p>"
    )


def day_strings(index: pd.DatetimeIndex) -> list[str]:
    return [d.strftime("%Y-%m-%d") for d in index]


def plot_div(fig, div_id: str, height: str) -> str:
    import plotly.io as pio

    return pio.to_html(
        fig,
        full_html=False,
        include_plotlyjs=False,
        div_id=div_id,
        config=PLOT_CONFIG,
        default_height=height,
        validate=True,
    )


def day_risk(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The day's CVaR alert state: ``entry['risk']`` or the team's ``record['risk']``."""
    risk = entry.get("risk")
    if not isinstance(risk, dict):
        risk = (entry.get("record") or {}).get("risk") if isinstance(entry.get("record"), dict) else None
    return risk if isinstance(risk, dict) else None


def alerts(run: Run) -> list[tuple[str, dict[str, Any]]]:
    return [(str(d.get("date")), r) for d in run.decisions if (r := day_risk(d)) and r.get("alert")]


def timeline_id(i: int) -> str:
    return f"timeline-{i + 1}"


def timeline_runs(data: ReportData) -> list[Run]:
    return [r for r in data.runs if r.team and r.timeline]


def placebo_table(res: dict[str, Any], over: str) -> str:
    """An experiment's or a rolling evaluation's placebo runs (workflow.tables.placebo) with their
    flags; empty without placebo runs."""

    if not res.get("placebo"):
        return ""
    heads, cells, text = placebo(res)
    flags = "".join(f"<li>{esc(f)}</li>" for f in [*placebo_flags(res), *placebo_notes(res)])
    return (
        f"<h4>Placebo runs of the full team ({esc(over)})</h4>"
        + table(heads, cells, text_cols=text)
        + (f'<ul class="note">{flags}</ul>' if flags else "")
    )


def section_card(c: dict[str, Any], more: list[dict[str, Any]] | None = None) -> str:
    """The card (and ``more`` cards, one table each) as one HTML section (a failed row in red)."""

    colour = {PASS: "#1a7f37", FAIL: "#cf222e", NONE: "#6e7781"}

    def table(x: dict[str, Any]) -> str:
        body = "".join(
            f"<tr><td>{esc(r['checklist'])}</td><td>{esc(r['point'])}</td>"
            f'<td style="color:{colour[r["verdict"]]};font-weight:bold">{esc(r["verdict"])}</td>'
            f"<td>{esc(r['measured'])}</td></tr>"
            for r in x["rows"]
        )
        return (
            f"<h3>{esc(Path(x['directory']).name)}{esc(' (of ' + x['graded'] + ')') if x.get('graded') else ''}: "
            f"{x['passed']} pass, {x['failed']} fail, "
            f"{x['not_measured']} not measured</h3>"
            "<table><thead><tr><th>checklist</th><th>point</th><th>verdict</th><th>measured</th></tr></thead>"
            f"<tbody>{body}</tbody></table>"
        )

    return (
        '<section id="card"><h2>Report card</h2><p class="note">What a reviewer checks of an LLM-trading result: '
        "the six-point protocol, fincon's checks and FINSABER's checklist; a failed point is red, not a footnote.</p>"
        + "".join(table(x) for x in [c, *(more or [])])
        + "</section>"
    )
