"""The team's event corpus: which store it reads and which days it covers.

A run refuses days its corpus does not cover (no silent empty memory), so
the coverage per ticker is computed once here at start.
May touch: the event store (read only); never the memory or the model.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from fincon.errors import ConfigError


def load_events(spec: str, tickers):
    """The run's event store: the bundled corpus or a directory corpus."""
    from fincon.data.events.sources import build_store

    if spec == "sample":
        return build_store([{"type": "sample"}], tickers)
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ConfigError(f"strategy_params.fincon.events: {spec!r} is neither 'sample' nor an event directory")
    return build_store([{"type": "directory", "path": path}], tickers)


def coverage(store, tickers) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """Per ticker: first and last day on which one of its events became visible."""
    from fincon.data.events.model import visible_day

    out: dict[str, tuple[pd.Timestamp, pd.Timestamp]] = {}
    for e in store.all_events():
        if e.ticker in tickers:
            d = visible_day(e.published_at)
            lo, hi = out.get(e.ticker, (d, d))
            out[e.ticker] = (min(lo, d), max(hi, d))
    return out
