"""A strategy that calls a model, between forward steps (fincon.strategies.state).

Its model client is not state: each step's ``start`` opens a fresh one, with the run's mask
(fincon.llm.settings.attach), and the saved strategy is taken up on it. What the mask learned so
far (its price base, date tokens, the model's sentences) is the run's and travels with the
strategy. Without this, a loaded strategy took its pickled ``_client`` (None once ``finish``
closed it), built an unmasked client on its next call, and a masked journal named the firm.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from fincon.llm.settings import keep_mask, take_up_mask
from fincon.strategies.base import RunContext, Strategy


class CallsAModel(Strategy):
    """For a strategy whose client is ``self._client`` and settings ``self.settings``."""

    _client: Any
    settings: Any

    def live_objects(self) -> Mapping[str, Any]:
        return {**super().live_objects(), "client": self._client, "settings": self.settings}

    def spent_usd(self) -> float:
        """The client's spend so far (the base strategy's 0 charged llm-trader and finsent nothing under
        ``--charge-llm`` while their usage file priced every call)."""
        client = getattr(self, "_client", None)
        return float(client.ledger.summary()["llm_cost_usd"]) if client is not None else 0.0

    def save_state(self, folder: Path, live: Mapping[str, Any]) -> None:
        super().save_state(folder, live)
        keep_mask(live.get("client"), folder)

    def load_state(self, folder: Path, ctx: RunContext) -> None:
        client = self._client  # the fresh one start opened and masked
        super().load_state(folder, ctx)
        self._client = client
        take_up_mask(client, folder)
