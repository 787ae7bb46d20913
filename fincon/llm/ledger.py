"""Usage ledger, dollar cost and token budget of one run.

The ledger counts per (simulated day, agent): logical calls, prompt and
completion tokens, re-asks, fallbacks and failures -- these are the same in a
live run and in its replay, so ``llm_usage.csv`` is reproducible -- and,
separately, what differs between a recording and a replay: live calls, cache
hits and latency (``llm_runtime.csv``).

Dollar cost comes from a per-model price table (USD per million tokens; a
model missing from the table, e.g. any local GGUF, costs 0). ``cost_usd``
prices every call as if it had been made live (reproducible);
``spent_usd`` in the runtime file prices only the calls that really went to
the server.

The token budget counts the tokens of every call, cached or live, so a replay
stops on the same day as the recording did.

``llm_structured_mode`` in the summary names the response format(s) that
produced the answers the run acted on (e.g. ``json_object_schema`` after a
llama.cpp server refused ``json_schema``). It comes from the cache row of each
answer, not from the backend's current state, so a replay reports the same
mode as its recording without calling the server.
"""

from __future__ import annotations

import csv
import json
import threading
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel, ConfigDict, Field

from fincon.llm.errors import BudgetExhausted

NO_DAY = "-"


class ModelPrice(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    input_per_million: float = Field(0.0, ge=0.0)
    output_per_million: float = Field(0.0, ge=0.0)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_million + completion_tokens * self.output_per_million) / 1e6


FREE = ModelPrice()


def _pair() -> list[int]:
    """A model's [prompt, completion] tokens, from zero (a named function: a ledger is pickled with a
    forward step's saved team)."""
    return [0, 0]


@dataclass
class _Row:
    calls: int = 0
    live_calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    model_s: float = 0.0  # the part of latency_s the model worked; the rest was queued
    reasks: int = 0
    resamples: int = 0
    fallbacks: int = 0
    failures: int = 0
    # model -> [prompt, completion] tokens (all calls / live calls only)
    tokens_by_model: dict = field(default_factory=lambda: defaultdict(_pair))
    live_tokens_by_model: dict = field(default_factory=lambda: defaultdict(_pair))


USAGE_COLUMNS = (
    "day",
    "agent",
    "calls",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "cost_usd",
    "reasks",
    "fallbacks",
    "failures",
)
#: latency_s = queued_s + model_s: seconds of live calls, split into waiting
#: (for the model's lock, a connection, a retry) and the model working
RUNTIME_COLUMNS = ("day", "agent", "live_calls", "cache_hits", "latency_s", "spent_usd", "queued_s", "model_s")


class UsageLedger:
    """Thread-safe counters of one run (or one training episode)."""

    def __init__(self, prices: Mapping[str, ModelPrice] | None = None, max_tokens: int | None = None):
        self.prices = dict(prices or {})
        self.max_tokens = max_tokens
        self._rows: dict[tuple[str, str], _Row] = defaultdict(_Row)
        self._events: list[dict[str, Any]] = []
        self._modes: set[str] = set()
        #: (day, agent, call key) of every call, cached or live: which prompts the run sent, to be read
        #: back from the call cache (the leakage audit, a forward journal); written as llm_calls.csv
        self._keys: set[tuple[str, str, str]] = set()
        self._lock = threading.Lock()

    # -- recording -------------------------------------------------------
    def record_call(
        self,
        agent: str,
        day: str | None,
        model: str,
        prompt_tokens: int,
        completion_tokens: int,
        latency_s: float,
        cache_hit: bool,
        structured_mode: str = "",
        model_s: float | None = None,
        key: str | None = None,
    ) -> None:
        """One call. ``model_s``: the part of ``latency_s`` the model worked
        (None: all of it); ``key``: its call key in the cache."""
        with self._lock:
            if key is not None:
                self._keys.add((day or NO_DAY, agent, key))
            if structured_mode:
                self._modes.add(structured_mode)
            row = self._rows[(day or NO_DAY, agent)]
            row.calls += 1
            row.prompt_tokens += int(prompt_tokens)
            row.completion_tokens += int(completion_tokens)
            t = row.tokens_by_model[model]
            t[0] += int(prompt_tokens)
            t[1] += int(completion_tokens)
            if cache_hit:
                row.cache_hits += 1
            else:
                # only live calls count: a cache hit's sub-millisecond lookup
                # time would make two replays differ in their last digit
                row.live_calls += 1
                row.latency_s += float(latency_s)
                row.model_s += float(latency_s if model_s is None else min(model_s, latency_s))
                lt = row.live_tokens_by_model[model]
                lt[0] += int(prompt_tokens)
                lt[1] += int(completion_tokens)

    def _event(self, kind: str, agent: str, day: str | None, **fields: Any) -> None:
        event = {"event": kind, "agent": agent, "day": day or NO_DAY, **fields}
        self._events.append(event)

    def record_event(self, kind: str, agent: str, day: str | None, **fields: Any) -> None:
        """Any other audit event (e.g. ``budget_stop``); counted nowhere else."""
        with self._lock:
            self._event(kind, agent, day, **fields)

    def record_reask(self, agent: str, day: str | None, key: str, error: str) -> None:
        with self._lock:
            self._rows[(day or NO_DAY, agent)].reasks += 1
            self._event("reask", agent, day, keys=[key], error=error)

    def record_resample(self, agent: str, day: str | None, key: str, error: str) -> None:
        """A fresh sample after the re-ask's answer (``key``) was invalid too
        (only at temperature > 0; see :mod:`fincon.llm.client`)."""
        with self._lock:
            self._rows[(day or NO_DAY, agent)].resamples += 1
            self._event("resample", agent, day, keys=[key], error=error)

    def record_failure(self, agent: str, day: str | None, keys: tuple[str, ...], errors: tuple[str, ...]) -> None:
        with self._lock:
            self._rows[(day or NO_DAY, agent)].failures += 1
            self._event("failure", agent, day, keys=list(keys), errors=list(errors))

    def record_fallback(
        self,
        agent: str,
        day: str | None,
        reason: str,
        detail: Mapping[str, Any] | None = None,
        keys: tuple[str, ...] = (),
    ) -> None:
        """Agents call this whenever they replace a model answer by their
        deterministic fallback; nothing falls back without a trace."""
        with self._lock:
            self._rows[(day or NO_DAY, agent)].fallbacks += 1
            self._event("fallback", agent, day, reason=reason, keys=list(keys), detail=dict(detail or {}))

    # -- budget ----------------------------------------------------------
    @property
    def tokens_used(self) -> int:
        with self._lock:
            return sum(r.prompt_tokens + r.completion_tokens for r in self._rows.values())

    def check_budget(self) -> None:
        """Raise :class:`BudgetExhausted` once the run has used its budget."""
        if self.max_tokens is None:
            return
        used = self.tokens_used
        if used >= self.max_tokens:
            raise BudgetExhausted(f"LLM token budget exhausted: {used} tokens used of --max-tokens {self.max_tokens}")

    # -- reporting -------------------------------------------------------
    def _cost(self, tokens_by_model: Mapping[str, list[int]]) -> float:
        return sum(self.prices.get(m, FREE).cost(p, c) for m, (p, c) in sorted(tokens_by_model.items()))

    def events(self) -> list[dict[str, Any]]:
        """Audit events in a completion-order-independent order."""
        with self._lock:
            events = list(self._events)
        return sorted(events, key=lambda e: (e["day"], e["agent"], e["event"], json.dumps(e, sort_keys=True)))

    def usage_rows(self) -> list[dict[str, Any]]:
        with self._lock:
            items = sorted(self._rows.items())
        out = []
        for (day, agent), r in items:
            out.append(
                {
                    "day": day,
                    "agent": agent,
                    "calls": r.calls,
                    "prompt_tokens": r.prompt_tokens,
                    "completion_tokens": r.completion_tokens,
                    "total_tokens": r.prompt_tokens + r.completion_tokens,
                    "cost_usd": f"{self._cost(r.tokens_by_model):.6f}",
                    "reasks": r.reasks,
                    "fallbacks": r.fallbacks,
                    "failures": r.failures,
                }
            )
        return out

    def runtime_rows(self) -> list[dict[str, Any]]:
        with self._lock:
            items = sorted(self._rows.items())
        return [
            {
                "day": day,
                "agent": agent,
                "live_calls": r.live_calls,
                "cache_hits": r.cache_hits,
                "latency_s": f"{r.latency_s:.4f}",
                "spent_usd": f"{self._cost(r.live_tokens_by_model):.6f}",
                "queued_s": f"{r.latency_s - r.model_s:.4f}",
                "model_s": f"{r.model_s:.4f}",
            }
            for (day, agent), r in items
        ]

    def summary(self) -> dict[str, Any]:
        """Reproducible totals for the run summary (no cache hits or latency:
        those differ between a recording and its replay)."""
        rows = self.usage_rows()
        total = lambda k: sum(int(r[k]) for r in rows)  # noqa: E731
        with self._lock:
            # not a column of llm_usage.csv: that file's bytes are the demo's fingerprint
            resamples = sum(r.resamples for r in self._rows.values())
            by_model: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for r in self._rows.values():
                for m, (p, c) in r.tokens_by_model.items():
                    by_model[m][0] += p
                    by_model[m][1] += c
            modes = "+".join(sorted(self._modes)) or "unknown"
        return {
            "llm_calls": total("calls"),
            "llm_prompt_tokens": total("prompt_tokens"),
            "llm_completion_tokens": total("completion_tokens"),
            "llm_tokens": total("total_tokens"),
            "llm_cost_usd": round(self._cost(by_model), 6),
            "llm_reasks": total("reasks"),
            "llm_resamples": resamples,
            "llm_fallbacks": total("fallbacks"),
            "llm_failures": total("failures"),
            "llm_structured_mode": modes,
        }

    def runtime_summary(self) -> dict[str, Any]:
        rows = self.runtime_rows()
        return {
            "llm_live_calls": sum(r["live_calls"] for r in rows),
            "llm_cache_hits": sum(r["cache_hits"] for r in rows),
            "llm_latency_s": round(sum(float(r["latency_s"]) for r in rows), 3),
            "llm_queued_s": round(sum(float(r["queued_s"]) for r in rows), 3),
            "llm_model_s": round(sum(float(r["model_s"]) for r in rows), 3),
        }

    def write(self, run_dir: Path | str) -> dict[str, Path]:
        """Write ``llm_usage.csv``, ``llm_runtime.csv``, ``llm_audit.jsonl`` and ``llm_calls.csv``."""
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        paths = {
            "usage": run_dir / "llm_usage.csv",
            "runtime": run_dir / "llm_runtime.csv",
            "audit": run_dir / "llm_audit.jsonl",
            "calls": run_dir / "llm_calls.csv",
        }
        for name, cols, rows in (
            ("usage", USAGE_COLUMNS, self.usage_rows()),
            ("runtime", RUNTIME_COLUMNS, self.runtime_rows()),
        ):
            with open(paths[name], "w", newline="", encoding="utf-8") as fh:
                w = csv.DictWriter(fh, fieldnames=cols, lineterminator="\n")
                w.writeheader()
                w.writerows(rows)
        with open(paths["audit"], "w", encoding="utf-8") as fh:
            for e in self.events():
                fh.write(json.dumps(e, sort_keys=True, ensure_ascii=False) + "\n")
        with open(paths["calls"], "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(("day", "agent", "key"))
            w.writerows(self.call_keys())
        return paths

    def call_keys(self) -> list[tuple[str, str, str]]:
        """(day, agent, key) of every call the run made, sorted (concurrent calls finish in any order)."""
        with self._lock:
            return sorted(self._keys)
