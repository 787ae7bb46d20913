"""Errors of the LLM layer.

Two families, on purpose:

* :class:`LLMInvalidAnswer` is the *typed failure* an agent must handle: the
  model answered twice (original + one re-ask) and neither answer passed the
  output schema. Agents catch it and take their deterministic fallback, which
  they count and log; the layer never turns it into a silent HOLD.
* Everything else is a :class:`~fincon.errors.FinconError` the user can act on
  (bad key, unknown model, unreachable server, replay miss, corrupt model
  file); the CLI prints it as one line.
"""

from __future__ import annotations

from fincon.errors import ConfigError, FinconError, SourceUnavailable


class LLMError(FinconError):
    """Base class of every error raised by :mod:`fincon.llm`."""


class LLMInvalidAnswer(LLMError):
    """Both the answer and its one re-ask failed schema validation.

    ``keys`` are the cache keys of the calls made (both answers are stored in
    the cache, so the audit trail shows exactly what the model said) and
    ``errors`` the validation messages, first answer first.
    """

    def __init__(self, agent: str, keys: tuple[str, ...], errors: tuple[str, ...]):
        self.agent = agent
        self.keys = tuple(keys)
        self.errors = tuple(errors)
        last = errors[-1] if errors else "no answer"
        super().__init__(
            f"model answer for agent {agent!r} failed its schema twice (last error: {last}); the agent must fall back"
        )


class LLMAuthError(LLMError, ConfigError):
    """The server refused the API key (HTTP 401/403)."""


class LLMModelNotFound(LLMError, ConfigError):
    """The server does not know the requested model (HTTP 404)."""


class LLMRequestRejected(LLMError, ConfigError):
    """The server rejected the request as malformed (HTTP 400/422) for a reason
    other than an unsupported response format."""


class LLMUnavailable(LLMError, SourceUnavailable):
    """The server could not be reached or kept failing after every retry."""


class CacheMiss(LLMError):
    """Replay mode met a call that is not in the cache."""

    @classmethod
    def no_recording(cls, path: object) -> "CacheMiss":
        """A replay of a cache file that is not there."""
        return cls(f"replay needs a recorded cache, but {path} does not exist; record a run in read-write mode first")


class BudgetExhausted(LLMError):
    """The run used up its token budget (``--max-tokens``)."""


class ModelFileError(LLMError, ConfigError):
    """A model file is missing, incomplete or fails its pinned hash."""
