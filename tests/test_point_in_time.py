"""Point in time: perturbing every price after day t changes nothing up to t.

For every strategy, the prices (all fields) of every day after t are
scrambled; every decision taken up to t, and the equity up to t, must be
identical. A spy strategy also hashes everything a view exposes each day.
"""

import hashlib
import json

import numpy as np
import pandas as pd
import pytest

from fincon.data.view import FIELDS
from fincon.strategies import Strategy, make_strategy
from fincon.strategies.registry import STRATEGIES
from fincon.testing import backtest, market_for, perturbed

TICKERS = ["TSLA", "MSFT", "PFE"]
CUT = 60  # decision day t (index within the backtest window)


#: strategies that read an event corpus, not prices alone: their future-perturbation
#: test (events and prices after t) is tests/test_sentiment.py's
EVENT_DRIVEN = {"sentiment", "sentiment-same-day"}
#: one-stock reinforcement-learning agents: below, on one ticker, with a short training
RL = {"a2c", "ppo", "dqn"}
CONFIGS = [(name, {}) for name in sorted(STRATEGIES) if name not in EVENT_DRIVEN | RL] + [
    ("markowitz", {"form": "signed", "rebalance_every": 1, "lookback": 30}),
    ("equal-weight", {"rebalance_every": 1}),
    ("sma-cross", {"fast": 3, "slow": 8, "allow_short": True}),
]


@pytest.mark.parametrize("name,params", CONFIGS, ids=[f"{n}{'-' + str(p) if p else ''}" for n, p in CONFIGS])
def test_future_prices_do_not_change_decisions(name, params):
    strategy = make_strategy(name, params)
    base = market_for(TICKERS, warmup=strategy.warmup)
    a = backtest(base, make_strategy(name, params))
    b = backtest(perturbed(base, CUT), make_strategy(name, params))
    assert a.decisions[: CUT + 1] == b.decisions[: CUT + 1]
    np.testing.assert_array_equal(a.values[: CUT + 1], b.values[: CUT + 1])
    # the perturbation is real: something after the cut differs
    assert not np.array_equal(a.values, b.values)


@pytest.mark.parametrize("name", sorted(RL))
def test_future_prices_change_no_decision_of_a_trained_agent(name, tmp_path):
    """An RL agent trains on the bars before the window at its first decision:
    scrambling every bar after day t changes nothing up to t, training included."""
    params = {"timesteps": 600, "seed": 3}
    base = market_for(["TSLA"], warmup=make_strategy(name, params).warmup)
    a_strategy, b_strategy = make_strategy(name, params), make_strategy(name, params)
    a = backtest(base, a_strategy, tmp_path)  # the run directory: its model and curve land there
    b = backtest(perturbed(base, CUT), b_strategy, tmp_path)
    assert a.decisions[: CUT + 1] == b.decisions[: CUT + 1]
    np.testing.assert_array_equal(a.values[: CUT + 1], b.values[: CUT + 1])
    assert a_strategy.trained_on == b_strategy.trained_on and a_strategy.trained_on[1] < str(
        base.dates[base.first_index].date()
    )


class Spy(Strategy):
    """Hashes every array a view exposes, each day."""

    name = "spy"

    def __init__(self):
        self.seen = []

    def decide(self, view):
        h = hashlib.sha256()
        for f in FIELDS:
            h.update(view.matrix(f).tobytes())
            for t in view.tickers:
                h.update(view.history(t, f).tobytes())
        h.update(view.closes().to_numpy().tobytes())
        h.update(view.returns().to_numpy().tobytes())
        h.update(json.dumps(dict(view.portfolio.shares), sort_keys=True).encode())
        self.seen.append((str(view.date.date()), view.available, h.hexdigest()))
        return None


def test_view_exposes_nothing_after_its_day():
    base = market_for(TICKERS, warmup=20)
    spy_a, spy_b = Spy(), Spy()
    backtest(base, spy_a)
    backtest(perturbed(base, CUT), spy_b)
    assert spy_a.seen[: CUT + 1] == spy_b.seen[: CUT + 1]
    assert spy_a.seen[CUT + 1] != spy_b.seen[CUT + 1]
    # the view of day k shows exactly warm-up + k + 1 rows
    assert [s[1] for s in spy_a.seen[:3]] == [21, 22, 23]


def test_view_arrays_are_read_only():
    view = market_for(["TSLA"]).view_at(5)
    with pytest.raises(ValueError):
        view.history("TSLA")[0] = 1.0


def _write_perturbed_csvs(directory, tickers, cut_date, seed=3):
    """Copy the sample bars of ``tickers`` into ``directory`` as CSVs whose
    every row after ``cut_date`` is scrambled (prices x U(0.3, 3))."""
    from fincon.data.sources import make_source

    rng = np.random.default_rng(seed)
    sample = make_source("sample")
    directory.mkdir(parents=True, exist_ok=True)
    for t in tickers:
        raw = sample.load(t, None, None)
        after = pd.to_datetime(raw["Date"]) > pd.Timestamp(cut_date)
        shock = rng.uniform(0.3, 3.0, size=int(after.sum()))
        for col in ("Open", "High", "Low", "Close", "Adj Close"):
            raw.loc[after, col] = raw.loc[after, col].to_numpy() * shock
        raw.to_csv(directory / f"{t}.csv", index=False)


@pytest.mark.parametrize("source", ["csv", "yfinance-cache"])
@pytest.mark.parametrize("strategy", ["markowitz", "sma-cross", "equal-weight"])
def test_every_price_source_end_to_end(source, strategy, tmp_path):
    """Through the CLI and a real source: scramble the future in the files,
    and every decision and value up to the cut date stays byte-identical."""
    from fincon.cli.main import main

    cut = "2023-01-31"
    for label in ("clean", "scrambled"):
        data = tmp_path / label / "data"
        if label == "clean":
            _write_perturbed_csvs(data, TICKERS, "2100-01-01")  # nothing after 2100: a plain copy
        else:
            _write_perturbed_csvs(data, TICKERS, cut)
        flag = ["--data", str(data)] if source == "csv" else ["--source", "yfinance", "--cache-dir", str(data)]
        assert (
            main(
                [
                    "backtest",
                    "--tickers",
                    ",".join(TICKERS),
                    "--strategy",
                    strategy,
                    *flag,
                    "--out",
                    str(tmp_path / label / "run"),
                    "--no-progress",
                    "--no-benchmark",
                ]
            )
            == 0
        )
    runs = [tmp_path / label / "run" for label in ("clean", "scrambled")]
    decisions = [[json.loads(x) for x in (r / "decisions.jsonl").read_text().splitlines()] for r in runs]
    upto = [[d for d in ds if d["date"] <= cut] for ds in decisions]
    assert len(upto[0]) > 50 and upto[0] == upto[1]
    equity = [pd.read_csv(r / "equity.csv") for r in runs]
    keep = [e[e.date <= cut] for e in equity]
    assert keep[0].equals(keep[1])
    assert not equity[0].equals(equity[1])
