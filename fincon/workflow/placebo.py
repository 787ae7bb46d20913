"""Placebo corpora: does the team's edge depend on what it reads?

A team whose profit survives news moved to random days, or whose decisions
barely change when every item's tone is reversed, is not reading the news
("Profit Mirage", arXiv 2510.07920, measures prediction consistency and
input dependency this way). ``fincon experiment --placebo KIND`` tests the
full team (its trained beliefs, its seeds and model) again on a placebo
corpus built here from the real one:

* ``shuffle-news``: every text item dated inside the test window is moved to
  a random later day of the window (never earlier than its own publication,
  so point in time is kept; the same ticker; the day drawn from a generator
  seeded by the experiment's seed and the item's id, so the corpus is the
  same on every machine); items before the window stay where they are;
* ``flip-tone``: every item's tone reversed, deterministically: the words a
  lexicon reads as positive and negative swapped for their opposites (the
  sample's generator words, Loughran-McDonald's, and market verbs: rose and
  fell, beat and missed, Buy and Sell), and a news item's sentiment tag
  swapped; a model that reads the text reads the reversed text. For the
  llm brain the items of the test window are rewritten by the run's own
  model instead (:class:`ToneRewriter`: cached and replayed like every call;
  an answer that is not a rewrite falls back to the word list, counted),
  the items before it by the word list;

* ``price-twin``: the prices of the test window replaced by a synthetic twin,
  the items kept: the window's daily log returns resampled by a stationary
  block bootstrap (arch's ``StationaryBootstrap``, mean block length from
  Politis and White's rule, seeded by the experiment's seed and the ticker),
  chained from the last real close before the window, so the twin has the
  window's volatility and autocorrelation but not its path; open, high and
  low move with the close (the day's shape kept), volume is kept. A team
  whose edge holds on the twin does not earn it from what its news says
  about the real prices.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np
from pydantic import BaseModel, Field

from fincon import data
from fincon.llm import LLMInvalidAnswer
from fincon.llm.types import Message

PLACEBOS = ("shuffle-news", "flip-tone", "price-twin")
#: the placebos that replace the items the team reads (price-twin replaces the prices instead)
CORPUS_PLACEBOS = ("shuffle-news", "flip-tone")

#: positive -> negative; the reverse is added below (case is kept as written)
_PAIRS = {
    "strong": "weak",
    "improved": "deteriorated",
    "favorable": "adverse",
    "profitable": "unprofitable",
    "better": "worse",
    "stable": "unstable",  # not "volatile", one of the generator's neutral words (which turned into stable)
    "encouraging": "disappointing",  # the generator's negative words each have an opposite (these two had none)
    "progress": "delays",
    "solid gains": "losses",
    "a clear rebound": "a downturn",
    "record progress": "a slowdown",
    "achieved targets": "missed targets",
    "boosted volumes": "rising concerns",
    "rose": "fell",
    "rises": "falls",
    "gained": "lost",
    "gains": "losses",
    "beats": "misses",
    "beat": "missed",
    "up": "down",
    "higher": "lower",
    "increase": "decrease",
    "increased": "decreased",
    "growth": "decline",
    "upgrade": "downgrade",
    "upgraded": "downgraded",
    "outperform": "underperform",
    "bullish": "bearish",
    "positive": "negative",
    "optimistic": "pessimistic",
    "Buy": "Sell",
    "surge": "plunge",
}
FLIP = {**_PAIRS, **{v: k for k, v in _PAIRS.items() if v not in _PAIRS}}
_FLIP_RE = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(w) for w in sorted(FLIP, key=len, reverse=True)) + r")(?![\w-])", re.I
)
_SENTIMENT = {"positive": "negative", "negative": "positive"}


def flip_text(text: str) -> str:
    """``text`` with each tone word swapped for its opposite, capitals kept."""

    def one(m: re.Match) -> str:
        word = m.group(0)
        other = FLIP.get(word) or FLIP.get(word.lower()) or word
        if word[:1].isupper() and other[:1].islower():
            other = other[:1].upper() + other[1:]
        return other

    return _FLIP_RE.sub(one, text)


def _day(seed: int, item: str, lo: dt.date, hi: dt.date) -> dt.date:
    """A day in ``lo``..``hi`` drawn from the item's own generator."""
    h = int(hashlib.sha256(f"{seed}:{item}".encode()).hexdigest()[:16], 16)
    rng = np.random.default_rng(h)
    return lo + dt.timedelta(days=int(rng.integers(0, (hi - lo).days + 1)))


REWRITE_SYSTEM = (
    "You rewrite financial texts with their tone reversed: good news becomes bad news and bad news good, "
    "gains become losses, beats become misses, upgrades become downgrades, optimism becomes pessimism. "
    "Keep the length, the names, the figures and the dates; change nothing else. Answer JSON only."
)


class Rewrite(BaseModel):
    text: str = Field(min_length=1)


class ToneRewriter:
    """The llm brain's flip-tone: the run's model rewrites an item with its
    tone reversed (one cached call an item); an answer that is no rewrite
    (empty, or the text unchanged) falls back to :func:`flip_text` and is
    counted in ``fallbacks``."""

    def __init__(self, client):
        self.client = client
        self.calls = 0
        self.fallbacks = 0

    def __call__(self, text: str, day: str) -> str:
        self.calls += 1
        msgs = [Message(role="system", content=REWRITE_SYSTEM), Message(role="user", content=text[:2000])]
        try:
            got = self.client.ask(msgs, Rewrite, agent="placebo/flip-tone", day=day).value.text.strip()
        except LLMInvalidAnswer:
            got = ""
        if not got or got == text.strip():
            self.fallbacks += 1
            return flip_text(text)
        return got


def placebo_events(
    kind: str, events: Sequence, start: dt.date, end: dt.date, seed: int, rewrite: ToneRewriter | None = None
) -> list:
    """The placebo corpus ``kind`` of ``events`` for the test window ``start``..``end``
    (``rewrite``: flip-tone by the model for the window's items, the llm brain's)."""
    out = []
    for e in events:
        if kind == "shuffle-news":
            when = e.published_at
            day = when.date()
            if e.text and start <= day <= end:
                new = _day(seed, e.id, day, end)  # never earlier than its own publication
                when = when + dt.timedelta(days=(new - day).days)
                e = replace(e, published_at=when, metadata={**e.metadata, "placebo": "shuffle-news"})
            out.append(e)
        elif kind == "flip-tone":
            meta = dict(e.metadata)
            if meta.get("sentiment") in _SENTIMENT:
                meta["sentiment"] = _SENTIMENT[meta["sentiment"]]
            meta["placebo"] = "flip-tone"
            # the reversed text is what is read: a call's audio (the original words) is dropped
            if e.text and rewrite is not None and start <= e.published_at.date() <= end:
                text = rewrite(e.text, str(e.published_at.date()))
            else:
                text = flip_text(e.text) if e.text else e.text
            out.append(replace(e, text=text, audio=None, metadata=meta) if e.text else e)
        else:
            raise ValueError(f"unknown placebo {kind!r}; choose one of {', '.join(PLACEBOS)}")
    return out


def twin_closes(closes: np.ndarray, seed: int, ticker: str) -> np.ndarray:
    """A synthetic twin of ``closes[1:]`` chained from ``closes[0]`` (the last
    close before the window): the window's log returns resampled by a
    stationary block bootstrap. Deterministic in ``seed`` and ``ticker``."""
    from arch.bootstrap import StationaryBootstrap, optimal_block_length

    r = np.diff(np.log(closes))
    if len(r) < 3:
        return closes[1:].copy()
    block = float(np.clip(optimal_block_length(r)["stationary"].iloc[0], 2.0, 20.0))
    h = int(hashlib.sha256(f"{seed}:price-twin:{ticker}".encode()).hexdigest()[:8], 16)
    bs = StationaryBootstrap(block, r, seed=np.random.default_rng(h))
    (pos,), _ = next(bs.bootstrap(1))
    return closes[0] * np.exp(np.cumsum(np.asarray(pos)))


def write_price_twin(source, tickers: Sequence[str], start: dt.date, end: dt.date, seed: int, out: Path) -> Path:
    """``out``: a folder of ``TICKER.csv`` whose bars up to ``end`` are the real
    ones before ``start`` and the twin's inside the window (module docstring)."""
    import pandas as pd

    if out.is_dir() and any(out.glob("*.csv")):
        return out
    staging = out.with_name(f".{out.name}.partial")
    staging.mkdir(parents=True, exist_ok=True)
    for t in sorted(tickers):
        bars = data.validate_bars(source.load(t, pd.Timestamp("1900-01-01"), pd.Timestamp(end)), t, source.describe(t))
        bars = bars.loc[: pd.Timestamp(end)]
        inside = (bars.index >= pd.Timestamp(start)).nonzero()[0]
        if len(inside) and inside[0] > 0:
            i0 = inside[0]
            real = bars["close"].to_numpy()[i0 - 1 :]
            ratio = twin_closes(real, seed, t) / real[1:]
            for col in ("open", "high", "low", "close"):
                bars.iloc[i0:, bars.columns.get_loc(col)] = bars[col].to_numpy()[i0:] * ratio
        frame = pd.DataFrame(
            {
                "Date": bars.index.strftime("%Y-%m-%d"),
                "Open": bars["open"],
                "High": bars["high"],
                "Low": bars["low"],
                "Close": bars["close"],
                "Adj Close": bars["close"],
                "Volume": bars["volume"],
            }
        )
        frame.to_csv(staging / f"{t}.csv", index=False, float_format="%.10g")
    staging.rename(out)
    return out


def write_placebo(
    kind: str,
    spec: str,
    tickers: Sequence[str],
    start: dt.date,
    end: dt.date,
    seed: int,
    out: Path,
    source=None,
    rewrite: ToneRewriter | None = None,
) -> Path:
    """Build the placebo ``kind`` into ``out`` unless it is there: an event
    directory, or for ``price-twin`` a folder of twin prices read from ``source``."""

    if kind == "price-twin":
        return write_price_twin(source, tickers, start, end, seed, out)
    if out.is_dir() and any(out.glob("*.jsonl.gz")):
        return out
    events = placebo_events(kind, data.open_events(spec, tuple(tickers)).all_events(), start, end, seed, rewrite)
    staging = out.with_name(f".{out.name}.partial")
    staging.mkdir(parents=True, exist_ok=True)
    for t in sorted({e.ticker for e in events}):
        mine = sorted((e for e in events if e.ticker == t), key=lambda e: (e.published_at, e.id))
        data.write_jsonl_gz(staging / f"{t}.jsonl.gz", mine)
    staging.rename(out)
    return out
