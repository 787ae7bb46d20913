"""Value types shared by the client, the backends and the ledger.

Kept free of any backend import so agents can type against them without
pulling llama.cpp or an HTTP client in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T", bound=BaseModel)

Role = Literal["system", "user", "assistant"]


class Message(BaseModel):
    """One chat message. Frozen so a message list can be hashed for the cache."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Role
    content: str


def as_messages(messages) -> tuple[Message, ...]:
    """Accept ``Message`` objects or plain ``{"role", "content"}`` dicts."""
    return tuple(m if isinstance(m, Message) else Message(**m) for m in messages)


class SamplingParams(BaseModel):
    """Sampling parameters; all of them are part of the cache key.

    ``temperature=0`` and a fixed ``seed`` are the defaults so that a live run
    is as repeatable as the backend allows; the cache makes it exact.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    temperature: float = Field(0.0, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_tokens: int = Field(256, ge=1, le=32768)
    seed: int = 0


@dataclass(frozen=True)
class Completion:
    """What a backend returns for one request: raw text plus token counts."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str = ""
    #: the response format that produced the text (openai backend: json_schema, json_object_schema or
    #: json_object); "" when the backend does not say. Stored in the cache, summed up in the ledger.
    structured_mode: str = ""
    #: seconds the model worked on the request: from the moment the backend
    #: had the model (its lock) or sent the request, to the answer. The rest of
    #: a call's wall time was spent queued (waiting for the lock, for a retry).
    #: None: the backend does not measure it (the whole call counts as model time).
    model_s: float | None = None


@dataclass(frozen=True)
class Usage:
    """Usage of one logical :meth:`LLMClient.ask` (re-ask included)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cache_hit: bool = False
    calls: int = 1
    reasks: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class LLMResult(Generic[T]):
    """A validated answer. ``keys`` are the cache keys of the calls it took
    (one, or two after a re-ask): agents cite them as decision evidence."""

    value: T
    usage: Usage
    keys: tuple[str, ...] = field(default_factory=tuple)
