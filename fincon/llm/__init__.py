"""The LLM layer: one client for every agent, whatever answers behind it.

``LLMClient.ask(messages, OutputModel, agent=..., day=...)`` returns a
validated pydantic object plus usage; backends (``openai``-compatible HTTP,
in-process ``local`` llama.cpp), the SQLite cache/replay, the usage ledger
and budget, and the re-ask guardrail live behind it. See docs/llm.md.
"""

from fincon.llm.cache import CacheMode, CallCache, call_key
from fincon.llm.client import LLMClient
from fincon.llm.concurrency import run_concurrently
from fincon.llm.errors import (
    BudgetExhausted,
    CacheMiss,
    LLMAuthError,
    LLMError,
    LLMInvalidAnswer,
    LLMModelNotFound,
    LLMRequestRejected,
    LLMUnavailable,
    ModelFileError,
)
from fincon.llm.ledger import ModelPrice, UsageLedger
from fincon.llm.settings import LLMSettings, build_backend, build_client
from fincon.llm.types import LLMResult, Message, SamplingParams, Usage

__all__ = [
    "BudgetExhausted",
    "CacheMiss",
    "CacheMode",
    "CallCache",
    "LLMAuthError",
    "LLMClient",
    "LLMError",
    "LLMInvalidAnswer",
    "LLMModelNotFound",
    "LLMRequestRejected",
    "LLMResult",
    "LLMSettings",
    "LLMUnavailable",
    "Message",
    "ModelFileError",
    "ModelPrice",
    "SamplingParams",
    "Usage",
    "UsageLedger",
    "build_backend",
    "build_client",
    "call_key",
    "run_concurrently",
]
