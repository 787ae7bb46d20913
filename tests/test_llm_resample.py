"""An invalid answer at temperature > 0 is re-sampled before it counts as a
failure (issue 18, item 5): after the re-ask's answer is invalid too, one
fresh sample of the original question (another seed: another cache key),
counted in the ledger and the audit; at temperature 0 a new sample would be
the same answer, so nothing changes there. A recording made before
re-samples existed still replays as recorded."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from pydantic import BaseModel

from fincon.llm import CallCache, LLMClient, LLMInvalidAnswer, SamplingParams, UsageLedger
from fincon.llm.client import RESAMPLE_SEED_OFFSET
from fincon.llm.types import Completion

MSGS = [{"role": "user", "content": "TSLA: buy, sell or hold?"}]
BAD = '{"action": "strong buy"}'
GOOD = '{"action": "hold"}'


class Verdict(BaseModel):
    action: Literal["buy", "sell", "hold"]


class Scripted:
    """Answers from a list, in order; records the sampling of every request."""

    name = "scripted"
    model_id = "scripted-1"
    price_model = "scripted-1"

    def __init__(self, answers):
        self.answers = list(answers)
        self.asked: list[tuple[list, SamplingParams]] = []

    def complete(self, messages, schema, params):
        self.asked.append((list(messages), params))
        return Completion(self.answers.pop(0), prompt_tokens=10, completion_tokens=2)

    def close(self):
        pass


def test_two_invalid_answers_at_temperature_above_0_get_a_fresh_sample(tmp_path):
    backend = Scripted([BAD, BAD, GOOD])
    ledger = UsageLedger()
    params = SamplingParams(temperature=0.7, seed=3)
    client = LLMClient(backend, ledger=ledger, params=params)
    res = client.ask(MSGS, Verdict, agent="manager", day="2024-01-02")
    assert res.value.action == "hold" and len(res.keys) == 3 and len(set(res.keys)) == 3
    assert res.usage.calls == 3 and res.usage.prompt_tokens == 30
    # the re-sample asks the original question again (no quoted mistake), with another seed
    (first, p1), (reask, _), (fresh, p3) = backend.asked
    assert fresh == first and len(reask) == len(first) + 2
    assert (p1.seed, p3.seed, p3.temperature) == (3, 3 + RESAMPLE_SEED_OFFSET, 0.7)
    s = ledger.summary()
    assert (s["llm_calls"], s["llm_reasks"], s["llm_resamples"], s["llm_failures"]) == (3, 1, 1, 0)
    [reask_event, resample_event] = ledger.events()
    assert reask_event["event"] == "reask" and resample_event["event"] == "resample"
    assert resample_event["keys"] == [res.keys[1]] and "action" in resample_event["error"]


def test_an_invalid_re_sample_is_the_failure_the_agent_falls_back_on():
    client = LLMClient(Scripted([BAD, BAD, BAD]), params=SamplingParams(temperature=0.7))
    with pytest.raises(LLMInvalidAnswer) as info:
        client.ask(MSGS, Verdict, agent="manager")
    assert len(info.value.keys) == 3 and len(info.value.errors) == 3
    s = client.ledger.summary()
    assert (s["llm_calls"], s["llm_resamples"], s["llm_failures"]) == (3, 1, 1)


def test_at_temperature_0_there_is_no_re_sample():
    backend = Scripted([BAD, BAD, GOOD])
    client = LLMClient(backend, params=SamplingParams(temperature=0.0))
    with pytest.raises(LLMInvalidAnswer) as info:
        client.ask(MSGS, Verdict)
    assert len(info.value.keys) == 2 and len(backend.asked) == 2 and client.ledger.summary()["llm_resamples"] == 0


def test_a_recording_without_the_re_sample_replays_as_recorded(tmp_path):
    """A cache recorded before re-samples existed: two invalid answers, then
    the agent's fallback. Its replay fails the same way, without a cache miss."""
    path = tmp_path / "llm.sqlite"
    params = SamplingParams(temperature=0.7)
    recorder = LLMClient(Scripted([BAD, BAD]), cache=CallCache(path, "read-write"), params=params)
    recorder._resample = lambda *a, **k: None  # the client as it was before re-samples
    with pytest.raises(LLMInvalidAnswer) as recorded:
        recorder.ask(MSGS, Verdict, agent="manager", day="2024-01-02")
    recorder.close()
    replay = LLMClient(Scripted([]), cache=CallCache(path, "replay"), params=params)
    with pytest.raises(LLMInvalidAnswer) as replayed:
        replay.ask(MSGS, Verdict, agent="manager", day="2024-01-02")
    assert replayed.value.keys == recorded.value.keys
    assert json.dumps(replay.ledger.events()) == json.dumps(recorder.ledger.events())  # same audit, byte for byte
    # and a recording that has the re-sample replays it
    rec2 = LLMClient(Scripted([BAD, BAD, GOOD]), cache=CallCache(tmp_path / "b.sqlite", "read-write"), params=params)
    assert rec2.ask(MSGS, Verdict).value.action == "hold"
    rec2.close()
    again = LLMClient(Scripted([]), cache=CallCache(tmp_path / "b.sqlite", "replay"), params=params)
    res = again.ask(MSGS, Verdict)
    assert res.value.action == "hold" and res.usage.cache_hit and again.ledger.summary()["llm_resamples"] == 1
