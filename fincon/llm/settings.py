"""Settings of the LLM layer and the factory that turns them into a client.

The API key is deliberately *not* a setting: only the name of the environment
variable holding it is (``api_key_env``). A config file that carries a key is
refused with a message saying where the key belongs, and so is a key pasted
into ``api_key_env`` itself (it must look like a variable name); neither
message repeats the value.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fincon.errors import ConfigError
from fincon.llm.cache import DEFAULT_CACHE_PATH, CacheMode, CallCache
from fincon.llm.client import LLMClient
from fincon.llm.endpoint import DEFAULT_BASE_URL, check_api_key_env
from fincon.llm.ledger import ModelPrice, UsageLedger
from fincon.llm.types import SamplingParams
from fincon.validation import IsoDate


class LLMSettings(BaseModel):
    """Everything needed to build an :class:`LLMClient` (see docs/llm.md)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    backend: Literal["local", "openai"] = "local"
    #: local: a bundled model name (default qwen2.5-coder-1.5b) or a GGUF path; openai: the model name
    model: str | None = None
    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = "OPENAI_API_KEY"
    cache: CacheMode = CacheMode.READ_WRITE
    cache_path: Path = DEFAULT_CACHE_PATH
    #: run-wide token budget (prompt + completion, cached calls included); None = unlimited
    max_tokens: int | None = Field(None, ge=1)
    #: cap on the tokens of one answer
    answer_max_tokens: int = Field(200, ge=16, le=8192)
    concurrency: int = Field(4, ge=1, le=64)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int = 0
    #: seconds per HTTP attempt; None = 600 for a server on this machine (one-slot llama.cpp), 60 otherwise
    timeout_s: float | None = Field(None, gt=0)
    max_retries: int = Field(3, ge=0, le=10)
    structured: Literal["auto", "json_schema", "json_object_schema", "json_object"] = "auto"
    n_threads: int | None = Field(None, ge=1)
    n_ctx: int = Field(2048, ge=256)
    #: local backend: RAM for saved prompt states (prefix reuse across agents' calls); 0 = off
    prompt_cache_mb: int = Field(1024, ge=0)
    model_dir: Path | None = None
    #: USD per million tokens by model name; models not listed (all local ones) cost 0
    prices: dict[str, ModelPrice] = Field(default_factory=dict)
    #: the model's training-data cutoff when fincon.llm.knowledge does not know it
    knowledge_cutoff: IsoDate | None = None
    #: mask every prompt: firms, people, dates and price levels (fincon.llm.masking)
    anonymize: bool = False
    #: more names to mask per ticker (--alias TICKER=NAME), beside the bundled alias table
    aliases: dict[str, list[str]] = Field(default_factory=dict)
    #: with anonymize: another model (same backend and server) that rewrites each masked item in its own
    #: words before the team reads it, cached like every call; never the model under test
    paraphrase_model: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _no_keys_in_config(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for k in data:
                if "key" in str(k).lower() and k != "api_key_env":
                    raise ConfigError(
                        f"LLM setting {k!r} is not allowed: API keys are read only from the environment "
                        "(set api_key_env to the variable's name, default OPENAI_API_KEY)"
                    )
        return data

    @field_validator("api_key_env", mode="before")
    @classmethod
    def _env_name(cls, v: Any) -> str:
        # raised directly, not as a ValidationError: pydantic's would quote the input (the key)
        return check_api_key_env(v)

    @model_validator(mode="after")
    def _paraphrase_by_another_model(self) -> "LLMSettings":
        if self.paraphrase_model is None:
            return self
        if not self.anonymize:
            raise ConfigError("--llm-paraphrase-model rewrites masked items: it goes with --anonymize")
        if self.paraphrase_model == self.resolved_model():
            raise ConfigError(
                f"--llm-paraphrase-model {self.paraphrase_model} is the model under test: a paraphrase request shows "
                "the model every item before it decides; give another model (e.g. the bundled qwen2.5-coder-0.5b)"
            )
        return self

    def resolved_model(self) -> str | None:
        """The model these settings call (the bundled default when a local model is not named)."""
        if self.model is None and self.backend == "local":
            from fincon.llm.bundled import DEFAULT_MODEL

            return DEFAULT_MODEL
        return self.model

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ConfigError(f"--llm-base-url must start with http:// or https://, not {v!r}")
        return v.rstrip("/")

    def sampling(self) -> SamplingParams:
        return SamplingParams(temperature=self.temperature, max_tokens=self.answer_max_tokens, seed=self.seed)


def layered(
    run: LLMSettings | None,
    defaults: Mapping[str, Any] | None = None,
    own: Mapping[str, Any] | None = None,
    where: str = "llm",
) -> LLMSettings:
    """A strategy's model settings, typed: its ``defaults``, under the keys the
    run's ``llm`` section sets, under the strategy's ``own`` (its params' llm).
    How every strategy that calls a model gets its settings from a run."""
    from fincon.validation import validated

    keys = run.model_dump(exclude_unset=True) if run is not None else {}
    return validated(LLMSettings, {**(defaults or {}), **keys, **(own or {})}, where)


def build_backend(settings: LLMSettings):
    """The configured backend (the local model is only loaded on its first live call)."""
    if settings.backend == "openai":
        if not settings.model:
            raise ConfigError(
                "the openai backend needs a model name: pass --llm-model (e.g. gpt-4o-mini, qwen2.5:1.5b)"
            )
        from fincon.llm.backends.openai_compat import OpenAICompatBackend

        return OpenAICompatBackend(
            settings.model,
            base_url=settings.base_url,
            api_key_env=settings.api_key_env,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            structured=settings.structured,
        )
    from fincon.llm.backends.local import LocalLlamaBackend

    return LocalLlamaBackend(
        settings.model,
        n_ctx=settings.n_ctx,
        n_threads=settings.n_threads,
        seed=settings.seed,
        cache_dir=settings.model_dir,
        prompt_cache_bytes=settings.prompt_cache_mb << 20,
    )


def build_client(settings: LLMSettings, ledger: UsageLedger | None = None) -> LLMClient:
    backend = build_backend(settings)
    cache = CallCache(settings.cache_path, settings.cache)
    ledger = ledger if ledger is not None else UsageLedger(prices=settings.prices, max_tokens=settings.max_tokens)
    return LLMClient(backend, cache=cache, ledger=ledger, params=settings.sampling())


def attach(client, settings, tickers: Sequence[str], corpus: str | None = None, before: dt.date | None = None) -> None:
    """Give ``client`` the run's mask when ``settings`` ask for one
    (``anonymize``) and it has none yet: how every strategy that calls a
    model masks its prompts (``corpus``: the event corpus it reads, whose
    names and distinctive terms before ``before``, the window's first day,
    are masked too). The secret of the price base and the date tokens follows from the
    run's seed and tickers: the same run masks the same way (its replay is
    byte-identical), and no prompt holds it."""
    if settings is not None and settings.anonymize and client.masker is None:
        secret = f"{settings.seed}:{','.join(sorted(tickers))}"
        from fincon.llm.masking_terms import Paraphraser, masker_for, mined_terms, user_names

        names, vocabulary = mined_terms(corpus, tuple(sorted(tickers)), before)
        extra = user_names(settings.aliases)
        extra = {t: (*extra.get(t, ()), *names.get(t, ())) for t in tickers}
        client.masker = masker_for(tickers, extra, vocabulary=vocabulary, secret=secret)
        if settings.paraphrase_model:
            other = settings.model_copy(update={"model": settings.paraphrase_model, "anonymize": False,
                                                "paraphrase_model": None})  # fmt: skip
            client.masker.rewriter = Paraphraser(build_client(other, ledger=client.ledger), settings.paraphrase_model)


def detach(client, run_dir: Path, stopped: str | None = None, close: bool = False) -> dict[str, Any]:
    """What every strategy that called a model does at its end (:func:`attach` at its start): the
    mask's manifest and the usage ledger written into ``run_dir``, the ledger's summary returned
    (with ``llm_stop_reason`` when the model stopped the run), the client closed when the strategy
    opened it (``close``)."""
    from fincon.llm.masking_terms import write_manifest

    write_manifest(client, run_dir)
    client.ledger.write(Path(run_dir))
    out = dict(client.ledger.summary())
    if stopped:
        out["llm_stop_reason"] = stopped
    if close:
        client.close()
    return out
