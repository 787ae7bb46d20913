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
  the items before it by the word list; a masked experiment's by the word
  list too (a rewrite request shows the model an item whole);

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
import json
import re
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Sequence

import numpy as np
from pydantic import BaseModel, Field

from fincon import data
from fincon.data.lexicon import LoughranMcDonald
from fincon.errors import ConfigError
from fincon.llm import LLMInvalidAnswer
from fincon.llm.types import Message

PLACEBOS = ("shuffle-news", "flip-tone", "price-twin")
#: the placebos that replace the items the team reads (price-twin replaces the prices instead)
CORPUS_PLACEBOS = ("shuffle-news", "flip-tone")

#: positive -> negative; the reverse is added below (case is kept as written). Each pair keeps the
#: Loughran-McDonald reading: a positive word of the lexicon becomes a negative one, a word it does not
#: score one it does not score either (tests/test_placebo.py checks every pair), so that with
#: :data:`_TO_NEGATIVE` and :data:`_TO_POSITIVE` a lexicon's tone comes out reversed (names and compounds aside)
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
    "achieved": "missed",
    "achieves": "misses",
    "beat": "trailed",
    "beats": "trails",
    "up": "down",
    "higher": "lower",
    "increase": "decrease",
    "increased": "decreased",
    "growth": "slump",
    "improvement": "decline",
    "upgraded": "lowered",
    "outperform": "underperform",
    "bullish": "bearish",
    "positive": "negative",
    "optimistic": "doubtful",
    "hopeful": "pessimistic",
    "Buy": "Sell",
    "surge": "plunge",
}
FLIP = {**_PAIRS, **{v: k for k, v in _PAIRS.items() if v not in _PAIRS}}
#: a lexicon word outside the pairs becomes one of these (which one: a hash of the word, the same on
#: every machine): real corpora use ~2,700 of the lexicon's words, and a placebo that swapped 30 of
#: them left the tone the rules analysts read mostly as it was (135 of 203 real JNJ items kept its sign)
_TO_NEGATIVE = ("adverse", "weak", "deteriorated", "losses", "worse", "unprofitable", "unstable", "disappointing")
_TO_POSITIVE = ("favorable", "strong", "improved", "gains", "better", "profitable", "stable", "encouraging")
_PHRASES = sorted((w for w in FLIP if " " in w), key=len, reverse=True)
_FLIP_RE = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(w) for w in _PHRASES) + r")(?![\w-])|(?<![\w$-])[A-Za-z]+(?![\w-])", re.I
)
_SENTIMENT = {"positive": "negative", "negative": "positive"}
#: the metadata an item's tone is also written in: its headline (which a memory's summary leads with),
#: a note's rating, the generator's tone label; "tone" (a number) is negated
_TONE_TEXT = ("title", "rating", "tone_label")


def flip_text(text: str) -> str:
    """``text`` with each tone word swapped for its opposite, capitals kept:
    the pairs' words for their pair, every other word of the lexicon's
    positive and negative lists for a word of the other list, so the
    Loughran-McDonald tone is negated. Left alone: a capitalised word inside
    a sentence and a word in capitals (names and labels: "Best Buy" read
    "Losses Sell"), and a word inside a compound, a code or a placeholder
    ("start-up", "UP365", "$REDACTED"): the share of items whose tone the
    flip reversed is measured (:func:`corpus_stats`), not assumed."""
    lm = LoughranMcDonald()
    pos, neg = lm.words("Positive"), lm.words("Negative")

    def one(m: re.Match) -> str:
        word = m.group(0)
        if word[:1].isupper() and not _sentence_start(text, m.start()) and _after_capital(text, m.start()):
            return word  # inside a name ("Best Buy", "Global Task Force"): no tone
        other = FLIP.get(word) or FLIP.get(word.lower())
        if other is None:
            if word[:1].isupper() and (word.isupper() or not _sentence_start(text, m.start())):
                return word  # a name or a label in capitals is no tone either
            up = word.upper()
            pool = _TO_NEGATIVE if up in pos else _TO_POSITIVE if up in neg else None
            if pool is None:
                return word
            other = pool[zlib.crc32(up.encode()) % len(pool)]
        if word.isupper() and len(word) > 1:
            return other.upper()
        if word[:1].isupper() and other[:1].islower():
            other = other[:1].upper() + other[1:]
        return other

    return _FLIP_RE.sub(one, text)


def _sentence_start(text: str, at: int) -> bool:
    """Whether the word at ``at`` begins ``text``, a line or a sentence (its capital is no name's)."""
    before = text[:at].rstrip(" \t\"'(")
    return not before or before[-1] in ".!?:\n"


def _after_capital(text: str, at: int) -> bool:
    """Whether the word before ``at`` is capitalised, not in capitals (the word at ``at`` continues a
    name: "Best Buy"; "rates Tesla (TSLA) Buy" is a rating after a ticker)."""
    before = re.search(r"([A-Za-z]+)\W*$", text[:at])
    return before is not None and before.group(1)[:1].isupper() and not before.group(1).isupper()


def flip_metadata(meta: dict) -> dict:
    """An item's metadata with its tone reversed where it is written (:data:`_TONE_TEXT`, the
    sentiment tag, a tone figure)."""
    out = dict(meta)
    if out.get("sentiment") in _SENTIMENT:
        out["sentiment"] = _SENTIMENT[out["sentiment"]]
    for key in _TONE_TEXT:
        if isinstance(out.get(key), str):
            out[key] = flip_text(out[key])
    if isinstance(out.get("tone"), (int, float)) and not isinstance(out["tone"], bool):
        out["tone"] = -out["tone"]
    return out


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
    tone reversed, a chunk of at most :data:`REWRITE_CHARS` characters a call
    (cached; a long filing in several, never cut short); a chunk whose answer
    is no rewrite (empty, or the text unchanged) falls back to
    :func:`flip_text` and is counted in ``fallbacks`` (``calls``: the chunks
    asked), which the experiment's results say."""

    def __init__(self, client):
        self.client = client
        self.calls = 0
        self.fallbacks = 0

    def __call__(self, text: str, day: str) -> str:
        return "".join(self._one(chunk, day) + gap for chunk, gap in _chunks(text, REWRITE_CHARS))

    def _one(self, text: str, day: str) -> str:
        self.calls += 1
        msgs = [Message(role="system", content=REWRITE_SYSTEM), Message(role="user", content=text)]
        try:
            got = self.client.ask(msgs, Rewrite, agent="placebo/flip-tone", day=day).value.text.strip()
        except LLMInvalidAnswer:
            got = ""
        if not got or got == text.strip():
            self.fallbacks += 1
            return flip_text(text)
        return got


#: the longest text one rewrite call is given (a 10-K is cut into chunks of whole lines or sentences)
REWRITE_CHARS = 2000


def _chunks(text: str, limit: int) -> list[tuple[str, str]]:
    """``text`` as (chunk, the whitespace after it) pairs, each chunk at most
    ``limit`` characters of whole lines, else whole sentences, else cut; the
    pairs joined give ``text`` back."""
    pieces: list[str] = []
    for line in re.findall(r"[^\n]*\n+|[^\n]+$", text):
        if len(line) <= limit:
            pieces.append(line)
            continue
        for sentence in re.findall(r".*?(?:[.!?]\s+|$)", line, re.S):
            pieces += [sentence[i : i + limit] for i in range(0, len(sentence), limit)]
    out: list[str] = []
    for piece in pieces:
        if out and len(out[-1]) + len(piece) <= limit:
            out[-1] += piece
        elif piece:
            out.append(piece)
    return [(c.rstrip(), c[len(c.rstrip()) :]) for c in out]


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
            meta = {**flip_metadata(e.metadata), "placebo": "flip-tone"}
            # the reversed text is what is read: a call's audio (the original words) is dropped
            if e.text and rewrite is not None and start <= e.published_at.date() <= end:
                text = rewrite(e.text, str(e.published_at.date()))
            else:
                text = flip_text(e.text) if e.text else e.text
            out.append(replace(e, text=text, audio=None, metadata=meta) if e.text else e)
        else:
            raise ValueError(f"unknown placebo {kind!r}; choose one of {', '.join(PLACEBOS)}")
    return out


#: the fewest sessions of a test window a price twin is drawn from (fewer: the block bootstrap has no
#: block length to estimate, and two or three days resampled are the real ones in another order)
TWIN_MIN_SESSIONS = 20


def twin_days(closes: np.ndarray, seed: int, ticker: str) -> np.ndarray:
    """The source day of each twin day: indices into ``diff(log(closes))``
    drawn by a stationary block bootstrap (mean block length from Politis and
    White's rule). Deterministic in ``seed`` and ``ticker``."""
    from arch.bootstrap import StationaryBootstrap, optimal_block_length

    r = np.diff(np.log(closes))
    block = float(np.clip(optimal_block_length(r)["stationary"].iloc[0], 2.0, 20.0))
    h = int(hashlib.sha256(f"{seed}:price-twin:{ticker}".encode()).hexdigest()[:8], 16)
    bs = StationaryBootstrap(block, np.arange(len(r)), seed=np.random.default_rng(h))
    (pos,), _ = next(bs.bootstrap(1))
    return np.asarray(pos)


def twin_closes(closes: np.ndarray, seed: int, ticker: str) -> np.ndarray:
    """A synthetic twin of ``closes[1:]`` chained from ``closes[0]`` (the last
    close before the window): the window's log returns resampled by
    :func:`twin_days`."""
    r = np.diff(np.log(closes))
    return closes[0] * np.exp(np.cumsum(r[twin_days(closes, seed, ticker)]))


def twin_bars(bars, i0: int, seed: int, ticker: str):
    """``bars`` with the rows from ``i0`` replaced by the twin's: each twin day
    is a whole source day (its open, high, low and close relative to its own
    previous close, and its volume) chained from the twin's previous close, so
    no real day's gap or intraday move stays on its real date (a next-open
    fill earns the open-to-open return: with only the close drawn, open to
    close was the real day's, and positions that knew the real path earned
    +127 % of their +141 % on the twin)."""
    closes = bars["close"].to_numpy()[i0 - 1 :]
    src = twin_days(closes, seed, ticker)
    close = closes[0] * np.exp(np.cumsum(np.diff(np.log(closes))[src]))
    prev = np.concatenate([[closes[0]], close[:-1]])
    out = bars.copy()
    for col in ("open", "high", "low"):
        rel = bars[col].to_numpy()[i0:] / closes[:-1]  # the real day's bar over its previous close
        out.iloc[i0:, out.columns.get_loc(col)] = prev * rel[src]
    out.iloc[i0:, out.columns.get_loc("close")] = close
    out.iloc[i0:, out.columns.get_loc("volume")] = bars["volume"].to_numpy()[i0:][src]
    return out


def write_price_twin(source, tickers: Sequence[str], start: dt.date, end: dt.date, seed: int, out: Path) -> Path:
    """``out``: a folder of ``TICKER.csv`` whose bars up to ``end`` are the real
    ones before ``start`` and the twin's inside the window (module docstring).
    A window of fewer than :data:`TWIN_MIN_SESSIONS` sessions, or a ticker with
    no bar before it, is refused (a twin of it would be the real prices)."""
    import pandas as pd

    if out.is_dir() and any(out.glob("*.csv")):
        return out
    frames = {}
    for t in sorted(tickers):
        bars = data.validate_bars(source.load(t, pd.Timestamp("1900-01-01"), pd.Timestamp(end)), t, source.describe(t))
        bars = bars.loc[: pd.Timestamp(end)]
        inside = (bars.index >= pd.Timestamp(start)).nonzero()[0]
        if len(inside) < TWIN_MIN_SESSIONS:
            raise ConfigError(
                f"--placebo price-twin: {t} has {len(inside)} session(s) from {start} to {end}; a twin is drawn "
                f"from at least {TWIN_MIN_SESSIONS}: widen the test window or drop price-twin"
            )
        if inside[0] == 0:
            raise ConfigError(
                f"--placebo price-twin: {t}'s prices start at {bars.index[0].date()}, inside the test window; the "
                f"twin chains from the last close before {start}: start the test later or drop price-twin"
            )
        bars = twin_bars(bars, int(inside[0]), seed, t)
        frames[t] = pd.DataFrame(
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
    staging = out.with_name(f".{out.name}.partial")
    staging.mkdir(parents=True, exist_ok=True)
    for t, frame in frames.items():
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
    note: str | None = None,
) -> Path:
    """Build the placebo ``kind`` into ``out`` unless it is there: an event
    directory, or for ``price-twin`` a folder of twin prices read from ``source``
    (``note``: how it was built, when not as its kind says, kept in :data:`STATS`)."""

    if kind == "price-twin":
        return write_price_twin(source, tickers, start, end, seed, out)
    if out.is_dir() and any(out.glob("*.jsonl.gz")):
        return out
    real = data.open_events(spec, tuple(tickers)).all_events()
    events = placebo_events(kind, real, start, end, seed, rewrite)
    staging = out.with_name(f".{out.name}.partial")
    staging.mkdir(parents=True, exist_ok=True)
    for t in sorted({e.ticker for e in events}):
        mine = sorted((e for e in events if e.ticker == t), key=lambda e: (e.published_at, e.id))
        data.write_jsonl_gz(staging / f"{t}.jsonl.gz", mine)
    stats = corpus_stats(kind, real, events, start, end, rewrite) | ({"note": note} if note else {})
    (staging / STATS).write_text(json.dumps(stats, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    staging.rename(out)
    return out


#: beside a placebo corpus: what it changed (:func:`corpus_stats`), which the experiment's results carry
STATS = "placebo.json"


def corpus_stats(kind: str, real: Sequence, placebo: Sequence, start: dt.date, end: dt.date, rewrite=None) -> dict:
    """What a placebo corpus did to the test window's text items: how many it
    moved (shuffle-news), or whose Loughran-McDonald tone it reversed in sign
    among those with a tone (flip-tone: all of them by the word list; a model's
    rewrite is measured, not assumed), with the model's calls and fallbacks."""
    pairs = [(a, b) for a, b in zip(real, placebo) if a.text and start <= a.published_at.date() <= end]
    out: dict = {"kind": kind, "items": len(pairs)}
    if kind == "shuffle-news":
        out["moved"] = sum(a.published_at != b.published_at for a, b in pairs)
        return out
    lm = LoughranMcDonald()
    tones = [(lm.score(a.text).tone, lm.score(b.text).tone) for a, b in pairs]
    scored = [(x, y) for x, y in tones if x]
    out.update(toned=len(scored), tone_reversed=sum(x * y < 0 for x, y in scored))
    if rewrite is not None:
        out.update(model_calls=rewrite.calls, model_fallbacks=rewrite.fallbacks)
    return out


def read_stats(folder: Path) -> dict | None:
    """:data:`STATS` of a placebo corpus, or None (a corpus built before it was written)."""
    path = folder / STATS
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
