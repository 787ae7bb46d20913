"""Point in time: perturbing every price and every event after day t changes
nothing up to t.

One test for every registered strategy (the baselines, the sentiment
baseline, finsent and the agent team under each protocol): the market's
bars after t are scrambled and its event corpus after t's decision time is
rewritten (items deleted, texts and tags flipped, new items inserted); every
decision taken up to t, and the equity up to t, must be identical, and
something after t must differ (the test can fail). Prices and events reach
a strategy only through the market view, so this is the one harness.
A spy strategy also hashes everything a view exposes each day.
"""

import hashlib
import json
import zlib

import numpy as np
import pandas as pd
import pytest

from fincon.data.events.generator import SAMPLE_DIR
from fincon.data.events.loaders.directory import DirectoryLoader
from fincon.data.inputs import open_events
from fincon.data.view import FIELDS
from fincon.strategies import Strategy, make_strategy
from fincon.strategies.registry import FACTORIES, STRATEGIES
from fincon.testing import RULES, backtest, corpus, day_records, market_for, perturb_events, perturbed, stub_client

TICKERS = ["TSLA", "MSFT", "PFE"]
CUT = 20  # decision day t (index within the backtest window)
START, END = pd.Timestamp("2022-10-05"), pd.Timestamp("2022-12-30")

#: one-stock reinforcement-learning agents: below, on one ticker, with a short training
RL = {"a2c", "ppo", "dqn", "finrl-a2c"}
#: the benchmark's same-day convention is a registered lookahead (an item dated t counts at t's
#: decision even when it came out after that close); tests/test_sentiment.py shows what it reads
LOOKAHEAD = {"sentiment-same-day"}


def _team(**params):
    return lambda: make_strategy("fincon", {**RULES, **params})


def _team_llm():
    from fincon.agents.team import FinConParams, FinConTeam

    return FinConTeam(FinConParams(**{**RULES, "brain": "llm"}), client=stub_client()[0])


def _scm_llm():
    from fincon.agents.team import FinConParams, FinConTeam
    from fincon.llm import LLMClient, UsageLedger
    from fincon.testing import ScmStub

    client = LLMClient(ScmStub(), ledger=UsageLedger())
    return FinConTeam(FinConParams(**{**RULES, "brain": "llm", "protocol": "scm"}), client=client)


def _llm_trader():
    from fincon.agents.simple_trader import LLMTrader
    from fincon.llm.settings import LLMSettings

    return LLMTrader(LLMSettings(), client=stub_client()[0])


#: every registered strategy, as a test runs it: case -> (its registered name, make a fresh one, tickers)
CASES = {
    **{n: (n, lambda n=n: make_strategy(n), TICKERS) for n in sorted(STRATEGIES) if n not in RL | LOOKAHEAD},
    "markowitz-signed-daily": (
        "markowitz",
        lambda: make_strategy("markowitz", {"form": "signed", "rebalance_every": 1, "lookback": 30}),
        TICKERS,
    ),
    "equal-weight-daily": ("equal-weight", lambda: make_strategy("equal-weight", {"rebalance_every": 1}), TICKERS),
    "sma-cross-short": (
        "sma-cross",
        lambda: make_strategy("sma-cross", {"fast": 3, "slow": 8, "allow_short": True}),
        TICKERS,
    ),
    "fincon": ("fincon", _team(), ["TSLA"]),
    "fincon-scm": ("fincon", _team(protocol="scm"), ["TSLA"]),
    "fincon-debate": ("fincon", _team(protocol="debate"), ["TSLA"]),
    "fincon-llm": ("fincon", _team_llm, ["TSLA"]),
    "fincon-scm-llm": ("fincon", _scm_llm, ["TSLA"]),
    "finsent": ("finsent", lambda: make_strategy("finsent", {"brain": "rules"}), ["TSLA"]),
    "finmem": ("finmem", lambda: make_strategy("finmem", RULES), ["TSLA"]),
    "llm-trader": ("llm-trader", _llm_trader, TICKERS),
}
SLOW = {"fincon", "fincon-scm", "fincon-debate", "fincon-llm", "fincon-scm-llm", "finmem"}


def test_every_registered_strategy_is_in_the_harness():
    """A new strategy cannot skip the point-in-time test unnoticed."""
    covered = {name for name, _, _ in CASES.values()}
    assert set(STRATEGIES) | set(FACTORIES) == covered | RL | LOOKAHEAD


def _tagged(events):
    """The sample's events with a sentiment tag on each news item (from a hash of
    its id), so the sentiment baseline has something to read."""
    import dataclasses

    tags = ("positive", "negative", "neutral")
    return [
        dataclasses.replace(e, metadata={**e.metadata, "sentiment": tags[zlib.crc32(e.id.encode()) % 3]})
        if e.source == "news"
        else e
        for e in events
    ]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory):
    """The clean corpus and its future-perturbed twin (after day CUT's decision time)."""
    root = tmp_path_factory.mktemp("pit")
    cut_day = market_for(["TSLA"], start=START, end=END).dates[CUT]
    events = _tagged(DirectoryLoader(SAMPLE_DIR).load(TICKERS))
    return corpus(root / "clean", TICKERS, events), corpus(root / "dirty", TICKERS, perturb_events(events, cut_day))


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW else c for c in CASES])
def test_future_prices_and_events_do_not_change_decisions(case, corpora, tmp_path):
    _, make, tickers = CASES[case]
    clean, dirty = corpora
    warmup = max(make().warmup, 61)
    base = market_for(tickers, warmup=warmup, start=START, end=END)
    a_market = base.with_events(open_events(str(clean), tickers))
    b_market = perturbed(base, CUT).with_events(open_events(str(dirty), tickers))
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = backtest(a_market, make(), tmp_path / "a")
    b = backtest(b_market, make(), tmp_path / "b")
    assert day_records(a, CUT + 1) == day_records(b, CUT + 1)
    np.testing.assert_array_equal(a.values[: CUT + 1], b.values[: CUT + 1])
    # the perturbation is real: something after the cut differs
    assert day_records(a, len(a.decisions)) != day_records(b, len(b.decisions)) or not np.array_equal(
        a.values, b.values
    )


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
@pytest.mark.parametrize("name", sorted(RL))
def test_future_prices_change_no_decision_of_a_trained_agent(name, tmp_path):
    """An RL agent trains on the bars before the window at its first decision:
    scrambling every bar after day t changes nothing up to t, training included."""
    params = {"timesteps": 600, "seed": 3}
    tickers = TICKERS if name == "finrl-a2c" else ["TSLA"]  # the portfolio agent allocates over several
    base = market_for(tickers, warmup=make_strategy(name, params).warmup)
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
    every row after ``cut_date`` is scrambled (prices x U(0.5, 2), each day its own: a file a source
    reads, so never a bar 5 times both its neighbours, which fincon.data.prices refuses as a typo)."""
    from fincon.data.sources import make_source

    rng = np.random.default_rng(seed)
    sample = make_source("sample")
    directory.mkdir(parents=True, exist_ok=True)
    for t in tickers:
        raw = sample.load(t, None, None)
        after = pd.to_datetime(raw["Date"]) > pd.Timestamp(cut_date)
        shock = rng.uniform(0.5, 2.0, size=int(after.sum()))
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
