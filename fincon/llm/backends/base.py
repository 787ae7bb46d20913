"""The contract every backend fulfils.

A backend turns (messages, JSON schema, sampling parameters) into raw text and
token counts. It does not validate, cache, count or re-ask: the
:class:`~fincon.llm.client.LLMClient` does that identically for all of them,
which is why agents never learn which backend answered.

Optional attribute ``enforces_schema`` (default False): True when the
backend constrains decoding to the schema on every call (llama.cpp's
grammar), so the client states the schema in one line instead of in full.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence, runtime_checkable

from fincon.llm.types import Completion, Message, SamplingParams


@runtime_checkable
class Backend(Protocol):
    #: short backend name, part of the cache key ("openai", "local", ...)
    name: str
    #: identity of the model, part of the cache key (a model name + server, or a GGUF hash)
    model_id: str
    #: model name looked up in the price table
    price_model: str

    def complete(self, messages: Sequence[Message], schema: dict[str, Any], params: SamplingParams) -> Completion: ...

    def close(self) -> None: ...
