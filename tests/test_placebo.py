"""Placebo runs (issue 32 item 3): the placebo corpora keep point in time and
are deterministic, and an experiment reports the team on them beside the
real run, with prediction consistency, input dependency and the profit gap."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.data.inputs import open_events
from fincon.data.sources import make_source
from fincon.workflow.placebo import ToneRewriter, flip_text, placebo_events

START, END = dt.date(2022, 10, 3), dt.date(2022, 11, 30)


def test_shuffled_news_never_moves_earlier_and_is_the_same_every_time():
    events = open_events("sample", ("TSLA",)).all_events()
    a = placebo_events("shuffle-news", events, START, END, seed=1)
    assert placebo_events("shuffle-news", events, START, END, seed=1) == a
    moved = 0
    for old, new in zip(events, a):
        assert (old.id, old.ticker, old.text) == (new.id, new.ticker, new.text)
        assert new.published_at >= old.published_at  # point in time kept: never earlier than published
        if START <= old.published_at.date() <= END and old.text:
            assert new.published_at.date() <= END
            moved += new.published_at != old.published_at
        else:
            assert new.published_at == old.published_at  # outside the test window: untouched
    assert moved > 50
    assert placebo_events("shuffle-news", events, START, END, seed=2) != a


def test_flipped_tone_by_hand():
    assert flip_text("Tesla shares fell 8.6% on weak demand; rated Buy, strong gains.") == (
        "Tesla shares rose 8.6% on strong demand; rated Sell, weak losses."
    )
    assert flip_text("Improved margins, not deteriorated ones") == "Deteriorated margins, not improved ones"


def test_every_tone_word_of_the_sample_flips_and_back():
    """Found in review: "disappointing" and "delays" (negative words of the sample's generator) had no
    opposite, and "stable" became "volatile", a neutral word that became "stable": 2 of 6 negative analyst
    notes stayed negative under the flip-tone placebo. Each tone word flips to a word of the other tone
    (by the Loughran-McDonald lexicon the rules analysts read), and back; a neutral word stays."""
    from fincon.data.events.generator import NEG, NEG_N, NEU, NEU_N, POS, POS_N
    from fincon.data.lexicon import LoughranMcDonald

    lm = LoughranMcDonald()
    for word in (*POS, *POS_N, *NEG, *NEG_N):
        flipped, tone = flip_text(word), lm.score(word).tone
        assert flipped != word and tone and lm.score(flipped).tone * tone < 0, (word, flipped)
        assert lm.score(flip_text(flipped)).tone * tone > 0, (word, flip_text(flipped))  # and back
    for word in (*NEU, *NEU_N):  # a neutral word stays, unless the lexicon scores it ("volatile": negative)
        tone = lm.score(word).tone
        assert flip_text(word) == word if not tone else lm.score(flip_text(word)).tone == -tone, word


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_an_experiment_reports_the_team_on_its_placebos(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["experiment", "--ticker", "TSLA", "--brain", "rules", "--events", "sample", "--param",
            "fincon.transcripts=text", "--train-start", "2022-09-01", "--train-end", "2022-09-30", "--test-start",
            "2022-10-03", "--test-end", "2022-11-30", "--repeats", "1", "--episodes", "1", "--ablations", "full",
            "--baselines", "buy-and-hold", "--placebo", "shuffle-news,flip-tone,price-twin", "--out", "x",
            "--bootstrap-reps", "1000", "--no-progress", "--ledger", "trials.sqlite", "--commission-model",
            "per-share", "--slippage-model", "bps", "--slippage", "5"]  # fmt: skip
    assert main(argv) == 0
    out = capsys.readouterr().out
    res = json.loads((tmp_path / "x" / "results.json").read_text())
    real = res["median"]["full"]["cr_pct"]
    for kind in ("shuffle-news", "flip-tone", "price-twin"):
        p = res["placebo"][kind]
        assert p["real_cr_pct"] == real and p["profit_gap_pct"] == real - p["cr_pct_median"]
        assert 0.0 <= p["prediction_consistency"] <= 1.0 and p["input_dependency"] == 1.0 - p["prediction_consistency"]
        row = next(line.split() for line in out.splitlines() if line.startswith(kind + " "))  # its table row
        assert row[1:4] == [f"{p['cr_pct_median']:.3f}", f"{real:.3f}", f"{p['profit_gap_pct']:+.3f}"], row
    # what each corpus changed (placebo.json): the lexicon's tone reversed in every item that has one
    flip, shuffled = res["placebo"]["flip-tone"]["corpus"], res["placebo"]["shuffle-news"]["corpus"]
    assert flip["toned"] > 50 and flip["tone_reversed"] == flip["toned"] and shuffled["moved"] > 50
    assert f"note: flip-tone: Loughran-McDonald tone reversed in {flip['toned']} of {flip['toned']}" in out
    # the team reads tone: reversing it changes its decisions (41 % of them here, 2026-12-01), unflagged
    assert res["placebo"]["flip-tone"]["prediction_consistency"] < 0.7 and not res["placebo"]["flip-tone"]["flags"]
    assert (tmp_path / "x" / "placebo" / "shuffle-news" / "TSLA.jsonl.gz").is_file()
    # the twin's prices: the real bars before the window, others inside it; the team ran on them
    twin = pd.read_csv(tmp_path / "x" / "placebo" / "price-twin" / "TSLA.csv", index_col="Date")
    real = make_source("sample").load("TSLA", pd.Timestamp("2000-01-01"), pd.Timestamp("2022-11-30")).set_index("Date")
    before, inside = twin.index < "2022-10-03", twin.index >= "2022-10-03"
    np.testing.assert_allclose(twin.loc[before, "Close"], real.loc[twin.index[before], "Adj Close"], rtol=1e-9)
    assert not np.allclose(twin.loc[inside, "Close"], real.loc[twin.index[inside], "Adj Close"])
    eq = pd.read_csv(tmp_path / "x" / "test" / "placebo-price-twin-r1" / "equity.csv")
    assert len(eq) == inside.sum()
    # excess over buy-and-hold on each market, buy-and-hold run as the experiment's broker runs it: with its
    # costs, the baseline table's figure on the real prices (a close-to-close ratio without costs, 0.05 pp
    # above it on real MSFT, was the placebo table's), a control run of its own on the twin's
    p = res["placebo"]["price-twin"]
    # (in CR's own unit: the log of the last over the first close, as the team's cr_pct; issue 42 item 2)
    free_twin = 100 * np.log(twin.loc[inside, "Close"].iloc[-1] / twin.loc[inside, "Close"].iloc[0])
    on_twin = json.loads((tmp_path / "x" / "placebo" / "buy-and-hold-on-price-twin" / "metrics.json").read_text())
    assert p["buy_and_hold_cr_pct"] == on_twin["cr_pct"] and free_twin - 0.2 < on_twin["cr_pct"] < free_twin
    assert p["excess_pct"] == p["cr_pct_median"] - on_twin["cr_pct"]
    bh = res["baselines"]["buy-and-hold"]["cr_pct"]
    free = 100 * np.log(real.loc["2022-11-30", "Adj Close"] / real.loc["2022-10-03", "Adj Close"])
    assert p["real_buy_and_hold_cr_pct"] == bh and free - 0.2 < bh < free  # the baseline table's figure, costs in
    assert p["real_excess_pct"] == p["real_cr_pct"] - bh
    # the placebo runs are controls in the ledger (issue 42 item 1): never trials, never the best
    from fincon.workflow import trials

    # the test window's rows (the training's episodes are trials of the training window, a family apart)
    rows = [r for r in trials.read(tmp_path / "trials.sqlite") if r["start"] == "2022-10-03"]
    roles = {(r["strategy"], r["role"]) for r in rows}
    # three placebo runs and buy-and-hold on the twin
    assert sum(r["role"] == "control" for r in rows) == 4 and ("buy-and-hold", "trial") in roles
    fam = trials.family(tmp_path / "trials.sqlite", ["TSLA"], "2022-10-03", "2022-11-30")
    assert fam.trials == len({r["returns_digest"] for r in rows if r["role"] == "trial"})
    assert {r["returns_digest"] for r in fam.controls}.isdisjoint({r["returns_digest"] for r in fam.distinct})
    assert main(argv) == 0  # resumes: the same corpus, nothing run again
    assert "resumed: 6 unit(s)" in capsys.readouterr().out


def test_the_price_twin_resamples_the_windows_own_returns_by_blocks():
    """Each twin return is one of the window's (a bootstrap draws, it does not
    invent), chained from the last close before the window; the same seed and
    ticker give the same twin, another seed another path."""
    from fincon.workflow.placebo import twin_closes

    rng = np.random.default_rng(3)
    closes = 100 * np.exp(np.cumsum(rng.normal(0, 0.02, 120)))
    a, b = twin_closes(closes, 0, "TSLA"), twin_closes(closes, 0, "TSLA")
    np.testing.assert_array_equal(a, b)
    assert len(a) == len(closes) - 1 and not np.allclose(a, closes[1:])
    real = np.round(np.diff(np.log(closes)), 12)
    drawn = np.round(np.diff(np.log(np.concatenate([[closes[0]], a]))), 12)
    assert set(drawn) <= set(real)
    assert not np.allclose(twin_closes(closes, 1, "TSLA"), a)


class _Reverser:
    """A model double for flip-tone: rewrites every item as 'REVERSED: ...',
    except an item it echoes unchanged (no rewrite: the word list's flip)."""

    name = "reverser"
    model_id = "reverser-1"
    price_model = "reverser-1"

    def __init__(self):
        self.calls = 0

    def complete(self, messages, schema, params):
        from fincon.llm.types import Completion

        self.calls += 1
        text = messages[-1].content.split("\n\n")[0]
        out = text if "echo" in text else f"REVERSED: {text}"
        return Completion(json.dumps({"text": out}), prompt_tokens=10, completion_tokens=5)

    def close(self):
        pass


def test_the_llm_brain_flips_the_windows_items_with_its_own_model_cached(tmp_path):
    """For the llm brain the test window's items are rewritten by the model
    (cached: a replay asks nothing), the earlier ones by the word list; an
    answer that is no rewrite falls back to the word list and is counted."""
    from fincon.data.events.model import Event, parse_timestamp
    from fincon.llm import CallCache, LLMClient, UsageLedger
    from fincon.workflow.placebo import ToneRewriter

    def item(i, day, text):
        return Event(id=f"n{i}", ticker="TSLA", source="news", published_at=parse_timestamp(day), text=text)

    events = [
        item(0, "2022-09-20", "Shares rose on strong demand."),
        item(1, "2022-10-10", "Shares rose on strong demand."),
        item(2, "2022-10-11", "echo this one"),
    ]
    cache = tmp_path / "llm.sqlite"
    rewriter = ToneRewriter(LLMClient(_Reverser(), cache=CallCache(cache, "read-write"), ledger=UsageLedger()))
    out = placebo_events("flip-tone", events, dt.date(2022, 10, 1), dt.date(2022, 10, 31), 0, rewriter)
    assert out[0].text == "Shares fell on weak demand."  # before the window: the word list
    assert out[1].text.startswith("REVERSED: Shares rose on strong demand.")  # the model's rewrite
    assert out[2].text == flip_text("echo this one") and rewriter.fallbacks == 1 and rewriter.calls == 2
    replay = ToneRewriter(LLMClient(_Reverser(), cache=CallCache(cache, "replay"), ledger=UsageLedger()))
    again = placebo_events("flip-tone", events, dt.date(2022, 10, 1), dt.date(2022, 10, 31), 0, replay)
    assert [e.text for e in again] == [e.text for e in out] and replay.client.backend.calls == 0


def test_a_masked_experiments_flip_tone_is_the_word_lists_and_no_model_reads_an_item_whole(tmp_path):
    """Found in review: a masked experiment's rewriter sent the model under test every item of the test
    window whole (masked word by word only; the team reads them as topics), 64 of 66 of them named to
    the corpus adversary, in calls no audit read. Masked, the word list flips the tone, no model is asked,
    and placebo.json says so; unmasked the model still rewrites."""
    from fincon.workflow.experiment import _tone_rewriter, load_experiment, write_placebos
    from fincon.workflow.placebo import read_stats

    cfg = {"team": {"brain": "llm"}, "llm": {"anonymize": True}, "tickers": ["TSLA"], "placebos": ["flip-tone"]}
    masked = load_experiment(None, {**cfg, "test": {"start": "2022-11-01", "end": "2022-11-30"}})
    assert _tone_rewriter(masked) is None
    write_placebos(masked, tmp_path)
    stats = read_stats(tmp_path / "placebo" / "flip-tone")
    assert "model_calls" not in stats and stats["note"].startswith("word list: a masked run's model never")
    assert stats["tone_reversed"] >= 0.9 * stats["toned"] > 0
    assert not list(tmp_path.rglob("*.sqlite"))
    plain = _tone_rewriter(load_experiment(None, {"team": {"brain": "llm"}, "tickers": ["TSLA"]}))
    assert isinstance(plain, ToneRewriter) and plain.client.masker is None


def test_flip_tone_reverses_the_lexicons_tone_exactly_and_the_headline_with_it():
    """Found in review: flip-tone swapped 30 words, so on real InvestorBench JNJ news 135 of 203 items
    kept the sign of the Loughran-McDonald tone the rules analysts read (correlation +0.70 with the
    original), and the unflipped headline led every memory's summary. Every lexicon word flips now (the
    pairs keep the lexicon's reading: tested here), the tone comes out negated (names, capitals and compounds
    left as written), and the title,
    rating and tone tag flip with the text."""
    from fincon.data.events.model import Event, parse_timestamp
    from fincon.data.lexicon import LoughranMcDonald
    from fincon.workflow.placebo import FLIP

    lm = LoughranMcDonald()
    pos, neg = lm.words("Positive"), lm.words("Negative")

    def cats(text):
        return sorted("P" if t in pos else "N" for t in text.upper().split() if t in pos or t in neg)

    swap = {"P": "N", "N": "P"}
    for a, b in FLIP.items():  # a pair never turns a lexicon word into a word it does not score, or back
        assert sorted(swap[c] for c in cats(a)) == cats(b), (a, b)
    text = (
        "The company faces litigation and an impairment charge; management expects strong demand, but auditors "
        "found a material weakness. Shares tumbled after the recall, despite record profitability and the "
        "successful launch. Counterclaims were dismissed."
    )
    tone = lm.score(text).tone
    assert tone != 0 and lm.score(flip_text(text)).tone == -tone
    assert lm.score(flip_text(flip_text(text))).tone == tone
    assert flip_text("Losses widened.").startswith("Gains")  # a sentence's first word: flipped, its capital kept
    # (review) names, labels in capitals, compounds, codes and placeholders are no tone: left as written
    for kept in ("former CEO of Best Buy's board", "Stand Out With HONOR", "OMNI UP365", "valued at $REDACTED",
                 "a start-up with eco-friendly, cost-effective follow-up", "the Global Task Force"):  # fmt: skip
        assert flip_text(kept) == kept, kept
    item = Event(
        id="n1", ticker="TSLA", source="analyst_note", published_at=parse_timestamp("2022-10-10"),
        text="Tesla rated Buy on strong demand.",
        metadata={"title": "Tesla rated Buy: strong demand", "rating": "Buy", "tone": 0.5, "tone_label": "positive"},
    )  # fmt: skip
    (out,) = placebo_events("flip-tone", [item], START, END, 0)
    assert out.metadata == {
        "title": "Tesla rated Sell: weak demand", "rating": "Sell", "tone": -0.5, "tone_label": "negative",
        "placebo": "flip-tone",
    }  # fmt: skip


def _bars(n=80, seed=5):
    rng = np.random.default_rng(seed)
    close = 100 * np.exp(np.cumsum(rng.normal(0, 0.02, n)))
    prev = np.concatenate([[100.0], close[:-1]])
    opn = prev * np.exp(rng.normal(0, 0.01, n))
    idx = pd.bdate_range("2022-08-01", periods=n)
    return pd.DataFrame(
        {"open": opn, "high": np.maximum(opn, close) * 1.01, "low": np.minimum(opn, close) * 0.99, "close": close,
         "volume": np.arange(1, n + 1) * 1000.0},
        index=idx,
    )  # fmt: skip


def test_a_price_twin_draws_whole_days_so_no_real_intraday_move_stays_on_its_date():
    """Found in review: open, high and low moved with the twin's close, so each twin day kept its real
    date's open-to-close move; open to open (what a next-open fill earns) the twin correlated +0.50 with
    the real market and positions that knew the real path earned +127 % of their +141 % on it. Each twin
    day is one source day whole now: its bar over its previous close, and its volume, chained from the
    twin's previous close; the closes are the twin's as before."""
    from fincon.workflow.placebo import twin_bars, twin_closes, twin_days

    bars, i0 = _bars(), 20
    twin = twin_bars(bars, i0, 3, "TSLA")
    pd.testing.assert_frame_equal(twin.iloc[:i0], bars.iloc[:i0])
    closes = bars["close"].to_numpy()[i0 - 1 :]
    np.testing.assert_allclose(twin["close"].to_numpy()[i0:], twin_closes(closes, 3, "TSLA"), rtol=1e-12)
    src = twin_days(closes, 3, "TSLA")
    prev_twin = twin["close"].to_numpy()[i0 - 1 : -1]
    prev_real = bars["close"].to_numpy()[i0 - 1 : -1]
    for col in ("open", "high", "low"):
        got = twin[col].to_numpy()[i0:] / prev_twin
        want = (bars[col].to_numpy()[i0:] / prev_real)[src]
        np.testing.assert_allclose(got, want, rtol=1e-12)
    np.testing.assert_array_equal(twin["volume"].to_numpy()[i0:], bars["volume"].to_numpy()[i0:][src])
    moved = src != np.arange(len(src))
    real_oc = np.log(bars["close"] / bars["open"]).to_numpy()[i0:]
    twin_oc = np.log(twin["close"] / twin["open"]).to_numpy()[i0:]
    assert moved.sum() > 30 and not np.allclose(twin_oc[moved], real_oc[moved])


def test_a_price_twin_of_a_short_window_or_of_prices_that_start_inside_it_is_refused(tmp_path):
    """Found in review: with 1-2 sessions the twin was the real prices (a placebo of "100 % consistency"
    said nothing), with 3-7 arch's block length raised a matmul traceback; prices that start inside the
    window kept their real bars. Each is refused in one line before anything is written."""
    from fincon.errors import ConfigError
    from fincon.workflow.placebo import write_price_twin

    source = make_source("sample")
    with pytest.raises(ConfigError, match=r"TSLA has 5 session\(s\) from 2022-10-03 to 2022-10-07.*at least 20"):
        write_price_twin(source, ["TSLA"], dt.date(2022, 10, 3), dt.date(2022, 10, 7), 0, tmp_path / "a")

    class Late:
        def load(self, t, start, end):
            frame = source.load(t, start, end)
            return frame[frame["Date"] >= "2022-10-03"]

        def describe(self, t):
            return source.describe(t)

    with pytest.raises(ConfigError, match=r"TSLA's prices start at 2022-10-03, inside the test window"):
        write_price_twin(Late(), ["TSLA"], dt.date(2022, 10, 3), END, 0, tmp_path / "b")
    assert not any(tmp_path.iterdir())


def test_the_tone_rewriter_asks_a_long_filing_in_chunks_and_cuts_nothing(tmp_path):
    """Found in review: only the first 2,000 characters went to the model and its answer replaced the
    whole text (a 2,802-character 10-Q came back with 2,001). A long text goes in chunks of whole
    sentences; every chunk is rewritten; the calls and fallbacks reach placebo.json."""
    from fincon.data.events.model import Event, parse_timestamp
    from fincon.llm import CallCache, LLMClient
    from fincon.workflow.placebo import ToneRewriter, corpus_stats

    long = " ".join(f"Sentence {i} says revenue rose on strong demand." for i in range(150))
    item = Event(id="k", ticker="TSLA", source="10-Q", published_at=parse_timestamp("2022-10-10"), text=long)
    rewriter = ToneRewriter(LLMClient(_Reverser(), cache=CallCache(tmp_path / "c.sqlite", "read-write")))
    (out,) = placebo_events("flip-tone", [item], START, END, 0, rewriter)
    assert rewriter.calls == 4 and rewriter.fallbacks == 0 and out.text.count("REVERSED: ") == 4
    assert out.text.replace("REVERSED: ", "") == long  # the double echoes each chunk after its mark: nothing cut
    stats = corpus_stats("flip-tone", [item], [out], START, END, rewriter)
    assert stats == {
        "kind": "flip-tone",
        "items": 1,
        "toned": 1,
        "tone_reversed": 0,
        "model_calls": 4,
        "model_fallbacks": 0,
    }  # fmt: skip (the double reverses nothing: measured, not assumed)


def test_a_placebo_is_summarised_by_the_real_runs_median_rule(monkeypatch, tmp_path):
    """Found in review: with two repeats the real figure was the lower middle run and the placebo's the
    mean of both, so a placebo that changed nothing (each repeat's CR its real repeat's, 1 and 5) showed a
    CR of 3 against the real 1 and a profit gap of -2. The placebo's median run is chosen by the same rule."""
    from fincon.workflow import experiment_results as er
    from fincon.workflow.experiment import load_experiment

    exp = load_experiment(
        None, {"tickers": ["TSLA"], "repeats": 2, "placebos": ["shuffle-news"], "team": {"brain": "rules"}}
    )
    crs = {"full-r1": 1.0, "full-r2": 5.0, "placebo-shuffle-news-r1": 1.0, "placebo-shuffle-news-r2": 5.0}
    monkeypatch.setattr(
        er, "_metrics", lambda run: {"cr_pct": crs.get(run.name, 0.0), "sharpe": crs.get(run.name, 0.0) / 10}
    )
    monkeypatch.setattr(er, "_actions", lambda run: {"2022-10-03": ["buy"]})
    monkeypatch.setattr(er, "buy_and_hold_run", lambda *a: tmp_path / "bh")
    results = {"median": {"full": {"cr_pct": 1.0, "sharpe": 0.1, "repeat": 1}}, "baselines": {}, "best_baseline": None}
    p = er.placebo_results(exp, tmp_path, results)["shuffle-news"]
    assert p["cr_pct_median"] == 1.0 and p["sharpe_median"] == 0.1 and p["profit_gap_pct"] == 0.0


def test_a_placebos_consistency_is_its_median_runs_as_its_cr_is(monkeypatch, tmp_path):
    """Found in review: with two repeats the placebo row took CR and Sharpe from the lower middle run by CR
    but the prediction consistency as the median over repeats (the mean of the two), so a row read CR
    -5.315 with 62 % where that run's own consistency was 61 %. Every figure of the row is one run's, and
    the terminal and the page say which run it is."""
    from fincon.report.load import Experiment, ReportData, Source
    from fincon.report.studies import section_experiment
    from fincon.report.text import format_results
    from fincon.workflow import experiment_results as er
    from fincon.workflow.experiment import load_experiment

    exp = load_experiment(
        None, {"tickers": ["TSLA"], "repeats": 2, "placebos": ["flip-tone"], "team": {"brain": "rules"}}
    )
    crs = {"full-r1": 2.0, "full-r2": 2.0, "placebo-flip-tone-r1": 1.0, "placebo-flip-tone-r2": 5.0}
    monkeypatch.setattr(er, "_metrics", lambda run: {"cr_pct": crs.get(run.name, 0.0), "sharpe": 0.0})
    days = ["2022-10-03", "2022-10-04", "2022-10-05", "2022-10-06"]
    acts = {  # the real runs buy every day; the placebo's r1 on 3 of 4 days (75 %), its r2 on 1 of 4 (25 %)
        "full-r1": ["buy"] * 4, "full-r2": ["buy"] * 4,
        "placebo-flip-tone-r1": ["buy", "buy", "buy", "sell"], "placebo-flip-tone-r2": ["buy", "sell", "sell", "sell"],
    }  # fmt: skip
    monkeypatch.setattr(er, "_actions", lambda run: dict(zip(days, acts[run.name])))
    monkeypatch.setattr(er, "buy_and_hold_run", lambda *a: tmp_path / "bh")
    results = {"median": {"full": {"cr_pct": 2.0, "sharpe": 0.2, "repeat": 1}}, "baselines": {}, "best_baseline": None}
    p = er.placebo_results(exp, tmp_path, results)["flip-tone"]
    # the lower middle run by CR is r1 (CR 1 of 1 and 5): its 75 %, not the median over repeats' 50 %
    assert p["cr_pct_median"] == 1.0 and p["prediction_consistency"] == 0.75 and p["input_dependency"] == 0.25
    res = {"tickers": ["TSLA"], "train": {"start": "a", "end": "b"}, "test": {"start": "c", "end": "d"},
           "brain": "rules", "repeats": 2, "episodes": 1, "baselines": {}, "median": {}, "placebo": {"flip-tone": p}}  # fmt: skip
    said = "each its median run by CR; with an even count, the lower middle"
    assert f"placebo runs of the full team ({said}):" in format_results(res)
    data = ReportData([Source(Path("e"), "experiment", experiment=Experiment("e", Path("e"), res))], [])
    assert f"<h4>Placebo runs of the full team ({said})</h4>" in section_experiment(data)
