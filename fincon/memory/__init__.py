"""Agent memory on chromadb: procedural (per analyst and ticker, FinCon A.13
ranking), episodic (reflections and beliefs) and the working-memory step that
fills them. Embeddings are computed offline (see :mod:`fincon.memory.embedders`).

Its names load on first use (:mod:`fincon.lazy`, PEP 562): importing the
package costs nothing until a name is used.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.memory.collections import open_collection as open_collection
    from fincon.memory.day_view import build_view as build_view
    from fincon.memory.embedders import HashingEmbedder as HashingEmbedder
    from fincon.memory.embedders import MiniLMEmbedder as MiniLMEmbedder
    from fincon.memory.procedural import (
        DEFAULT_DECAY as DEFAULT_DECAY,
    )
    from fincon.memory.procedural import (
        Decay as Decay,
    )
    from fincon.memory.procedural import (
        MemoryEntry as MemoryEntry,
    )
    from fincon.memory.procedural import (
        ProceduralMemory as ProceduralMemory,
    )
    from fincon.memory.procedural import (
        ScoredMemory as ScoredMemory,
    )
    from fincon.memory.store import MemoryStore as MemoryStore
    from fincon.memory.store import open_client as open_client

__getattr__, __dir__ = face(__name__, __file__)
