"""The days the team's event corpus covers (the runner opens the corpus).

A run refuses days its corpus does not cover (no silent empty memory), so
the coverage per ticker is computed once here at start. Checks made before
any run (``check_inputs``, for every window of a rolling evaluation) ask
:func:`corpus_coverage`, which reads each ticker once per process and reads
it again only when the corpus' files change.
May touch: the event store (read only); never the memory or the model.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd

from fincon import data
from fincon.data.events.model import visible_day


def coverage(store, tickers) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """Per ticker: first and last day on which one of its events became visible."""

    out: dict[str, tuple[pd.Timestamp, pd.Timestamp]] = {}
    for e in store.all_events():
        if e.ticker in tickers:
            d = visible_day(e.published_at)
            lo, hi = out.get(e.ticker, (d, d))
            out[e.ticker] = (min(lo, d), max(hi, d))
    return out


def _stamp(spec: str) -> tuple:
    """What identifies a corpus' content cheaply: the files' names, sizes and mtimes."""
    if spec == "sample":
        return ()
    path = Path(spec).expanduser()
    if not path.is_dir():
        return ("missing",)
    return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in path.iterdir() if p.is_file()))


@functools.lru_cache(maxsize=512)
def _ticker_coverage(spec: str, ticker: str, stamp: tuple) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    store = data.open_events(spec, (ticker,), "strategy_params.fincon.events")
    return coverage(store, (ticker,)).get(ticker)


def corpus_coverage(spec: str, tickers) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """:func:`coverage` of the corpus ``spec`` for ``tickers``, one ticker
    at a time and remembered per (corpus, ticker, files' stamp): a rolling
    evaluation checks 36 windows of 5 tickers each against one corpus (3 min
    of re-reading, 20 s this way)."""
    stamp = _stamp(spec)
    out = {}
    for t in tickers:
        c = _ticker_coverage(spec, t, stamp)
        if c is not None:
            out[t] = c
    return out
