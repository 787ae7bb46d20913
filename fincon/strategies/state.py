"""A strategy's state between forward sessions: pickled after a step, loaded by the next.

A forward step (:mod:`fincon.workflow.forward`) decides one session. Rebuilding
a strategy's memory by asking it again for every earlier session made a step
cost grow with the journal; instead the step saves the strategy as it stands
after its last decision and the next step loads it, while the engine replays
only the book (the recorded decisions through backtrader's broker: the same
fills, to the cent, at a fraction of a millisecond a session).

What is pickled is the strategy's own state (memories with their scores and
access counters, beliefs, reflections, positions, counters). What a fresh
``start(ctx)`` opens is not state: the run context, the event corpus, a model
client, an embedder, a trained model loaded from its cache, the chromadb
client. Each is saved by name (:meth:`Strategy.live_objects`) and the loaded
strategy gets the fresh run's object in its place; a chromadb collection is
reopened by its name on the fresh client (``live["chroma"]``, with
``live["embedder"]``), a lock is a new lock. The state is a cache, never
evidence: ``fincon forward verify`` replays every session from the frozen
inputs without it, and a step whose state does not match the journal asks the
strategy again from the first session.
"""

from __future__ import annotations

import pickle
import threading
from pathlib import Path
from typing import Any, Mapping

from fincon import memory

#: the file a strategy's state is pickled to inside its state folder
STATE_FILE = "strategy.pkl"
_LOCK = type(threading.Lock())
_RLOCK = type(threading.RLock())


def _is_collection(obj: Any) -> bool:
    return type(obj).__module__.startswith("chromadb") and type(obj).__name__ == "Collection"


class _Out(pickle.Pickler):
    def __init__(self, fh, live: Mapping[str, Any]):
        super().__init__(fh, protocol=pickle.HIGHEST_PROTOCOL)
        self.live = {id(obj): key for key, obj in live.items() if obj is not None}

    def persistent_id(self, obj: Any) -> Any:
        key = self.live.get(id(obj))
        if key is not None:
            return ("live", key)
        if isinstance(obj, _LOCK):
            return ("lock", False)
        if isinstance(obj, _RLOCK):
            return ("lock", True)
        if _is_collection(obj):
            return ("collection", obj.name)
        return None


class _In(pickle.Unpickler):
    def __init__(self, fh, live: Mapping[str, Any]):
        super().__init__(fh)
        self.live = live
        self.collections: dict[str, Any] = {}

    def persistent_load(self, pid: Any) -> Any:
        kind, key = pid
        if kind == "lock":
            return threading.RLock() if key else threading.Lock()
        if kind == "collection":
            if key not in self.collections:
                self.collections[key] = memory.open_collection(self.live["chroma"], key, self.live["embedder"])
            return self.collections[key]
        if key not in self.live:
            raise pickle.UnpicklingError(f"the saved state names {key!r}, which the fresh run did not open")
        return self.live[key]


def dump(state: Mapping[str, Any], path: Path, live: Mapping[str, Any]) -> None:
    """Pickle ``state`` (a strategy's attributes) to ``path``, each of ``live`` saved by its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        _Out(fh, live).dump(dict(state))


def load(path: Path, live: Mapping[str, Any]) -> dict[str, Any]:
    """The attributes pickled by :func:`dump`, the fresh run's ``live`` objects in place of the saved ones."""
    with open(path, "rb") as fh:
        return _In(fh, live).load()
