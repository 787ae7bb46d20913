"""The LLM layer: one client for every agent, whatever answers behind it.

``LLMClient.ask(messages, OutputModel, agent=..., day=...)`` returns a
validated pydantic object plus usage; backends (``openai``-compatible HTTP,
in-process ``local`` llama.cpp), the SQLite cache/replay, the usage ledger
and budget, and the re-ask guardrail live behind it. See docs/llm.md.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.llm import leakage as leakage
    from fincon.llm.backends.local import LocalLlamaBackend as LocalLlamaBackend
    from fincon.llm.backends.openai_compat import OpenAICompatBackend as OpenAICompatBackend
    from fincon.llm.bundled import (
        BUNDLED as BUNDLED,
        DEFAULT_MODEL as DEFAULT_MODEL,
        assemble as assemble,
        weights_identity as weights_identity,
    )
    from fincon.llm.cache import (
        SERVER_ENV as SERVER_ENV,
        CacheMode as CacheMode,
        CallCache as CallCache,
        call_key as call_key,
    )
    from fincon.llm.client import LLMClient as LLMClient
    from fincon.llm.concurrency import run_concurrently as run_concurrently
    from fincon.llm.errors import (
        BudgetExhausted as BudgetExhausted,
        CacheMiss as CacheMiss,
        LLMAuthError as LLMAuthError,
        LLMError as LLMError,
        LLMInvalidAnswer as LLMInvalidAnswer,
        LLMModelNotFound as LLMModelNotFound,
        LLMRequestRejected as LLMRequestRejected,
        LLMUnavailable as LLMUnavailable,
        ModelFileError as ModelFileError,
    )
    from fincon.llm.knowledge import model_knowledge as model_knowledge
    from fincon.llm.ledger import ModelPrice as ModelPrice, UsageLedger as UsageLedger
    from fincon.llm.masking_terms import (
        Paraphraser as Paraphraser,
        masker_for as masker_for,
        mined_terms as mined_terms,
        user_names as user_names,
        write_manifest as write_manifest,
    )
    from fincon.llm.remote_cache import RemoteCache as RemoteCache
    from fincon.llm.settings import (
        LLMSettings as LLMSettings,
        build_backend as build_backend,
        build_client as build_client,
    )
    from fincon.llm.types import (
        LLMResult as LLMResult,
        Message as Message,
        SamplingParams as SamplingParams,
        Usage as Usage,
    )

__getattr__, __dir__ = face(__name__, __file__)
