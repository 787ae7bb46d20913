"""Opening the run's embedded chromadb client and its collections safely.

Each collection is opened with its embedding function passed explicitly
(chromadb 1.5 fails at query time on a collection reopened without one, and
its default embedder downloads a model). Opening an existing collection with
a different embedder is a configuration error, reported as one line.

It sits below :mod:`fincon.memory.store`, :mod:`~fincon.memory.procedural`
and :mod:`~fincon.memory.episodic` so that the store can import the memory
kinds it builds and they can open collections without importing the store
back (the import circle this module replaced).
"""

from __future__ import annotations

import json
from pathlib import Path

from fincon.errors import ConfigError


def open_client(path: str | Path):
    """An embedded ``PersistentClient`` in ``path`` (e.g. RUN_DIR/memory)."""
    import chromadb
    from chromadb.config import Settings

    Path(path).mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(path), settings=Settings(anonymized_telemetry=False, allow_reset=False))


def open_collection(client, name: str, embedder):
    if embedder is None:
        raise ConfigError(
            "memory collections need an explicit embedder (hashing or minilm); chromadb's default downloads a model"
        )
    sig = json.dumps({"name": embedder.name(), "config": embedder.get_config()}, sort_keys=True)
    try:
        col = client.get_or_create_collection(
            name=name,
            embedding_function=embedder,
            metadata={"fincon_embedder": sig},
            configuration={"hnsw": {"space": "cosine"}},
        )
    except ValueError as exc:
        raise ConfigError(
            f"memory collection {name} was built with another embedder ({exc}); reopen it with the same embedder or start a new run store"
        ) from exc
    old = (col.metadata or {}).get("fincon_embedder")
    if old != sig:
        raise ConfigError(
            f"memory collection {name} was built with another embedder ({old}, not {sig}); reopen it with the same embedder or start a new run store"
        )
    return col
