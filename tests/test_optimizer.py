"""The cvxpy mean-variance solver against closed-form solutions."""

import numpy as np
import pytest

from fincon.risk.optimizer import MeanVarianceProblem, mean_variance_weights


def test_signed_form_matches_closed_form_with_diagonal_sigma():
    # max mu w - w' diag(s) w, separable: w_i* = clip(mu_i / (2 s_i), bounds)
    mu = np.array([0.02, -0.01, 0.005, 0.01])
    s = np.array([0.04, 0.01, 0.01, 0.02])
    w = mean_variance_weights(mu, np.diag(s), directions=["buy", "sell", "hold", "sell"])
    raw = np.array([0.02 / 0.08, -0.01 / 0.02, 0.0, 0.0])  # sell with mu>0 -> 0
    assert w == pytest.approx(raw / np.abs(raw).sum(), abs=1e-5)
    assert np.abs(w).sum() == pytest.approx(1.0)


def test_signed_bounds_are_respected_before_scaling():
    mu = np.array([1.0, -1.0])  # unconstrained optimum far outside [-1, 1]
    w = mean_variance_weights(mu, np.eye(2) * 1e-3, directions={"A": "buy", "B": "sell"})
    assert w == pytest.approx([0.5, -0.5], abs=1e-5)


def test_long_only_two_assets_closed_form():
    # min-variance-like case: equal mu, diag variances 1 and 4 -> w ∝ 1/var
    w = mean_variance_weights(np.array([0.0, 0.0]), np.diag([1.0, 4.0]))
    assert w == pytest.approx([0.8, 0.2], abs=1e-4)
    assert (w >= 0).all() and w.sum() == pytest.approx(1.0)


def test_resolve_with_new_mu_reuses_problem():
    p = MeanVarianceProblem(np.diag([0.01, 0.01]), form="signed")
    a = p.solve(np.array([0.01, 0.01]), ["buy", "buy"])
    b = p.solve(np.array([0.03, 0.01]), ["buy", "buy"])
    assert a == pytest.approx([0.5, 0.5], abs=1e-5)
    # mu/(2*0.01) = [1.5, 0.5] -> clipped to the buy bound [1, 0.5] -> scaled to gross 1
    assert b == pytest.approx([2 / 3, 1 / 3], abs=1e-4)


def test_highs_is_refused_and_bad_direction_named():
    with pytest.raises(ValueError, match="HiGHS"):
        MeanVarianceProblem(np.eye(2), solver="HIGHS")
    with pytest.raises(ValueError, match="short"):
        mean_variance_weights(np.zeros(2), np.eye(2), directions=["buy", "short"])
