"""The ``local`` backend (in-process llama.cpp) with the bundled models, and
the llm-trader strategy end to end: recording, byte-identical replay,
order-independent concurrency and the token-budget stop.

The 0.5B model is loaded once per session (fast); the 1.5B default is
checked by hash and asked once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import pytest
from pydantic import BaseModel, Field

if not os.environ.get("CI"):  # in CI a missing build must fail, not skip
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is built by make install-llm-extras")

from fincon.agents.simple_trader import LLMTrader, TradeCall, build_messages, make_llm_trader  # noqa: E402
from fincon.data.view import MarketData  # noqa: E402
from fincon.llm import CacheMiss, CallCache, LLMClient, LLMSettings, SamplingParams, UsageLedger, build_backend  # noqa: E402
from fincon.llm.backends.local import LocalLlamaBackend  # noqa: E402
from fincon.llm.bundled import QWEN_0_5B, QWEN_1_5B, assemble  # noqa: E402
from fincon.strategies.base import RunContext, StopRun  # noqa: E402


@pytest.fixture(scope="session")
def small_backend():
    b = LocalLlamaBackend("qwen2.5-coder-0.5b")
    b.load()
    yield b
    b.close()


class Outlook(BaseModel):
    ticker: str
    direction: Literal["up", "down", "flat"]
    probability: float = Field(ge=0, le=1)
    drivers: list[str] = Field(max_length=3)


class _Kept:
    """A backend as it is, keeping each raw completion it returns (the client
    hands back the validated answer, not the text the model wrote)."""

    def __init__(self, backend):
        self._backend = backend
        self.completions = []

    def complete(self, *args, **kwargs):
        done = self._backend.complete(*args, **kwargs)
        self.completions.append(done)
        return done

    def __getattr__(self, name):
        return getattr(self._backend, name)


@pytest.mark.live
def test_local_backend_generates_schema_valid_json(small_backend):
    msgs = [{"role": "user", "content": "MSFT rose 1%, 2% and 0.5% on the last three days. Give your outlook."}]
    kept = _Kept(small_backend)
    client = LLMClient(kept, params=SamplingParams(max_tokens=120))
    res = client.ask(msgs, Outlook, agent="analyst", day="2023-01-03")
    assert isinstance(res.value, Outlook) and res.usage.reasks == 0
    assert res.usage.prompt_tokens > 50 and 0 < res.usage.completion_tokens <= 120
    # the raw text is already a complete JSON object (grammar-constrained), not cut off: one call, no re-ask
    (raw,) = kept.completions
    assert raw.finish_reason == "stop" and raw.completion_tokens == res.usage.completion_tokens
    assert Outlook.model_validate(json.loads(raw.text)) == res.value


@pytest.mark.live
def test_an_answer_the_context_would_cut_short_is_refused_not_kept():
    """Found in review: llama.cpp cuts max_tokens to what the context has left without a word; the cut
    answer was cached, and a rerun with a larger n_ctx replayed it. Refused in one line, nothing kept."""
    from fincon.llm.errors import LLMRequestRejected
    from fincon.llm.types import Message

    b = LocalLlamaBackend("qwen2.5-coder-0.5b", n_ctx=256)
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    msgs = [Message(role="user", content="Write a long story about the sea, in many words. " * 12)]
    try:
        with pytest.raises(LLMRequestRejected, match=r"left \d+ of the answer's 200 in the context of 256"):
            b.complete(msgs, schema, SamplingParams(max_tokens=200))
    finally:
        b.close()


@pytest.mark.live
def test_cache_key_of_local_model_is_its_content_hash(small_backend):
    assert small_backend.model_id == QWEN_0_5B.sha256 and small_backend.name == "local"


@pytest.mark.live
def test_default_model_is_the_verified_1_5b():
    path = assemble(QWEN_1_5B.name, verify=True)  # re-hashes the whole file
    settings = LLMSettings()
    backend = build_backend(settings)
    try:
        assert backend.path == path and backend.model_id == QWEN_1_5B.sha256
        res = LLMClient(backend, params=SamplingParams(max_tokens=80)).ask(
            build_messages("TSLA", np.array([0.01, 0.02, 0.015, 0.01, 0.02])), TradeCall
        )
        assert res.value.action in ("buy", "sell", "hold")
    finally:
        backend.close()


def test_user_gguf_path_works_and_non_gguf_is_refused(tmp_path):
    from fincon.llm.bundled import resolve_model_path
    from fincon.llm.errors import ModelFileError

    gguf = assemble(QWEN_0_5B.name)
    assert resolve_model_path(str(gguf)) == gguf
    bad = tmp_path / "model.gguf"
    bad.write_bytes(b"nope")
    with pytest.raises(ModelFileError, match="not a GGUF file"):
        resolve_model_path(str(bad))
    with pytest.raises(ModelFileError, match="neither a bundled model"):
        resolve_model_path("no-such-model")


# -- llm-trader end to end ----------------------------------------------------


def _market(bump: float = 1.0) -> MarketData:
    n = 14
    dates = pd.bdate_range("2023-01-02", periods=n)
    frames = {}
    for j, t in enumerate(("TSLA", "MSFT")):
        rng = np.random.default_rng(11 + j)
        drift = 0.01 if j == 0 else -0.01
        close = 100 * np.cumprod(1 + rng.normal(drift, 0.01, n))
        close[-1] *= bump
        frames[t] = pd.DataFrame(
            {"open": close, "high": close, "low": close, "close": close, "volume": np.full(n, 1e6)}, index=dates
        )
    return MarketData(frames, first_index=n - 2)  # 12 warm-up rows, 2 decision days


def _run(strategy: LLMTrader, data: MarketData, run_dir: Path) -> tuple[list, dict]:
    """A minimal stand-in for the engine loop: decide each day, stop on StopRun."""
    ctx = RunContext(run_dir=run_dir, tickers=data.tickers)
    strategy.start(ctx)
    rows = []
    stop = None
    for t in range(data.first_index, len(data)):
        view = data.view_at(t)
        try:
            d = strategy.decide(view)
        except StopRun as exc:
            stop = exc.reason
            break
        rows.append(
            {
                "date": view.date.strftime("%Y-%m-%d"),
                "weights": dict(d.weights),
                "actions": dict(d.actions),
                "rationale": d.rationale,
                "evidence": list(d.evidence),
            }
        )
    summary = {**strategy.finish(ctx), "stopped": stop}
    run_dir.mkdir(parents=True, exist_ok=True)
    with open(run_dir / "decisions.jsonl", "w") as fh:
        for r in rows:
            fh.write(json.dumps(r, sort_keys=True) + "\n")
    (run_dir / "summary.json").write_text(json.dumps(summary, sort_keys=True, indent=1))
    return rows, summary


def _trader(backend, cache_path, mode, concurrency=2, max_tokens=None) -> LLMTrader:
    settings = LLMSettings(
        backend="local",
        cache=mode,
        cache_path=cache_path,
        concurrency=concurrency,
        answer_max_tokens=120,
        max_tokens=max_tokens,
    )
    client = LLMClient(
        backend,
        cache=CallCache(cache_path, mode),
        ledger=UsageLedger(max_tokens=max_tokens),
        params=settings.sampling(),
    )
    return LLMTrader(settings, client=client)


REPRODUCIBLE = ("decisions.jsonl", "summary.json", "llm_usage.csv", "llm_audit.jsonl")


@pytest.fixture(scope="module")
def recorded(small_backend, tmp_path_factory):
    root = tmp_path_factory.mktemp("llm-trader")
    cache = root / "cache" / "llm.sqlite"
    rows, summary = _run(_trader(small_backend, cache, "read-write", concurrency=2), _market(), root / "run1")
    return root, cache, rows, summary


@pytest.mark.live
def test_recorded_run_used_the_model_and_wrote_its_ledger(recorded):
    root, cache, rows, summary = recorded
    assert len(rows) == 2 and summary["stopped"] is None
    # 2 tickers x 2 days, plus any re-asks the model needed
    assert summary["llm_calls"] == 4 + summary["llm_reasks"] and summary["llm_tokens"] > 4 * 150
    assert summary["llm_cost_usd"] == 0.0  # local models are free
    assert len(CallCache(cache, "read-write")) == summary["llm_calls"]
    for r in rows:
        assert set(r["actions"]) == {"TSLA", "MSFT"} and len(r["evidence"]) >= 2
        assert all(len(k) == 64 for k in r["evidence"])
    usage = (root / "run1" / "llm_usage.csv").read_text().splitlines()
    assert len(usage) == 3 and all(line.split(",")[1] == "llm-trader" for line in usage[1:])
    runtime = (root / "run1" / "llm_runtime.csv").read_text().splitlines()
    assert sum(int(line.split(",")[2]) for line in runtime[1:]) == summary["llm_calls"]  # all live


@pytest.mark.live
def test_replay_is_byte_identical_with_zero_model_calls(recorded, small_backend):
    root, cache, rows, summary = recorded
    # other completion order (concurrency 1 instead of 2), replay mode: a live call would be an error
    _run(_trader(small_backend, cache, "replay", concurrency=1), _market(), root / "run2")
    for name in REPRODUCIBLE:
        assert (root / "run1" / name).read_bytes() == (root / "run2" / name).read_bytes(), name
    runtime = (root / "run2" / "llm_runtime.csv").read_text().splitlines()[1:]
    assert sum(int(line.split(",")[2]) for line in runtime) == 0  # live calls
    assert sum(int(line.split(",")[3]) for line in runtime) == summary["llm_calls"]  # cache hits
    # and a second read-write run answers everything from the cache as well
    _run(_trader(small_backend, cache, "read-write", concurrency=4), _market(), root / "run3")
    runtime = (root / "run3" / "llm_runtime.csv").read_text().splitlines()[1:]
    assert sum(int(line.split(",")[2]) for line in runtime) == 0
    assert (root / "run3" / "decisions.jsonl").read_bytes() == (root / "run1" / "decisions.jsonl").read_bytes()


@pytest.mark.live
def test_replay_miss_is_an_error_naming_the_call(recorded, small_backend, tmp_path):
    root, cache, _, _ = recorded
    other = _market(bump=1.02)  # the last day's returns differ: day 1 replays, day 2 (2023-01-19) misses
    with pytest.raises(CacheMiss, match=r"agent 'llm-trader', day 2023-01-19.*not in .*llm.sqlite"):
        _run(_trader(small_backend, cache, "replay"), other, tmp_path / "miss")


@pytest.mark.live
def test_token_budget_stops_the_run_cleanly(recorded, small_backend):
    root, cache, rows, _ = recorded
    day1 = (root / "run1" / "llm_usage.csv").read_text().splitlines()[1].split(",")
    budget = int(day1[5])  # exactly the first day's tokens: the second day must not start
    kept, summary = _run(_trader(small_backend, cache, "replay", max_tokens=budget), _market(), root / "budget")
    assert len(kept) == 1 and kept[0] == rows[0]
    assert summary["stopped"].startswith(f"LLM token budget exhausted: {budget} tokens used of --max-tokens {budget}")
    assert "results kept to its close, undecided" in summary["llm_stop_reason"]
    usage = (root / "budget" / "llm_usage.csv").read_text().splitlines()
    assert len(usage) == 2 and usage[1].split(",")[0] == rows[0]["date"]
    events = [json.loads(line) for line in (root / "budget" / "llm_audit.jsonl").read_text().splitlines()]
    assert events[-1]["event"] == "budget_stop" and events[-1]["day"] == rows[1]["date"]


def test_factory_takes_settings_or_a_mapping(tmp_path):
    s = make_llm_trader({"backend": "local", "model": "qwen2.5-coder-0.5b", "cache": "off", "max_tokens": 1000})
    assert s.name == "llm-trader" and s.settings.max_tokens == 1000 and s.warmup == 11
    assert make_llm_trader().settings.model is None  # -> the bundled 1.5B


def test_the_grammar_steps_unit_numbers_and_leaves_other_numbers_alone():
    from fincon.agents.reports import TickerAnswer
    from fincon.llm.backends.grammar import tightened

    class Mixed(BaseModel):
        p: float = Field(ge=0, le=1)
        half: float = Field(ge=0.5, le=1)
        price: float = Field(ge=0)
        signed: float = Field(ge=-1, le=1)

    props = tightened(Mixed.model_json_schema())["properties"]
    assert props["p"] == {"enum": [round(i / 20, 2) for i in range(21)]}
    assert props["half"]["enum"][0] == 0.5 and len(props["half"]["enum"]) == 11
    assert props["price"]["type"] == "number" and "enum" not in props["price"]
    assert "enum" not in props["signed"]  # a negative bound: not a [0, 1] number
    # the manager's size is above 0 in the schema: "sell" with size 0 cannot be written
    size = tightened(TickerAnswer.model_json_schema())["properties"]["size"]["enum"]
    assert size[0] == 0.05 and size[-1] == 1.0 and 0.0 not in size
    # while the validator still takes hold with 0 (a remote endpoint gets no grammar)
    assert TickerAnswer(action="hold", size=0, rationale="r", relied_on=[]).size == 0


@pytest.mark.live
def test_the_grammar_keeps_a_local_answer_in_ascii_and_in_range(small_backend):
    class Said(BaseModel):
        text: str = Field(max_length=80)
        size: float = Field(ge=0, le=1, json_schema_extra={"exclusiveMinimum": 0})

    msgs = [
        {"role": "system", "content": "请只用中文回答。"},
        {"role": "user", "content": "用中文写一句关于微软的话，size 写 -0.5。"},
    ]
    from fincon.llm.client import with_schema_instruction
    from fincon.llm.schema import schema_for
    from fincon.llm.types import as_messages

    schema = schema_for(Said)
    raw = small_backend.complete(
        with_schema_instruction(as_messages(msgs), schema), schema, SamplingParams(max_tokens=60)
    ).text
    said = json.loads(raw)
    assert said["text"].isascii() and said["size"] in [round(i / 20, 2) for i in range(1, 21)]
    assert small_backend.structured_mode == "gbnf_schema"


@pytest.mark.live
def test_the_fast_sampler_gives_the_same_answers_as_llama_cpp_pythons_own():
    """fincon.llm.backends.fast_llama checks the grammar only for the most
    likely token (the whole vocabulary only when it is refused) and saves
    prompt states without logits: the answers must be the same tokens. The
    Chinese prompt makes the grammar refuse the model's first choices (ASCII
    only), so both paths of the check run."""
    from fincon.llm.client import with_schema_instruction
    from fincon.llm.schema import schema_for
    from fincon.llm.types import as_messages

    class Said(BaseModel):
        text: str = Field(max_length=80)
        size: float = Field(ge=0, le=1)

    asks = [
        (
            [{"role": "user", "content": "MSFT rose 1%, 2% and 0.5% on the last three days. Give your outlook."}],
            Outlook,
        ),
        (
            [
                {"role": "system", "content": "请只用中文回答。"},
                {"role": "user", "content": "用中文写一句关于微软的话。"},
            ],
            Said,
        ),
    ]
    answers = {}
    for fast in (True, False):
        b = LocalLlamaBackend("qwen2.5-coder-0.5b", fast_sampling=fast)
        try:
            out = []
            for msgs, model in asks:
                schema = schema_for(model)
                done = b.complete(
                    with_schema_instruction(as_messages(msgs), schema), schema, SamplingParams(max_tokens=80)
                )
                out.append((done.text, done.completion_tokens))
            answers[fast] = out
            assert type(b.load()).__name__ == ("FastLlama" if fast else "Llama")
        finally:
            b.close()
    assert answers[True] == answers[False]
    assert all(model.model_validate_json(text) for (text, _), (_, model) in zip(answers[True], asks))
