"""Point-in-time text and audio events: model, loaders, store, sample corpus."""

from fincon.data.events.generator import SAMPLE_DIR
from fincon.data.events.loaders.directory import DirectoryLoader
from fincon.data.events.model import DECISION_TIME, MARKET_TZ, SOURCES, Event, decision_cutoff
from fincon.data.events.store import EventStore, EventView

__all__ = [
    "DECISION_TIME",
    "MARKET_TZ",
    "SOURCES",
    "Event",
    "EventStore",
    "EventView",
    "decision_cutoff",
    "sample_store",
]


def sample_store(tickers=None, root=None) -> EventStore:
    """The bundled synthetic corpus (or another directory in its format)."""

    root = root or SAMPLE_DIR
    return EventStore(DirectoryLoader(root).load(tickers), root=root)
