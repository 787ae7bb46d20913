"""The ``openai`` backend against a real OpenAI-compatible server.

A session fixture starts llama.cpp's server (``python -m llama_cpp.server``,
from llama-cpp-python[server]) on localhost with the bundled 0.5B model and
an API key; a small stdlib HTTP proxy in front of it injects the faults a
real deployment meets: 429 and 500 responses, a hang (client timeout), a
malformed body, a schema-invalid answer, a 404, HTML pages and a 501 (a URL
that is not an OpenAI-compatible endpoint).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Literal

import numpy as np
import pandas as pd
import pytest
from pydantic import BaseModel, Field

if not os.environ.get("CI"):  # in CI a missing build must fail, not skip
    pytest.importorskip("llama_cpp.server", reason="llama-cpp-python[server] is built by make install-llm-extras")

from fincon.agents.simple_trader import LLMTrader  # noqa: E402
from fincon.data.view import MarketData  # noqa: E402
from fincon.llm import (  # noqa: E402
    CallCache,
    LLMAuthError,
    LLMClient,
    LLMInvalidAnswer,
    LLMModelNotFound,
    LLMRequestRejected,
    LLMSettings,
    LLMUnavailable,
    UsageLedger,
)
from fincon.llm.backends.openai_compat import OpenAICompatBackend  # noqa: E402
from fincon.llm.bundled import assemble  # noqa: E402
from fincon.strategies.base import RunContext  # noqa: E402

SECRET = "sk-fincon-test-SECRET-4242-do-not-leak"
KEY_ENV = "FINCON_TEST_LLM_KEY"

# the server loads the bundled 0.5B model: the file is live (the two tests without it take a second)
pytestmark = pytest.mark.live


class Answer(BaseModel):
    action: Literal["buy", "sell", "hold"]
    confidence: float = Field(ge=0, le=1)


MSGS = [
    {"role": "system", "content": "You are a stock trader."},
    {"role": "user", "content": "TSLA rose five days in a row, +9% in total. Buy, sell or hold?"},
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "fault",
            "object": "chat.completion",
            "model": "fault",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
    ).encode()


class FaultProxy:
    """Forwards to the real server unless a fault is queued for the next request."""

    def __init__(self, upstream: str):
        self.upstream = upstream
        self.faults: list[str] = []
        self.log: list[dict] = []  # one entry per request: fault, response_format, status
        self.headers_seen: list[str] = []
        self.script: dict[str, str] = {}
        self.in_flight = 0
        self.peak_in_flight = 0
        self._count = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _send(self, status: int, body: bytes, headers: dict | None = None, ctype: str = "application/json"):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                try:
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (the timeout test)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                req = json.loads(body)
                fault = proxy.faults.pop(0) if proxy.faults else "pass"
                rf = req.get("response_format", {})
                entry = {
                    "fault": fault,
                    "format": rf.get("type"),
                    "has_schema": "schema" in rf or "schema" in rf.get("json_schema", {}),
                    "messages": req["messages"],
                }
                proxy.log.append(entry)
                proxy.headers_seen.append(self.headers.get("Authorization", ""))
                if fault == "429":
                    return self._send(429, b'{"error": "rate limited"}', {"Retry-After": "0"})
                if fault == "500":
                    return self._send(500, b'{"error": "boom"}')
                if fault == "404":
                    return self._send(404, b'{"error": {"message": "model not found"}}')
                if fault == "hang":
                    time.sleep(3.0)
                    return self._send(200, _completion('{"action": "hold", "confidence": 0.5}'))
                if fault in ("html200", "html404"):  # a web server's page, not an API
                    return self._send(
                        int(fault[4:]),
                        b"<!DOCTYPE html><html><body>\n<h1>Welcome</h1>\n</body></html>",
                        ctype="text/html; charset=utf-8",
                    )
                if fault == "501":  # e.g. python -m http.server answering a POST
                    return self._send(501, b'{"error": "Unsupported method (POST)"}')
                if fault == "malformed":
                    return self._send(200, b'{"choices": [{"message": ')
                if fault == "invalid":
                    return self._send(200, _completion('{"action": "strong buy", "confidence": 0.9}'))
                if fault == "canned":
                    return self._send(200, _completion('{"action": "hold", "confidence": 0.5}'))
                if fault == "slow":  # a slow server answering from proxy.script by ticker after 0.4 s
                    with proxy._count:
                        proxy.in_flight += 1
                        proxy.peak_in_flight = max(proxy.peak_in_flight, proxy.in_flight)
                    time.sleep(0.4)
                    with proxy._count:
                        proxy.in_flight -= 1
                    ticker = req["messages"][-1]["content"].split("Stock: ", 1)[1].split()[0]
                    action = proxy.script[ticker]
                    return self._send(
                        200, _completion(json.dumps({"action": action, "confidence": 0.5, "reasoning": "scripted"}))
                    )
                upstream = urllib.request.Request(
                    proxy.upstream + self.path,
                    data=body,
                    method="POST",
                    headers={
                        "Content-Type": "application/json",
                        "Authorization": self.headers.get("Authorization", ""),
                    },
                )
                try:
                    with urllib.request.urlopen(upstream, timeout=120) as r:
                        status, data = r.status, r.read()
                except urllib.error.HTTPError as e:
                    status, data = e.code, e.read()
                entry["status"] = status
                self._send(status, data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def llama_server():
    model = assemble("qwen2.5-coder-0.5b")
    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "2048",
            "--n_threads",
            os.environ.get("FINCON_LLM_THREADS", "2"),
            "--api_key",
            SECRET,
            "--model_alias",
            "qwen-test",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(
                urllib.request.Request(url + "/v1/models", headers={"Authorization": f"Bearer {SECRET}"}), timeout=2
            )
            break
        except OSError:
            if proc.poll() is not None or time.time() > deadline:
                proc.kill()
                pytest.fail("llama_cpp.server did not start")
            time.sleep(0.3)
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def proxy(llama_server):
    p = FaultProxy(llama_server)
    yield p
    p.close()


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv(KEY_ENV, SECRET)


def _backend(proxy, **kw) -> OpenAICompatBackend:
    kw.setdefault("timeout_s", 60.0)
    kw.setdefault("backoff_s", 0.05)
    return OpenAICompatBackend("qwen-test", base_url=proxy.url, api_key_env=KEY_ENV, **kw)


def _client(proxy, **kw) -> LLMClient:
    from fincon.llm.types import SamplingParams

    return LLMClient(_backend(proxy, **kw), ledger=UsageLedger(), params=SamplingParams(max_tokens=40))


def test_real_server_answers_schema_valid_json_after_format_stepdown(proxy, key_env):
    client = _client(proxy)
    res = client.ask(MSGS, Answer, agent="a", day="2023-01-03")
    assert res.value.action in ("buy", "sell", "hold") and 0 <= res.value.confidence <= 1
    assert res.usage.prompt_tokens > 50 and res.usage.completion_tokens > 0 and not res.usage.cache_hit
    # llama.cpp's server has no json_schema response format: the backend stepped down to
    # json_object + schema (grammar-constrained) and remembers it
    assert [(e["format"], e["has_schema"], e.get("status")) for e in proxy.log] == [
        ("json_schema", True, 500),
        ("json_object", True, 200),
    ]
    assert client.backend.structured_mode == "json_object_schema"
    assert client.backend.structured_start == "json_schema"
    assert client.ledger.summary()["llm_structured_mode"] == "json_object_schema"  # what the run records
    assert all(h == f"Bearer {SECRET}" for h in proxy.headers_seen)


def test_a_prompt_too_long_for_the_context_is_rejected_without_dropping_structured_output(proxy, key_env):
    """llama.cpp answers a prompt longer than n_ctx with HTTP 400 context_length_exceeded: the
    request's fault, not the format's. It must not step the run down to plain JSON mode."""
    client = _client(proxy)
    too_long = [{"role": "user", "content": "TSLA rose. " * 1200}]
    with pytest.raises(
        LLMRequestRejected, match=r"does not fit the model's context window \(HTTP 400.*--n_ctx"
    ) as info:
        client.ask(too_long, Answer)
    assert "\n" not in str(info.value)
    assert [(e["format"], e["has_schema"], e.get("status")) for e in proxy.log] == [
        ("json_schema", True, 500),
        ("json_object", True, 400),
    ]  # one step down (json_schema is unknown), no more
    assert client.backend.structured_mode == "json_object_schema"
    res = client.ask(MSGS, Answer)  # the next call still gets the grammar from the schema
    assert isinstance(res.value, Answer) and proxy.log[-1]["has_schema"]


def test_plain_json_mode_plus_validation_also_works(proxy, key_env):
    res = _client(proxy, structured="json_object").ask(MSGS, Answer)
    assert isinstance(res.value, Answer)
    assert [(e["format"], e["has_schema"]) for e in proxy.log] == [("json_object", False)]


def test_429_and_500_are_retried_with_backoff(proxy, key_env):
    proxy.faults += ["429", "500"]
    client = _client(proxy, structured="json_object_schema")
    res = client.ask(MSGS, Answer)
    assert isinstance(res.value, Answer)
    assert [e["fault"] for e in proxy.log] == ["429", "500", "pass"]
    assert client.ledger.summary()["llm_calls"] == 1  # one logical call, three HTTP attempts


def test_timeout_is_retried_once_on_a_remote_server(proxy, key_env):
    proxy.faults += ["hang", "canned"]
    client = _client(proxy, structured="json_object_schema", timeout_s=1.0, local=False)
    t0 = time.perf_counter()
    res = client.ask(MSGS, Answer)
    assert res.value == Answer(action="hold", confidence=0.5)
    assert time.perf_counter() - t0 < 2.9  # did not wait for the hung response
    assert [e["fault"] for e in proxy.log] == ["hang", "canned"]
    proxy.faults += ["hang", "hang", "canned"]
    with pytest.raises(LLMUnavailable, match=r"failed 2 attempts \(last: timeout after 1 s"):
        _client(proxy, structured="json_object_schema", timeout_s=1.0, local=False).ask(MSGS, Answer)
    assert [e["fault"] for e in proxy.log][2:] == ["hang", "hang"]  # at most one retry after a timeout
    proxy.faults.clear()


def test_a_local_server_is_not_retried_after_a_timeout(proxy, key_env):
    """A one-slot llama.cpp server keeps computing an abandoned request; a retry would only
    queue behind it. So: one attempt, and an error that says what to change."""
    proxy.faults += ["hang", "canned"]
    client = _client(proxy, structured="json_object_schema", timeout_s=1.0, max_retries=3)
    assert client.backend.local and client.backend.timeout_retries == 0
    with pytest.raises(LLMUnavailable) as info:
        client.ask(MSGS, Answer)
    msg = str(info.value)
    assert msg.startswith(f"LLM server {proxy.url} failed 1 attempt (last: timeout after 1 s")
    assert "--llm-timeout" in msg and "llama-server -np N" in msg and "\n" not in msg
    assert [e["fault"] for e in proxy.log] == ["hang"]
    proxy.faults.clear()


@pytest.mark.parametrize(
    "fault, answered", [("html200", "an HTML page"), ("html404", "an HTML page"), ("501", "HTTP 501")]
)
def test_a_url_that_is_not_an_openai_endpoint_fails_at_once(proxy, key_env, fault, answered):
    proxy.faults += [fault] * 4
    with pytest.raises(LLMUnavailable) as info:
        _client(proxy).ask(MSGS, Answer)
    msg = str(info.value)
    assert msg.startswith(f"LLM server {proxy.url} failed 1 attempt (last: HTTP ")
    assert (
        f"is not an OpenAI-compatible endpoint (it answered with {answered}); check --llm-base-url "
        "(it usually ends in /v1)" in msg
    )
    assert "\n" not in msg and len(proxy.log) == 1  # not retried
    proxy.faults.clear()


def test_rate_limited_forever_is_one_line_with_advice(proxy, key_env):
    proxy.faults += ["429"] * 3
    with pytest.raises(LLMUnavailable) as info:
        _client(proxy, max_retries=2).ask(MSGS, Answer)
    msg = str(info.value)
    assert msg.startswith(f"LLM server {proxy.url} failed 3 attempts (last: HTTP 429: ")
    assert "keeps rate-limiting: lower --llm-concurrency" in msg and "\n" not in msg


def test_malformed_body_is_retried_then_reported(proxy, key_env):
    proxy.faults += ["malformed"]
    res = _client(proxy, structured="json_object_schema").ask(MSGS, Answer)
    assert isinstance(res.value, Answer) and [e["fault"] for e in proxy.log] == ["malformed", "pass"]
    proxy.faults += ["malformed"] * 2
    with pytest.raises(LLMUnavailable, match="failed 2 attempts.*malformed response body"):
        _client(proxy, structured="json_object_schema", max_retries=1).ask(MSGS, Answer)


def test_invalid_schema_answer_gets_reasked_against_the_real_model(proxy, key_env):
    proxy.faults += ["invalid"]
    client = _client(proxy, structured="json_object_schema")
    res = client.ask(MSGS, Answer, agent="analyst", day="2023-01-05")
    assert isinstance(res.value, Answer) and res.usage.reasks == 1 and len(res.keys) == 2
    reask = proxy.log[1]["messages"]
    assert reask[-2] == {"role": "assistant", "content": '{"action": "strong buy", "confidence": 0.9}'}
    assert "Validation error: action: Input should be 'buy', 'sell' or 'hold'" in reask[-1]["content"]
    s = client.ledger.summary()
    assert (s["llm_calls"], s["llm_reasks"], s["llm_failures"]) == (2, 1, 0)


def test_invalid_twice_is_a_typed_failure(proxy, key_env):
    proxy.faults += ["invalid", "invalid"]
    client = _client(proxy, structured="json_object_schema")
    with pytest.raises(LLMInvalidAnswer) as info:
        client.ask(MSGS, Answer, agent="analyst", day="2023-01-05")
    assert len(info.value.keys) == 2 and client.ledger.summary()["llm_failures"] == 1


def test_bad_key_is_reported_as_bad_key(proxy, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-wrong")
    with pytest.raises(
        LLMAuthError, match=rf"refused the API key from \${KEY_ENV} \(HTTP 401: bad or missing key\)"
    ) as info:
        _client(proxy).ask(MSGS, Answer)
    assert "sk-wrong" not in str(info.value)
    assert len(proxy.log) == 1  # no pointless retries


def test_unknown_model_is_reported_as_unknown_model(proxy, key_env):
    proxy.faults += ["404"]
    with pytest.raises(LLMModelNotFound, match="does not know model 'qwen-test' \\(HTTP 404: unknown model"):
        _client(proxy).ask(MSGS, Answer)
    assert len(proxy.log) == 1


def test_unreachable_server_fails_within_seconds(key_env):
    port = _free_port()
    backend = OpenAICompatBackend(
        "m",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key_env=KEY_ENV,
        max_retries=2,
        backoff_s=0.05,
        connect_timeout_s=1.0,
    )
    t0 = time.perf_counter()
    with pytest.raises(LLMUnavailable) as info:
        LLMClient(backend).ask(MSGS, Answer)
    assert time.perf_counter() - t0 < 5
    msg = str(info.value)  # one quick retry (a restarting server), then a clear verdict
    assert msg.startswith(f"LLM server http://127.0.0.1:{port}/v1 failed 2 attempts (last: connection error")
    assert msg.endswith(f"nothing is listening at http://127.0.0.1:{port}/v1: start the server or fix --llm-base-url")
    assert "\n" not in msg


def test_a_team_whose_server_is_down_on_day_one_leaves_no_cache_file(key_env, tmp_path, capsys):
    """The team's first day fails (nothing listens): one line, exit 2, no
    run directory and no cache file, although its memory had embedded the
    corpus with MiniLM (the vectors go only into a file a stored call made)."""
    from fincon.cli.main import main
    from fincon.testing import generated_corpus

    cache = tmp_path / "llm.sqlite"
    events = generated_corpus(tmp_path / "events", ["TSLA"], "2022-09-26", "2022-10-07")  # a few texts to embed
    args = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--start", "2022-10-05", "--end", "2022-10-07"]
    args += ["--llm-backend", "openai", "--llm-base-url", f"http://127.0.0.1:{_free_port()}/v1", "--llm-model", "m"]
    args += ["--llm-api-key-env", KEY_ENV, "--llm-cache-path", str(cache), "--events", str(events)]
    args += ["--param", "fincon.analysts=[news]", "--param", "fincon.transcripts=text"]
    assert main([*args, "--no-benchmark", "--no-progress", "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "stopped before finishing its first day: LLM unavailable on 2022-10-05" in err
    assert not cache.exists() and not (tmp_path / "run").exists()


@pytest.mark.slow  # an experiment's baselines run before its training unit stops
def test_an_experiment_unit_whose_server_is_down_on_day_one_is_a_unit_stopped_early(key_env, tmp_path, capsys):
    """Found in review: a unit of an experiment that stopped before its first day (nothing listens) was
    exit 2, which --help promises leaves nothing, although the experiment keeps its folder and the same
    command resumes it: exit 3, as for any unit stopped early. The server answers its model list and drops
    every completion (a model that crashed after the run's check)."""
    from fincon.cli.main import main
    from fincon.testing.server import DoubleServer

    class Crashed:
        def complete(self, messages, schema, params):
            raise ConnectionAbortedError("the model crashed")

    out = tmp_path / "exp"
    args = ["experiment", "--ticker", "TSLA", "--brain", "llm", "--train-start", "2022-10-03", "--train-end",
            "2022-10-07", "--test-start", "2022-10-10", "--test-end", "2022-10-14", "--repeats", "1", "--episodes",
            "1", "--ablations", "full", "--baselines", "buy-and-hold", "--executor", "local", "--workers", "1",
            "--no-progress", "--ledger", "off", "--llm-backend", "openai", "--llm-model", "m", "--llm-api-key-env",
            KEY_ENV, "--llm-cache-path", str(tmp_path / "llm.sqlite"), "--param", "fincon.analysts=[news]",
            "--param", "fincon.embedder=hashing", "--out", str(out)]  # fmt: skip
    with DoubleServer(Crashed()) as url:
        assert main([*args, "--llm-base-url", url]) == 3
    err = capsys.readouterr().err
    assert "stopped before finishing its first day: LLM unavailable on 2022-10-03" in err, err
    assert "rerun the same command to resume" in err, err
    assert json.loads((out / "experiment.json").read_text())["status"] == "stopped_early"


def test_openai_needs_a_key_from_the_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMAuthError, match="set the environment variable OPENAI_API_KEY"):
        OpenAICompatBackend("gpt-4o-mini")


def _market(n_days: int = 14, tickers=("TSLA",)) -> MarketData:
    dates = pd.bdate_range("2023-01-02", periods=n_days)
    frames = {}
    for j, t in enumerate(tickers):
        rng = np.random.default_rng(7 + j)
        close = 100 * np.cumprod(1 + rng.normal(0.002, 0.02, n_days))
        frames[t] = pd.DataFrame(
            {"open": close, "high": close, "low": close, "close": close, "volume": np.full(n_days, 1e6)}, index=dates
        )
    return MarketData(frames, first_index=n_days - 2)


def test_api_key_never_appears_in_anything_the_run_writes(proxy, key_env, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    settings = LLMSettings(
        backend="openai",
        model="qwen-test",
        base_url=proxy.url,
        api_key_env=KEY_ENV,
        structured="json_object_schema",
        cache_path=tmp_path / "cache" / "llm.sqlite",
        answer_max_tokens=60,
    )
    strat = LLMTrader(settings)
    data = _market()
    ctx = RunContext(run_dir=tmp_path / "run", tickers=data.tickers)
    strat.start(ctx)
    proxy.faults += ["invalid", "invalid", "500"]  # day 1: typed failure -> fallback; day 2: a retry
    decisions = []
    for t in range(data.first_index, len(data)):
        d = strat.decide(data.view_at(t))
        decisions.append(d)
    summary = strat.finish(ctx)
    assert decisions[0].rationale.startswith("TSLA: fallback: 5-day momentum")
    assert summary["llm_fallbacks"] == 1 and summary["llm_failures"] == 1 and summary["llm_reasks"] == 1
    audit = [json.loads(l) for l in (ctx.run_dir / "llm_audit.jsonl").read_text().splitlines()]
    assert {e["event"] for e in audit} == {"reask", "failure", "fallback"}
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"llm.sqlite", "llm_usage.csv", "llm_runtime.csv", "llm_audit.jsonl"}
    assert len(CallCache(tmp_path / "cache" / "llm.sqlite", "read-write")) == 3
    for p in files:
        assert SECRET.encode() not in p.read_bytes(), p
    assert SECRET not in caplog.text
    assert all(h == f"Bearer {SECRET}" for h in proxy.headers_seen)  # it was really sent, to the server only


def test_calls_of_one_day_run_concurrently_up_to_the_limit(proxy, key_env, tmp_path):
    """Four tickers, limit 2: two requests in flight at a time, results in ticker order
    whatever order the server finishes in."""
    tickers = ("AAA", "BBB", "CCC", "DDD")
    data = _market(n_days=12, tickers=tickers)
    data.first_index = len(data) - 1  # one decision day
    settings = LLMSettings(
        backend="openai",
        model="qwen-test",
        base_url=proxy.url,
        api_key_env=KEY_ENV,
        structured="json_object_schema",
        cache="off",
        concurrency=2,
    )
    strat = LLMTrader(settings)
    ctx = RunContext(run_dir=tmp_path / "run", tickers=tickers)
    strat.start(ctx)
    proxy.script = {"AAA": "buy", "BBB": "sell", "CCC": "hold", "DDD": "buy"}
    proxy.faults += ["slow"] * 4
    t0 = time.perf_counter()
    d = strat.decide(data.view_at(len(data) - 1))
    took = time.perf_counter() - t0
    strat.finish(ctx)
    assert proxy.peak_in_flight == 2
    assert 0.75 < took < 1.6  # two waves of 0.4 s, not four
    assert list(d.actions.items()) == list(proxy.script.items())
    assert d.weights == {"AAA": 0.25, "BBB": -0.25, "DDD": 0.25}
    assert [r.split(":")[0] for r in d.rationale.split(" | ")] == list(tickers)


@pytest.mark.slow  # two trainings of the team's news analyst and manager through the OpenAI path
def test_a_trainings_later_episode_that_stops_on_its_first_day_is_an_episode_stopped_early(key_env, tmp_path, capsys):
    """Diff review 81: a training whose second episode stopped before its first day (the model gone after
    the first) exited 2 with its folder kept and status failed; --help says 2 leaves nothing and 3 is an
    episode stopped early (rerun to resume). Its first episode stopping so leaves nothing: exit 2."""
    from fincon.cli.main import main
    from fincon.testing.doubles import TeamStub
    from fincon.testing.server import DoubleServer

    class Until(TeamStub):  # the team's double, gone after ``n`` answers
        def __init__(self, n: int | None = None):
            super().__init__()
            self.n, self.asked = n, 0

        def complete(self, messages, schema, params):
            self.asked += 1
            if self.n is not None and self.asked > self.n:
                raise ConnectionAbortedError("the model crashed")
            return super().complete(messages, schema, params)

    def train(out: str, episodes: int, double: Until) -> int:
        with DoubleServer(double) as url:
            return main(["train", "--ticker", "TSLA", "--brain", "llm", "--start", "2022-10-03", "--end", "2022-10-07",
                         "--episodes", str(episodes), "--llm-backend", "openai", "--llm-model", "m", "--llm-base-url",
                         url, "--llm-api-key-env", KEY_ENV, "--llm-cache-path", str(tmp_path / f"{out}.sqlite"),
                         "--param", "fincon.analysts=[news]", "--param", "fincon.embedder=hashing", "--no-progress",
                         "--out", str(tmp_path / out)])  # fmt: skip

    one = Until()
    assert train("one", 1, one) == 0  # what the first episode asks
    capsys.readouterr()
    assert train("two", 2, Until(one.asked)) == 3
    err = capsys.readouterr().err
    assert "stopped before finishing its first day" in err and "rerun the same command to run episode 2 again" in err
    assert json.loads((tmp_path / "two" / "train.json").read_text())["status"] == "stopped_early"
    assert train("none", 2, Until(0)) == 2 and not (tmp_path / "none").exists()
