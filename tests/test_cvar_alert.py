"""rho_t and the within-episode alert rule, against hand-computed values."""

import numpy as np
import pytest

from fincon.risk.cvar_alert import CvarAlert, alert_series


def test_alerts_by_hand():
    # PnL %: +1, -1.9802, +1.0101, -3, +1.0309; at alpha=1% rho is the worst PnL so far
    states = alert_series([100, 101, 99, 100, 97, 98])
    assert [s.alert for s in states] == [False, False, True, False, True, False]
    assert states[1].rho == pytest.approx(1.0) and states[1].reason == ""  # one PnL: below min_obs
    assert states[2].rho == pytest.approx(-1.980198, abs=1e-6)
    assert "CVaR fell" in states[2].reason and "PnL is -1.980" in states[2].reason
    assert states[3].rho == pytest.approx(states[2].rho) and not states[3].alert
    assert states[4].rho == pytest.approx(-3.0) and states[4].pnl == pytest.approx(-3.0)
    assert states[5].rho_prev == pytest.approx(-3.0)


def test_negative_pnl_alone_raises_the_alert():
    states = alert_series([100, 90, 100, 99])  # -10, +11.1, -1: rho stays -10 on the last day
    assert states[3].alert and "CVaR" not in states[3].reason and "PnL is -1.000" in states[3].reason


def test_a_flat_days_float_noise_is_no_loss():
    """Found in review: TSLA closed at 194.699997 two days running, and the book's two equal closes came
    through float as a PnL of -2.2e-14 %: "today's PnL is -0.000%" raised the alert and halved a short."""
    flat = 1021443.900704444479
    states = alert_series([100, 101, 99, flat, flat * (1 - 2.2e-16)])
    assert not states[-1].alert and states[-1].pnl < 0
    assert alert_series([100, 101, 99, flat, flat * (1 - 1e-6)])[-1].alert  # a loss of a cent per $10k is one


def test_rho_is_the_empirical_tail_mean_with_enough_observations():
    rng = np.random.default_rng(3)
    values = 100 * np.cumprod(1 + rng.normal(0, 0.02, 400))
    last = alert_series(values, alpha=0.05)[-1]
    pnl = np.sort(100 * (values[1:] / values[:-1] - 1))
    k = int(np.ceil(0.05 * len(pnl)))
    assert last.rho == pytest.approx(pnl[:k].mean(), rel=1e-12)


def test_state_depends_only_on_the_past():
    a = alert_series([100, 101, 99, 100, 97, 98, 120, 50])
    b = alert_series([100, 101, 99, 100, 97, 98, 60, 300])
    assert [s.as_dict() for s in a[:6]] == [s.as_dict() for s in b[:6]]


def test_bad_parameters():
    with pytest.raises(ValueError):
        CvarAlert(alpha=0.0)
    with pytest.raises(ValueError):
        CvarAlert(min_obs=0)
