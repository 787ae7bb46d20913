"""The portfolio in the paper's form (issue 20 item 4): expected returns
from the analysts' directions and confidences go into the signed
mean-variance optimizer and its weights are used as they come out (no
rescaling to gross 1); the llm brain's answer carries its own size.

Cross-checked against cvxpy solving the same problem directly.
"""

from __future__ import annotations

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
