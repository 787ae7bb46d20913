"""Backend for any OpenAI-compatible Chat Completions server.

Works with OpenAI, vLLM, Ollama (``/v1``), llama.cpp's server and LM Studio:
it speaks plain HTTP ``POST {base_url}/chat/completions`` through httpx, so no
vendor SDK decides retries or logging for us.

* The API key is read from an environment variable (``OPENAI_API_KEY`` unless
  told otherwise) when the backend is built. It is never taken from a config
  file, never part of a cache key, and scrubbed from every error message.
* Structured output: first ``response_format={"type": "json_schema", ...}``
  (OpenAI, vLLM, Ollama, LM Studio); a server that rejects it (HTTP 400/422,
  or llama.cpp's server: a 500 naming ``response_format``) is stepped down, for the rest of the run, to
  ``{"type": "json_object", "schema": ...}`` (llama.cpp's server: grammar
  from the schema) and then to plain JSON mode ``{"type": "json_object"}``.
  The schema is in the prompt either way and the client validates every
  answer.
* Timeouts; retries with exponential backoff and full jitter on 429, 5xx,
  timeouts, connection errors and malformed 200 bodies (``Retry-After`` is
  honoured up to a cap); 401/403 and 404 fail at once with an error that says
  "bad key" or "unknown model".
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from typing import Any, Sequence

import httpx

from fincon.llm.errors import (
    LLMAuthError,
    LLMModelNotFound,
    LLMRequestRejected,
    LLMUnavailable,
)
from fincon.llm.types import Completion, Message, SamplingParams

log = logging.getLogger(__name__)

MODES = ("json_schema", "json_object_schema", "json_object")
RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
DEFAULT_BASE_URL = "https://api.openai.com/v1"


class _Retryable(Exception):
    """One attempt failed in a way worth retrying."""

    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class OpenAICompatBackend:
    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 20.0,
        structured: str = "auto",
        rng: random.Random | None = None,
    ):
        if structured not in ("auto",) + MODES:
            raise ValueError(f"structured must be auto or one of {MODES}, not {structured!r}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = api_key_env
        self._key = os.environ.get(api_key_env) or None
        if self._key is None and "api.openai.com" in self.base_url:
            raise LLMAuthError(f"no API key: set the environment variable {api_key_env} to use {self.base_url}")
        self.model_id = f"{model}@{self.base_url}"
        self.price_model = model
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._mode = "json_schema" if structured == "auto" else structured
        self._may_downgrade = structured == "auto"
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        self._http = httpx.Client(
            timeout=httpx.Timeout(timeout_s, connect=connect_timeout_s), headers=headers
        )

    @property
    def structured_mode(self) -> str:
        """The response format in use: one of :data:`MODES`."""
        return self._mode

    # -- helpers ----------------------------------------------------------
    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "***") if self._key else text

    def _response_format(self, mode: str, schema: dict[str, Any]) -> dict[str, Any]:
        if mode == "json_schema":
            name = str(schema.get("title") or "answer")[:64]
            return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
        if mode == "json_object_schema":
            return {"type": "json_object", "schema": schema}
        return {"type": "json_object"}

    def _payload(self, messages: Sequence[Message], schema: dict[str, Any], params: SamplingParams, mode: str) -> dict:
        return {
            "model": self.model,
            "messages": [m.model_dump() for m in messages],
            "temperature": params.temperature,
            "top_p": params.top_p,
            "max_tokens": params.max_tokens,
            "seed": params.seed,
            "response_format": self._response_format(mode, schema),
        }

    def _sleep_before_retry(self, attempt: int, retry_after: float | None) -> None:
        cap = min(self.max_backoff_s, self.backoff_s * (2 ** attempt))
        delay = self._rng.uniform(0, cap)  # full jitter
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_backoff_s))
        time.sleep(delay)

    # -- the call -----------------------------------------------------------
    def complete(self, messages: Sequence[Message], schema: dict[str, Any], params: SamplingParams) -> Completion:
        url = f"{self.base_url}/chat/completions"
        last = "no attempt made"
        retry_after: float | None = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep_before_retry(attempt - 1, retry_after)
            try:
                return self._attempt(url, messages, schema, params)
            except _Retryable as exc:
                last = str(exc)
                retry_after = exc.retry_after
                log.warning("LLM call to %s failed (attempt %d of %d): %s", self.base_url, attempt + 1,
                            self.max_retries + 1, last)
        raise LLMUnavailable(
            f"LLM server {self.base_url} failed {self.max_retries + 1} attempts (last: {last}); "
            "check that it is running and reachable, or raise the timeout"
        )

    def _attempt(self, url: str, messages, schema, params) -> Completion:
        mode = self._mode
        try:
            resp = self._http.post(url, json=self._payload(messages, schema, params, mode))
        except httpx.TimeoutException as exc:
            raise _Retryable(f"timeout ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise _Retryable(self._scrub(f"connection error ({type(exc).__name__}: {exc})")) from None
        status = resp.status_code
        body = self._scrub(resp.text[:300]).replace("\n", " ")
        rejects_format = status in (400, 422) or (status == 500 and "response_format" in body)
        if rejects_format and self._may_downgrade and mode != MODES[-1]:
            nxt = MODES[MODES.index(mode) + 1]
            with self._lock:
                if self._mode == mode:
                    self._mode = nxt
            log.warning("%s rejected response format %s (HTTP %d); trying %s", self.base_url, mode, status, nxt)
            return self._attempt(url, messages, schema, params)
        if status in (401, 403):
            raise LLMAuthError(
                f"LLM server {self.base_url} refused the API key from ${self.api_key_env} (HTTP {status}: bad or "
                f"missing key); set a valid key in {self.api_key_env}"
            )
        if status == 404:
            raise LLMModelNotFound(
                f"LLM server {self.base_url} does not know model {self.model!r} (HTTP 404: unknown model, or the "
                "base URL lacks its /v1 suffix); check --llm-model and --llm-base-url"
            )
        if status in RETRY_STATUS or status >= 500:
            raise _Retryable(f"HTTP {status}: {body[:120]}", _retry_after(resp))
        if status != 200:
            raise LLMRequestRejected(f"LLM server {self.base_url} rejected the request (HTTP {status}): {body}")
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"]["content"]
            if not isinstance(text, str):
                raise TypeError("message content is not a string")
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise _Retryable(f"malformed response body ({type(exc).__name__}): {body[:80]!r}") from None
        usage = data.get("usage") or {}
        return Completion(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=str(choice.get("finish_reason") or ""),
        )

    def close(self) -> None:
        self._http.close()


def _retry_after(resp: httpx.Response) -> float | None:
    value = resp.headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
