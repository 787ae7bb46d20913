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
    """All memories of one run: procedural per (analyst, ticker), episodic per agent.

    ``write_behind``: procedural and episodic memories hold their writes until
    :meth:`flush` (see :class:`~fincon.memory.procedural.ProceduralMemory`);
    whoever opens the store so must flush it before the run counts as done."""

    def __init__(self, path: str | Path, embedder, write_behind: bool = False):
        # absolute: chromadb keeps one system per directory name in the process, so two runs
        # in one process whose relative paths match must not share it
        self.path = Path(path).absolute()
        self.embedder = embedder
        self.write_behind = write_behind
        self.client = open_client(self.path)
        self._procedural: list[ProceduralMemory] = []
        self._episodic: list[EpisodicMemory] = []

    def procedural(self, agent: str, ticker: str, **kw):
        kw.setdefault("write_behind", self.write_behind)
        mem = ProceduralMemory(self.client, agent, ticker, self.embedder, **kw)
        self._procedural.append(mem)
        return mem

    def flush(self) -> int:
        """Write every held-back entry, access counter and episode (and the
        embedder's new vectors, if it keeps them); returns how many entries,
        counters and episodes."""
        n = sum(m.flush() for m in self._procedural) + sum(m.flush() for m in self._episodic)
        vectors = getattr(self.embedder, "vectors", None)
        if vectors is not None:
            vectors.flush()
        return n

    def close(self) -> None:
        """Let go of what the run held open: the embedder's vector cache
        (after :meth:`flush`, which writes it) and chromadb's system for this
        directory (released, so a later run in the same process and directory
        opens its own instead of one bound to files that were moved away:
        "attempt to write a readonly database")."""
        vectors = getattr(self.embedder, "vectors", None)
        if vectors is not None:
            vectors.close()
        close = getattr(self.client, "close", None)
        if callable(close):
            close()

    def episodic(self, agent: str, **kw):
        kw.setdefault("write_behind", self.write_behind)
        mem = EpisodicMemory(self.client, agent, self.embedder, **kw)
        self._episodic.append(mem)
        return mem
