"""The report's performance section: quantstats statistics of every curve.

``quantstats.stats`` on each curve's daily simple returns, the relative
statistics against the benchmark series passed in (so quantstats never
downloads one). Not its tear sheet (``quantstats.reports.html`` /
``metrics``): on windows of a few weeks its drawdown table comes out empty
(a drawdown from the first day has no start) and the benchmark column
depends on the strategy it sits beside. quantstats is imported without
touching matplotlib's global style (:func:`_quantstats`).
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import pandas as pd

from fincon.report.load import ReportData
from fincon.report.parts import esc, table
from fincon.risk.metrics import TRADING_DAYS


def _returns(series: pd.Series) -> pd.Series:
    """Daily simple returns of a value curve (from its second day)."""
    r = series.astype(float).pct_change().iloc[1:]
    r.index = pd.DatetimeIndex(r.index).tz_localize(None)
    return r


PCT, NUM = "{:.2%}", "{:.3f}"
#: (label, quantstats.stats function, format): each on one curve's daily simple returns
#: (max drawdown on its values, so the first day's loss counts), annualised with ``n`` days a year
QS_STATS = (
    ("cumulative return", lambda r, v, rf, n: qs_stats().comp(r), PCT),
    ("CAGR", lambda r, v, rf, n: qs_stats().cagr(r, rf=rf, periods=n), PCT),
    ("Sharpe", lambda r, v, rf, n: qs_stats().sharpe(r, rf=rf, periods=n), NUM),
    ("smart Sharpe (autocorrelation penalty)", lambda r, v, rf, n: qs_stats().smart_sharpe(r, rf=rf, periods=n), NUM),
    ("Sortino", lambda r, v, rf, n: qs_stats().sortino(r, rf=rf, periods=n), NUM),
    ("volatility (ann.)", lambda r, v, rf, n: qs_stats().volatility(r, periods=n), PCT),
    ("max drawdown", lambda r, v, rf, n: qs_stats().max_drawdown(v), PCT),
    ("Calmar", lambda r, v, rf, n: qs_stats().calmar(r, periods=n), NUM),
    ("Omega", lambda r, v, rf, n: qs_stats().omega(r, rf=rf, periods=n), NUM),
    ("skew", lambda r, v, rf, n: qs_stats().skew(r), NUM),
    ("kurtosis", lambda r, v, rf, n: qs_stats().kurtosis(r), NUM),
    ("daily VaR 95% (normal)", lambda r, v, rf, n: qs_stats().value_at_risk(r), PCT),
    ("expected shortfall 95% (cVaR, normal)", lambda r, v, rf, n: qs_stats().expected_shortfall(r), PCT),
    ("win days", lambda r, v, rf, n: qs_stats().win_rate(r), PCT),
    ("avg. win", lambda r, v, rf, n: qs_stats().avg_win(r), PCT),
    ("avg. loss", lambda r, v, rf, n: qs_stats().avg_loss(r), PCT),
    ("payoff ratio", lambda r, v, rf, n: qs_stats().payoff_ratio(r), NUM),
    ("profit factor", lambda r, v, rf, n: qs_stats().profit_factor(r), NUM),
    ("tail ratio", lambda r, v, rf, n: qs_stats().tail_ratio(r), NUM),
    ("best day", lambda r, v, rf, n: qs_stats().best(r), PCT),
    ("worst day", lambda r, v, rf, n: qs_stats().worst(r), PCT),
    ("ulcer index", lambda r, v, rf, n: qs_stats().ulcer_index(r), NUM),
    ("Kelly criterion", lambda r, v, rf, n: qs_stats().kelly_criterion(r), PCT),
)
#: against the benchmark, on the days both have
QS_RELATIVE = (
    ("beta", lambda r, b, n: qs_stats().greeks(r, b, periods=n)["beta"], NUM),
    ("alpha (ann.)", lambda r, b, n: qs_stats().greeks(r, b, periods=n)["alpha"], NUM),
    ("correlation", lambda r, b, n: r.corr(b), NUM),
    ("R²", lambda r, b, n: qs_stats().r_squared(r, b), NUM),
    ("information ratio", lambda r, b, n: qs_stats().information_ratio(r, b), NUM),
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


def _qs_column(values: pd.Series, rf: float, bench: pd.Series | None, n: int) -> list[str]:
    """One curve's statistics, annualised with its run's ``n`` days a year (252 or 365)."""
    r = _returns(values)
    out = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for _, fn, fmt in QS_STATS:
            out.append(_stat(fn, fmt, r, values.astype(float), rf, n))
        if bench is not None:
            b = _returns(bench)
            days = r.index.intersection(b.index)
            for _, fn, fmt in QS_RELATIVE:
                out.append(_stat(fn, fmt, r.loc[days], b.loc[days], n) if len(days) > 2 else "n/a")
        else:
            out += [""] * len(QS_RELATIVE)
    return out


def section_performance(data: ReportData) -> str:
    """quantstats statistics for every curve; the relative ones against its window's benchmark."""
    by_terms = {b.terms: b for b in data.benchmarks}
    columns: dict[str, list[str]] = {}
    skipped = []
    years: set[int] = set()
    curves = [(r.label, r.equity, r.config, r.terms, r) for r in data.runs]
    configs = {r.terms: r.config for r in reversed(data.runs)}  # a benchmark takes its runs' risk-free rate
    curves += [(b.label, b.equity, configs.get(b.terms, {}), b.terms, None) for b in data.benchmarks if b.run is None]
    for label, values, config, terms, run in curves:
        if values is None or len(values) < 3:
            skipped.append(label)
            continue
        b = by_terms.get(terms)
        is_bench = b is not None and (run is None or b.run is run)
        settings = config.get("metrics") or {}
        rf = float(settings.get("risk_free", 0.0) or 0.0)
        n = int(settings.get("days_per_year") or TRADING_DAYS)  # the resolved config's (metrics.json's)
        years.add(n)
        columns[label] = _qs_column(values, rf, None if is_bench or b is None else b.equity, n)
    if not columns:
        return ""
    quantstats = _quantstats()
    labels = [x[0] for x in QS_STATS] + [f"{x[0]} vs benchmark" for x in QS_RELATIVE]
    rows = [[label] + [c[i] for c in columns.values()] for i, label in enumerate(labels)]
    out = [
        '<section id="performance"><h2>Performance (quantstats)</h2>',
        f'<p class="note">quantstats {esc(quantstats.__version__)} (<code>quantstats.stats</code>) on daily simple '
        f"returns, annualised with each curve's days a year ({esc(' or '.join(map(str, sorted(years))))} here: "
        "its run's <code>days_per_year</code>), the run's risk-free rate; the last rows against the buy-and-hold "
        "benchmark of the run's window, on the days both have. With a zero risk-free rate its Sharpe is the "
        "table above's <code>sharpe_empyrical</code> (quantstats turns an annual rate into a daily one by "
        "compounding, fincon divides it by the days a year); its VaR and cVaR are parametric (normal), unlike the "
        "paper's. Annual figures extrapolate short windows.</p>",
        table(["statistic", *columns], rows),
    ]
    if skipped:
        out.append(f'<p class="note">fewer than three days, not computed: {esc(", ".join(skipped))}</p>')
    out.append("</section>")
    return "\n".join(out)
