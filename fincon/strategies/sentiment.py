"""Sentiment baseline: trade the sign of the day's visible sentiment tags.

The simplest strategy with the same information as the team: on each
decision day, every news item that became visible since the previous
decision counts +1 if tagged positive and -1 if tagged negative
(``metadata["sentiment"]``, set by ``fincon data import investorbench``);
the sign of the sum sets the position (long ``size``, short ``size`` or,
with ``allow_short`` off, flat). A day without tagged news keeps the
position: no tags is no new information.

``timing`` says what "visible" means:

* ``point-in-time`` (default): the project's rule (docs/data.md) -- an item
  known only by its date is visible from the next trading day's decision;
* ``same-day``: the benchmark's convention -- an item dated ``D`` counts at
  ``D``'s decision, although it may have come out after that close. This is
  a lookahead; it exists so a table can show what the convention is worth
  (registered as ``sentiment-same-day``), never as a default.

The events come from ``events`` (an event directory) or, when unset, from
the run's dataset directory (``--data DIR`` with an ``events/`` folder); the
runner opens the corpus (fincon.data.inputs). The point-in-time variant
reads each day's items from the market view (``view.events``); only the
same-day convention, a deliberate lookahead, reads the corpus ahead.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd
from pydantic import ConfigDict, Field

from fincon.data.events.model import MARKET_TZ
from fincon.data.inputs import open_events
from fincon.errors import ConfigError
from fincon.strategies.base import Decision, RunContext, Strategy
from fincon.validation import Settings

SCORE = {"positive": 1, "negative": -1}


class SentimentParams(Settings):
    model_config = ConfigDict(extra="forbid")
    #: an event directory; default: the events/ folder of the run's --data dataset
    events: str | None = None
    timing: Literal["point-in-time", "same-day"] = "point-in-time"
    size: float = Field(1.0, gt=0.0, le=1.0)
    allow_short: bool = True


def _tag(event) -> int | None:
    """+1 / -1 for a news item tagged positive / negative, None otherwise."""
    if event.source != "news":
        return None
    return SCORE.get(str(event.metadata.get("sentiment", "")).lower())


def _check_corpus(events, tickers) -> None:
    if events is None:
        raise ConfigError(
            "sentiment baseline: no events; run it on a dataset directory with events "
            "(--data DIR) or set strategy_params.sentiment.events"
        )
    tagged = {e.ticker for e in events.all_events() if _tag(e) is not None}
    untagged = [t for t in tickers if t not in tagged]
    if untagged:  # a corpus without tags would hold cash every day, silently
        raise ConfigError(
            f"sentiment baseline: the event corpus has no sentiment-tagged news for {untagged[0]} (tags come "
            "with `fincon data import investorbench`); run it on a dataset with tagged news"
        )


class SentimentBaseline(Strategy):
    name = "sentiment"
    Params = SentimentParams
    reads_events = True
    timing_default: str = "point-in-time"

    def __init__(self, params: SentimentParams | None = None):
        self.params = params or SentimentParams(timing=self.timing_default)  # type: ignore[arg-type]
        self._prev: pd.Timestamp | None = None
        self._signal: dict[str, int] = {}

    def check_inputs(self, tickers, first: pd.Timestamp, last: pd.Timestamp) -> None:
        """What :meth:`start` refuses, before a command that makes its own directory (a forward journal's
        registration, sealed for good) has made it."""
        spec = self.params.events
        _check_corpus(
            None if spec is None else open_events(spec, tuple(tickers), "strategy_params.sentiment.events"), tickers
        )

    def start(self, ctx: RunContext) -> None:
        _check_corpus(ctx.events, ctx.tickers)
        # same-day (a lookahead): per ticker, (the calendar day it counts on, score) of every tagged item
        self._same_day: dict[str, list[tuple[pd.Timestamp, int]]] = {}
        if self.params.timing == "same-day":
            for e in ctx.events.all_events():
                score = _tag(e)
                if score is not None:
                    day = pd.Timestamp(e.published_at.astimezone(MARKET_TZ).date())
                    self._same_day.setdefault(e.ticker, []).append((day, score))
        self._prev, self._signal = None, {}

    def lookahead(self) -> str | None:
        if self.params.timing != "same-day":
            return None
        return (
            f"{self.name} reads each news tag at its calendar day's own decision, though an item known only by "
            "its date may come out after that close (the benchmark's same-day convention: a deliberate lookahead; "
            "its point-in-time form is the strategy sentiment)"
        )

    def score(self, ticker: str, view) -> int:
        """Sum of the tags that became usable after the previous decision, up to the view's day."""
        day = pd.Timestamp(view.date).normalize()
        # the first decision reads what came out since the previous business day
        lo = self._prev if self._prev is not None else day - pd.offsets.BDay(1)
        if self.params.timing == "same-day":
            return sum(s for d, s in self._same_day.get(ticker, ()) if lo < d <= day)
        return sum(s for e in view.events.events(ticker, sources=["news"], since=lo) if (s := _tag(e)) is not None)

    def decide(self, view):
        day = pd.Timestamp(view.date).normalize()
        p = self.params
        size = p.size / len(view.tickers)
        weights, notes = {}, []
        for t in view.tickers:
            s = self.score(t, view)
            if s == 0:
                continue
            signal = 1 if s > 0 else (-1 if p.allow_short else 0)
            notes.append(f"{t} tags {s:+d}")
            if self._signal.get(t) != signal:
                self._signal[t] = signal
                weights[t] = signal * size
        self._prev = day
        return Decision(weights=weights, rationale=f"sentiment ({p.timing}): " + ", ".join(notes)) if weights else None


class SameDaySentiment(SentimentBaseline):
    """The benchmark's same-day convention (a lookahead; see the module docstring)."""

    name = "sentiment-same-day"
    timing_default = "same-day"

    def __init__(self, params: SentimentParams | None = None):
        if params is not None and "timing" not in params.model_fields_set:
            params = params.model_copy(update={"timing": "same-day"})
        super().__init__(params)
