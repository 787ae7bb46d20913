"""Agent memory on chromadb: procedural (per analyst and ticker, FinCon A.13
ranking), episodic (reflections and beliefs) and the working-memory step that
fills them. Embeddings are computed offline (see :mod:`fincon.memory.embedders`)."""

from fincon.memory.procedural import DEFAULT_DECAY, Decay, MemoryEntry, ProceduralMemory, ScoredMemory
from fincon.memory.store import MemoryStore, open_client

__all__ = ["DEFAULT_DECAY", "Decay", "MemoryEntry", "MemoryStore", "ProceduralMemory", "ScoredMemory", "open_client"]
