"""Agent memory on chromadb: procedural (per analyst and ticker, FinCon A.13
ranking), episodic (reflections and beliefs) and the working-memory step that
fills them. Embeddings are computed offline (see :mod:`fincon.memory.embedders`).
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.memory.collections import open_collection as open_collection
    from fincon.memory.day_view import build_view as build_view
    from fincon.memory.embedders import HashingEmbedder as HashingEmbedder, MiniLMEmbedder as MiniLMEmbedder
    from fincon.memory.procedural import (
        DEFAULT_DECAY as DEFAULT_DECAY,
        Decay as Decay,
        MemoryEntry as MemoryEntry,
        ProceduralMemory as ProceduralMemory,
        ScoredMemory as ScoredMemory,
    )
    from fincon.memory.store import MemoryStore as MemoryStore, open_client as open_client

__getattr__, __dir__ = face(__name__, __file__)
