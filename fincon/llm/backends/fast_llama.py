"""A ``llama_cpp.Llama`` that does two things faster and nothing differently.

Measured on the recorded MSFT team calls (1.5B model, 2 cores; the split is
printed by ``bench/llm.py --split``), a third of a call's time outside the
model's own decoding went to two avoidable costs of llama-cpp-python:

* **Grammar on the whole vocabulary.** Its greedy sampler chain runs the JSON
  grammar over all 151,936 candidate tokens at every step (about 14 ms a
  token) before it takes the most likely one. llama.cpp's own tools sample
  first and check the grammar only for the token they picked, falling back
  to the whole vocabulary when it is rejected. For greedy decoding
  (temperature 0: every analyst call, every recorded run) that is the same
  token by construction: the grammar masks tokens independently, so the best
  token it allows is the best token overall whenever that one is allowed.
  :func:`grammar_first_greedy` adds that check as a sampler in front of the
  chain's grammar: when the best token passes, the candidates shrink to it
  and the grammar and greedy samplers see one token; otherwise they see all
  of them, as before. Sampling at a temperature keeps llama-cpp-python's chain.
* **Logits copied into every saved prompt state.** ``Llama.save_state``
  copies ``n_batch`` rows of logits (311 MB for Qwen) into each state, which
  the prompt-state cache then throws away (``local._prompt_states``): about
  0.4 s a call. :meth:`FastLlama.save_state` never copies them.

Answers are the same token for token (``tests/test_llm_local.py`` compares
both samplers on one model in one process); the call cache's keys do not
change, so every recording replays as before.
May touch: llama_cpp only (imported by the caller, once the runtime is there).
"""

from __future__ import annotations

import ctypes
from typing import Any


def fast_llama_class(Llama: type) -> type:
    """A subclass of ``llama_cpp.Llama`` with the two shortcuts above."""
    import numpy as np
    from llama_cpp import LlamaState, llama_cpp as C

    class FastLlama(Llama):  # type: ignore[misc, valid-type]
        def _init_sampler(self, *args: Any, **kw: Any):
            # llama-cpp-python passes every argument by keyword (generate, sample)
            grammar = kw.get("grammar")
            plain = not args and not kw.get("logits_processor") and not kw.get("mirostat_mode")
            if kw.get("temp", 0.8) != 0.0 or grammar is None or not plain:
                return super()._init_sampler(*args, **kw)
            return grammar_first_greedy(self, grammar, kw)

        def save_state(self):
            size = C.llama_state_get_size(self._ctx.ctx)
            buf = (ctypes.c_uint8 * int(size))()
            n = C.llama_state_get_data(self._ctx.ctx, buf, size)
            if int(n) > int(size):
                raise RuntimeError("Failed to copy llama state data")
            return LlamaState(
                # one zero row: a restored state is always followed by the evaluation of at
                # least one token, which recomputes the logits (local._prompt_states)
                scores=np.zeros((1, self._n_vocab), dtype=np.single),
                input_ids=self.input_ids.copy(),
                n_tokens=self.n_tokens,
                llama_state=ctypes.string_at(buf, int(n)),
                llama_state_size=n,
                seed=self._seed,
            )

    FastLlama.__name__ = FastLlama.__qualname__ = "FastLlama"
    return FastLlama


def grammar_first_greedy(llm: Any, grammar: Any, kw: dict[str, Any]):
    """Penalties, then the best token checked against the grammar alone, then
    the grammar and greedy samplers: llama-cpp-python's greedy chain with the
    check in front (see the module docstring)."""
    import numpy as np
    from llama_cpp import _internals, llama_cpp as C

    chain = _internals.LlamaSampler()
    chain.add_penalties(
        n_vocab=llm._n_vocab,
        penalty_last_n=llm.last_n_tokens_size,
        penalty_repeat=kw.get("repeat_penalty", 1.0),
        penalty_freq=kw.get("frequency_penalty", 0.0),
        penalty_present=kw.get("presence_penalty", 0.0),
    )
    gram = C.llama_sampler_init_grammar(
        llm._model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
    )
    record = np.dtype([("id", np.intc), ("logit", np.single), ("p", np.single)], align=True)

    def best_if_allowed(cur_p) -> None:
        arr = cur_p.contents
        n = int(arr.size)
        if n <= 1:
            return
        rows = (C.llama_token_data * n).from_address(ctypes.addressof(arr.data.contents))
        logits = np.frombuffer(rows, dtype=record, count=n)["logit"]
        i = int(np.argmax(logits))  # the first of equals, as the greedy sampler takes
        best = rows[i]
        one = C.llama_token_data(id=best.id, logit=best.logit, p=best.p)
        probe = C.llama_token_data_array(data=ctypes.pointer(one), size=1, selected=-1, sorted=False)
        C.llama_sampler_apply(gram, ctypes.byref(probe))  # applying never advances the grammar
        if np.isfinite(one.logit):  # allowed: the candidates shrink to it
            rows[0] = one
            arr.size = 1
            arr.selected = -1
            arr.sorted = False

    chain.add_custom(best_if_allowed)
    # the chain owns (and frees) the grammar sampler and advances it with every accepted token
    C.llama_sampler_chain_add(chain.sampler, gram)
    chain.add_greedy()
    return chain
