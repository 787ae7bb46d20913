"""In-process llama.cpp backend (``llama-cpp-python``).

The answer is grammar-constrained by the output schema: llama.cpp's
converter compiles the JSON schema into a GBNF grammar (tightened by
:mod:`.grammar`: [0, 1] numbers in steps of 0.05, ASCII strings), so even a
0.5B model emits one well-formed object and stops (without the schema it may
ramble past ``max_tokens`` and return cut-off JSON). The client still validates the
values (ranges, enums) and re-asks if needed. Since the grammar enforces the
shape, the prompt only sketches it (``enforces_schema``): the full schema
would cost ~200 prompt tokens on every call for nothing.

A ``Llama`` object is not thread-safe, so calls are serialised with a lock;
the concurrency helper still works, it just gains nothing here.

Prompt states are kept in RAM (``LlamaRAMCache``, ``prompt_cache_bytes``,
default 1 GiB; 0 turns it off): before a call, llama.cpp restores the saved
state whose tokens share the longest prefix with the new prompt and reads
only the rest. llama.cpp alone reuses only the previous call's prefix, and a
team's calls alternate between agents, so without it the manager re-read its
whole system prompt every day. Prompts are ordered to make this pay (stable
text first, the date and today's items last). Measured on the bench/team.py
prompts, 2 cores: manager 14.8 -> 13.0 s, news analyst 7.9 -> 6.4 s a call.
The state cache changes no answer's *meaning* but, like any change of batch
layout in llama.cpp, may change the exact floats and so a token now and
then: live answers were never reproducible across processes; the call
cache is what makes runs reproducible.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from fincon.errors import ConfigError
from fincon.llm.backends.fast_llama import fast_llama_class
from fincon.llm.backends.grammar import gbnf
from fincon.llm.backends.runtime import ensure_llama_cpp
from fincon.llm.bundled import BUNDLED, DEFAULT_MODEL, assemble, file_sha256, resolve_model_path
from fincon.llm.errors import LLMRequestRejected
from fincon.llm.types import Completion, Message, SamplingParams


def _import_llama():
    """``llama_cpp.Llama``, building llama-cpp-python first if it is missing
    (fincon.llm.backends.runtime: ``make demo`` does not install it)."""

    ensure_llama_cpp()
    from llama_cpp import Llama

    return Llama


def _prompt_states(capacity_bytes: int):
    """A ``LlamaRAMCache`` that stores states without their logits.

    ``Llama.save_state`` copies the logits of up to ``n_batch`` positions
    (512 x 151,936 floats = 311 MB for Qwen) into every state, and the RAM
    cache counts only the llama.cpp part (~20 MB for a 600-token prompt)
    against its capacity: a recording of the demo grew past 11 GB. The
    logits are not needed: a restored state is always followed by the
    evaluation of at least one token (``generate`` re-reads the last prompt
    token), which recomputes them. So a state keeps one zero row, which
    ``load_state`` broadcasts, and the capacity really bounds the memory.
    """
    import numpy as np
    from llama_cpp import LlamaRAMCache

    class PromptStates(LlamaRAMCache):
        def __setitem__(self, key, value) -> None:
            value.scores = np.zeros((1, value.scores.shape[1]), dtype=np.single)
            super().__setitem__(key, value)

    return PromptStates(capacity_bytes=capacity_bytes)


#: the threads a local model uses when the settings name none (docs/configuration.md)
THREADS_ENV = "FINCON_LLM_THREADS"


def default_threads() -> int:
    """``$FINCON_LLM_THREADS``, else up to 2 (one per core on these machines).

    Two CPU-heavy jobs side by side (two runs at once, or a test suite on
    two workers) each with as many threads as cores slow llama.cpp ~20x: its
    threads wait on each other. Setting the variable to 1 gives each job one
    core instead."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if raw:
        try:
            n = int(raw)
        except ValueError:
            n = 0
        if n < 1:
            raise ConfigError(f"{THREADS_ENV}={raw!r}: give a whole number of threads, 1 or more")
        return n
    return max(1, min(2, os.cpu_count() or 1))


class LocalLlamaBackend:
    name = "local"
    price_model = "local"
    #: always grammar from the schema (see the module docstring and .grammar); recorded with each answer
    structured_mode = "gbnf_schema"
    #: the grammar enforces the schema, so the prompt sketches it in one line (fincon.llm.schema)
    enforces_schema = True

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        seed: int = 0,
        cache_dir: Path | None = None,
        prompt_cache_bytes: int = 1 << 30,
        fast_sampling: bool = True,
    ):
        # The model's identity in cache keys is its content hash, not its path. A
        # bundled model's hash is pinned, so a replay needs no model file at all:
        # it is assembled on the first live call.
        if model is None or str(model) in BUNDLED:
            self._bundled = BUNDLED[str(model or DEFAULT_MODEL)]
            self._path: Path | None = None
            self.model_id = self._bundled.sha256
            self.model_name = self._bundled.name
        else:
            self._bundled = None
            self._path = resolve_model_path(model)
            self.model_id = file_sha256(self._path)
            self.model_name = self._path.name
        self._cache_dir = cache_dir
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.seed = seed
        self.prompt_cache_bytes = prompt_cache_bytes
        #: fincon.llm.backends.fast_llama: the same answers, sooner (off: llama-cpp-python's own
        #: sampler chain and state saving, for the test that compares the two)
        self.fast_sampling = fast_sampling
        self._llm = None
        self._lock = threading.Lock()
        self._grammars: dict[str, Any] = {}

    @property
    def path(self) -> Path:
        """The GGUF file (a bundled one is assembled and hash-checked here)."""
        if self._path is None:
            self._path = assemble(self._bundled, self._cache_dir)
        return self._path

    def load(self):
        """Load the model now (otherwise on the first live call: a run that
        is answered entirely from the cache never loads it)."""
        if self._llm is None:
            Llama = _import_llama()
            if self.fast_sampling:
                Llama = fast_llama_class(Llama)
            self._llm = Llama(
                model_path=str(self.path),
                n_ctx=self.n_ctx,
                n_threads=self.n_threads,
                n_threads_batch=self.n_threads,
                seed=self.seed,
                verbose=False,
            )
            if self.prompt_cache_bytes > 0:
                self._llm.set_cache(_prompt_states(self.prompt_cache_bytes))
        return self._llm

    def _grammar(self, schema: dict[str, Any]):
        """The compiled grammar of ``schema`` (parsed once per schema)."""
        key = json.dumps(schema, sort_keys=True)
        if key not in self._grammars:
            from llama_cpp import LlamaGrammar

            self._grammars[key] = LlamaGrammar.from_string(gbnf(schema), verbose=False)
        return self._grammars[key]

    def complete(self, messages: Sequence[Message], schema: dict[str, Any], params: SamplingParams) -> Completion:
        with self._lock:
            # time in the model starts once the lock is ours (calls queue for it)
            t0 = time.perf_counter()
            try:
                llm = self.load()
                out = llm.create_chat_completion(
                    messages=[m.model_dump() for m in messages],
                    grammar=self._grammar(schema),
                    temperature=params.temperature,
                    top_p=params.top_p,
                    max_tokens=params.max_tokens,
                    seed=params.seed,
                )
            except ValueError as exc:
                if "context window" not in str(exc):
                    raise
                # the same failure the openai path reports for a context_length_exceeded 400
                raise LLMRequestRejected(
                    f"local model: {exc}; raise the context with n_ctx in the llm settings "
                    f"(now {self.n_ctx}; e.g. llm: {{n_ctx: 4096}}) or shorten the prompt"
                ) from None
            model_s = time.perf_counter() - t0
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        used = int(usage.get("completion_tokens") or 0)
        if choice.get("finish_reason") == "length" and used < params.max_tokens:
            # llama.cpp cut max_tokens to what the context had left, without a word: the cut answer was
            # cached, and a rerun with a larger n_ctx replayed it (found in review)
            raise LLMRequestRejected(
                f"local model: the prompt ({usage.get('prompt_tokens')} tokens) left {used} of the answer's "
                f"{params.max_tokens} in the context of {self.n_ctx}; raise n_ctx in the llm settings "
                "(e.g. llm: {n_ctx: 8192}) or shorten the prompt"
            )
        return Completion(
            text=choice["message"]["content"] or "",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=str(choice.get("finish_reason") or ""),
            model_s=model_s,
        )

    def close(self) -> None:
        with self._lock:
            llm, self._llm = self._llm, None
        if llm is not None:
            try:
                llm.close()
            except Exception:  # pragma: no cover - best effort on shutdown
                pass
