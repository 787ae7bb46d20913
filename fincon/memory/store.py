"""The embedded chromadb client of a run, and safe collection opening.

Each collection is opened with its embedding function passed explicitly
(chromadb 1.5 fails at query time on a collection reopened without one, and
its default embedder downloads a model). Opening an existing collection with
a different embedder is a configuration error, reported as one line.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from fincon.errors import ConfigError

log = logging.getLogger(__name__)


def open_client(path: str | Path):
    """An embedded ``PersistentClient`` in ``path`` (e.g. RUN_DIR/memory)."""
    import chromadb
    from chromadb.config import Settings

    Path(path).mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False, allow_reset=False))


def open_collection(client, name: str, embedder):
    if embedder is None:
        raise ConfigError("memory collections need an explicit embedder (hashing or minilm); chromadb's default downloads a model")
    sig = json.dumps({"name": embedder.name(), "config": embedder.get_config()}, sort_keys=True)
    try:
        col = client.get_or_create_collection(name=name, embedding_function=embedder, metadata={"fincon_embedder": sig},
                                              configuration={"hnsw": {"space": "cosine"}})
    except ValueError as exc:
        raise ConfigError(f"memory collection {name} was built with another embedder ({exc}); reopen it with the same embedder or start a new run store") from exc
    old = (col.metadata or {}).get("fincon_embedder")
    if old != sig:
        raise ConfigError(f"memory collection {name} was built with another embedder ({old}, not {sig}); reopen it with the same embedder or start a new run store")
    return col


class MemoryStore:
    """All memories of one run: procedural per (analyst, ticker), episodic per agent."""

    def __init__(self, path: str | Path, embedder):
        self.path = Path(path)
        self.embedder = embedder
        self.client = open_client(self.path)

    def procedural(self, agent: str, ticker: str, **kw):
        from fincon.memory.procedural import ProceduralMemory

        return ProceduralMemory(self.client, agent, ticker, self.embedder, **kw)

    def episodic(self, agent: str):
        from fincon.memory.episodic import EpisodicMemory

        return EpisodicMemory(self.client, agent, self.embedder)
