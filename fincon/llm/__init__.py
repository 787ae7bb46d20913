"""The LLM layer: one client for every agent, whatever answers behind it.

``LLMClient.ask(messages, OutputModel, agent=..., day=...)`` returns a
validated pydantic object plus usage; backends (``openai``-compatible HTTP,
in-process ``local`` llama.cpp), the SQLite cache/replay, the usage ledger
and budget, and the re-ask guardrail live behind it. See docs/llm.md.

Its names load on first use (:mod:`fincon.lazy`, PEP 562): importing the
package costs nothing until a name is used.
"""

from typing import TYPE_CHECKING

from fincon.lazy import face

if TYPE_CHECKING:
    from fincon.llm import leakage as leakage
    from fincon.llm.backends.local import LocalLlamaBackend as LocalLlamaBackend
    from fincon.llm.backends.openai_compat import OpenAICompatBackend as OpenAICompatBackend
    from fincon.llm.bundled import BUNDLED as BUNDLED
    from fincon.llm.bundled import DEFAULT_MODEL as DEFAULT_MODEL
    from fincon.llm.bundled import assemble as assemble
    from fincon.llm.cache import (
        SERVER_ENV as SERVER_ENV,
    )
    from fincon.llm.cache import (
        CacheMode as CacheMode,
    )
    from fincon.llm.cache import (
        CallCache as CallCache,
    )
    from fincon.llm.cache import (
        call_key as call_key,
    )
    from fincon.llm.client import LLMClient as LLMClient
    from fincon.llm.concurrency import run_concurrently as run_concurrently
    from fincon.llm.errors import (
        BudgetExhausted as BudgetExhausted,
    )
    from fincon.llm.errors import (
        CacheMiss as CacheMiss,
    )
    from fincon.llm.errors import (
        LLMAuthError as LLMAuthError,
    )
    from fincon.llm.errors import (
        LLMError as LLMError,
    )
    from fincon.llm.errors import (
        LLMInvalidAnswer as LLMInvalidAnswer,
    )
    from fincon.llm.errors import (
        LLMModelNotFound as LLMModelNotFound,
    )
    from fincon.llm.errors import (
        LLMRequestRejected as LLMRequestRejected,
    )
    from fincon.llm.errors import (
        LLMUnavailable as LLMUnavailable,
    )
    from fincon.llm.errors import (
        ModelFileError as ModelFileError,
    )
    from fincon.llm.knowledge import model_knowledge as model_knowledge
    from fincon.llm.ledger import ModelPrice as ModelPrice
    from fincon.llm.ledger import UsageLedger as UsageLedger
    from fincon.llm.masking_terms import (
        Paraphraser as Paraphraser,
    )
    from fincon.llm.masking_terms import (
        masker_for as masker_for,
    )
    from fincon.llm.masking_terms import (
        mined_terms as mined_terms,
    )
    from fincon.llm.masking_terms import (
        user_names as user_names,
    )
    from fincon.llm.masking_terms import (
        write_manifest as write_manifest,
    )
    from fincon.llm.remote_cache import RemoteCache as RemoteCache
    from fincon.llm.settings import (
        LLMSettings as LLMSettings,
    )
    from fincon.llm.settings import (
        build_backend as build_backend,
    )
    from fincon.llm.settings import (
        build_client as build_client,
    )
    from fincon.llm.types import (
        LLMResult as LLMResult,
    )
    from fincon.llm.types import (
        Message as Message,
    )
    from fincon.llm.types import (
        SamplingParams as SamplingParams,
    )
    from fincon.llm.types import (
        Usage as Usage,
    )

__getattr__, __dir__ = face(__name__, __file__)
