"""What an analyst could see on one day (``fincon data show``): the events
new that day and visible by then, the latest filing, call and note, and the
top memories of its procedural memory with their FinCon A.13 scores.

Why here and not in the CLI: the memory is rebuilt the way the team builds
it (the working-memory step over every trading day of the corpus up to the
date, then a profile query), so this reads the event store and fills a
procedural memory: the memory layer's work. The CLI checks the flags, opens
the dataset and prints the dict :func:`build_view` returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd

from fincon.data.events import sample_store
from fincon.data.events.generator import PRICES_DIR, SAMPLE_DIR, load_closes
from fincon.data.events.model import MARKET_TZ, SOURCES, decision_cutoff
from fincon.data.prices import validate_bars
from fincon.data.sources import CsvDirSource
from fincon.errors import DataError
from fincon.memory.analyst import profile_query
from fincon.memory.embedders import make_embedder
from fincon.memory.store import MemoryStore
from fincon.memory.working import LexiconSummariser


def trading_days(
    ticker: str, first: pd.Timestamp, last: pd.Timestamp, prices_dir: Path | None = None
) -> pd.DatetimeIndex:
    """The ticker's sessions in [first, last]: from the dataset's prices when
    given, else the bundled sample's, else weekdays."""
    if prices_dir is not None:
        src = CsvDirSource(prices_dir)
        if ticker not in src.tickers():
            raise DataError(f"{prices_dir} has no prices for {ticker}; it holds {', '.join(src.tickers()) or 'none'}")
        # the dates as a run reads them (a timestamp with an offset was a TypeError traceback here)
        idx = pd.DatetimeIndex(validate_bars(src.load(ticker, first, last), ticker, src.describe(ticker)).index)
        return idx[(idx >= first) & (idx <= last)]
    if (PRICES_DIR / f"{ticker}.csv.gz").is_file():
        idx = pd.DatetimeIndex(load_closes(ticker).index)
        return idx[(idx >= first) & (idx <= last)]
    return pd.bdate_range(first, last)


def build_view(
    ticker: str,
    date: pd.Timestamp,
    events_dir: Path | None,
    embedder: str,
    agent: str,
    k: int,
    memory_dir: Path,
    prices_dir: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """``ticker`` on ``date`` at the decision time, read from the corpus in
    ``events_dir`` (None: the bundled sample) with the trading days of
    ``prices_dir``; with ``k`` > 0 the top ``k`` memories of ``agent``'s
    procedural memory, rebuilt in ``memory_dir`` with the ``embedder``.
    ``progress`` hears a line before a long memory build. A date outside
    the corpus or not a trading day is a :class:`~fincon.errors.DataError`."""
    store = sample_store([ticker], root=events_dir)
    evs = store.all_events()
    if not evs:
        raise DataError(no_events_hint(ticker, events_dir))
    first = pd.Timestamp(evs[0].published_at.astimezone(MARKET_TZ).date())
    if date < first:
        raise DataError(f"{date.date()} is before the first {ticker} event ({first.date()}); pick a later --date")
    days = trading_days(ticker, first, date, prices_dir)
    last_event = pd.Timestamp(evs[-1].published_at.astimezone(MARKET_TZ).date())
    if date > last_event + pd.Timedelta(days=7):
        raise DataError(
            f"{date.date()} is after the {ticker} event corpus ends ({last_event.date()}); pick an earlier --date"
        )
    if len(days) == 0 or days[-1] != date:
        if len(days) and date > days[-1] + pd.Timedelta(days=7):
            raise DataError(
                f"{date.date()} is after the last {ticker} price ({days[-1].date()}); pick an earlier --date"
            )
        before = f"; the last before it: {days[-1].date()}" if len(days) else ""
        raise DataError(f"{date.date()} is no session of {ticker} (its prices have no bar that day){before}")
    top: list = []
    query = None
    if k > 0:
        mem = MemoryStore(memory_dir, make_embedder(embedder)).procedural(agent, ticker)
        # the working-memory step of every day, stored in one batch (same entries
        # and days as calling WorkingMemory.step daily, far fewer chromadb writes)
        summ, entries, prev_d = LexiconSummariser(strict=False), [], None  # a call only heard: its title
        for d in days:
            entries += summ.summarise(ticker, d, store.view_at(d).events(ticker, since=prev_d))
            prev_d = d
        if len(entries) > 500 and progress is not None:
            progress(
                f"building the analyst's memory: {len(entries):,} items with the {embedder} embedder "
                "(--embedder hashing is faster, --k 0 skips the memories)..."
            )
        mem.add(entries)
        query = profile_query(agent, ticker, date)
        top = mem.retrieve(query, date, k=k)
    view = store.view_at(date)
    prev = days[-2] if len(days) > 1 else None
    new = view.events(ticker, since=prev)
    latest = {s: view.latest(ticker, s) for s in ("10-K", "10-Q", "earnings_call", "analyst_note")}

    def ev_row(e):
        row = {
            "id": e.id,
            "source": e.source,
            "published": e.published_at.astimezone(MARKET_TZ).strftime("%Y-%m-%d %H:%M %Z"),
            "title": e.title,
            "synthetic": e.synthetic,
            "audio": e.audio,
        }
        if e.metadata.get("time") == "date only":
            row["published"] = f"{e.metadata.get('date')} (date only)"
        if "sentiment" in e.metadata:
            row["sentiment"] = e.metadata["sentiment"]
        return row

    visible = view.events(ticker)
    by_source = {s: sum(1 for e in visible if e.source == s) for s in SOURCES}

    return {
        "ticker": ticker,
        "date": str(date.date()),
        "decision_time": decision_cutoff(date).astimezone(MARKET_TZ).isoformat(),
        "synthetic": bool(visible) and all(e.synthetic for e in visible),  # no item visible: says nothing of it
        "visible_events": len(visible),
        "visible_by_source": {s: n for s, n in by_source.items() if n},
        "new_today": [ev_row(e) for e in new],
        "latest": {s: (ev_row(e) if e else None) for s, e in latest.items()},
        "query": query,
        "embedder": embedder,
        "memories": [
            {
                "id": s.id,
                "score": round(s.score, 4),
                "relevancy": round(s.relevancy_scaled, 4),
                "importance": round(s.importance_scaled, 4),
                "age_days": s.age_days,
                "source": s.source,
                "access": s.access,
                "text": s.text,
            }
            for s in top
        ],
    }


def no_events_hint(ticker: str, events_dir: Path | None) -> str:
    """Why a corpus has nothing for ``ticker``, with a next step that works
    for this case (``data sample`` only writes tickers with bundled prices)."""
    root = Path(events_dir) if events_dir else SAMPLE_DIR
    have = sorted({p.name.split(".")[0] for p in root.glob("*.jsonl*")} | {p.stem for p in root.glob("*.csv")})
    where = events_dir or "the bundled sample"
    pick = (
        f"pick one of its tickers ({', '.join(have[:12])}{', ...' if len(have) > 12 else ''})"
        if have
        else "it holds no event file"
    )
    if (PRICES_DIR / f"{ticker}.csv.gz").is_file():
        return (
            f"no events for {ticker} in {where}; {pick}, or write a corpus for it with `fincon data sample "
            f"--tickers {ticker} --out events-{ticker.lower()}` and pass --events events-{ticker.lower()}"
        )
    return (
        f"no events for {ticker} in {where}; {pick} ({ticker} has no bundled prices, so `fincon data sample` "
        "cannot write events for it either)"
    )
