"""The one way agents talk to a model.

:meth:`LLMClient.ask` takes chat messages and a pydantic output model and
returns an :class:`~fincon.llm.types.LLMResult` holding a *validated* object
plus usage. In between it

1. appends the output schema to the prompt: the full JSON schema, or one
   line sketching it for a backend that enforces the schema while decoding
   (``enforces_schema``; see :mod:`fincon.llm.schema`),
2. looks the call up in the content-addressed cache (or fails in replay mode),
3. otherwise asks the backend, stores the raw answer and continues with what
   the cache holds for the call afterwards (another run sharing the cache may
   have stored a different answer first; acting on the stored one is what
   makes every run's replay faithful),
4. validates the answer; an invalid one gets exactly one re-ask that quotes the
   validation error; when that answer is invalid too and the call samples
   (temperature > 0), one fresh sample of the original question follows
   (:func:`resample_params`: another seed, so another cache key; a re-ask
   only shows the model its own mistake, a new sample may avoid it); the
   last invalid answer raises :class:`~fincon.llm.errors.LLMInvalidAnswer`,
   which the agent must handle (its fallback),
5. books calls, tokens, latency, cache hits, re-asks, re-samples and
   failures in the ledger under the calling agent and simulated day.

A recording made before re-samples existed replays as it was recorded: in
replay mode a re-sample the cache does not hold is not asked for, and the
call fails as it did then (the agent falls back, as in the recording).
"""

from __future__ import annotations

import logging
import time
from typing import Sequence

from fincon.llm.backends.base import Backend
from fincon.llm.cache import CacheMode, CallCache, call_key
from fincon.llm.errors import CacheMiss, LLMAuthError, LLMInvalidAnswer, LLMModelNotFound, LLMRequestRejected
from fincon.llm.ledger import UsageLedger
from fincon.llm.masking import Masker
from fincon.llm.schema import AnswerInvalid, parse_answer, reask_message, schema_for, schema_instruction
from fincon.llm.types import LLMResult, Message, SamplingParams, T, Usage, as_messages

log = logging.getLogger(__name__)


def with_schema_instruction(messages: Sequence[Message], schema: dict, sketch: bool = False) -> tuple[Message, ...]:
    """Put the schema instruction (the full schema, or with ``sketch`` one
    line) at the end of the system message (adding one if the conversation
    has none)."""
    instruction = schema_instruction(schema, sketch)
    msgs = list(messages)
    if msgs and msgs[0].role == "system":
        msgs[0] = Message(role="system", content=f"{msgs[0].content.rstrip()}\n\n{instruction}")
    else:
        msgs.insert(0, Message(role="system", content=instruction))
    return tuple(msgs)


class LLMClient:
    """Cache + ledger + guardrails around one backend. Thread-safe."""

    def __init__(
        self,
        backend: Backend,
        cache: CallCache | None = None,
        ledger: UsageLedger | None = None,
        params: SamplingParams | None = None,
    ):
        self.backend = backend
        self.cache = cache if cache is not None else CallCache(None, CacheMode.OFF)
        self.ledger = ledger if ledger is not None else UsageLedger()
        self.params = params or SamplingParams()
        #: --anonymize: every prompt and schema masked, every answer mapped back (fincon.llm.masking)
        self.masker: Masker | None = None
        #: check the token budget before every question (an evaluation, which has no day to stop at;
        #: a strategy checks it itself at the start of each day and stops cleanly there)
        self.budget_per_question = False

    # -- the interface ---------------------------------------------------
    def ask(
        self,
        messages,
        output: type[T],
        *,
        agent: str = "default",
        day: str | None = None,
        params: SamplingParams | None = None,
    ) -> LLMResult[T]:
        """Ask for one ``output`` object; see the module docstring."""
        if self.budget_per_question:
            self.ledger.check_budget()
        params = params or self.params
        mask = self.masker
        schema = schema_for(output)
        messages = as_messages(messages)
        if mask is not None:  # what the model sees names no firm, no date, no price level
            schema, messages = mask.schema(schema), mask.messages(messages, day)
        answer = (lambda raw: mask.unmask(raw, day)) if mask is not None else (lambda raw: raw)
        sketch = bool(getattr(self.backend, "enforces_schema", False))
        msgs = with_schema_instruction(messages, schema, sketch)
        first = self._call(msgs, schema, params, agent, day)
        try:
            value = parse_answer(answer(first[0]), output)
            return LLMResult(value=value, usage=first[1], keys=(first[2],))
        except AnswerInvalid as exc:
            err1 = str(exc)
        self.ledger.record_reask(agent, day, first[2], err1)
        retry_msgs = msgs + (
            Message(role="assistant", content=first[0]),
            Message(role="user", content=reask_message(mask.text(err1, day) if mask else err1, schema, sketch)),
        )
        second = self._call(retry_msgs, schema, params, agent, day)
        keys = (first[2], second[2])
        usage = _combine(first[1], second[1])
        try:
            value = parse_answer(answer(second[0]), output)
            return LLMResult(value=value, usage=usage, keys=keys)
        except AnswerInvalid as exc:
            err2 = str(exc)
        errors = (err1, err2)
        if params.temperature > 0:
            third = self._resample(msgs, schema, params, agent, day, keys[-1], err2)
            if third is not None:
                keys += (third[2],)
                usage = _combine(usage, third[1])
                try:
                    value = parse_answer(answer(third[0]), output)
                    return LLMResult(value=value, usage=usage, keys=keys)
                except AnswerInvalid as exc:
                    errors += (str(exc),)
        self.ledger.record_failure(agent, day, keys, errors)
        raise LLMInvalidAnswer(agent, keys, errors)

    def _resample(
        self,
        msgs: tuple[Message, ...],
        schema: dict,
        params: SamplingParams,
        agent: str,
        day: str | None,
        after: str,
        error: str,
    ) -> tuple[str, Usage, str] | None:
        """One fresh sample of the original question, or None when a replay's
        recording has none (it was made before re-samples existed)."""
        fresh = resample_params(params)
        if self.cache.mode is CacheMode.REPLAY:
            b = self.backend
            if self.cache.get(call_key(b.name, b.model_id, msgs, schema, fresh)) is None:
                log.info(
                    "%s %s: the recording holds no re-sample after two invalid answers; failing as it did",
                    day or "-",
                    agent,
                )
                return None
        self.ledger.record_resample(agent, day, after, error)
        return self._call(msgs, schema, fresh, agent, day)

    def check_budget(self) -> None:
        self.ledger.check_budget()

    def close(self) -> None:
        self.backend.close()
        self.cache.close()

    # -- one raw call ----------------------------------------------------
    def _call(
        self, msgs: tuple[Message, ...], schema: dict, params: SamplingParams, agent: str, day: str | None
    ) -> tuple[str, Usage, str]:
        b = self.backend
        key = call_key(b.name, b.model_id, msgs, schema, params)
        t0 = time.perf_counter()
        hit = self.cache.get(key)
        if hit is not None:
            latency = time.perf_counter() - t0
            self.ledger.record_call(
                agent,
                day,
                b.price_model,
                hit.prompt_tokens,
                hit.completion_tokens,
                latency,
                True,
                structured_mode=hit.structured_mode,
                key=key,
            )
            return hit.answer, Usage(hit.prompt_tokens, hit.completion_tokens, latency, cache_hit=True), key
        if self.cache.mode is CacheMode.REPLAY:
            last_user = next((m.content for m in reversed(msgs) if m.role == "user"), "")
            snippet = " ".join(last_user.split())[:80]
            miss = CacheMiss(
                f"replay: call {key[:16]} (agent {agent!r}, day {day or '-'}, backend {b.name}, "
                f"model {getattr(b, 'model_name', b.price_model)}) is not in {self.cache.path}; prompt starts {snippet!r}. "
                "Re-record with --llm-cache read-write"
            )
            self.ledger.record_event("stop", agent, day, reason=f"CacheMiss: {miss}")
            raise miss
        try:
            completion = b.complete(msgs, schema, params)
        except (LLMAuthError, LLMModelNotFound, LLMRequestRejected) as exc:  # the run stops: its audit says why
            self.ledger.record_event("stop", agent, day, reason=f"{type(exc).__name__}: {exc}")
            raise
        latency = time.perf_counter() - t0
        mode = completion.structured_mode or str(getattr(b, "structured_mode", "") or "")
        stored = self.cache.put(
            key,
            backend=b.name,
            model=b.model_id,
            agent=agent,
            messages=msgs,
            schema=schema,
            params=params,
            answer=completion.text,
            prompt_tokens=completion.prompt_tokens,
            completion_tokens=completion.completion_tokens,
            latency_s=latency,
            structured_mode=mode,
        )
        model_s = latency if completion.model_s is None else min(completion.model_s, latency)
        if stored.answer != completion.text:
            log.info(
                "call %s: another run stored its answer first; acting on the stored answer so that a replay "
                "reproduces this run",
                key[:16],
            )
        # the stored row, not this completion: a replay reads exactly these values
        self.ledger.record_call(
            agent,
            day,
            b.price_model,
            stored.prompt_tokens,
            stored.completion_tokens,
            latency,
            False,
            structured_mode=stored.structured_mode,
            model_s=model_s,
            key=key,
        )
        usage = Usage(stored.prompt_tokens, stored.completion_tokens, latency, cache_hit=False)
        return stored.answer, usage, key


#: added to the seed of a re-sample: far from the small seeds that runs and
#: training episodes use, so a re-sample is not another episode's first sample
RESAMPLE_SEED_OFFSET = 1_000_003


def resample_params(params: SamplingParams) -> SamplingParams:
    """The sampling of a re-sample: the same but for the seed (a new cache key,
    the same in a replay)."""
    return params.model_copy(update={"seed": params.seed + RESAMPLE_SEED_OFFSET})


def _combine(a: Usage, b: Usage) -> Usage:
    return Usage(
        prompt_tokens=a.prompt_tokens + b.prompt_tokens,
        completion_tokens=a.completion_tokens + b.completion_tokens,
        latency_s=a.latency_s + b.latency_s,
        cache_hit=a.cache_hit and b.cache_hit,
        calls=a.calls + b.calls,
        reasks=1,
    )
