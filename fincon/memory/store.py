"""The memory store of a run: one embedded chromadb client, and the
procedural (per analyst and ticker) and episodic (per agent) memories in it.

Client and collection opening live in :mod:`fincon.memory.collections`
(re-exported here), so this module imports the memory kinds directly and
none of them imports it back.
"""

from __future__ import annotations

from pathlib import Path

from fincon.memory.collections import open_client, open_collection
from fincon.memory.episodic import EpisodicMemory
from fincon.memory.procedural import ProceduralMemory

__all__ = ["MemoryStore", "open_client", "open_collection"]


class MemoryStore:
    """All memories of one run: procedural per (analyst, ticker), episodic per agent."""

    def __init__(self, path: str | Path, embedder):
        self.path = Path(path)
        self.embedder = embedder
        self.client = open_client(self.path)

    def procedural(self, agent: str, ticker: str, **kw):
        return ProceduralMemory(self.client, agent, ticker, self.embedder, **kw)

    def episodic(self, agent: str):
        return EpisodicMemory(self.client, agent, self.embedder)
