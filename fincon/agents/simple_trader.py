"""``llm-trader``: the smallest strategy that decides through the LLM layer.

It exists to show the LLM layer end to end inside a backtest before the
FinCon agent team does: once per day it asks the model, per ticker and
concurrently, for {action, confidence, reasoning} given the last ten daily
returns; the calls go through the cache (so a second run is a replay), the
ledger (usage per agent per day, cost) and the token budget (an exhausted
budget ends the run cleanly via :class:`~fincon.strategies.base.StopRun`).

When the model fails its schema twice, the agent falls back to the sign of
the 5-day momentum; every fallback is counted and written to
``llm_audit.jsonl``, never a silent HOLD.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from fincon.agents.model_client import CallsAModel
from fincon.errors import ConfigError
from fincon.llm.client import LLMClient
from fincon.llm.concurrency import run_concurrently
from fincon.llm.errors import BudgetExhausted, LLMInvalidAnswer, LLMUnavailable
from fincon.llm.settings import LLMSettings, attach, build_client, detach, layered
from fincon.strategies.base import Action, Decision, RunContext, StopRun
from fincon.validation import format_validation_error

log = logging.getLogger(__name__)

AGENT = "llm-trader"
LOOKBACK = 10
MOMENTUM_DAYS = 5
_HERE = Path(__file__).parent
SYSTEM_PROMPT = (_HERE / "simple_trader.system.txt").read_text(encoding="utf-8").strip()
USER_PROMPT = (_HERE / "simple_trader.user.txt").read_text(encoding="utf-8").strip()
#: masked (--anonymize): the days' returns summed up. Each masked to its bucket, ten days in a row
#: named the firm and the day for 53 of 63 prompts of a masked MSFT run (96 % of ten-day bucket
#: sequences of 13 stocks' histories are unique), which the leakage audit did not read
MASKED_PROMPT = (_HERE / "simple_trader.masked.txt").read_text(encoding="utf-8").strip()


class TradeCall(BaseModel):
    """What the model must answer for one ticker on one day."""

    action: Literal["buy", "sell", "hold"]
    confidence: float = Field(ge=0.0, le=1.0)
    # bounded so the grammar closes the string well before max_tokens
    reasoning: str = Field(max_length=200)


@dataclass(frozen=True)
class TickerCall:
    ticker: str
    action: Action
    rationale: str
    keys: tuple[str, ...]
    fallback: bool


def momentum_action(returns: np.ndarray) -> Action:
    """Deterministic fallback: the sign of the summed last five returns."""
    s = float(np.sum(returns[-MOMENTUM_DAYS:])) if len(returns) else 0.0
    return "buy" if s > 0 else "sell" if s < 0 else "hold"


def build_messages(ticker: str, returns: np.ndarray, masked: bool = False) -> list[dict[str, str]]:
    """The prompt for one ticker. No date in it: the model sees only numbers
    up to the decision day, so it cannot recall what happened next; masked,
    not the days' returns in order either (:data:`MASKED_PROMPT`)."""
    cumulative = float(np.prod(1.0 + returns) - 1.0) if len(returns) else 0.0
    if masked:
        largest = float(returns[np.argmax(np.abs(returns))]) if len(returns) else 0.0
        user = MASKED_PROMPT.format(
            ticker=ticker, n=len(returns), up=int((returns > 0).sum()), down=int((returns < 0).sum()),
            cumulative=f"{cumulative * 100:+.2f}%", largest=f"{largest * 100:+.2f}%",
        )  # fmt: skip
    else:
        pct = ", ".join(f"{r * 100:+.2f}%" for r in returns)
        user = USER_PROMPT.format(ticker=ticker, n=len(returns), returns=pct, cumulative=f"{cumulative * 100:+.2f}%")
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class LLMTrader(CallsAModel):
    name = "llm-trader"
    warmup = LOOKBACK + 1

    def __init__(self, settings: LLMSettings, client: LLMClient | None = None):
        self.settings = settings
        self._client = client
        self._owns_client = client is None  # a client handed in (shared model) is not closed here
        self.stopped: str | None = None

    def llm_settings(self) -> LLMSettings:
        return self.settings

    @property
    def client(self) -> LLMClient:
        if self._client is None:
            self._client = build_client(self.settings)
        return self._client

    def start(self, ctx: RunContext) -> None:
        client = self.client  # fail on a bad config before day one, not mid-run

        attach(client, self.settings, ctx.tickers)  # the ticker in its prompt becomes a pseudonym

    # -- one ticker ---------------------------------------------------------
    def _ask(self, ticker: str, returns: np.ndarray, day: str) -> TickerCall:
        try:
            messages = build_messages(ticker, returns, masked=self.client.masker is not None)
            res = self.client.ask(messages, TradeCall, agent=AGENT, day=day)
        except LLMInvalidAnswer as exc:
            action = momentum_action(returns)
            self.client.ledger.record_fallback(
                AGENT,
                day,
                reason="invalid model answer after one re-ask",
                keys=exc.keys,
                detail={"ticker": ticker, "fallback_action": action, "errors": list(exc.errors)},
            )
            log.warning("%s %s: model answer invalid twice; fell back to 5-day momentum (%s)", day, ticker, action)
            return TickerCall(
                ticker, action, f"fallback: 5-day momentum ({action}); model answer invalid", exc.keys, True
            )
        v = res.value
        return TickerCall(ticker, v.action, f"{v.action} ({v.confidence:.2f}): {v.reasoning}", res.keys, False)

    # -- the day ------------------------------------------------------------
    def decide(self, view) -> Decision | None:
        day = view.date.strftime("%Y-%m-%d")
        try:
            self.client.check_budget()
        except BudgetExhausted as exc:
            self.stopped = f"{exc}; stopped before {day}, results kept to its close, undecided"
            self.client.ledger.record_event("budget_stop", AGENT, day, reason=str(exc))
            raise StopRun(self.stopped) from None
        rets = view.returns(LOOKBACK)
        tasks = []
        for t in view.tickers:
            r = rets[t].to_numpy(dtype=float)
            r = r[np.isfinite(r)]
            if len(r) == 0:
                continue
            tasks.append(lambda t=t, r=r: self._ask(t, r, day))
        if not tasks:
            return None
        try:
            calls = run_concurrently(tasks, self.settings.concurrency)
        except LLMUnavailable as exc:
            self.stopped = f"LLM unavailable on {day}: {exc}"
            self.client.ledger.record_event("unavailable_stop", AGENT, day, reason=str(exc))
            raise StopRun(self.stopped) from None
        evidence = tuple(k for c in calls for k in c.keys)
        rationale = " | ".join(f"{c.ticker}: {c.rationale}" for c in calls)
        if len(view.tickers) == 1:
            c = calls[0]
            return Decision.from_action(c.ticker, c.action, 1.0, rationale=rationale, evidence=evidence)
        n = len(view.tickers)
        weights = {c.ticker: (1.0 / n if c.action == "buy" else -1.0 / n) for c in calls if c.action != "hold"}
        return Decision(
            weights=weights, rationale=rationale, evidence=evidence, actions={c.ticker: c.action for c in calls}
        )

    def finish(self, ctx: RunContext) -> Mapping[str, Any]:
        if self._client is None:
            return {}

        rt = self._client.ledger.runtime_summary()
        summary = detach(self._client, ctx.run_dir, self.stopped, close=self._owns_client)
        log.info(
            "LLM usage: %d calls, %d live, %d cache hits, %d tokens",
            summary["llm_calls"],
            rt["llm_live_calls"],
            rt["llm_cache_hits"],
            summary["llm_tokens"],
        )
        if self._owns_client:
            self._client = None
        return summary


def make_llm_trader(settings: LLMSettings | Mapping[str, Any] | None = None) -> LLMTrader:
    """Factory the engine's strategy registry calls (``--strategy llm-trader``).

    Takes an :class:`LLMSettings` or a plain mapping of its fields (e.g. the
    ``strategy_params.llm-trader`` section of a run config); a bad key or
    value is a :class:`~fincon.errors.ConfigError` naming it. Nothing is
    loaded or contacted until the run starts.
    """
    if settings is None:
        settings = LLMSettings()
    elif not isinstance(settings, LLMSettings):
        try:
            settings = LLMSettings.model_validate(dict(settings))
        except ValidationError as exc:
            raise ConfigError(format_validation_error("strategy_params.llm-trader", exc)) from None
    return LLMTrader(settings)


def make_llm_trader_from_run(params: LLMSettings | Mapping[str, Any], llm: LLMSettings | None = None) -> LLMTrader:
    """Registry entry: the run's typed ``llm`` section overridden by the
    strategy's own params (strategy params win where both set a key; of a
    settings model, the keys it sets)."""

    own = params.model_dump(exclude_unset=True) if isinstance(params, LLMSettings) else dict(params)
    return LLMTrader(layered(llm, None, own, "strategy_params.llm-trader"))
