"""Performance and risk metrics with the FinCon paper's formulas (A.10),
and the industry (empyrical) convention beside them where the two differ.

All functions take plain numpy/pandas inputs so the same code scores a
backtest, an agent episode, or a hand-made series in a test.

Conventions (documented once, used everywhere):

* ``values`` is the portfolio value at each day's close, first day included.
* daily log return r_t = ln(v_t / v_{t-1}); CR% = 100 * sum r_t (eq. 5
  applied to the portfolio value).
* ``cr_paper_pct`` (single ticker) = 100 * sum ln(p_{t+1}/p_t) * a_t with
  a_t in {-1, 0, 1} the direction held at the close of day t.
* Sharpe = (mean(r) - r_f_daily) / std(r, ddof=1) * sqrt(252) on daily log
  returns; r_f is an annual rate, converted as r_f/252.
* max drawdown (eq. 9) = max over t of (peak_t - v_t) / peak_t, in %.
* VaR_alpha / CVaR_alpha of the daily PnL (eq. 3, 4) on daily simple returns
  in %: VaR = the smallest l with P(PnL <= l) >= alpha (empirical), CVaR =
  mean of the PnL at or below VaR. Both are returns (negative = a loss).

Industry convention (``*_empyrical`` fields): the paper takes Sharpe,
Sortino and volatility on daily *log* returns; empyrical, quantstats and
pyfolio take them on daily *simple* returns v_t/v_{t-1} - 1, with the same
formulas otherwise (ddof=1, sqrt(252), downside deviation
sqrt(mean(min(r - r_f, 0)^2)); their ``risk_free``/``required_return`` is a
daily rate, r_f/252 here). The two differ by about sigma^2/2 a day in the
mean, which matters for volatile books. They are computed here in numpy
(same guards as the paper's: NaN, not +-inf, for fewer than two returns, a
zero deviation or no losing day) and cross-checked against empyrical in
tests/test_metrics.py. Max drawdown, the cumulative simple return and (at
alpha = 1/k, e.g. 0.05, without a tie at the cutoff) CVaR are the same in
both conventions up to sign and units; VaR differs (empyrical interpolates
between order statistics), see the README's Metrics section.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

TRADING_DAYS = 252
INITIAL_VALUE = 1_000_000.0


def log_returns(values: np.ndarray) -> np.ndarray:
    """Daily log returns; NaN where the value is not positive (a ruined book)."""
    v = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = v[1:] / v[:-1]
        return np.where(ratio > 0, np.log(np.where(ratio > 0, ratio, 1.0)), np.nan)


RETURNS = ("log", "simple")


def _returns(values: np.ndarray, kind: str) -> np.ndarray:
    """Daily returns of ``kind``: ``log`` (the paper's) or ``simple`` (empyrical's).

    Simple returns after a non-positive value are NaN, as the log ones are."""
    if kind == "log":
        return log_returns(values)
    if kind != "simple":
        raise ValueError(f"returns must be one of {RETURNS}, not {kind!r}")
    v = np.asarray(values, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(v[:-1] > 0, v[1:] / np.where(v[:-1] > 0, v[:-1], 1.0) - 1.0, np.nan)


def cumulative_return_pct(values: np.ndarray) -> float:
    """CR% = 100 * sum of daily log returns of the portfolio value."""
    return float(100.0 * log_returns(values).sum())


def paper_cumulative_return_pct(prices: np.ndarray, directions: np.ndarray) -> float:
    """FinCon eq. 5: 100 * sum_t ln(p_{t+1}/p_t) * a_t, a_t = direction held at close t.

    ``directions`` has one entry per day (the last one is unused)."""
    p = np.asarray(prices, dtype=float)
    a = np.sign(np.asarray(directions, dtype=float))[:-1]
    return float(100.0 * (np.log(p[1:] / p[:-1]) * a).sum())


def cumulative_simple_return(values: np.ndarray) -> np.ndarray:
    """Eq. 6: prod(1 + daily simple return) - 1, for every day (0 on day one;
    empty for an empty series)."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return v.copy()
    return v / v[0] - 1.0


def portfolio_value(values: np.ndarray, initial: float = INITIAL_VALUE) -> np.ndarray:
    """Eq. 7: initial * (1 + cumulative simple return)."""
    return initial * (1.0 + cumulative_simple_return(values))


def sharpe_ratio(
    values: np.ndarray, risk_free: float = 0.0, *, returns: str = "log", days_per_year: int = TRADING_DAYS
) -> float:
    """(mean(r) - r_f/N) / std(r, ddof=1) * sqrt(N), N = ``days_per_year``
    (252 on an exchange calendar, 365 for a market open every day);
    ``returns="simple"`` is empyrical's ``sharpe_ratio(simple returns,
    risk_free=r_f/N, annualization=N)``."""
    r = _returns(values, returns)
    if len(r) < 2:
        return float("nan")
    sd = r.std(ddof=1)
    if sd == 0:
        return float("nan")
    return float((r.mean() - risk_free / days_per_year) / sd * math.sqrt(days_per_year))


def sortino_ratio(
    values: np.ndarray, risk_free: float = 0.0, *, returns: str = "log", days_per_year: int = TRADING_DAYS
) -> float:
    """Mean excess return over downside deviation sqrt(mean(min(r,0)^2)), annualised,
    on log returns (the paper's); ``returns="simple"`` is empyrical's
    ``sortino_ratio(simple returns, required_return=r_f/252)``."""
    r = _returns(values, returns) - risk_free / days_per_year
    if len(r) < 2:
        return float("nan")
    dd = math.sqrt(float(np.mean(np.minimum(r, 0.0) ** 2)))
    if dd == 0:
        return float("nan")
    return float(r.mean() / dd * math.sqrt(days_per_year))


def annual_volatility_pct(values: np.ndarray, *, returns: str = "log", days_per_year: int = TRADING_DAYS) -> float:
    """100 * std(r, ddof=1) * sqrt(N); ``returns="simple"`` is 100 * empyrical's
    ``annual_volatility``."""
    r = _returns(values, returns)
    if len(r) < 2:
        return float("nan")
    return float(100.0 * r.std(ddof=1) * math.sqrt(days_per_year))


def drawdown_series(values: np.ndarray) -> np.ndarray:
    """(peak_t - v_t) / peak_t for every day, as a fraction."""
    v = np.asarray(values, dtype=float)
    if len(v) == 0:
        return v.copy()
    peak = np.maximum.accumulate(v)
    return (peak - v) / peak


def max_drawdown_pct(values: np.ndarray) -> float:
    """Eq. 9 in %; NaN for an empty series (0 for a single day)."""
    dd = drawdown_series(values)
    return float(100.0 * dd.max()) if len(dd) else float("nan")


def value_at_risk(pnl: np.ndarray, alpha: float = 0.05) -> float:
    """Eq. 3: inf{l : P(PnL <= l) >= alpha} on the empirical distribution."""
    x = np.sort(np.asarray(pnl, dtype=float))
    if len(x) == 0:
        return float("nan")
    k = max(1, math.ceil(alpha * len(x) - 1e-12))
    return float(x[k - 1])


def conditional_value_at_risk(pnl: np.ndarray, alpha: float = 0.05) -> float:
    """Eq. 4: E[PnL | PnL <= VaR_alpha]."""
    x = np.asarray(pnl, dtype=float)
    if len(x) == 0:
        return float("nan")
    var = value_at_risk(x, alpha)
    return float(x[x <= var].mean())


@dataclass(frozen=True)
class Metrics:
    """The metrics of one run, as written to ``metrics.json``."""

    cr_pct: float
    cr_paper_pct: float | None
    cum_simple_return_pct: float
    final_value: float
    sharpe: float  # paper: daily log returns
    sharpe_empyrical: float  # industry: daily simple returns (empyrical, quantstats)
    sortino: float
    sortino_empyrical: float
    ann_vol_pct: float
    ann_vol_empyrical_pct: float
    mdd_pct: float
    var_pct: float
    cvar_pct: float
    alpha: float
    turnover: float
    n_trades: int
    win_rate: float | None
    n_days: int
    days_per_year: int = TRADING_DAYS  # annualisation: the trading calendar's sessions per year

    def as_dict(self) -> dict:
        return {k: _clean(v) for k, v in asdict(self).items()}


def _clean(v):
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return None
        return round(v, 10)
    return v


def compute_metrics(
    values: np.ndarray,
    *,
    alpha: float = 0.05,
    risk_free: float = 0.0,
    initial: float = INITIAL_VALUE,
    prices: np.ndarray | None = None,
    directions: np.ndarray | None = None,
    traded_value: np.ndarray | None = None,
    n_trades: int = 0,
    trade_pnls: np.ndarray | None = None,
    days_per_year: int = TRADING_DAYS,
) -> Metrics:
    """Score a value series.

    ``prices``/``directions`` (single ticker) add ``cr_paper_pct``.
    ``traded_value`` is the absolute value traded each day; turnover is
    sum_t traded_t / v_t (both legs: buying in once = 1.0, in and out 2.0). ``trade_pnls`` are
    the PnLs of round trips (open ones marked at the last close); the win
    rate is the share that made money.

    Zero or one finished day (a run stopped before or on its first day) is
    valid input: every return-based metric is then NaN (``null`` in
    ``metrics.json``), CR is 0 and the final value is the initial one.
    """
    v = np.asarray(values, dtype=float)
    # a book at or below zero has no return (NaN, as Sharpe reads it): its tail is none either (read as
    # returns, -$19,903 to +$29,005 entered the loss tail as -245.7 %; found in review)
    daily = _returns(v, "simple") * 100.0
    daily = daily if not np.isnan(daily).any() else np.array([])
    turnover = 0.0
    if traded_value is not None:
        turnover = float(np.sum(np.asarray(traded_value, dtype=float) / v))
    win_rate = None
    if trade_pnls is not None and len(trade_pnls):
        win_rate = float(np.mean(np.asarray(trade_pnls) > 0))
    return Metrics(
        cr_pct=cumulative_return_pct(v),
        cr_paper_pct=(
            paper_cumulative_return_pct(prices, directions) if prices is not None and directions is not None else None
        ),
        cum_simple_return_pct=float(100.0 * cumulative_simple_return(v)[-1]) if len(v) else 0.0,
        final_value=float(portfolio_value(v, initial)[-1]) if len(v) else float(initial),
        sharpe=sharpe_ratio(v, risk_free, days_per_year=days_per_year),
        sharpe_empyrical=sharpe_ratio(v, risk_free, returns="simple", days_per_year=days_per_year),
        sortino=sortino_ratio(v, risk_free, days_per_year=days_per_year),
        sortino_empyrical=sortino_ratio(v, risk_free, returns="simple", days_per_year=days_per_year),
        ann_vol_pct=annual_volatility_pct(v, days_per_year=days_per_year),
        ann_vol_empyrical_pct=annual_volatility_pct(v, returns="simple", days_per_year=days_per_year),
        mdd_pct=max_drawdown_pct(v),
        var_pct=value_at_risk(daily, alpha),
        cvar_pct=conditional_value_at_risk(daily, alpha),
        alpha=alpha,
        turnover=turnover,
        n_trades=int(n_trades),
        win_rate=win_rate,
        n_days=len(v),
        days_per_year=int(days_per_year),
    )
