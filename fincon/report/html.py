"""Render :class:`~fincon.report.load.ReportData` as one self-contained HTML page.

This module assembles the page: the head (CSS, plotly.js inlined once, what
``include_plotlyjs=True`` inlines), the navigation, and the sections, each
built in its own module from the loaded data:

* :mod:`fincon.report.runs`: metrics table, equity and drawdown, decisions
  (each day of a team run as ``fincon explain`` prints it);
* :mod:`fincon.report.usage`: LLM calls, tokens and cost;
* :mod:`fincon.report.studies`: trainings and experiments;
* :mod:`fincon.report.rolling`: rolling evaluations (windows x strategies);
* :mod:`fincon.report.performance`: quantstats statistics;
* :mod:`fincon.report.parts`: the formatting they share.

No timestamp, random id or absolute path goes into the page.
"""

from __future__ import annotations

from typing import Any

from fincon import __version__
from fincon.errors import DataError
from fincon.ownership import REPORT_MARK
from fincon.report import assets
from fincon.report.card import run_card
from fincon.report.load import ReportData
from fincon.report.parts import esc, section_card
from fincon.report.performance import section_performance
from fincon.report.rolling import section_rolling
from fincon.report.runs import section_curves, section_metrics, section_timeline
from fincon.report.studies import section_experiment, section_paper, section_training
from fincon.report.usage import section_llm


def section_failures(data: ReportData) -> list[str]:
    """A training or experiment that did not finish says so first: what is
    shown below are its leftovers, not its result."""
    return [
        f'<section class="failed"><p><strong>Not a finished result.</strong> {esc(s.path.name)} '
        f"({esc(s.kind)}) {esc(s.failure)}. Below: only what it finished; rerun its command to resume.</p>"
        "</section>"
        for s in data.sources
        if s.failure
    ]


def _title(data: ReportData) -> tuple[str, str]:
    windows = []
    for r in data.runs:
        tickers, start, end = r.window
        w = f"{', '.join(tickers)} {start} .. {end}"
        if w not in windows:
            windows.append(w)
    kinds = []
    for s in data.sources:
        k = {
            "run": "run",
            "comparison": "comparison",
            "training": "training",
            "experiment": "experiment",
            "rolling": "rolling evaluation",
        }[s.kind]
        kinds.append(f"{s.path.name} ({k})")
    names = [r.label for r in data.runs]
    title = "fincon report: " + (
        " vs ".join(names[:4]) + (" ..." if len(names) > 4 else "")
        if names
        else ", ".join(s.path.name for s in data.sources)
    )
    return title, "; ".join(windows) + (" | " if windows else "") + ", ".join(kinds)


def _cards(data: ReportData, sealed: dict[str, Any] | None) -> str:
    """The report card of each directory the page shows (fincon.report.card)."""

    cards = []
    for s in data.sources:
        try:
            cards.append(run_card(s.path, sealed if len(data.sources) == 1 else None))
        except DataError:
            continue  # a directory the card cannot read (a bare training): no card, the rest of the page stays
    # one section: with several directories, the card of each, one after the other
    return section_card(cards[0]) if len(cards) == 1 else (section_card(cards[0], more=cards[1:]) if cards else "")


def render(data: ReportData, note: str = "", sealed: dict[str, Any] | None = None) -> str:
    """The report page (``note``: a line under its title saying what it is; ``sealed``: a journal's
    verified seals, for its card)."""
    from plotly import __version__ as plotly_version
    from plotly.offline import get_plotlyjs

    sections = [
        _cards(data, sealed),
        section_metrics(data),
        section_curves(data) if any(r.equity is not None for r in data.runs) else "",
        section_timeline(data),
        section_llm(data),
        section_training(data),
        section_paper(data),
        section_experiment(data),
        section_rolling(data),
        section_performance(data),
    ]
    sections = [s for s in sections if s]
    nav = []
    for sid, name in (
        ("card", "Report card"),
        ("metrics", "Metrics"),
        ("curves", "Equity and drawdown"),
        ("decisions", "Decisions"),
        ("llm", "LLM usage"),
        ("training", "Training"),
        ("paper", "The paper's comparison"),
        ("experiment", "Experiment"),
        ("rolling", "Rolling"),
        ("performance", "Performance"),
    ):
        if any(f'<section id="{sid}">' in s for s in sections):
            nav.append(f'<a href="#{sid}">{name}</a>')
    title, sub = _title(data)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            REPORT_MARK,
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title>",
            f"<style>{assets.CSS}</style>",
            f'<script type="text/javascript">{get_plotlyjs()}</script>',
            "</head><body>",
            f'<header><h1>{esc(title)}</h1><p class="sub">{esc(sub)}</p>'
            + (f'<p class="sub">{esc(note)}</p>' if note else "")
            + f"<nav>{''.join(nav)}</nav></header>",
            *section_failures(data),
            *sections,
            f"<footer>fincon {esc(__version__)}; plotly {esc(plotly_version)}; self-contained: no network needed to "
            "view this page.</footer>",
            f'<script type="text/javascript">{assets.JS}</script>',
            "</body></html>",
            "",
        ]
    )
