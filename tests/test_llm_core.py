"""Client guardrails, cache/replay, ledger/budget and concurrency, driven by a
scripted backend so each path (valid, re-ask, typed failure) is exercised
deterministically. The real backends are covered in test_llm_local.py and
test_llm_openai.py."""

from __future__ import annotations

import json
import os
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
from fincon.llm.errors import LLMError, ModelFileError
from fincon.llm.types import Completion, Message
from fincon.testing import Scripted


class Verdict(BaseModel):
    action: Literal["buy", "sell", "hold"]
    confidence: float = Field(ge=0, le=1)


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


class Grammar(Scripted):
    """A backend that enforces the schema while decoding (llama.cpp)."""

    enforces_schema = True


class Nested(BaseModel):
    class Point(BaseModel):
        why: str = Field(max_length=50)
        ids: list[str] = Field(max_length=2, examples=[["E1"]])

    direction: Literal["up", "down"]
    size: float = Field(ge=0, le=1)
    points: list[Point] = Field(max_length=2)


def test_a_backend_that_enforces_the_schema_gets_a_one_line_sketch_instead():
    from fincon.llm.schema import schema_for, schema_sketch

    assert schema_sketch(schema_for(Nested)) == (
        '{"direction":"up|down","size":0-1,"points":[{"why":"text (max 50 chars)","ids":["E1"]},...]}'
    )
    backend = Grammar(['{"action": "moon", "confidence": 0.7}', '{"action": "buy", "confidence": 0.6}'])
    res = LLMClient(backend).ask(MSGS, Verdict)
    assert res.value.action == "buy"
    system, reask = backend.seen[0][0].content, backend.seen[1][-1].content
    assert system.endswith('shaped like this: {"action":"buy|sell|hold","confidence":0-1}')
    assert '"enum"' not in system and '"enum"' not in reask  # no full schema, also not in the re-ask
    assert "action: Input should be 'buy', 'sell' or 'hold'" in reask and '"action":"buy|sell|hold"' in reask
    # the same question to a backend that does not enforce it: the full schema, another cache key
    plain = Scripted(['{"action": "buy", "confidence": 0.6}'])
    other = LLMClient(plain).ask(MSGS, Verdict)
    assert '"enum":["buy","sell","hold"]' in plain.seen[0][0].content and other.keys != res.keys


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


@pytest.mark.parametrize(
    "raw, why",
    [
        ('{"action": "hold", "n": ' + "9" * 5000 + "}", "too long to read"),  # Python's int-string limit
        ('{"action": ' + "[" * 100_000 + "]" * 100_000 + "}", "too deeply nested"),  # json's recursion
    ],
)
def test_json_python_cannot_read_is_an_invalid_answer_asked_again(raw, why):
    """Found in review: json.loads raises ValueError (a 5,000-digit number) or RecursionError (brackets
    nested 100,000 deep) besides JSONDecodeError, and both left LLMClient.ask as a traceback: no re-ask,
    no failure counted (and the cached answer crashed its replay the same way)."""
    backend = Scripted([raw, '{"action": "buy", "confidence": 0.6}'])
    ledger = UsageLedger()
    res = LLMClient(backend, ledger=ledger).ask(MSGS, Verdict, agent="analyst", day="2023-01-05")
    assert res.value.action == "buy" and res.usage.reasks == 1
    assert why in ledger.events()[0]["error"]


def test_code_fenced_json_is_accepted():
    res = LLMClient(Scripted(['```json\n{"action": "hold", "confidence": 0.5}\n```'])).ask(MSGS, Verdict)
    assert res.value.action == "hold"


def test_cache_read_write_then_replay(tmp_path):
    db = tmp_path / "llm.sqlite"
    backend = Scripted(['{"action": "sell", "confidence": 0.7}'])
    first = LLMClient(backend, cache=CallCache(db, "read-write")).ask(MSGS, Verdict, agent="a", day="d1")
    # second client: nothing scripted left, so any live call would fail
    ledger = UsageLedger()
    again = LLMClient(Scripted([]), cache=CallCache(db, "replay"), ledger=ledger).ask(
        MSGS, Verdict, agent="a", day="d1"
    )
    assert again.value == first.value and again.keys == first.keys and again.usage.cache_hit
    assert ledger.runtime_summary()["llm_live_calls"] == 0 and ledger.runtime_summary()["llm_cache_hits"] == 1
    # same reproducible usage as the live call (tokens come from the cache)
    assert again.usage.prompt_tokens == 100
    [row] = CallCache(db, "read-write").rows()
    assert row["answer"] == '{"action": "sell", "confidence": 0.7}' and row["agent"] == "a"
    assert json.loads(row["messages"])[-1]["content"] == MSGS[0]["content"]


def _recorded_cache(db):
    """A cache file holding one unrelated call (a read-write cache is created by its first write)."""
    LLMClient(Scripted(['{"action": "hold", "confidence": 0.5}']), cache=CallCache(db, "read-write")).ask(
        [{"role": "user", "content": "unrelated"}], Verdict
    )


def test_replay_miss_names_the_call(tmp_path):
    db = tmp_path / "llm.sqlite"
    _recorded_cache(db)
    client = LLMClient(Scripted([]), cache=CallCache(db, "replay"))
    with pytest.raises(CacheMiss, match=r"agent 'pm', day 2023-02-01.*TSLA fell 3 days"):
        client.ask(MSGS, Verdict, agent="pm", day="2023-02-01")
    # the stop is in the audit (found in review: llm_audit.jsonl held the re-asks only, no word of the stop)
    client.ledger.write(tmp_path)
    (stop,) = [json.loads(x) for x in (tmp_path / "llm_audit.jsonl").read_text().splitlines()]
    assert stop["event"] == "stop" and stop["agent"] == "pm" and stop["reason"].startswith("CacheMiss: replay: call")


def test_replay_without_recording_is_an_error(tmp_path):
    with pytest.raises(CacheMiss, match="does not exist"):
        CallCache(tmp_path / "none.sqlite", "replay")


def test_cache_off_writes_nothing(tmp_path):
    db = tmp_path / "llm.sqlite"
    LLMClient(Scripted(['{"action": "sell", "confidence": 0.7}']), cache=CallCache(db, "off")).ask(MSGS, Verdict)
    assert not db.exists()


def test_a_read_write_cache_is_created_by_its_first_write_only(tmp_path):
    """A run that fails before its first answer (server down, bad URL) leaves no cache behind,
    but a run that starts before another one creates the file still reads what it stores."""
    from fincon.llm.errors import LLMUnavailable

    class Down(Scripted):
        def complete(self, messages, schema, params):
            raise LLMUnavailable("LLM server http://x failed 1 attempt (last: down); start it")

    db = tmp_path / "cache" / "llm.sqlite"
    early = CallCache(db, "read-write")
    with pytest.raises(LLMUnavailable):
        LLMClient(Down([]), cache=early).ask(MSGS, Verdict)
    assert list(tmp_path.iterdir()) == [] and len(early) == 0
    LLMClient(Scripted(['{"action": "sell", "confidence": 0.7}']), cache=CallCache(db, "read-write")).ask(MSGS, Verdict)
    res = LLMClient(Scripted([]), cache=early).ask(MSGS, Verdict)  # created by the other run meanwhile
    assert res.usage.cache_hit and res.value.action == "sell"
    bad = tmp_path / "not.sqlite"
    bad.write_text("no database here\n" * 20)
    with pytest.raises(LLMError, match=r"is not an LLM call cache \(it is not a SQLite file\); it was left as it is"):
        CallCache(bad, "read-write")  # refused at once, before day one


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
    assert runtime[0] == "day,agent,live_calls,cache_hits,latency_s,spent_usd,queued_s,model_s"
    # a call whose backend does not measure its model time counts whole as model time
    assert runtime[1] == "2023-01-03,analyst,1,1,0.5000,0.000360,0.0000,0.5000"
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
    ghost = BundledModel(
        **{**QWEN_0_5B.__dict__, "module_prefix": "fincon_no_such_part", "dist_prefix": "no-such-part"}
    )
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
    key_backend = Grammar(['{"action": "buy", "confidence": 0.6}'])
    key_backend.name, key_backend.model_id = backend.name, backend.model_id  # record as if the 1.5B answered
    LLMClient(key_backend, cache=CallCache(db, "read-write")).ask(MSGS, Verdict)
    res = LLMClient(backend, cache=CallCache(db, "replay")).ask(MSGS, Verdict)
    assert res.value.action == "buy" and res.usage.cache_hit
    assert not model_dir.exists() and backend._llm is None


# -- runs sharing one cache at the same time (hardening item 3) ---------------


class Racing(Scripted):
    """A backend whose answer arrives only after ``before_answer`` ran: there
    another run asks the same question and stores its (different) answer first,
    as when two live runs share a cache and the server is not deterministic."""

    def __init__(self, answers, before_answer, tokens=(50, 5), mode=""):
        super().__init__(answers)
        self.before_answer = before_answer
        self.tokens = tokens
        self.mode = mode

    def complete(self, messages, schema, params):
        self.before_answer()
        self.seen.append(list(messages))
        return Completion(self.answers.pop(0), *self.tokens, structured_mode=self.mode)


def test_a_run_acts_on_the_answer_the_shared_cache_holds_and_replays_faithfully(tmp_path):
    db = tmp_path / "llm.sqlite"
    first = {}

    def other_run_answers_first():
        backend = Scripted(['{"action": "buy", "confidence": 0.9}'])
        first["res"] = LLMClient(backend, cache=CallCache(db, "read-write")).ask(MSGS, Verdict, agent="a", day="d1")

    ledger = UsageLedger()
    racing = Racing(['{"action": "sell", "confidence": 0.2}'], other_run_answers_first)
    second = LLMClient(racing, cache=CallCache(db, "read-write"), ledger=ledger).ask(MSGS, Verdict, agent="a", day="d1")
    assert len(racing.seen) == 1  # it really went to its model, and got "sell"
    # ...but acts on what the cache holds for the key it cites, with the stored token counts
    assert second.value == first["res"].value == Verdict(action="buy", confidence=0.9)
    assert second.keys == first["res"].keys and not second.usage.cache_hit
    assert (second.usage.prompt_tokens, second.usage.completion_tokens) == (100, 10)
    assert ledger.summary()["llm_tokens"] == 110
    [row] = CallCache(db, "read-write").rows()
    assert row["answer"] == '{"action": "buy", "confidence": 0.9}'
    # a replay of either run reproduces it, usage included
    replay_ledger = UsageLedger()
    replay = LLMClient(Scripted([]), cache=CallCache(db, "replay"), ledger=replay_ledger).ask(
        MSGS, Verdict, agent="a", day="d1"
    )
    assert replay.value == second.value and replay.keys == second.keys
    assert replay_ledger.usage_rows() == ledger.usage_rows()
    assert replay_ledger.summary() == ledger.summary()


def test_put_returns_the_stored_row(tmp_path):
    cache = CallCache(tmp_path / "llm.sqlite", "read-write")
    kw = dict(
        backend="b",
        model="m",
        agent="a",
        messages=[Message(role="user", content="q")],
        schema={},
        params=SamplingParams(),
        latency_s=1.0,
    )
    won = cache.put("k", answer="first", prompt_tokens=1, completion_tokens=2, structured_mode="json_schema", **kw)
    lost = cache.put("k", answer="second", prompt_tokens=3, completion_tokens=4, structured_mode="json_object", **kw)
    assert (won.answer, won.prompt_tokens, won.structured_mode) == ("first", 1, "json_schema")
    assert (lost.answer, lost.prompt_tokens, lost.completion_tokens, lost.structured_mode) == (
        "first",
        1,
        2,
        "json_schema",
    )
    assert CallCache(None, "off").put("k", answer="x", prompt_tokens=0, completion_tokens=0, **kw).answer == "x"


_RACER = r"""
import json, sys, time
from pathlib import Path
from typing import Literal
from pydantic import BaseModel
from fincon.llm import CallCache, LLMClient
from fincon.llm.types import Completion

me, db, gate, mode = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]

class Verdict(BaseModel):
    action: Literal["buy", "sell", "hold"]

class Fake:
    name, model_id, price_model = "fake", "fake-1", "fake-1"
    def complete(self, messages, schema, params):
        # both processes are inside a live call before either answers
        (gate / me).touch()
        deadline = time.time() + 20
        while len(list(gate.iterdir())) < 2 and time.time() < deadline:
            time.sleep(0.01)
        action = "buy" if me == "p1" else "sell"
        return Completion(json.dumps({"action": action}), 10 if me == "p1" else 20, 1)
    def close(self):
        pass

res = LLMClient(Fake(), cache=CallCache(db, mode)).ask(
    [{"role": "user", "content": "same question"}], Verdict, agent="a", day="d")
print(json.dumps({"action": res.value.action, "key": res.keys[0], "tokens": res.usage.prompt_tokens}))
"""


def test_two_processes_sharing_a_cache_act_on_the_same_stored_answer(tmp_path):
    import subprocess
    import sys

    script = tmp_path / "racer.py"
    script.write_text(_RACER)
    db, gate = tmp_path / "llm.sqlite", tmp_path / "gate"
    gate.mkdir()
    _recorded_cache(db)  # the file exists before the race, as in a long-used cache
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), me, str(db), str(gate), "read-write"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for me in ("p1", "p2")
    ]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        outs.append(json.loads(out))
    assert len(list(gate.iterdir())) == 2  # both really called their model
    assert outs[0] == outs[1]  # one of them won; both acted on the winner's answer
    replay = subprocess.run(
        [sys.executable, str(script), "p3", str(db), str(gate), "replay"], capture_output=True, text=True, timeout=60
    )
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout) == outs[0]


def test_summary_names_the_structured_mode_of_the_answers_also_in_a_replay(tmp_path):
    db = tmp_path / "llm.sqlite"
    live = UsageLedger()
    backend = Racing(['{"action": "sell", "confidence": 0.7}'], lambda: None, mode="json_object_schema")
    LLMClient(backend, cache=CallCache(db, "read-write"), ledger=live).ask(MSGS, Verdict, agent="a", day="d1")
    replayed = UsageLedger()
    LLMClient(Scripted([]), cache=CallCache(db, "replay"), ledger=replayed).ask(MSGS, Verdict, agent="a", day="d1")
    assert live.summary()["llm_structured_mode"] == "json_object_schema"
    assert replayed.summary() == live.summary()
    assert UsageLedger().summary()["llm_structured_mode"] == "unknown"


def test_a_cache_from_before_the_mode_column_still_replays_and_records(tmp_path):
    import sqlite3

    db = tmp_path / "old.sqlite"
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE calls (key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL, "
        "agent TEXT NOT NULL, messages TEXT NOT NULL, schema TEXT NOT NULL, params TEXT NOT NULL, "
        "answer TEXT NOT NULL, prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, "
        "latency_s REAL NOT NULL, created_at TEXT NOT NULL)"
    )
    conn.execute("INSERT INTO calls VALUES ('k','b','m','a','[]','{}','{}','old',1,2,0.5,'2024')")
    conn.commit()
    conn.close()
    assert CallCache(db, "replay").get("k").answer == "old"  # a replay does not alter the file
    assert "structured_mode" not in {r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(calls)")}
    rw = CallCache(db, "read-write")
    assert rw.get("k").structured_mode == ""
    stored = rw.put(
        "k2",
        backend="b",
        model="m",
        agent="a",
        messages=[],
        schema={},
        params=SamplingParams(),
        answer="new",
        prompt_tokens=1,
        completion_tokens=1,
        latency_s=0.1,
        structured_mode="json_object",
    )
    assert stored.structured_mode == "json_object"


def test_an_api_key_pasted_as_api_key_env_is_refused_without_echoing_it():
    from fincon.agents.simple_trader import make_llm_trader

    secret = "sk-proj-AbC123pasted-by-mistake"
    for build in (
        lambda: LLMSettings.model_validate({"backend": "openai", "model": "m", "api_key_env": secret}),
        lambda: make_llm_trader({"backend": "openai", "model": "m", "api_key_env": secret}),
    ):
        with pytest.raises(ConfigError, match="must be the NAME of the environment variable") as info:
            build()
        assert secret not in str(info.value) and "\n" not in str(info.value)
    assert LLMSettings(api_key_env="MY_KEY_2").api_key_env == "MY_KEY_2"


def test_timeouts_default_long_for_a_server_on_this_machine():
    from fincon.llm.backends.openai_compat import OpenAICompatBackend, is_local_url

    assert all(
        is_local_url(u)
        for u in (
            "http://localhost:8000/v1",
            "http://127.0.0.1:8080/v1",
            "http://127.1.2.3/v1",
            "http://[::1]:8000/v1",
            "http://0.0.0.0:1/v1",
        )
    )
    assert not any(
        is_local_url(u) for u in ("https://api.openai.com/v1", "http://10.0.0.5:8000/v1", "http://gpu-box:8000/v1")
    )
    local = OpenAICompatBackend("m", base_url="http://localhost:8000/v1")
    remote = OpenAICompatBackend("m", base_url="http://gpu-box:8000/v1")
    assert (local.timeout_s, local.timeout_retries) == (600.0, 0)
    assert (remote.timeout_s, remote.timeout_retries) == (60.0, 1)
    assert OpenAICompatBackend("m", base_url="http://localhost:8000/v1", timeout_s=5).timeout_s == 5.0
    assert LLMSettings().timeout_s is None


def test_a_server_without_json_schema_is_said_once_when_calls_race(caplog):
    """Found by hand (a forward step on llama_cpp.server): the first day's four concurrent calls
    were each rejected for json_schema and each logged the step down, four lines for one fact.
    Only the call that steps the mode down says so; the others retry in the new mode."""
    import httpx

    from fincon.llm.backends.openai_compat import OpenAICompatBackend
    from fincon.llm.types import SamplingParams

    together = threading.Barrier(4, timeout=10)
    sent = []

    def server(request: httpx.Request) -> httpx.Response:
        fmt = json.loads(request.content)["response_format"]["type"]
        sent.append(fmt)
        if fmt == "json_schema":  # as llama_cpp.server answers it, all four in flight at once
            together.wait()
            return httpx.Response(500, json={"detail": "response_format json_schema is not supported"})
        body = {"choices": [{"message": {"content": '{"x": 1}'}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2}}  # fmt: skip
        return httpx.Response(200, json=body)

    backend = OpenAICompatBackend("m", base_url="http://127.0.0.1:9/v1")
    backend._http = httpx.Client(transport=httpx.MockTransport(server))
    msgs = [Message(role="user", content="hi")]
    texts = []
    with caplog.at_level("WARNING", logger="fincon.llm.backends.openai_compat"):
        threads = [
            threading.Thread(target=lambda: texts.append(backend.complete(msgs, {}, SamplingParams()).text))
            for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert texts == ['{"x": 1}'] * 4 and sorted(sent) == ["json_object"] * 4 + ["json_schema"] * 4
    said = [r.getMessage() for r in caplog.records if "rejected response format" in r.getMessage()]
    assert said == ["http://127.0.0.1:9/v1 rejected response format json_schema (HTTP 500); trying json_object_schema"]
    assert backend.structured_mode == "json_object_schema"


def test_local_threads_come_from_the_environment_when_the_settings_name_none(monkeypatch):
    """FINCON_LLM_THREADS (docs/configuration.md): a whole number of threads
    for a local model; anything else is one ConfigError naming the variable."""
    from fincon.llm.backends.local import THREADS_ENV, LocalLlamaBackend, default_threads

    monkeypatch.setenv(THREADS_ENV, "1")
    assert default_threads() == 1 and LocalLlamaBackend("qwen2.5-coder-0.5b").n_threads == 1
    assert LocalLlamaBackend("qwen2.5-coder-0.5b", n_threads=3).n_threads == 3  # the setting wins
    monkeypatch.delenv(THREADS_ENV)
    assert default_threads() == max(1, min(2, os.cpu_count() or 1))
    for bad in ("0", "two", "-1"):
        monkeypatch.setenv(THREADS_ENV, bad)
        with pytest.raises(ConfigError, match=f"{THREADS_ENV}='{bad}'"):
            default_threads()


def test_a_strategys_own_llm_settings_are_typed_when_the_config_loads(tmp_path):
    """``strategy_params.fincon.llm`` (and finsent's, finmem's) is LLMOverrides: each key typed and
    range-checked as in the llm section when the config loads, one line naming the key; only the keys
    set are written back; the layered whole (run's section under the strategy's) is LLMSettings."""
    from fincon.config import load_config
    from fincon.errors import ConfigError
    from fincon.llm.settings import LLMSettings, layered

    cfg = load_config(None, {"strategies": ["fincon"], "strategy_params.fincon.llm.temperature": 0.3})
    own = cfg.strategy_params["fincon"].llm
    assert own.given() == {"temperature": 0.3} and cfg.params("fincon") == {"llm": {"temperature": 0.3}}
    assert layered(LLMSettings(seed=7), {"n_ctx": 4096}, own) == LLMSettings(seed=7, n_ctx=4096, temperature=0.3)
    for key, value, said in (
        ("tempreature", 0.3, "unknown key 'strategy_params.fincon.llm.tempreature'"),
        ("temperature", 9, "strategy_params.fincon.llm.temperature: Input should be less than or equal to 2"),
        ("backend", "gpt", "strategy_params.fincon.llm.backend: Input should be 'local' or 'openai'"),
    ):
        with pytest.raises(ConfigError) as err:
            load_config(None, {"strategies": ["finsent" if key == "backend" else "fincon"],
                               f"strategy_params.{'finsent' if key == 'backend' else 'fincon'}.llm.{key}": value})  # fmt: skip
        message = str(err.value).replace("finsent", "fincon")
        assert said in message and "\n" not in message


def test_two_runs_creating_one_cache_at_once_both_open_it(tmp_path):
    """Two masked team runs started together on a new --llm-cache-path: the second stopped before its
    first day with "not a usable SQLite file (database is locked)" (9 of 15 races of two processes).
    SQLite gives the switch to WAL no busy wait: while the other run held its first write, the switch
    failed at once, whatever busy_timeout said. It is tried again, as a busy write waits."""
    import sqlite3
    import threading
    import time

    from fincon.llm.cache import CacheMode, CallCache

    path = tmp_path / "one.sqlite"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # the other run, mid-way through creating the file
    opened: dict[str, object] = {}

    def open_it():
        t0 = time.monotonic()
        try:
            CallCache(path, CacheMode.READ_WRITE)._connection(create=True)
            opened["waited"] = time.monotonic() - t0
        except Exception as exc:  # noqa: BLE001 - the test reports what it was
            opened["error"] = str(exc)

    worker = threading.Thread(target=open_it)
    worker.start()
    time.sleep(0.3)
    other.execute("COMMIT")
    worker.join(10)
    assert "error" not in opened, opened
    assert opened["waited"] >= 0.25  # it waited for the other run, as a write would
    other.close()


def test_a_refusal_is_an_answer_counted_not_a_broken_body_retried():
    """Found in review: an OpenAI-compatible server's refusal (content null, a ``refusal`` text) was
    taken for a malformed body: retried four times, each billed and none counted (the ledger said 0
    calls, 0 tokens), ending as "LLM unavailable ... check --llm-base-url". It is the model's answer:
    cached with its text, counted, asked again once, then a counted failure the agent falls back from."""
    import httpx

    from fincon.llm.backends.openai_compat import OpenAICompatBackend

    posts = []

    def server(request):
        posts.append(request)
        msg = {"role": "assistant", "content": None, "refusal": "I'm sorry, I can't help with that."}
        return httpx.Response(200, json={"choices": [{"message": msg, "finish_reason": "stop"}],
                                         "usage": {"prompt_tokens": 900, "completion_tokens": 12}})  # fmt: skip

    backend = OpenAICompatBackend("gpt-x", base_url="http://127.0.0.1:9/v1", backoff_s=0.0, max_backoff_s=0.0)
    backend._http = httpx.Client(transport=httpx.MockTransport(server))
    ledger = UsageLedger()
    with pytest.raises(LLMInvalidAnswer) as info:
        LLMClient(backend, ledger=ledger).ask(MSGS, Verdict, agent="llm-trader", day="2022-10-04")
    assert len(posts) == 2 and "I'm sorry" in info.value.errors[0]
    s = ledger.summary()
    assert (s["llm_calls"], s["llm_tokens"], s["llm_reasks"], s["llm_failures"]) == (2, 2 * 912, 1, 1)


def test_a_server_that_reports_no_usage_is_charged_an_estimate_and_said_once(caplog):
    """Found in review: an OpenAI-compatible answer without "usage" was booked as 0 tokens and $0, so
    --max-tokens never fired and the run was free; the tokens are estimated from the text (4 characters a
    token), the budget reads them, and the missing usage is said once."""
    import logging

    from fincon.llm.backends.openai_compat import OpenAICompatBackend
    from fincon.llm.errors import BudgetExhausted
    from fincon.testing.server import DoubleServer

    answer = json.dumps({"action": "buy", "confidence": 0.7})
    with DoubleServer(Scripted([answer] * 5), usage=False) as url, caplog.at_level(logging.WARNING):
        backend = OpenAICompatBackend("double", base_url=url)
        client = LLMClient(backend, ledger=UsageLedger(max_tokens=100))
        prompt = "x" * 200  # 50 tokens, and the schema's instruction the client adds
        res = client.ask([Message(role="user", content=prompt)], Verdict)
        assert res.usage.prompt_tokens > 50 and res.usage.completion_tokens == -(-len(answer) // 4)
        with pytest.raises(BudgetExhausted):  # the budget a run checks each day reads the estimate
            client.ledger.check_budget()
        client.ask([Message(role="user", content=prompt + "y")], Verdict)
        backend.close()
    said = [r for r in caplog.records if "reports no token usage" in r.getMessage()]
    assert len(said) == 1


def test_a_cache_that_fails_mid_run_is_one_line_that_stops_the_run_as_an_unreachable_model(tmp_path):
    """Found in review: a damaged page of the call cache (or a file another process kept locked past the
    30 s wait) was a sqlite3 traceback mid-run, exit 1, the days decided so far lost; it is the error an
    unreachable model raises (the run stops early, its days kept), naming the file."""
    import sqlite3

    from fincon.llm.errors import LLMUnavailable

    cache = CallCache(tmp_path / "c.sqlite", "read-write")
    cache.put("k", backend="b", model="m", agent="a", messages=[], schema={}, params=SamplingParams(),
              answer="x", prompt_tokens=1, completion_tokens=1, latency_s=0.0)  # fmt: skip

    class Damaged:
        def __init__(self, why):
            self.why = why

        def execute(self, *a):
            raise self.why

    for why, what in ((sqlite3.DatabaseError("database disk image is malformed"), "read"),
                      (sqlite3.OperationalError("database is locked"), "written")):  # fmt: skip
        cache._connection = lambda create, why=why: Damaged(why)
        with pytest.raises(LLMUnavailable, match=rf"the LLM cache .*c\.sqlite could not be {what} \("):
            if what == "read":
                cache.get("k")
            else:
                cache.put("k2", backend="b", model="m", agent="a", messages=[], schema={}, params=SamplingParams(),
                          answer="x", prompt_tokens=1, completion_tokens=1, latency_s=0.0)  # fmt: skip


def test_a_cache_row_edited_out_of_type_is_one_line(tmp_path, capsys):
    """Found in review: token counts edited to '5x' passed SQLite's integrity check and were a ValueError
    traceback in a replay, and `fincon llm cache` a format error."""
    import sqlite3

    from fincon.cli.main import main
    from fincon.llm.errors import LLMUnavailable

    db = tmp_path / "llm.sqlite"
    _recorded_cache(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE calls SET completion_tokens = '5x'")
    conn.commit()
    conn.close()
    client = LLMClient(Scripted([]), cache=CallCache(db, "replay"))
    with pytest.raises(LLMUnavailable, match="holds no answer and token counts as fincon writes them"):
        client.ask([{"role": "user", "content": "unrelated"}], Verdict)
    assert main(["llm", "cache", "--path", str(db)]) == 2
    assert "1 call(s) hold token counts fincon never writes" in capsys.readouterr().err


def test_a_refused_connection_says_the_attempts_it_gets(caplog):
    """Found in review: a refused connection (2 attempts) was said "attempt 1 of at most 4", then
    "attempt 2 of at most 4" beside the error line that gave up after 2."""
    from fincon.llm.backends.openai_compat import OpenAICompatBackend
    from fincon.llm.errors import LLMUnavailable

    b = OpenAICompatBackend("x", base_url="http://127.0.0.1:9/v1", backoff_s=0.0)
    with pytest.raises(LLMUnavailable, match="failed 2 attempts"):
        b.complete((Message(role="user", content="hi"),), {"type": "object"}, SamplingParams())
    said = [r.getMessage() for r in caplog.records if "; retrying)" in r.getMessage()]
    assert len(said) == 1 and "(connect 1 of at most 2; retrying)" in said[0], said


def test_a_cache_answer_edited_after_it_was_recorded_is_one_line_and_an_older_cache_still_replays(tmp_path):
    """Found in review: an answer edited in a cache row (same length, same type) replayed without a word,
    and the run's numbers moved under the same cache. Each row seals its answer's hash; a cache written
    before the column replays as it did (nothing to check), and a write adds the column."""
    import sqlite3

    from fincon.llm.errors import LLMUnavailable

    db = tmp_path / "llm.sqlite"
    _recorded_cache(db)
    ask = lambda: LLMClient(Scripted([]), cache=CallCache(db, "replay")).ask(  # noqa: E731
        [{"role": "user", "content": "unrelated"}], Verdict
    )
    assert ask().value.action == "hold"
    conn = sqlite3.connect(db)
    conn.execute("UPDATE calls SET answer = replace(answer, 'hold', 'sell')")
    conn.commit()
    with pytest.raises(LLMUnavailable, match="answer differs from the one recorded .its hash differs"):
        ask()
    conn.execute("ALTER TABLE calls DROP COLUMN answer_sha256")  # a cache from before the column
    conn.commit()
    conn.close()
    assert ask().value.action == "sell"  # nothing sealed to check it against: read as recorded
    CallCache(db, "read-write").close()  # a run that writes adds the column
    assert "answer_sha256" in {r[1] for r in sqlite3.connect(db).execute("PRAGMA table_info(calls)")}


def _read_only_mount(tmp_path):
    """A read-only tmpfs folder (root only: skipped where mount is not allowed), and its unmount."""
    import subprocess

    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(ro)], capture_output=True).returncode:
        pytest.skip("mounting a tmpfs needs root: the read-only case is checked where it can be")
    return ro, lambda: subprocess.run(["umount", "-l", str(ro)], check=True)  # lazy: a connection may be open


def test_a_wal_cache_on_read_only_media_replays_and_is_called_a_cache(tmp_path):
    """Found in review 2026-12-02: a WAL cache (every cache fincon writes) on a read-only folder was
    called "not an LLM call cache (... unable to open database file)" and could not be replayed: SQLite
    needs a -shm file beside a WAL database to read it. Read as immutable there, it replays; with a
    -wal file beside it, whose rows an immutable read would miss, it is refused as before."""
    import shutil
    import sqlite3
    import subprocess

    db = tmp_path / "llm.sqlite"
    LLMClient(Scripted(['{"action": "sell", "confidence": 0.7}']), cache=CallCache(db, "read-write")).ask(MSGS, Verdict)
    with sqlite3.connect(db) as conn:  # its rows in the file (a cache a run closed), still a WAL database
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert db.read_bytes()[18:20] == b"\x02\x02"
    ro, unmount = _read_only_mount(tmp_path)
    try:
        shutil.copyfile(db, ro / "llm.sqlite")
        (ro / "wal").mkdir()
        shutil.copyfile(db, ro / "wal" / "llm.sqlite")
        (ro / "wal" / "llm.sqlite-wal").write_bytes(b"\x00" * 64)  # rows an immutable read would not see
        subprocess.run(["mount", "-o", "remount,ro", str(ro)], check=True)
        res = LLMClient(Scripted([]), cache=CallCache(ro / "llm.sqlite", "replay")).ask(MSGS, Verdict)
        assert res.usage.cache_hit and res.value.action == "sell"
        with pytest.raises(LLMError, match="unable to open database file"):
            CallCache(ro / "wal" / "llm.sqlite", "replay")
        with pytest.raises(LLMError, match=r"\): its folder is read-only or its disk is full; free space, or replay"):
            CallCache(ro / "llm.sqlite", "read-write")  # a cache, not "not a usable SQLite file"
    finally:
        unmount()
