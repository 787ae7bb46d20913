"""Backend for any OpenAI-compatible Chat Completions server.

Works with OpenAI, vLLM, Ollama (``/v1``), llama.cpp's server and LM Studio:
it speaks plain HTTP ``POST {base_url}/chat/completions`` through httpx, so no
vendor SDK decides retries or logging for us.

* The API key is read from an environment variable (``OPENAI_API_KEY`` unless
  told otherwise) when the backend is built. It is never taken from a config
  file, never part of a cache key, and scrubbed from every error message. The
  variable's *name* must look like one, so a key pasted in its place is
  refused without being echoed.
* Structured output: first ``response_format={"type": "json_schema", ...}``
  (OpenAI, vLLM, Ollama, LM Studio). Only a server that rejects the *format*
  (an HTTP 400/422/500 whose body names ``response_format``, ``json_schema``
  or a grammar) is stepped down, for the rest of the run, to
  ``{"type": "json_object", "schema": ...}`` (llama.cpp's server: grammar
  from the schema) and then to plain JSON mode ``{"type": "json_object"}``.
  Any other 400/422 (e.g. ``context_length_exceeded``) is the request's fault,
  not the format's: it raises :class:`LLMRequestRejected` and keeps the mode.
  The schema is in the prompt either way and the client validates every
  answer; each completion says which mode produced it (stored in the cache).
* Timeouts. A server on this machine (localhost, 127.x, ::1) is typically
  llama.cpp with one slot: it keeps computing a request the client abandoned,
  so a retry only queues behind it and times out too. Such servers get a long
  default timeout (600 s) and no retry after a timeout; remote servers 60 s
  and at most one retry after a timeout. The final error says so and what to
  change (``--llm-timeout``, the server's slots, ``--llm-concurrency``).
* Retries with exponential backoff and full jitter on 429, 5xx, malformed 200
  bodies and dropped connections (``Retry-After`` is honoured up to a cap); a
  refused connection is retried once, quickly. Errors that will not go away
  are not retried: 401/403 ("bad key"), 404 ("unknown model"), 405/501 and
  HTML pages ("not an OpenAI-compatible endpoint"). Every message is one line.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from typing import Any, Sequence

import httpx

from fincon.llm.endpoint import DEFAULT_BASE_URL, check_api_key_env, is_local_url
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
#: the server does not implement POST /chat/completions at this URL: retrying cannot help
NOT_OPENAI_STATUS = frozenset({405, 501})
LOCAL_TIMEOUT_S = 600.0
REMOTE_TIMEOUT_S = 60.0

# words in an error body that blame the response format itself (OpenAI: param "response_format";
# vLLM/FastAPI 422: loc [..., "response_format", ...]; llama.cpp: json_schema / grammar errors)
_FORMAT_WORDS = ("response_format", "json_schema", "json schema", "grammar")
# words that blame the prompt's length (OpenAI, llama-cpp-python: context_length_exceeded;
# llama.cpp's llama-server: exceed_context_size_error; vLLM: "maximum context length")
_CONTEXT_WORDS = (
    "context_length_exceeded",
    "maximum context length",
    "context length",
    "context size",
    "exceed_context",
    "context window",
)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


class _Retryable(Exception):
    """One attempt failed in a way worth retrying. ``kind`` (timeout, connect,
    status, malformed, transport) decides how often and what to advise."""

    def __init__(self, message: str, kind: str, retry_after: float | None = None, status: int | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after
        self.status = status


class OpenAICompatBackend:
    name = "openai"

    def __init__(
        self,
        model: str,
        base_url: str = DEFAULT_BASE_URL,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float | None = None,
        connect_timeout_s: float = 5.0,
        max_retries: int = 3,
        backoff_s: float = 0.5,
        max_backoff_s: float = 20.0,
        structured: str = "auto",
        rng: random.Random | None = None,
        local: bool | None = None,
    ):
        """``timeout_s`` None: 600 s for a server on this machine, 60 s otherwise.
        ``local`` None: decided from ``base_url`` (see :func:`is_local_url`)."""
        if structured not in ("auto",) + MODES:
            raise ValueError(f"structured must be auto or one of {MODES}, not {structured!r}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.api_key_env = check_api_key_env(api_key_env)
        self._key = os.environ.get(api_key_env) or None
        if self._key is None and "api.openai.com" in self.base_url:
            raise LLMAuthError(f"no API key: set the environment variable {api_key_env} to use {self.base_url}")
        self.model_id = f"{model}@{self.base_url}"
        self.price_model = model
        self.local = is_local_url(self.base_url) if local is None else bool(local)
        self.timeout_s = float(timeout_s) if timeout_s else (LOCAL_TIMEOUT_S if self.local else REMOTE_TIMEOUT_S)
        self.max_retries = max_retries
        #: retries after a timed-out attempt: none on a local (typically one-slot) server, one on a remote one
        self.timeout_retries = 0 if self.local else 1
        #: a refused connection is retried once (a server restarting), then reported
        self.connect_retries = 1
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._mode = "json_schema" if structured == "auto" else structured
        self.structured_start = self._mode
        self._may_downgrade = structured == "auto"
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._no_usage = False  # said once: the server gave no token usage
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        self._http = httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=connect_timeout_s), headers=headers)

    @property
    def structured_mode(self) -> str:
        """The response format in use now: one of :data:`MODES` (it starts at
        :attr:`structured_start` and only steps down)."""
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
        cap = min(self.max_backoff_s, self.backoff_s * (2**attempt))
        delay = self._rng.uniform(0, cap)  # full jitter
        if retry_after is not None:
            delay = max(delay, min(retry_after, self.max_backoff_s))
        time.sleep(delay)

    # -- the call -----------------------------------------------------------
    def complete(self, messages: Sequence[Message], schema: dict[str, Any], params: SamplingParams) -> Completion:
        url = f"{self.base_url}/chat/completions"
        last: _Retryable | None = None
        attempts = 0
        kinds: dict[str, int] = {}
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep_before_retry(attempt - 1, last.retry_after if last else None)
            attempts += 1
            try:
                return self._attempt(url, messages, schema, params)
            except _Retryable as exc:
                last = exc
                kinds[exc.kind] = kinds.get(exc.kind, 0) + 1
                # the attempts this kind of failure gets ("at most 4" was said of a refused connection, given 2)
                limit = {"timeout": self.timeout_retries, "connect": self.connect_retries}.get(exc.kind)
                at_most = self.max_retries + 1 if limit is None else min(self.max_retries, limit) + 1
                if kinds[exc.kind] >= at_most or attempt == self.max_retries:
                    break  # the last: the error's line says it
                log.warning(  # attempts of this kind: mixed kinds had the overall count beside a kind's ceiling
                    "LLM call to %s failed (%s %d of at most %d; retrying): %s",
                    self.base_url,
                    exc.kind,
                    kinds[exc.kind],
                    at_most,
                    exc,
                )
        raise LLMUnavailable(self._give_up(attempts, last))

    def _give_up(self, attempts: int, last: _Retryable | None) -> str:
        """One line: what failed, how often, and what to do about it."""
        what = _one_line(str(last)) if last else "no attempt made"
        kind = last.kind if last else ""
        if kind == "timeout":
            advice = (
                f"no answer within {self.timeout_s:g} s; a server with one slot (llama.cpp) keeps computing an "
                "abandoned request and queues retries behind it, so raise --llm-timeout, lower "
                "--llm-concurrency, or give the server more slots (llama-server -np N, i.e. --parallel N)"
            )
        elif kind == "connect":
            advice = (
                f"nothing is listening at {self.base_url}: start the server or fix --llm-base-url"
                if "refused" in what.lower()
                else f"cannot connect to {self.base_url}: check --llm-base-url, the network and that the server is up"
            )
        elif kind == "status" and last is not None and last.status == 429:
            advice = "the server keeps rate-limiting: lower --llm-concurrency or raise the account's rate limit"
        elif kind == "malformed":
            advice = (
                "its answers are not OpenAI chat completions: check --llm-base-url "
                "(it usually ends in /v1) and the server's log"
            )
        else:
            advice = "check that it is running and reachable (and its log)"
        noun = "attempt" if attempts == 1 else "attempts"
        return f"LLM server {self.base_url} failed {attempts} {noun} (last: {what}); {advice}"

    def _not_openai(self, status: int, html: bool) -> LLMUnavailable:
        """Not retried: the same URL will answer the same way next time."""
        what = "an HTML page" if html else f"HTTP {status}"
        return LLMUnavailable(
            f"LLM server {self.base_url} failed 1 attempt (last: HTTP {status}{', an HTML page' if html else ''}); "
            f"{self.base_url} is not an OpenAI-compatible endpoint (it answered with {what}); "
            "check --llm-base-url (it usually ends in /v1)"
        )

    def _attempt(self, url: str, messages, schema, params) -> Completion:
        mode = self._mode
        t0 = time.perf_counter()
        try:
            resp = self._http.post(url, json=self._payload(messages, schema, params, mode))
        except httpx.TimeoutException as exc:
            if isinstance(exc, httpx.ConnectTimeout):
                raise _Retryable(f"connect timeout ({type(exc).__name__})", "connect") from None
            raise _Retryable(f"timeout after {self.timeout_s:g} s ({type(exc).__name__})", "timeout") from None
        except httpx.ConnectError as exc:
            raise _Retryable(self._scrub(f"connection error ({type(exc).__name__}: {exc})"), "connect") from None
        except httpx.TransportError as exc:
            raise _Retryable(self._scrub(f"connection error ({type(exc).__name__}: {exc})"), "transport") from None
        status = resp.status_code
        raw = resp.text
        body = _one_line(self._scrub(raw[:300]))
        lowered = body.lower()
        if "text/html" in resp.headers.get("content-type", "").lower() or raw.lstrip()[:15].lower().startswith(
            ("<!doctype", "<html")
        ):
            raise self._not_openai(status, html=True)
        if status in NOT_OPENAI_STATUS:
            raise self._not_openai(status, html=False)
        blames_context = status in (400, 413, 422) and any(w in lowered for w in _CONTEXT_WORDS)
        rejects_format = status in (400, 422, 500) and not blames_context and any(w in lowered for w in _FORMAT_WORDS)
        if rejects_format and self._may_downgrade and mode != MODES[-1]:
            nxt = MODES[MODES.index(mode) + 1]
            with self._lock:
                stepped = self._mode == mode
                if stepped:
                    self._mode = nxt
            if stepped:  # calls racing with this one were rejected too: one line says it for all
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
        if blames_context:
            raise LLMRequestRejected(
                f"LLM server {self.base_url} rejected the request: the prompt does not fit the model's context "
                f"window (HTTP {status}: {body[:200]}); start the server with a larger context (llama.cpp: "
                "--n_ctx N) or use a model with a longer one, or shorten the prompt"
            )
        if status in RETRY_STATUS or status >= 500:
            raise _Retryable(f"HTTP {status}: {body[:120]}", "status", _retry_after(resp), status)
        if status != 200:
            raise LLMRequestRejected(f"LLM server {self.base_url} rejected the request (HTTP {status}): {body}")
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = choice["message"]["content"]
            if text is None:  # a refusal (its text in "refusal") or an empty turn: the model's answer, counted
                text = str(choice["message"].get("refusal") or "")
            if not isinstance(text, str):
                raise TypeError("message content is not a string")
            usage = data.get("usage") or {}
            prompt_tokens = int(usage.get("prompt_tokens") or 0)
            completion_tokens = int(usage.get("completion_tokens") or 0)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise _Retryable(f"malformed response body ({type(exc).__name__}): {body[:80]!r}", "malformed") from None
        if not usage.get("prompt_tokens") and not usage.get("completion_tokens"):
            # no usage in the answer: booked as 0 tokens and $0, the run was free and --max-tokens never
            # fired; estimated from the text instead (4 characters a token), and said once
            prompt_tokens = -(-sum(len(str(getattr(m, "content", m))) for m in messages) // 4)
            completion_tokens = -(-len(text) // 4)
            with self._lock:
                said, self._no_usage = self._no_usage, True
            if not said:
                log.warning(
                    "%s reports no token usage: tokens estimated from the text (4 characters a token) for "
                    "--max-tokens, prices and llm_usage.csv",
                    self.base_url,
                )
        return Completion(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            finish_reason=str(choice.get("finish_reason") or ""),
            structured_mode=mode,
            # the request that answered (earlier failed attempts and the waits
            # between them count as queued)
            model_s=time.perf_counter() - t0,
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
