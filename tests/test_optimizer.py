"""The cvxpy mean-variance solver against closed-form solutions, its
invariants over random problems, and the Markowitz strategy around it."""

import json
import logging
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.risk.optimizer import _BOUNDS, MeanVarianceProblem, mean_variance_weights
from fincon.strategies import make_strategy
from fincon.testing import backtest, market_for


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


# -- the signed form stays inside its directions (issue: weights against directions) --


def _objective(w, mu, sigma, gamma):
    return float(mu @ w - gamma * w @ sigma @ w)


def test_buy_with_negative_mu_and_holds_give_all_cash():
    # the optimum of mu w - gamma w'Sigma w on w in [0, 1] with mu < 0 is w = 0:
    # nothing can be bought, so all cash, not round-off scaled up to gross 1
    rng = np.random.default_rng(7)
    for _ in range(300):
        a = rng.normal(0, 0.02, (3, 3))
        sigma = a @ a.T + 1e-5 * np.eye(3)
        mu = rng.normal(0, 0.002, 3)
        mu[0] = -abs(mu[0]) - 1e-5
        w = mean_variance_weights(mu, sigma, directions=["buy", "hold", "hold"])
        assert (w == 0).all(), (mu, w)
    for _ in range(200):
        a = rng.normal(0, 0.02, (3, 3))
        w = mean_variance_weights(
            rng.normal(0, 0.002, 3), a @ a.T + 1e-5 * np.eye(3), directions=["hold", "hold", "hold"]
        )
        assert (w == 0).all() and not np.signbit(w).any()


def test_resolve_after_a_position_goes_back_to_cash():
    # warm-started re-solve from a non-zero point must not leave residue
    p = MeanVarianceProblem(np.array([[4e-4, 1e-4], [1e-4, 2e-4]]), form="signed")
    assert np.abs(p.solve(np.array([2e-3, 1e-3]), ["buy", "buy"])).sum() == pytest.approx(1.0)
    assert (p.solve(np.array([-2e-3, -1e-3]), ["buy", "buy"]) == 0).all()
    assert (p.solve(np.array([2e-3, 1e-3]), ["sell", "hold"]) == 0).all()


def _on_random_problems(check, examples: int) -> None:
    """``check(problem)`` on hypothesis' random problems. hypothesis is
    imported here, not at the top: every xdist worker imports every test file
    and one runs these (1.0 s an import, `python -X importtime`)."""
    from hypothesis import given, settings, strategies as st
    from hypothesis.extra.numpy import arrays

    @st.composite
    def problems(draw):
        n = draw(st.integers(1, 8))
        a = draw(arrays(np.float64, (n, n), elements=st.floats(-0.05, 0.05)))
        eps = draw(st.floats(1e-6, 1e-3))
        sigma = a @ a.T + eps * np.eye(n)
        mu = draw(arrays(np.float64, n, elements=st.floats(-0.01, 0.01)))
        directions = draw(st.lists(st.sampled_from(["buy", "sell", "hold"]), min_size=n, max_size=n))
        gamma = draw(st.sampled_from([0.0, 0.1, 1.0, 10.0]))
        seed = draw(st.integers(0, 2**32 - 1))
        return mu, sigma, directions, gamma, seed

    settings(max_examples=examples, deadline=None)(given(problems())(check))()


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
def test_signed_form_property():
    _on_random_problems(_signed_form_holds, examples=150)


def _signed_form_holds(problem):
    mu, sigma, directions, gamma, seed = problem
    p = MeanVarianceProblem(sigma, form="signed", risk_aversion=gamma)
    w = p.solve(mu, directions)
    lb = np.array([_BOUNDS[d][0] for d in directions])
    ub = np.array([_BOUNDS[d][1] for d in directions])
    assert (w >= lb - 1e-9).all() and (w <= ub + 1e-9).all()
    holds = np.array(directions) == "hold"
    assert (w[holds] == 0).all()
    gross = np.abs(w).sum()
    assert gross == 0 or gross == pytest.approx(1.0, abs=1e-6)
    if holds.all():
        assert gross == 0
    # (near-)optimal before the scaling: no worse than cash or random feasible points
    raw = p.last_solution
    assert (raw >= lb).all() and (raw <= ub).all()
    best = _objective(raw, mu, sigma, gamma)
    tol = 1e-9 + 1e-6 * (np.abs(mu).sum() + gamma * np.abs(sigma).sum())
    assert best >= _objective(np.zeros(len(mu)), mu, sigma, gamma) - tol
    rng = np.random.default_rng(seed)
    for _ in range(5):
        assert best >= _objective(rng.uniform(lb, ub), mu, sigma, gamma) - tol
    for i in range(len(mu)):  # corners along each axis too
        for x in (lb[i], ub[i]):
            e = raw.copy()
            e[i] = x
            assert best >= _objective(e, mu, sigma, gamma) - tol


def test_long_only_property():
    _on_random_problems(_long_only_holds, examples=60)


def _long_only_holds(problem):
    mu, sigma, _, gamma, seed = problem
    p = MeanVarianceProblem(sigma, risk_aversion=gamma)
    w = p.solve(mu)
    assert (w >= 0).all() and w.sum() == pytest.approx(1.0, abs=1e-9)
    best = _objective(w, mu, sigma, gamma)
    tol = 1e-9 + 1e-6 * (np.abs(mu).sum() + gamma * np.abs(sigma).sum())
    rng = np.random.default_rng(seed)
    for _ in range(5):
        x = rng.dirichlet(np.ones(len(mu)))
        assert best >= _objective(x, mu, sigma, gamma) - tol


def test_solver_prints_nothing():
    # OSQP's C code printed "Polishing not needed ..." above the CLI table; C
    # stdio is flushed only at exit, so look at a whole process's output
    code = """
import numpy as np
from fincon.risk.optimizer import MeanVarianceProblem
rng = np.random.default_rng(3)
for _ in range(20):
    a = rng.normal(0, 0.02, (3, 3))
    p = MeanVarianceProblem(a @ a.T + 1e-4 * np.eye(3), form="signed")
    p.solve(rng.normal(0, 0.01, 3), ["buy", "sell", "buy"])
    p.solve(rng.normal(0, 0.01, 3), ["buy", "buy", "buy"])
    p = MeanVarianceProblem(a @ a.T + 1e-2 * np.eye(3), form="signed")  # interior optimum
    p.solve(np.full(3, 1e-4), ["buy", "buy", "buy"])
    MeanVarianceProblem(a @ a.T + 1e-4 * np.eye(3)).solve(rng.normal(0, 0.01, 3))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""


SIGNED = ["--param", "markowitz.form=signed", "--param", "markowitz.directions={TSLA: buy, MSFT: hold, PFE: hold}"]


def test_issue_reproduction_through_the_cli(tmp_path):
    out = tmp_path / "signed"
    assert (
        main(
            [
                "backtest",
                "--tickers",
                "TSLA,MSFT,PFE",
                "--strategy",
                "markowitz",
                *SIGNED,
                "--start",
                "2022-10-05",
                "--end",
                "2023-06-09",
                "--no-progress",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    decisions = [json.loads(line) for line in (out / "decisions.jsonl").read_text().splitlines()]
    weights = [d["weights"] for d in decisions if d.get("weights")]
    assert weights, decisions[:2]
    for w in weights:
        assert w.get("MSFT", 0.0) == 0.0 and w.get("PFE", 0.0) == 0.0
        assert w.get("TSLA", 0.0) >= 0.0
    positions = pd.read_csv(out / "positions.csv")
    assert (positions[positions.ticker != "TSLA"].shares == 0).all()
    assert (positions[positions.ticker == "TSLA"].shares >= 0).all()


def test_directions_for_a_ticker_not_in_the_run_is_an_error(tmp_path, capsys):
    out = tmp_path / "bad"
    code = main(
        [
            "backtest",
            "--tickers",
            "TSLA,MSFT,PFE",
            "--strategy",
            "markowitz",
            "--param",
            "markowitz.form=signed",
            "--param",
            "markowitz.directions={AAPL: buy, TSLA: sell}",
            "--no-progress",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    line = next(x for x in err.splitlines() if x.startswith("fincon: error:"))
    assert "AAPL" in line and "TSLA, MSFT, PFE" in line
    assert not out.exists()


def test_short_history_warns_once(caplog):
    strategy = make_strategy("markowitz", {"lookback": 60, "rebalance_every": 1})
    market = market_for(["TSLA", "MSFT"], warmup=20)  # 20 days of warm-up, lookback 60
    with caplog.at_level(logging.WARNING, logger="fincon.strategies.markowitz"):
        backtest(market, strategy)
    msgs = [r.getMessage() for r in caplog.records if r.name == "fincon.strategies.markowitz"]
    assert len(msgs) == 1, msgs
    assert "only 20 days" in msgs[0] and "lookback=60" in msgs[0]


def test_a_rebalance_without_history_is_asked_again_the_next_session():
    """Found in review: a window starting at the data's first bars gave markowitz fewer than three rows on
    its first rebalance day; it returned nothing and waited rebalance_every (21) sessions in cash without a
    word (+9.6 % beside buy-and-hold's +25.8 %). It asks again the next session, then keeps its schedule
    (every rebalance_every-th session, as a sealed journal replays it)."""
    strategy = make_strategy("markowitz", {"lookback": 10, "rebalance_every": 5})
    market = market_for(["TSLA", "MSFT"], warmup=0, start=pd.Timestamp("2022-10-05"), end=pd.Timestamp("2022-11-15"))
    res = backtest(market, strategy)
    days = [d["date"] for d in res.decisions if d.get("weights")]
    assert days[:3] == ["2022-10-07", "2022-10-12", "2022-10-19"]  # day 2 (3 closes), then days 5, 10, ...


# -- the numpy path (interior point + exact active set) against the cvxpy path it replaced --


def _baseline_class():
    """BaselineProblem: the solver as it was before the numpy path (cvxpy +
    OSQP + exact refinement), kept verbatim in bench/optimizer.py."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "bench" / "optimizer.py"
    spec = importlib.util.spec_from_file_location("bench_optimizer", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.BaselineProblem


def _random_problem(rng, n):
    """Sigma of one of the shapes the callers produce, with daily-sized mu."""
    kind = rng.integers(3)
    if kind == 0:  # factor model, sample covariance from more days than assets
        days = 2 * n + 10
        r = rng.normal(0, 0.01, (days, 3)) @ rng.normal(0, 1, (3, n)) + rng.normal(0, 0.015, (days, n))
        sigma, mu = np.cov(r.T), r.mean(axis=0)
    elif kind == 1:  # market factor, fewer days than assets, shrunk to the diagonal (Ledoit-Wolf-like)
        days = max(10, n // 2)
        r = np.outer(rng.normal(4e-4, 0.01, days), rng.normal(1, 0.3, n)) + rng.normal(0, 0.02, (days, n))
        sample = np.cov(r.T)
        sigma = 0.7 * sample + 0.3 * np.mean(np.diag(sample)) * np.eye(n)
        mu = r.mean(axis=0)
    else:  # dense random, as the hypothesis tests draw them
        a = rng.uniform(-0.05, 0.05, (n, n))
        sigma, mu = a @ a.T + rng.uniform(1e-6, 1e-3) * np.eye(n), rng.uniform(-0.01, 0.01, n)
    return sigma, mu


def _random_directions(rng, mu):
    if rng.random() < 0.5:
        return ["buy" if m > 0 else "sell" for m in mu]
    return list(rng.choice(["buy", "sell", "hold"], len(mu), p=[0.45, 0.45, 0.1]))


def test_numpy_path_matches_the_cvxpy_solver_it_replaced():
    # same weights to 1e-6 as BaselineProblem (the pre-numpy solver) on a
    # first solve and on a re-solve with new mu and directions (warm start),
    # and as the library's own cvxpy path (method="cvxpy", the fallback)
    Baseline = _baseline_class()
    rng = np.random.default_rng(2024)
    worst, paths = 0.0, set()
    for case in range(42):
        n = int(rng.choice([2, 5, 12, 30, 60])) if case < 40 else 200
        sigma, mu = _random_problem(rng, n)
        gamma = float(rng.choice([0.1, 1.0, 10.0]))
        form = "signed" if case % 2 else "long_only"
        new = MeanVarianceProblem(sigma, form=form, risk_aversion=gamma)
        old = Baseline(sigma, form=form, risk_aversion=gamma)
        via_cvxpy = MeanVarianceProblem(sigma, form=form, risk_aversion=gamma, method="cvxpy")
        for mu_k in (mu, mu * rng.normal(1, 0.3, n)):
            directions = _random_directions(rng, mu_k) if form == "signed" else None
            w = new.solve(mu_k, directions)
            paths.add(new.last_path)
            assert new.last_path in ("interior_point", "warm_start"), (case, new.last_path)
            w_old = old.solve(mu_k, directions)
            assert np.abs(w - w_old).max() <= 1e-6, (case, form, n, np.abs(w - w_old).max())
            if case % 4 < 2:  # (cvxpy's set-up dominates this test's time)
                assert np.abs(w - via_cvxpy.solve(mu_k, directions)).max() <= 1e-6, (case, form, n)
                assert via_cvxpy.last_path == "cvxpy"
            worst = max(worst, float(np.abs(w - w_old).max()))
    assert paths == {"interior_point", "warm_start"}
    assert worst < 1e-9  # both end in the same exact step: they agree to round-off


def test_numpy_path_matches_an_independent_clarabel_solve():
    # a reference that shares no code with the active-set step: cvxpy +
    # CLARABEL at tight tolerance on the unscaled problem, weights to 1e-5
    import cvxpy as cp

    rng = np.random.default_rng(99)
    for case in range(30):
        n = int(rng.choice([3, 10, 40]))
        sigma, mu = _random_problem(rng, n)
        gamma = float(rng.choice([0.5, 2.0]))
        x = cp.Variable(n)
        objective = cp.Maximize(mu @ x - gamma * cp.quad_form(x, cp.psd_wrap((sigma + sigma.T) / 2)))
        if case % 2:
            directions = _random_directions(rng, mu)
            lb = np.array([_BOUNDS[d][0] for d in directions])
            ub = np.array([_BOUNDS[d][1] for d in directions])
            cp.Problem(objective, [x >= lb, x <= ub]).solve(
                solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
            )
            ref = np.clip(x.value, lb, ub)
            gross = np.abs(ref).sum()
            p = MeanVarianceProblem(sigma, form="signed", risk_aversion=gamma)
            w = p.solve(mu, directions)
            assert np.abs(p.last_solution - ref).max() <= 1e-5, case
            if gross > 1e-3:
                assert np.abs(w - ref / gross).max() <= 1e-5, case
        else:
            cp.Problem(objective, [cp.sum(x) == 1, x >= 0]).solve(
                solver="CLARABEL", tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12
            )
            w = mean_variance_weights(mu, sigma, risk_aversion=gamma)
            assert np.abs(w - x.value).max() <= 1e-5, case


def test_cvxpy_is_the_fallback_when_the_numpy_path_fails(monkeypatch):
    import fincon.risk.optimizer as optimizer

    rng = np.random.default_rng(5)
    sigma, mu = _random_problem(rng, 8)
    expected = MeanVarianceProblem(sigma, method="cvxpy").solve(mu)
    monkeypatch.setattr(optimizer, "_interior_point", lambda *args, **kwargs: iter(()))
    p = MeanVarianceProblem(sigma)
    assert p.solve(mu) == pytest.approx(expected, abs=1e-9)
    assert p.last_path == "cvxpy"
    with pytest.raises(ValueError, match="method"):
        MeanVarianceProblem(sigma, method="osqp")


def test_singular_sigma_still_solves():
    # fewer days than assets, no shrinkage: Sigma is singular; whichever path
    # answers (numpy, or cvxpy when a free block is singular), it is feasible
    # and no worse than the cvxpy path's answer
    rng = np.random.default_rng(8)
    r = rng.normal(0, 0.02, (6, 20))
    sigma, mu = np.cov(r.T), r.mean(axis=0)
    directions = ["buy" if m > 0 else "sell" for m in mu]
    for form, d in (("long_only", None), ("signed", directions)):
        p = MeanVarianceProblem(sigma, form=form)
        ref = MeanVarianceProblem(sigma, form=form, method="cvxpy")
        w = p.solve(mu, d)
        ref.solve(mu, d)
        if form == "long_only":
            assert (w >= 0).all() and w.sum() == pytest.approx(1.0)
        else:
            assert (np.sign(w) * np.sign(mu) >= 0).all() and np.abs(w).sum() == pytest.approx(1.0)
        best, best_ref = (_objective(x.last_solution, mu, sigma, 1.0) for x in (p, ref))
        assert best >= best_ref - 1e-9


def test_blas_threads_are_restored_after_a_solve():
    from threadpoolctl import threadpool_info

    before = [(i["filepath"], i["num_threads"]) for i in threadpool_info()]
    rng = np.random.default_rng(1)
    sigma, mu = _random_problem(rng, 30)
    MeanVarianceProblem(sigma).solve(mu)
    assert [(i["filepath"], i["num_threads"]) for i in threadpool_info()] == before
