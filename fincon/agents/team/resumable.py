"""The team between forward sessions (fincon.strategies.state): what it saves after a step, and how
the next step takes it up. Its memories' entries, scores and counters, beliefs, reflections and
counters are state, pickled with the memory store's files; the run context, corpus, model client and
chromadb client are opened afresh by ``start`` and put in their place."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Mapping

from fincon import memory
from fincon.llm.settings import keep_mask, take_up_mask
from fincon.strategies import state
from fincon.strategies.base import RunContext, Strategy


class Resumable(Strategy):
    def live_objects(self) -> Mapping[str, Any]:
        """What start opened: the run's context and corpus, the model client and its settings, the
        memory's embedder and chromadb client (the memories' entries, scores and counters are state)."""
        return {"ctx": self.ctx, "events": self.events, "client": self._client, "settings": self.settings,
                "embedder": self.memory.embedder, "chroma": self.memory.client}  # fmt: skip

    def save_state(self, folder: Path, live: Mapping[str, Any]) -> None:
        """The pickled team and its memory store's files (flushed by :meth:`finish`)."""
        super().save_state(folder, live)
        shutil.copytree(self.memory.path, folder / "memory")
        keep_mask(live.get("client"), folder)

    def load_state(self, folder: Path, ctx: RunContext) -> None:
        """The saved memory store's files in place of the fresh empty one, then the pickled team on
        the fresh run's client, corpus and embedder (its usage ledger carried on by the client)."""

        client, path, coverage = self._client, self.memory.path, self.coverage  # the fresh corpus's span
        self.memory.client.close()  # chromadb lets go of the fresh store before its files are replaced
        shutil.rmtree(path)
        shutil.copytree(folder / "memory", path)
        chroma = memory.open_client(path)
        try:
            saved = state.load(folder / state.STATE_FILE, {**self.live_objects(), "chroma": chroma})
        except BaseException:
            chroma.close()  # the step asks again from the first session in a fresh store of this name
            raise
        vars(self).update(saved)
        self.memory.path = path
        self._client, self.coverage = client, coverage
        if client is not None:
            client.ledger = self.ledger
            take_up_mask(client, folder)
