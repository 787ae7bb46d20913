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
