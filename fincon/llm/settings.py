"""Settings of the LLM layer and the factory that turns them into a client.

The API key is deliberately *not* a setting: only the name of the environment
variable holding it is (``api_key_env``). A config file that carries a key is
refused with a message saying where the key belongs, and so is a key pasted
into ``api_key_env`` itself (it must look like a variable name); neither
message repeats the value.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Sequence

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo

from fincon import llm
from fincon.errors import ConfigError
from fincon.flag import Flag, kept_absolute
from fincon.llm.cache import DEFAULT_CACHE_PATH, CacheMode, CallCache
from fincon.llm.client import LLMClient
from fincon.llm.endpoint import DEFAULT_BASE_URL, check_api_key_env
from fincon.llm.ledger import ModelPrice, UsageLedger
from fincon.llm.types import SamplingParams
from fincon.validation import IsoDate, validated

#: the help section of the LLM flags (fincon.cli.flags)
GROUP = "LLM (see docs/llm.md)"


def _flag(names: tuple[str, ...] = (), **kw: Any) -> Flag:
    """An LLM flag, listed in the LLM section; unnamed, it is ``--llm-`` and the field's name
    (``RunConfig.llm`` and the commands give that prefix)."""
    return Flag(*names, group=GROUP, **kw)


#: the LLM flags every command that calls a model has (`fincon llm ask` has no --max-tokens); masking adds MASKING
FLAGS = (
    "backend",
    "model",
    "base_url",
    "api_key_env",
    "cache",
    "cache_path",
    "max_tokens",
    "concurrency",
    "temperature",
    "seed",
    "timeout_s",
    "prices",
    "knowledge_cutoff",
)
MASKING = ("anonymize", "mask_items", "paraphrase_model", "aliases")


class LLMSettings(BaseModel):
    """Everything needed to build an :class:`LLMClient` (see docs/llm.md)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    backend: Annotated[
        Literal["local", "openai"],
        _flag(help="local = in-process llama.cpp (default, offline); openai = any OpenAI-compatible server"),
    ] = "local"
    #: local: a bundled model name (default qwen2.5-coder-1.5b) or a GGUF path; openai: the model name
    model: Annotated[
        str | None,
        _flag(
            metavar="NAME|GGUF",
            help="local: qwen2.5-coder-1.5b (default), qwen2.5-coder-0.5b or a GGUF path; openai: model name",
        ),
    ] = None
    base_url: Annotated[
        str,
        _flag(metavar="URL", help="OpenAI-compatible base URL, e.g. http://localhost:11434/v1 (default {default})"),
    ] = DEFAULT_BASE_URL
    api_key_env: Annotated[
        str, _flag(metavar="VAR", help="environment variable holding the API key (default {default})")
    ] = "OPENAI_API_KEY"
    cache: Annotated[
        CacheMode,
        _flag(help="call cache mode (default read-write; replay fails on any call not recorded)"),
    ] = CacheMode.READ_WRITE
    cache_path: Annotated[
        Path,
        AfterValidator(kept_absolute),  # given, saved absolute (a replay's config.yaml, anywhere)
        _flag(metavar="FILE", help="SQLite call cache (default runs/.cache/llm.sqlite)"),
    ] = DEFAULT_CACHE_PATH
    #: run-wide token budget (prompt + completion, cached calls included); None = unlimited
    max_tokens: Annotated[
        int | None,
        Field(ge=1),
        _flag(names=("--max-tokens",), metavar="N", help="token budget of the run; the run stops cleanly when spent"),
    ] = None
    #: cap on the tokens of one answer
    answer_max_tokens: int = Field(200, ge=16, le=8192)
    concurrency: Annotated[
        int, Field(ge=1, le=64), _flag(metavar="N", help="parallel calls within one day (default {default})")
    ] = 4
    temperature: Annotated[
        float, Field(ge=0.0, le=2.0), _flag(metavar="T", help="sampling temperature (default {default:g})")
    ] = 0.0
    seed: Annotated[int, Field(ge=0, le=2**32 - 1), _flag(metavar="N", help="sampling seed (default {default})")] = 0
    #: seconds per HTTP attempt; None = 600 for a server on this machine (one-slot llama.cpp), 60 otherwise
    timeout_s: Annotated[
        float | None,
        Field(gt=0, le=86400),
        _flag(
            names=("--llm-timeout",),
            metavar="SEC",
            help="HTTP timeout of one attempt (default 600 for a server on this machine, 60 otherwise)",
        ),
    ] = None
    max_retries: int = Field(3, ge=0, le=10)
    structured: Literal["auto", "json_schema", "json_object_schema", "json_object"] = "auto"
    n_threads: int | None = Field(None, ge=1)
    n_ctx: int = Field(2048, ge=256)
    #: local backend: RAM for saved prompt states (prefix reuse across agents' calls); 0 = off
    prompt_cache_mb: int = Field(1024, ge=0)
    model_dir: Path | None = None
    #: USD per million tokens by model name, every in-process GGUF as `local`; a model not listed costs 0
    prices: Annotated[
        dict[str, ModelPrice],
        _flag(
            parse=Path,
            metavar="FILE",
            help="YAML/JSON price table: {{model: {{input_per_million: USD, output_per_million: USD}}}}",
        ),
    ] = Field(default_factory=dict)
    #: the model's training-data cutoff when fincon.llm.knowledge does not know it
    knowledge_cutoff: Annotated[
        IsoDate | None,
        _flag(
            metavar="YYYY-MM-DD",
            help="the model's training-data cutoff, when fincon's table does not know it (docs/llm.md): "
            "each run labels its window against it (in-training-data, straddles-cutoff, after-cutoff)",
        ),
    ] = None
    #: mask every prompt: firms, people, dates and price levels (fincon.llm.masking)
    anonymize: Annotated[
        bool,
        Flag(
            "--anonymize",
            help="mask every prompt: the firm's ticker, names and people become pseudonyms ('Company A'), its "
            "products [term], other names [name], dates coarse recency, amounts [amount], percentages buckets, "
            "items their tone word (--mask-items); answers map back; the run is audited for leakage as it ends (docs/llm.md). The "
            "rules brain is untouched",
            group=GROUP,
        ),
    ] = False
    #: what a masked item of the corpus shows beside its tone word: nothing (an item), or its topics
    mask_items: Annotated[
        Literal["tone", "topics"],
        Flag(
            "--mask-items",
            help="with --anonymize: each item of the corpus as its tone word alone ('an item (tone positive)'; "
            "fincon's indicators without their levels), or as its topics too (until 2026-12-02: a session's "
            "topics in order named firm and day of 80 % of InvestorBench's firm-sessions, docs/llm.md)",
            group=GROUP,
        ),
    ] = "tone"
    #: more names to mask per ticker (--alias TICKER=NAME), beside the bundled alias table
    aliases: Annotated[
        dict[str, list[str]],
        Flag(
            "--alias",
            repeat=True,
            parse=str,
            metavar="TICKER=NAME",
            help="with --anonymize: another name of TICKER's firm to mask (repeatable), beside the bundled table",
            group=GROUP,
        ),
    ] = Field(default_factory=dict)
    #: with anonymize: another model (same backend and server) that rewrites each masked item in its own
    #: words before the team reads it, cached like every call; never the model under test
    paraphrase_model: Annotated[
        str | None,
        _flag(
            metavar="NAME",
            help="with --anonymize: another model (same backend and server) rewrites each masked item in its own "
            "words instead of its tone word alone or its topics, cached like every call; never the model under test",
        ),
    ] = None

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
        under_test = self.resolved_model()
        same = self.paraphrase_model == under_test or (
            self.backend == "local"
            and under_test is not None
            and llm.weights_identity(self.paraphrase_model) == llm.weights_identity(under_test)
        )
        if same:
            mine = llm.weights_identity(under_test) if self.backend == "local" and under_test else None
            others = [n for n, m in llm.BUNDLED.items() if m.sha256 != mine] if self.backend == "local" else []
            raise ConfigError(
                f"--llm-paraphrase-model {self.paraphrase_model} is the model under test: a paraphrase request shows "
                "the model every item before it decides; give another model"
                + (f" (e.g. the bundled {others[0]})" if others else "")
            )
        return self

    def resolved_model(self) -> str | None:
        """The model these settings call (the bundled default when a local model is not named)."""
        if self.model is None and self.backend == "local":
            return llm.DEFAULT_MODEL
        return self.model

    @field_validator("base_url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ConfigError(f"--llm-base-url must start with http:// or https://, not {v!r}")
        return v.rstrip("/")

    @property
    def price_key(self) -> str:
        """This model's row in the price table (``prices``): the endpoint's model name, or ``local``
        for every in-process GGUF (the backends' ``price_model``)."""
        return "local" if self.backend == "local" else str(self.model)

    def sampling(self) -> SamplingParams:
        return SamplingParams(temperature=self.temperature, max_tokens=self.answer_max_tokens, seed=self.seed)


class _Overrides(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    #: API keys are never settings, in a strategy's section either
    _no_keys_in_config = model_validator(mode="before")(LLMSettings._no_keys_in_config.__func__)  # type: ignore[attr-defined]

    @model_serializer(mode="wrap")
    def _given(self, handler):
        """Only the keys set: the rest is the run's ``llm`` section's."""
        return {k: v for k, v in handler(self).items() if k in self.model_fields_set}

    def given(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


def _optional(f: FieldInfo) -> tuple[Any, FieldInfo]:
    """``f`` as a key that may be left out (None): its type and range, no default."""
    ann = f.annotation | None  # type: ignore[operator]
    return (Annotated[ann, *f.metadata] if f.metadata else ann), FieldInfo(default=None, description=f.description)


#: A strategy's own LLM settings (``strategy_params.<name>.llm``): any of :class:`LLMSettings`' keys,
#: each typed and range-checked as there when the config loads; unset keys are the run's ``llm``
#: section's. Made from LLMSettings' fields (one copy); the checks across keys (a paraphrase model
#: needs ``anonymize``) hold for the layered whole (:func:`layered`), not for a part.
LLMOverrides = create_model(
    "LLMOverrides",
    __base__=_Overrides,
    __doc__="A strategy's own LLM settings over the run's llm section (fincon.llm.settings.LLMOverrides).",
    **{name: _optional(f) for name, f in LLMSettings.model_fields.items()},  # type: ignore[call-overload]
)


def layered(
    run: LLMSettings | None,
    defaults: Mapping[str, Any] | None = None,
    own: Mapping[str, Any] | _Overrides | None = None,
    where: str = "llm",
) -> LLMSettings:
    """A strategy's model settings, typed: its ``defaults``, under the keys the
    run's ``llm`` section sets, under the strategy's ``own`` (its params' llm).
    How every strategy that calls a model gets its settings from a run."""

    keys = run.model_dump(exclude_unset=True) if run is not None else {}
    mine = own.given() if isinstance(own, _Overrides) else dict(own or {})
    return validated(LLMSettings, {**(defaults or {}), **keys, **mine}, where)


def build_backend(settings: LLMSettings):
    """The configured backend (the local model is only loaded on its first live call)."""
    if settings.backend == "openai":
        if not settings.model:
            raise ConfigError(
                "the openai backend needs a model name: pass --llm-model (e.g. gpt-4o-mini, qwen2.5:1.5b)"
            )

        return llm.OpenAICompatBackend(
            settings.model,
            base_url=settings.base_url,
            api_key_env=settings.api_key_env,
            timeout_s=settings.timeout_s,
            max_retries=settings.max_retries,
            structured=settings.structured,
        )

    return llm.LocalLlamaBackend(
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

        names, vocabulary = llm.mined_terms(corpus, tuple(sorted(tickers)), before)
        extra = llm.user_names(settings.aliases)
        extra = {t: (*extra.get(t, ()), *names.get(t, ())) for t in tickers}
        client.masker = llm.masker_for(tickers, extra, vocabulary=vocabulary, secret=secret, items=settings.mask_items)
        if settings.paraphrase_model:
            other = settings.model_copy(update={"model": settings.paraphrase_model, "anonymize": False,
                                                "paraphrase_model": None})  # fmt: skip
            client.masker.rewriter = llm.Paraphraser(
                build_client(other, ledger=client.ledger), settings.paraphrase_model
            )


#: what a run's mask learned so far (fincon.llm.masking.Masker.learned), in a saved strategy's folder
MASK_STATE = "mask.json"


def keep_mask(client, folder: Path) -> None:
    """Between forward steps (fincon.strategies.state): what ``client``'s mask learned so far is the
    run's, not the client's (a fresh step opens a fresh client), so it is saved beside the strategy."""
    mask = getattr(client, "masker", None)
    if mask is not None:
        (Path(folder) / MASK_STATE).write_text(json.dumps(mask.learned()), encoding="utf-8")


def take_up_mask(client, folder: Path) -> None:
    """The next step's fresh ``client`` (masked by :func:`attach`) goes on from what :func:`keep_mask` saved."""
    saved = Path(folder) / MASK_STATE
    if client is not None and client.masker is not None and saved.is_file():
        client.masker.take_up(json.loads(saved.read_text(encoding="utf-8")))


def detach(client, run_dir: Path, stopped: str | None = None, close: bool = False) -> dict[str, Any]:
    """What every strategy that called a model does at its end (:func:`attach` at its start): the
    mask's manifest and the usage ledger written into ``run_dir``, the ledger's summary returned
    (with ``llm_stop_reason`` when the model stopped the run), the client closed when the strategy
    opened it (``close``)."""

    llm.write_manifest(client, run_dir)
    client.ledger.write(Path(run_dir))
    out = dict(client.ledger.summary())
    if stopped:
        out["llm_stop_reason"] = stopped
    if close:
        client.close()
    return out
