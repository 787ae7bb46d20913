"""Every metric against numbers computed by hand."""

import math

import numpy as np
import pytest

from fincon.risk import metrics as m

VALUES = np.array([100.0, 110.0, 99.0, 120.0, 108.0])


def test_cumulative_return_is_sum_of_log_returns():
    assert m.cumulative_return_pct(VALUES) == pytest.approx(100 * math.log(108 / 100))
    # hand sum of the four daily log returns
    hand = math.log(1.1) + math.log(0.9) + math.log(120 / 99) + math.log(0.9)
    assert m.cumulative_return_pct(VALUES) == pytest.approx(100 * hand)


def test_paper_cr_uses_direction_held_each_day():
    p = np.array([10.0, 11.0, 12.1, 11.0])
    a = np.array([1, -1, 0, 1])  # last one unused
    hand = math.log(1.1) * 1 + math.log(1.1) * -1 + math.log(11 / 12.1) * 0
    assert m.paper_cumulative_return_pct(p, a) == pytest.approx(100 * hand)
    assert m.paper_cumulative_return_pct(p, np.array([1, 1, 1, 1])) == pytest.approx(100 * math.log(1.1))


def test_cumulative_simple_return_and_portfolio_value():
    csr = m.cumulative_simple_return(VALUES)
    assert csr.tolist() == pytest.approx([0.0, 0.1, -0.01, 0.2, 0.08])
    assert m.portfolio_value(VALUES)[-1] == pytest.approx(1_080_000.0)


def test_sharpe_sortino_volatility_by_hand():
    r = [math.log(1.1), math.log(0.9), math.log(120 / 99), math.log(0.9)]
    mean = sum(r) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in r) / 3)
    assert m.sharpe_ratio(VALUES) == pytest.approx(mean / sd * math.sqrt(252))
    down = math.sqrt(sum(min(x, 0) ** 2 for x in r) / 4)
    assert m.sortino_ratio(VALUES) == pytest.approx(mean / down * math.sqrt(252))
    assert m.annual_volatility_pct(VALUES) == pytest.approx(100 * sd * math.sqrt(252))
    # a 5% annual risk-free rate lowers the numerator by 0.05/252 a day
    assert m.sharpe_ratio(VALUES, 0.05) == pytest.approx((mean - 0.05 / 252) / sd * math.sqrt(252))


def test_max_drawdown_eq9():
    # peak 110 -> trough 99 = 10%; later peak 120 -> 108 = 10%; also check a deeper one
    assert m.max_drawdown_pct(VALUES) == pytest.approx(10.0)
    assert m.max_drawdown_pct(np.array([1.0, 2.0, 1.5, 3.0, 1.2, 2.5])) == pytest.approx(60.0)
    assert m.max_drawdown_pct(np.array([1.0, 2.0, 3.0])) == 0.0


def test_var_cvar_empirical():
    pnl = np.array([-5.0, -3.0, -1.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    # alpha=0.2: smallest l with P(PnL <= l) >= 0.2 is -3; CVaR = mean(-5,-3)
    assert m.value_at_risk(pnl, 0.2) == -3.0
    assert m.conditional_value_at_risk(pnl, 0.2) == -4.0
    # alpha=0.05 of 10 points: the worst one
    assert m.value_at_risk(pnl, 0.05) == -5.0
    assert m.conditional_value_at_risk(pnl, 0.05) == -5.0
    assert m.value_at_risk(pnl, 0.25) == -1.0
    assert m.conditional_value_at_risk(pnl, 0.25) == pytest.approx(-3.0)


def test_compute_metrics_turnover_and_win_rate():
    met = m.compute_metrics(
        VALUES, traded_value=np.array([100.0, 0, 49.5, 0, 0]), n_trades=3, trade_pnls=np.array([1.0, -2.0, 3.0])
    )
    assert met.turnover == pytest.approx(1.0 + 0.5)
    assert met.win_rate == pytest.approx(2 / 3)
    assert met.n_trades == 3 and met.n_days == 5
    daily = (VALUES[1:] / VALUES[:-1] - 1) * 100
    assert met.cvar_pct == pytest.approx(daily.min())
    assert met.as_dict()["cr_paper_pct"] is None


# --- the industry convention (empyrical) beside the paper's --------------------------------------
#
# The ``*_empyrical`` metrics are computed in numpy (fincon/risk/metrics.py) and must equal
# empyrical-reloaded's on the daily simple returns; the metrics both conventions share must
# equal empyrical's up to the sign and unit conversions written out below. Tolerance: rel 1e-9
# (the two differ only in summation order, ~1e-15 in practice).

TOL = {"rel": 1e-9, "abs": 1e-12}


def _random_book(seed: int, n: int = 250, vol: float = 0.04) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 1_000_000.0 * np.cumprod(np.r_[1.0, 1.0 + rng.normal(0.0005, vol, n - 1)])


def _engine_book(strategy: str) -> np.ndarray:
    from fincon.strategies import make_strategy
    from fincon.testing import backtest, market_for

    s = make_strategy(strategy)
    return backtest(market_for(["TSLA", "MSFT", "PFE"], warmup=s.warmup), s).values


def test_simple_return_sharpe_sortino_volatility_by_hand():
    r = [0.1, -0.1, 120 / 99 - 1, -0.1]
    mean = sum(r) / 4
    sd = math.sqrt(sum((x - mean) ** 2 for x in r) / 3)
    assert m.sharpe_ratio(VALUES, returns="simple") == pytest.approx(mean / sd * math.sqrt(252))
    down = math.sqrt(sum(min(x, 0) ** 2 for x in r) / 4)
    assert m.sortino_ratio(VALUES, returns="simple") == pytest.approx(mean / down * math.sqrt(252))
    assert m.annual_volatility_pct(VALUES, returns="simple") == pytest.approx(100 * sd * math.sqrt(252))
    met = m.compute_metrics(VALUES)
    assert met.sharpe_empyrical == pytest.approx(mean / sd * math.sqrt(252))
    assert met.sharpe == pytest.approx(m.sharpe_ratio(VALUES))  # the paper's field is unchanged
    with pytest.raises(ValueError):
        m.sharpe_ratio(VALUES, returns="arithmetic")


@pytest.mark.parametrize("book", ["hand", "random-1", "random-2", "buy-and-hold", "equal-weight"])
@pytest.mark.parametrize("risk_free", [0.0, 0.04])
def test_every_shared_metric_matches_empyrical(book, risk_free):
    # empyrical-reloaded, a core dependency: the reference for the industry convention (imported
    # here, not at the top: every xdist worker collects this file, one runs it)
    import empyrical

    if book == "hand":
        v = VALUES
    elif book.startswith("random"):
        v = _random_book(int(book[-1]))
    else:
        v = _engine_book(book)
    r = v[1:] / v[:-1] - 1.0  # empyrical takes noncumulative simple returns
    met = m.compute_metrics(v, risk_free=risk_free)
    rf_daily = risk_free / m.TRADING_DAYS  # fincon's risk_free is annual, empyrical's per period
    # Sharpe / Sortino / volatility: the industry fields are empyrical's, the paper's are not
    assert met.sharpe_empyrical == pytest.approx(empyrical.sharpe_ratio(r, risk_free=rf_daily), **TOL)
    assert met.sortino_empyrical == pytest.approx(empyrical.sortino_ratio(r, required_return=rf_daily), **TOL)
    assert met.ann_vol_empyrical_pct == pytest.approx(100 * empyrical.annual_volatility(r), **TOL)
    # the paper's = the same formulas on log returns
    logr = np.log1p(r)
    assert met.sharpe == pytest.approx(empyrical.sharpe_ratio(logr, risk_free=rf_daily), **TOL)
    assert met.sortino == pytest.approx(empyrical.sortino_ratio(logr, required_return=rf_daily), **TOL)
    assert met.ann_vol_pct == pytest.approx(100 * empyrical.annual_volatility(logr), **TOL)
    # max drawdown: empyrical's is a negative fraction, ours a positive percent
    assert met.mdd_pct == pytest.approx(-100 * empyrical.max_drawdown(r), **TOL)
    # cumulative return: the simple one is empyrical's cum_returns_final in %; the paper's CR is its log
    assert met.cum_simple_return_pct == pytest.approx(100 * empyrical.cum_returns_final(r), **TOL)
    assert met.cr_pct == pytest.approx(100 * math.log1p(empyrical.cum_returns_final(r)), **TOL)
    # CVaR: same sign (a loss is negative), ours in %; equal at alpha = 1/k with no tie at the cutoff
    for alpha in (0.05, 0.1, 0.2, 0.25):
        ours = m.compute_metrics(v, alpha=alpha)
        assert ours.cvar_pct == pytest.approx(100 * empyrical.conditional_value_at_risk(r, cutoff=alpha), **TOL)
        # VaR: ours is an order statistic (eq. 3) = numpy's "lower" percentile; empyrical
        # interpolates linearly towards the next one, so its VaR is the same or less severe
        assert ours.var_pct == pytest.approx(100 * np.percentile(r, 100 * alpha, method="lower"), **TOL)
        assert ours.var_pct <= 100 * empyrical.value_at_risk(r, cutoff=alpha) + 1e-12


def test_demo_buy_and_hold_in_both_conventions():
    """TSLA, MSFT, PFE buy-and-hold 2022-10-05..2023-06-09 (README): quantstats prints 0.57 / 0.85."""
    met = m.compute_metrics(_engine_book("buy-and-hold"))
    assert round(met.sharpe, 3) == 0.434 and round(met.sharpe_empyrical, 3) == 0.566
    assert round(met.sortino, 3) == 0.641 and round(met.sortino_empyrical, 3) == 0.850


def test_where_cvar_conventions_differ():
    """Documented in the README: alpha not of the form 1/k, and ties at the cutoff."""
    import empyrical

    v = np.array([100.0, 97.0, 99.0, 100.0, 98.0])  # 4 returns, alpha = 0.3
    r = v[1:] / v[:-1] - 1.0
    # ours: ceil(0.3 * 4) = 2 worst days; empyrical: int(0.3 * 3) + 1 = 1 worst day
    assert m.conditional_value_at_risk(r, 0.3) == pytest.approx(np.sort(r)[:2].mean())
    assert empyrical.conditional_value_at_risk(r, cutoff=0.3) == pytest.approx(r.min())
    # a book in cash on flat days: ours averages every return tied with VaR, empyrical cuts at the count
    r = np.array([-0.02, 0.0, 0.0, 0.0, 0.01, 0.01, 0.02, 0.0, 0.0, 0.03])
    assert m.conditional_value_at_risk(r, 0.2) == pytest.approx(-0.02 / 6)
    assert empyrical.conditional_value_at_risk(r, cutoff=0.2) == pytest.approx(-0.01)


@pytest.mark.parametrize("values", [[], [1.0], [1.0, 1.0, 1.0]])
def test_too_short_or_flat_books_give_null(values):
    """Fewer than two returns or no dispersion: null in metrics.json in both conventions."""
    d = m.compute_metrics(np.array(values)).as_dict()
    for key in ("sharpe", "sharpe_empyrical", "sortino", "sortino_empyrical"):
        assert d[key] is None, key
    assert (d["ann_vol_empyrical_pct"] is None) == (len(values) < 2)


def test_no_losing_day_gives_null_sortino_where_empyrical_says_infinity():
    import empyrical

    v = np.array([1.0, 1.1, 1.2, 1.3])
    d = m.compute_metrics(v).as_dict()
    assert d["sortino"] is None and d["sortino_empyrical"] is None
    assert d["sharpe_empyrical"] == pytest.approx(empyrical.sharpe_ratio(v[1:] / v[:-1] - 1), rel=1e-9)
    assert math.isinf(empyrical.sortino_ratio(v[1:] / v[:-1] - 1))


def test_a_book_that_went_through_zero_has_no_tail_as_it_has_no_sharpe():
    """Found in review: a short book that reached -$19,903 and then +$29,005 (a $48,908 gain) entered the
    loss tail as a -245.7 % day (its ratio of two values of opposite sign); Sharpe and CR were null. Both
    tails are null now, and a book that stayed above zero keeps its own."""
    d = m.compute_metrics(np.array([61214.0, -19903.0, 29005.0, 30000.0]), alpha=0.5).as_dict()
    assert d["sharpe"] is None and d["var_pct"] is None and d["cvar_pct"] is None
    d = m.compute_metrics(np.array([100.0, 90.0, 99.0, 100.0]), alpha=0.3).as_dict()
    assert d["var_pct"] == pytest.approx(-10.0) and d["cvar_pct"] == pytest.approx(-10.0)
