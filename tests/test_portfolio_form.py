"""The portfolio in the paper's form (issue 20 item 4): expected returns
from the analysts' directions and confidences go into the signed
mean-variance optimizer and its weights are used as they come out (no
rescaling to gross 1); the llm brain's answer carries its own size.

Cross-checked against cvxpy solving the same problem directly.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from pydantic import ValidationError

from fincon.agents.brains import ManagerTask
from fincon.agents.protocols.fincon import FinConManager
from fincon.agents.reports import AnalystReport, Citation, Insight, portfolio_answer_model
from fincon.strategies.markowitz import estimate_moments


class _View:
    def __init__(self, closes: pd.DataFrame):
        self._closes = closes

    def closes(self, n: int) -> pd.DataFrame:
        return self._closes.tail(n)


def _report(role: str, direction: str, conf: float) -> AnalystReport:
    cite = Citation(id=f"{role}-1", date="2022-11-01", source="news")
    return AnalystReport(
        role=role, ticker="X", direction=direction, confidence=conf, insights=[Insight(text="t", citations=[cite])]
    )


def test_paper_weights_are_the_optimizer_s_own_against_cvxpy():
    import cvxpy as cp

    rng = np.random.default_rng(3)
    rets = rng.normal(0.0005, [0.02, 0.03, 0.015], size=(61, 3))
    closes = pd.DataFrame(100 * np.cumprod(1 + rets, axis=0), columns=["A", "B", "C"])
    reports = {
        "A": [_report("news", "bullish", 0.8), _report("10-q", "bullish", 0.6)],
        "B": [_report("news", "bearish", 0.9)],
        "C": [_report("news", "neutral", 0.5)],
    }
    task = ManagerTask(day="2022-11-02", tickers=("A", "B", "C"), reports=reports, weights={"news": 1.0, "10-q": 1.0})
    actions = {"A": "buy", "B": "sell", "C": "hold"}
    mgr = FinConManager(lookback=60, portfolio_form="paper")
    got = mgr.paper_weights(_View(closes), task, actions)

    # by hand: score = mean of signed confidences (equal role weights), mu = score x daily vol
    c = closes.to_numpy()
    r = c[1:] / c[:-1] - 1
    _, sigma = estimate_moments(r, 0.5)
    sigma = sigma * 252  # annual units, risk aversion 3
    score = np.array([(0.8 + 0.6) / 2, -0.9, 0.0])
    mu = score * np.sqrt(np.diag(sigma))
    w = cp.Variable(3)
    prob = cp.Problem(
        cp.Maximize(mu @ w - 3.0 * cp.quad_form(w, cp.psd_wrap(sigma))),
        [w[0] >= 0, w[0] <= 1, w[1] <= 0, w[1] >= -1, w[2] == 0],
    )
    prob.solve()
    expect = np.asarray(w.value)
    gross = np.abs(expect).sum()
    if gross > 1:
        expect = expect / gross
    assert np.allclose([got["A"], got["B"], got["C"]], expect, atol=1e-5)
    assert got["A"] > 0 > got["B"] and got["C"] == 0.0
    # the optimizer's own exposure: not rescaled to 1 (the direction form's weights are)
    assert abs(sum(abs(x) for x in got.values()) - 1.0) > 1e-3
    assert abs(sum(abs(x) for x in mgr.weights(_View(closes), ("A", "B", "C"), actions).values()) - 1.0) < 1e-9


def test_the_portfolio_answer_carries_a_size_and_refuses_a_contradiction():
    M = portfolio_answer_model(("A", "B"))
    a = M.model_validate({"A": "buy", "B": "hold", "size": 0.4, "rationale": "r", "relied_on": []})
    assert a.size == 0.4 and a.directions() == {"A": "buy", "B": "hold"}
    with pytest.raises(ValidationError, match="contradiction"):
        M.model_validate({"A": "buy", "B": "hold", "size": 0.0, "rationale": "r", "relied_on": []})
    M.model_validate({"A": "hold", "B": "hold", "size": 0.0, "rationale": "r", "relied_on": []})  # all cash: fine
    assert list(M.model_json_schema()["properties"])[-3:] == ["A", "B", "size"]


def test_a_coins_volatility_is_annualised_with_its_own_sessions():
    """The paper form's covariance and the data analyst's volatility were annualised with 252
    days whatever the market: a coin's bars (every day) are 365 a year, so its annual volatility
    came out sqrt(252 / 365) = 0.83 of itself (the analyst told the manager "about 60%" of a coin
    whose daily moves make 76 %) and the paper form's weights were those of another risk. Both read
    the calendar from the dates up to the decision day (point in time); weekday bars keep 252."""
    from fincon.agents.roles.data_analysis import ROLE
    from fincon.data.view import MarketData

    rng = np.random.default_rng(5)
    days = pd.date_range("2023-01-01", periods=61, freq="D")
    rets = rng.normal(0.0, 0.04, size=60)
    last = rets[-20:]  # the analyst's volatility: of the last 20 returns, here exactly 4 % a day
    rets[-20:] = (last - last.mean()) / last.std(ddof=1) * 0.04
    close = 100 * np.cumprod(np.r_[1.0, 1 + rets])
    frame = pd.DataFrame({"open": close, "high": close, "low": close, "close": close, "volume": 1.0}, index=days)
    view = MarketData({"COIN": frame}).view_at(60)
    said = [i.text for i in ROLE.gather(view, "COIN", 60).items if "volatility" in i.text]
    assert said == ["annualised volatility about 80%"]  # 4 % x sqrt(365) = 76.4, to the nearest 20
    weekdays = MarketData({"COIN": frame.set_index(pd.bdate_range("2023-01-02", periods=61))}).view_at(60)
    assert [i.text for i in ROLE.gather(weekdays, "COIN", 60).items if "volatility" in i.text] == [
        "annualised volatility about 60%"  # 4 % x sqrt(252) = 63.5
    ]
    # the paper form: the covariance in a coin's annual units (x 365), against cvxpy as above
    import cvxpy as cp

    rets2 = rng.normal(0.0005, [0.02, 0.03], size=(61, 2))
    closes = pd.DataFrame(100 * np.cumprod(1 + rets2, axis=0), columns=["A", "B"], index=days)
    task = ManagerTask(day="2023-03-02", tickers=("A", "B"), reports={"A": [_report("news", "bullish", 0.8)],
                       "B": [_report("news", "bearish", 0.4)]}, weights={"news": 1.0})  # fmt: skip
    got = FinConManager(lookback=60, portfolio_form="paper").paper_weights(
        _View(closes), task, {"A": "buy", "B": "sell"}
    )
    c = closes.to_numpy()
    _, sigma = estimate_moments(c[1:] / c[:-1] - 1, 0.5)
    sigma = sigma * 365
    mu = np.array([0.8, -0.4]) * np.sqrt(np.diag(sigma))
    w = cp.Variable(2)
    cp.Problem(cp.Maximize(mu @ w - 3.0 * cp.quad_form(w, cp.psd_wrap(sigma))),
               [w[0] >= 0, w[0] <= 1, w[1] <= 0, w[1] >= -1]).solve()  # fmt: skip
    expect = np.asarray(w.value) / max(1.0, float(np.abs(w.value).sum()))
    assert np.allclose([got["A"], got["B"]], expect, atol=1e-5)


@pytest.mark.slow
def test_a_small_held_position_is_kept_by_the_rules_manager(tmp_path):
    """Found in review: the team told its manager the book rounded to a tenth, so a position under a
    twentieth (most of the paper form's, whose gross exposure is a few percent) read as none, and the
    rules manager's "hold" (in a portfolio: no position) closed it where its own rule keeps a held side.
    Every ticker held into a decision is restated or reversed, never held to nothing."""
    from fincon.testing.team import run_team

    res, _ = run_team(["AAPL", "MSFT", "TSLA"], "2023-01-03", "2023-02-28", tmp_path, portfolio_form="paper")
    shares = res.positions.pivot(index="date", columns="ticker", values="shares")
    small = closed = 0
    for d in res.decisions:
        before = shares.index[shares.index < d["date"]]
        if not d.get("actions") or not len(before):
            continue
        for t, a in d["actions"].items():
            held = shares.loc[before[-1], t]
            w = res.positions.set_index(["date", "ticker"]).loc[(before[-1], t), "weight"]
            small += bool(held) and abs(w) < 0.05
            closed += bool(held) and a == "hold"
    assert small > 10 and closed == 0


def test_directions_left_uninvested_are_counted_and_said():
    """Found in review: the paper form closed a direction the manager chose when the analysts' view
    pointed the other way (its box [0, 1] holds a negative mu at 0: 18 of 84 days on MSFT+JNJ), and
    either form held cash on a day with under 3 days of returns; both without a word. Counted in the
    summary and said under the run's table."""
    from fincon.workflow.tables import optimizer_flags

    rng = np.random.default_rng(7)
    rets = rng.normal(0.0005, [0.02, 0.03], size=(61, 2))
    closes = pd.DataFrame(100 * np.cumprod(1 + rets, axis=0), columns=["A", "B"])
    reports = {"A": [_report("news", "bearish", 0.7)], "B": [_report("news", "bearish", 0.5)]}
    task = ManagerTask(day="2022-11-02", tickers=("A", "B"), reports=reports, weights={"news": 1.0})
    mgr = FinConManager(lookback=60, portfolio_form="paper")
    got = mgr.paper_weights(_View(closes), task, {"A": "buy", "B": "sell"})  # A: bought against its view
    assert got["A"] == 0.0 and got["B"] < 0 and mgr.paper_zeroed == 1
    assert mgr.paper_weights(_View(closes.head(3)), task, {"A": "buy", "B": "sell"}) == {"A": 0.0, "B": 0.0}
    assert mgr.weights(_View(closes.head(3)), ("A", "B"), {"A": "buy", "B": "sell"}) == {"A": 0.0, "B": 0.0}
    assert mgr.weights(_View(closes.head(3)), ("A", "B"), {"A": "hold", "B": "hold"}) == {"A": 0.0, "B": 0.0}
    s = mgr.summary()
    assert s["team_short_history_days"] == 2 and s["team_paper_zeroed"] == 1
    assert json.loads(json.dumps(s)) == s  # summary.json: a numpy count was a traceback after the run (review)
    assert optimizer_flags({"fincon": s}) == [
        "fincon: held cash on 2 days it chose a direction (under 3 days of returns)",
        "fincon: the paper form set 1 of the manager's directions to weight 0 (the analysts' view pointed the "
        "other way, the optimizer's box held it at 0)",
    ]
    assert "team_paper_zeroed" not in FinConManager(lookback=60).summary()


def test_a_runs_json_takes_numpy_numbers_as_the_numbers_they_are(tmp_path):
    """A count summed from numpy bools (the paper form's zeroed directions) ended a finished run in a
    traceback with no folder written (review 2026-12-02): a run's JSON writes a numpy scalar as the
    Python number it equals, and still refuses what JSON cannot hold."""
    from fincon.engine import rundir

    rundir.write_json(tmp_path / "s.json", {"n": np.int64(5), "b": np.bool_(True), "x": np.float64(0.25)})
    assert json.loads((tmp_path / "s.json").read_text()) == {"n": 5, "b": True, "x": 0.25}
    with pytest.raises(TypeError, match="not JSON serializable"):
        rundir.write_json(tmp_path / "t.json", {"a": np.array([1, 2])})
    with pytest.raises(ValueError):  # NaN stays refused (allow_nan=False)
        rundir.write_json(tmp_path / "u.json", {"x": np.float64("nan")})
    assert not (tmp_path / "t.json").exists() and not (tmp_path / "u.json").exists()
