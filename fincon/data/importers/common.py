"""The rules every importer applies the same way: the user's options
(:class:`ImportOptions`), how a date-only item is timed
(:func:`published_at`), what counts as a duplicate (:func:`dedupe`), and
which tickers were asked for (:func:`pick_tickers`).

They live apart from the registry (:mod:`fincon.data.importers`): the CLI
reads the registry when it builds its parser, so it must not import pandas,
and these rules do (the event model).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Sequence

from fincon.data.events.model import DECISION_TIME, MARKET_TZ, Event
from fincon.errors import DataError


@dataclass(frozen=True)
class ImportOptions:
    """What the user chose on ``fincon data import`` (validated)."""

    tickers: tuple[str, ...] | None = None  # None: every ticker the source holds
    start: dt.date | None = None
    end: dt.date | None = None
    visibility: Literal["next-session", "same-day"] = "next-session"  # same-day: the benchmarks' convention
    keep_sentiment: bool = False  # investorbench: leave the "(Sentiment: ...)" tag in the text
    prices: Path | None = None  # csv: the folder of TICKER.csv
    extra: dict[str, Any] = field(default_factory=dict)

    def as_record(self) -> dict[str, Any]:
        return {
            "tickers": list(self.tickers) if self.tickers else "all",
            "start": str(self.start) if self.start else None,
            "end": str(self.end) if self.end else None,
            "keep_sentiment_in_text": self.keep_sentiment,
        }

    def in_window(self, day: dt.date) -> bool:
        return (self.start is None or day >= self.start) and (self.end is None or day <= self.end)


def published_at(day: dt.date, visibility: str) -> dt.datetime:
    """When a date-only item counts as published.

    ``next-session`` (the default): at that day's close, so the item is
    visible from the next trading day's decision. ``same-day``: at 00:00 New
    York, visible at that day's own close (the benchmarks' convention: one
    day of look-ahead for an item that came out after the close).
    """
    t = DECISION_TIME if visibility == "next-session" else dt.time(0, 0)
    return dt.datetime.combine(day, t, tzinfo=MARKET_TZ).astimezone(dt.timezone.utc)


def text_key(ticker: str, day: Any, text: str) -> str:
    """Identity of an item for de-duplication: same ticker, day and text."""
    norm = " ".join(text.split())
    return hashlib.sha1(f"{ticker}|{day}|{norm}".encode("utf-8")).hexdigest()


def dedupe(events: Iterable[Event], day_of: Callable[[Event], Any]) -> tuple[list[Event], int]:
    """Drop items whose (ticker, day, whitespace-normalised text) repeats; returns the kept events in
    publication order (file order among equals), each the earliest published of its copies, and how
    many were dropped. In file order, a table written newest first kept a repost after the close and
    dropped the morning's item, and an item after the close renumbered the day's items (the importers
    number a day's items as they come): what a run saw on day D depended on what came after."""
    seen: set[str] = set()
    kept: list[Event] = []
    dropped = 0
    for e in sorted(events, key=lambda e: e.published_at):  # stable: file order among equals
        k = text_key(e.ticker, day_of(e), e.text or e.audio or "")
        if k in seen:
            dropped += 1
            continue
        seen.add(k)
        kept.append(e)
    return kept, dropped


def pick_tickers(available: Sequence[str], wanted: Sequence[str] | None, where: str) -> list[str]:
    """The tickers to import; a wanted ticker the source lacks is an error."""
    avail = sorted(set(available))
    if not wanted:
        if not avail:
            raise DataError(f"{where} holds no tickers")
        return avail
    missing = [t for t in wanted if t not in set(avail)]
    if missing:
        shown = ", ".join(avail[:15]) + (" ..." if len(avail) > 15 else "")
        raise DataError(f"{where} has no {', '.join(missing)}; it holds {shown or 'no tickers'}")
    return list(dict.fromkeys(wanted))
