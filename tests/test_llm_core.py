"""Client guardrails, cache/replay, ledger/budget and concurrency, driven by a
scripted backend so each path (valid, re-ask, typed failure) is exercised
deterministically. The real backends are covered in test_llm_local.py and
test_llm_openai.py."""

from __future__ import annotations

import json
import threading
import time
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from fincon.errors import ConfigError
from fincon.llm import (
    BudgetExhausted,
    CacheMiss,
    CallCache,
    LLMClient,
    LLMInvalidAnswer,
    LLMSettings,
    ModelPrice,
    SamplingParams,
    UsageLedger,
    call_key,
    run_concurrently,
)
from fincon.llm.bundled import QWEN_0_5B, BundledModel, assemble
from fincon.llm.errors import ModelFileError
from fincon.llm.types import Completion, Message


class Verdict(BaseModel):
    action: Literal["buy", "sell", "hold"]
    confidence: float = Field(ge=0, le=1)


class Scripted:
    """Answers from a list, in order; records what it was asked."""

    name = "scripted"
    model_id = "scripted-1"
    price_model = "scripted-1"

    def __init__(self, answers):
        self.answers = list(answers)
        self.seen: list[list[Message]] = []

    def complete(self, messages, schema, params):
        self.seen.append(list(messages))
        return Completion(self.answers.pop(0), prompt_tokens=100, completion_tokens=10)

    def close(self):
        pass


MSGS = [{"role": "user", "content": "TSLA fell 3 days in a row. Verdict?"}]


def test_valid_answer_returns_validated_object_and_usage():
    client = LLMClient(Scripted(['{"action": "sell", "confidence": 0.7}']))
    res = client.ask(MSGS, Verdict, agent="a", day="2023-01-03")
    assert res.value == Verdict(action="sell", confidence=0.7)
    assert (res.usage.prompt_tokens, res.usage.completion_tokens, res.usage.cache_hit) == (100, 10, False)
    assert len(res.keys) == 1 and len(res.keys[0]) == 64


def test_schema_is_sent_to_the_model():
    backend = Scripted(['{"action": "sell", "confidence": 0.7}'])
    LLMClient(backend).ask(MSGS, Verdict)
    system = backend.seen[0][0]
    assert system.role == "system" and '"enum":["buy","sell","hold"]' in system.content


def test_invalid_answer_gets_one_reask_quoting_the_error():
    backend = Scripted(['{"action": "moon", "confidence": 0.7}', '{"action": "buy", "confidence": 0.6}'])
    ledger = UsageLedger()
    res = LLMClient(backend, ledger=ledger).ask(MSGS, Verdict, agent="analyst", day="2023-01-03")
    assert res.value.action == "buy" and len(res.keys) == 2 and res.usage.reasks == 1
    reask = backend.seen[1]
    assert reask[-2] == Message(role="assistant", content='{"action": "moon", "confidence": 0.7}')
    assert "action: Input should be 'buy', 'sell' or 'hold'" in reask[-1].content
    row = ledger.usage_rows()[0]
    assert (row["agent"], row["calls"], row["reasks"], row["failures"]) == ("analyst", 2, 1, 0)
    [event] = ledger.events()
    assert event["event"] == "reask" and "action" in event["error"] and event["keys"] == [res.keys[0]]


def test_two_invalid_answers_raise_typed_failure_and_are_counted():
    backend = Scripted(["not json at all", '{"action": "buy", "confidence": 7}'])
    ledger = UsageLedger()
    with pytest.raises(LLMInvalidAnswer) as info:
        LLMClient(backend, ledger=ledger).ask(MSGS, Verdict, agent="analyst", day="2023-01-04")
    assert "not valid JSON" in info.value.errors[0]
    assert "confidence: Input should be less than or equal to 1" in info.value.errors[1]
    assert len(info.value.keys) == 2
    s = ledger.summary()
    assert (s["llm_calls"], s["llm_reasks"], s["llm_failures"]) == (2, 1, 1)
    assert [e["event"] for e in ledger.events()] == ["failure", "reask"]


def test_code_fenced_json_is_accepted():
    res = LLMClient(Scripted(['```json\n{"action": "hold", "confidence": 0.5}\n```'])).ask(MSGS, Verdict)
    assert res.value.action == "hold"


def test_cache_read_write_then_replay(tmp_path):
    db = tmp_path / "llm.sqlite"
    backend = Scripted(['{"action": "sell", "confidence": 0.7}'])
    first = LLMClient(backend, cache=CallCache(db, "read-write")).ask(MSGS, Verdict, agent="a", day="d1")
    # second client: nothing scripted left, so any live call would fail
    ledger = UsageLedger()
    again = LLMClient(Scripted([]), cache=CallCache(db, "replay"), ledger=ledger).ask(MSGS, Verdict, agent="a", day="d1")
    assert again.value == first.value and again.keys == first.keys and again.usage.cache_hit
    assert ledger.runtime_summary()["llm_live_calls"] == 0 and ledger.runtime_summary()["llm_cache_hits"] == 1
    # same reproducible usage as the live call (tokens come from the cache)
    assert again.usage.prompt_tokens == 100
    [row] = CallCache(db, "read-write").rows()
    assert row["answer"] == '{"action": "sell", "confidence": 0.7}' and row["agent"] == "a"
    assert json.loads(row["messages"])[-1]["content"] == MSGS[0]["content"]


def test_replay_miss_names_the_call(tmp_path):
    db = tmp_path / "llm.sqlite"
    CallCache(db, "read-write").close()
    client = LLMClient(Scripted([]), cache=CallCache(db, "replay"))
    with pytest.raises(CacheMiss, match=r"agent 'pm', day 2023-02-01.*TSLA fell 3 days"):
        client.ask(MSGS, Verdict, agent="pm", day="2023-02-01")


def test_replay_without_recording_is_an_error(tmp_path):
    with pytest.raises(CacheMiss, match="does not exist"):
        CallCache(tmp_path / "none.sqlite", "replay")


def test_cache_off_writes_nothing(tmp_path):
    db = tmp_path / "llm.sqlite"
    LLMClient(Scripted(['{"action": "sell", "confidence": 0.7}']), cache=CallCache(db, "off")).ask(MSGS, Verdict)
    assert not db.exists()


def test_key_depends_on_every_part():
    msgs = (Message(role="user", content="x"),)
    p = SamplingParams()
    base = call_key("local", "m", msgs, {"a": 1}, p)
    assert base == call_key("local", "m", msgs, {"a": 1}, SamplingParams())
    variants = {
        call_key("openai", "m", msgs, {"a": 1}, p),
        call_key("local", "m2", msgs, {"a": 1}, p),
        call_key("local", "m", (Message(role="user", content="y"),), {"a": 1}, p),
        call_key("local", "m", msgs, {"a": 2}, p),
        call_key("local", "m", msgs, {"a": 1}, SamplingParams(temperature=0.5)),
        call_key("local", "m", msgs, {"a": 1}, SamplingParams(seed=1)),
    }
    assert base not in variants and len(variants) == 6


def test_ledger_cost_budget_and_files(tmp_path):
    ledger = UsageLedger(prices={"gpt-x": ModelPrice(input_per_million=2.0, output_per_million=8.0)}, max_tokens=255)
    ledger.record_call("analyst", "2023-01-03", "gpt-x", 100, 20, 0.5, cache_hit=False)
    ledger.record_call("analyst", "2023-01-03", "gpt-x", 100, 20, 0.001, cache_hit=True)
    ledger.record_call("manager", "2023-01-03", "local", 5, 5, 1.0, cache_hit=False)
    ledger.record_fallback("manager", "2023-01-03", reason="invalid", detail={"ticker": "TSLA"})
    ledger.check_budget()  # 250 used of 255
    ledger.record_call("manager", "2023-01-04", "local", 10, 0, 1.0, cache_hit=False)
    with pytest.raises(BudgetExhausted, match="260 tokens used of --max-tokens 255"):
        ledger.check_budget()
    s = ledger.summary()
    assert s["llm_cost_usd"] == pytest.approx(2 * (100 * 2.0 + 20 * 8.0) / 1e6)
    assert (s["llm_calls"], s["llm_tokens"], s["llm_fallbacks"]) == (4, 260, 1)
    paths = ledger.write(tmp_path)
    usage = paths["usage"].read_text().splitlines()
    assert usage[0] == "day,agent,calls,prompt_tokens,completion_tokens,total_tokens,cost_usd,reasks,fallbacks,failures"
    assert usage[1] == "2023-01-03,analyst,2,200,40,240,0.000720,0,0,0"
    assert usage[2] == "2023-01-03,manager,1,5,5,10,0.000000,0,1,0"
    runtime = paths["runtime"].read_text().splitlines()
    assert runtime[1].startswith("2023-01-03,analyst,1,1,") and runtime[1].endswith(",0.000360")
    [event] = [json.loads(l) for l in paths["audit"].read_text().splitlines()]
    assert event["event"] == "fallback" and event["detail"] == {"ticker": "TSLA"}


def test_budget_check_at_exact_limit():
    ledger = UsageLedger(max_tokens=250)
    ledger.record_call("a", "d", "m", 240, 9, 0.0, cache_hit=False)
    ledger.check_budget()
    ledger.record_call("a", "d", "m", 1, 0, 0.0, cache_hit=False)
    with pytest.raises(BudgetExhausted):
        ledger.check_budget()


def test_concurrency_runs_in_parallel_and_keeps_input_order():
    active, peak, lock = [0], [0], threading.Lock()

    def task(i):
        def run():
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.05 * (5 - i))  # later tasks finish first
            with lock:
                active[0] -= 1
            return i
        return run

    assert run_concurrently([task(i) for i in range(5)], limit=3) == [0, 1, 2, 3, 4]
    assert peak[0] == 3


def test_concurrency_reraises_first_failure_in_input_order():
    def boom(msg):
        def run():
            raise ValueError(msg)
        return run
    with pytest.raises(ValueError, match="first"):
        run_concurrently([lambda: 1, boom("first"), boom("second")], limit=3)


def test_settings_refuse_api_keys_in_config():
    with pytest.raises(ConfigError, match="environment"):
        LLMSettings.model_validate({"backend": "openai", "model": "gpt-x", "api_key": "sk-123"})
    assert LLMSettings().model is None and LLMSettings().backend == "local"


def test_bundled_model_hash_mismatch_is_refused(tmp_path):
    wrong = BundledModel(**{**QWEN_0_5B.__dict__, "sha256": "0" * 64})
    with pytest.raises(ModelFileError, match="refusing it"):
        assemble(wrong, tmp_path)
    assert list(tmp_path.iterdir()) == []  # nothing half-written is left behind


def test_tampered_model_file_is_refused(tmp_path):
    fake = BundledModel(**{**QWEN_0_5B.__dict__, "filename": "tampered.gguf"})
    target = tmp_path / "tampered.gguf"
    target.write_bytes(b"GGUF" + b"\0" * 100)
    with pytest.raises(ModelFileError, match="delete it"):
        assemble(fake, tmp_path)


def test_missing_part_package_says_how_to_install(tmp_path):
    ghost = BundledModel(**{**QWEN_0_5B.__dict__, "module_prefix": "fincon_no_such_part", "dist_prefix": "no-such-part"})
    with pytest.raises(ModelFileError, match="no-such-part1==0.9.0 is not installed"):
        assemble(ghost, tmp_path)


def test_replay_with_a_bundled_model_needs_no_model_file(tmp_path):
    """The bundled model's identity is its pinned hash: a replay neither
    assembles nor loads it (and needs no llama.cpp)."""
    from fincon.llm.backends.local import LocalLlamaBackend
    from fincon.llm.bundled import QWEN_1_5B

    model_dir = tmp_path / "models"
    backend = LocalLlamaBackend(None, cache_dir=model_dir)
    assert backend.model_id == QWEN_1_5B.sha256 and backend.model_name == QWEN_1_5B.name
    db = tmp_path / "llm.sqlite"
    key_backend = Scripted(['{"action": "buy", "confidence": 0.6}'])
    key_backend.name, key_backend.model_id = backend.name, backend.model_id  # record as if the 1.5B answered
    LLMClient(key_backend, cache=CallCache(db, "read-write")).ask(MSGS, Verdict)
    res = LLMClient(backend, cache=CallCache(db, "replay")).ask(MSGS, Verdict)
    assert res.value.action == "buy" and res.usage.cache_hit
    assert not model_dir.exists() and backend._llm is None
