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
  swapped; a model that reads the text reads the reversed text.

A block-bootstrapped price twin (prices replaced, items kept) is not built
yet: the price-side counterfactual is left for later.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np

PLACEBOS = ("shuffle-news", "flip-tone")

#: positive -> negative; the reverse is added below (case is kept as written)
_PAIRS = {
    "strong": "weak",
    "improved": "deteriorated",
    "favorable": "adverse",
    "profitable": "unprofitable",
    "better": "worse",
    "stable": "volatile",
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


def placebo_events(kind: str, events: Sequence, start: dt.date, end: dt.date, seed: int) -> list:
    """The placebo corpus ``kind`` of ``events`` for the test window ``start``..``end``."""
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
            out.append(replace(e, text=flip_text(e.text), audio=None, metadata=meta) if e.text else e)
        else:
            raise ValueError(f"unknown placebo {kind!r}; choose one of {', '.join(PLACEBOS)}")
    return out


def write_placebo(
    kind: str, spec: str, tickers: Sequence[str], start: dt.date, end: dt.date, seed: int, out: Path
) -> Path:
    """Build the placebo corpus into ``out`` (an event directory) unless it is there."""
    from fincon.data.events.loaders.directory import write_jsonl_gz
    from fincon.data.inputs import open_events

    if out.is_dir() and any(out.glob("*.jsonl.gz")):
        return out
    events = placebo_events(kind, open_events(spec, tuple(tickers)).all_events(), start, end, seed)
    staging = out.with_name(f".{out.name}.partial")
    staging.mkdir(parents=True, exist_ok=True)
    for t in sorted({e.ticker for e in events}):
        mine = sorted((e for e in events if e.ticker == t), key=lambda e: (e.published_at, e.id))
        write_jsonl_gz(staging / f"{t}.jsonl.gz", mine)
    staging.rename(out)
    return out
