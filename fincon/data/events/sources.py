"""Build one :class:`EventStore` from a list of loader specs (for run configs).

A spec is a mapping with ``type`` plus that loader's options, e.g.::

    events:
      - {type: sample}                        # the bundled synthetic corpus
      - {type: directory, path: my_events/}
      - {type: edgar, user_agent: "Jane Doe jane@example.com"}
      - {type: alpaca}                        # needs APCA_API_KEY_ID / APCA_API_SECRET_KEY
      - {type: yfinance}
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from fincon.data.events.generator import SAMPLE_DIR
from fincon.data.events.loaders.alpaca import AlpacaNewsLoader
from fincon.data.events.loaders.directory import DirectoryLoader
from fincon.data.events.loaders.edgar import EdgarLoader
from fincon.data.events.loaders.yahoo import YahooNewsLoader
from fincon.data.events.model import Event
from fincon.data.events.store import EventStore
from fincon.errors import ConfigError

LOADER_TYPES = ("sample", "directory", "edgar", "yfinance", "alpaca")


def make_loader(spec: Mapping[str, Any]):
    opts = dict(spec)
    kind = opts.pop("type", None)
    try:
        if kind == "sample":
            return DirectoryLoader(opts.pop("path", SAMPLE_DIR), **opts)
        if kind == "directory":
            if "path" not in opts:
                raise ConfigError("event source 'directory' needs a path")
            return DirectoryLoader(opts.pop("path"), **opts)
        if kind == "edgar":
            return EdgarLoader(**opts)
        if kind == "yfinance":
            return YahooNewsLoader(**opts)
        if kind == "alpaca":
            return AlpacaNewsLoader(**opts)
    except TypeError as exc:
        raise ConfigError(f"event source {kind!r}: {exc}") from exc
    raise ConfigError(f"unknown event source type {kind!r}; use one of {', '.join(LOADER_TYPES)}")


def build_store(
    specs: Sequence[Mapping[str, Any]], tickers: Sequence[str], start: Any = None, end: Any = None
) -> EventStore:
    """Load every source and merge them into one point-in-time store. Audio
    paths of directory sources are made absolute so one store can hold several."""
    events: list[Event] = []
    for spec in specs:
        loader = make_loader(spec)
        got = loader.load(tickers, start, end)
        root = getattr(loader, "root", None)
        if root is not None:
            got = [
                Event(
                    id=e.id,
                    ticker=e.ticker,
                    source=e.source,
                    published_at=e.published_at,
                    text=e.text,
                    audio=str((Path(root) / e.audio).resolve())
                    if e.audio and not Path(e.audio).is_absolute()
                    else e.audio,
                    metadata=e.metadata,
                )
                for e in got
            ]
        events += got
    return EventStore(events)
