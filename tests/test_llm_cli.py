"""``fincon llm`` sub-commands and the shared LLM flags."""

from __future__ import annotations

import argparse

import pytest

from fincon.cli.llm import add_llm_arguments, settings_from_args
from fincon.cli.main import main
from fincon.errors import ConfigError
from fincon.llm.bundled import QWEN_0_5B


def test_model_command_prints_the_verified_path(capsys):
    assert main(["llm", "model", QWEN_0_5B.name, "--verify"]) == 0
    out = capsys.readouterr().out
    assert QWEN_0_5B.filename in out and f"sha256 {QWEN_0_5B.sha256} verified" in out


def test_replay_without_a_recording_is_a_one_line_error(capsys, tmp_path):
    rc = main(["llm", "ask", "hi", "--llm-cache", "replay", "--llm-cache-path", str(tmp_path / "none.sqlite")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "record a run in read-write mode first" in err


def test_flags_become_settings(tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("gpt-4o-mini: {input_per_million: 0.15, output_per_million: 0.6}\n")
    p = argparse.ArgumentParser()
    add_llm_arguments(p)
    args = p.parse_args(
        [
            "--llm-backend",
            "openai",
            "--llm-model",
            "gpt-4o-mini",
            "--llm-base-url",
            "http://localhost:11434/v1/",
            "--llm-cache",
            "replay",
            "--max-tokens",
            "5000",
            "--llm-concurrency",
            "2",
            "--llm-prices",
            str(prices),
        ]
    )
    s = settings_from_args(args, {"temperature": 0.2})
    assert (s.backend, s.model, s.base_url, s.cache.value, s.max_tokens, s.concurrency, s.temperature) == (
        "openai",
        "gpt-4o-mini",
        "http://localhost:11434/v1",
        "replay",
        5000,
        2,
        0.2,
    )
    assert s.prices["gpt-4o-mini"].output_per_million == 0.6
    with pytest.raises(ConfigError, match="max_tokens: Input should be greater than or equal to 1"):
        settings_from_args(p.parse_args([]), {"max_tokens": 0})  # a config's value, checked by the settings
    with pytest.raises(SystemExit):  # a flag's value, checked by argparse with its range (issue 19)
        p.parse_args(["--max-tokens", "0"])


def test_cache_command_summarises_a_cache(capsys, tmp_path):
    from fincon.llm import CallCache, SamplingParams
    from fincon.llm.types import Message

    db = tmp_path / "llm.sqlite"
    cache = CallCache(db, "read-write")
    for i, (agent, model) in enumerate((("analyst", "m"), ("analyst", "m"), ("manager", "m"), ("manager", "big"))):
        cache.put(
            f"k{i}",
            backend="local",
            model=model,
            agent=agent,
            messages=[Message(role="user", content=str(i))],
            schema={},
            params=SamplingParams(),
            answer="{}",
            prompt_tokens=100,
            completion_tokens=10,
            latency_s=1.5,
        )
    cache.close()
    assert main(["llm", "cache", "--path", str(db)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith(": 4 calls")
    # each model's calls apart (they were summed over models), the agents under it
    assert [line.split()[:6] for line in out[1:]] == [
        ["local", "big:", "1", "calls"],
        ["manager", "1", "calls", "100", "prompt", "10"],
        ["local", "m:", "3", "calls"],
        ["analyst", "2", "calls", "200", "prompt", "20"],
        ["manager", "1", "calls", "100", "prompt", "10"],
    ]


def test_cache_command_prints_the_call_a_decision_cites(capsys, tmp_path):
    """A decision's evidence is its call's key (decisions.jsonl, llm_calls.csv); nothing showed the call: a
    sceptic had to open the SQLite file. `--key` prints its messages, as the model saw them, and its answer."""
    from fincon.llm.cache import CallCache
    from fincon.llm.types import Message, SamplingParams

    db = tmp_path / "llm.sqlite"
    cache = CallCache(db, "read-write")
    for key, content in (("ab12cd34ef", "Stock: TSLA\nreturns: -8.61%"), ("ab12cd34ff", "other")):
        cache.put(key, backend="local", model="m", agent="llm-trader",
                  messages=[Message(role="system", content="You trade."), Message(role="user", content=content)],
                  schema={}, params=SamplingParams(), answer='{"action":"buy"}', prompt_tokens=41,
                  completion_tokens=7, latency_s=1.0)  # fmt: skip
    cache.close()
    assert main(["llm", "cache", "--path", str(db), "--key", "ab12cd34ef"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "call ab12cd34ef" and out[1].startswith("  agent llm-trader; local m; 41 prompt + 7 completion")
    assert out[2:] == ["--- system", "You trade.", "--- user", "Stock: TSLA", "returns: -8.61%", "--- answer",
                       '{"action":"buy"}']  # fmt: skip
    for key, why in (("ab12cd34", "several calls start so; give more"), ("00000000", "no call in"),
                     ("ab12", "give a call's key, 8 to 64 hex digits")):  # fmt: skip
        assert main(["llm", "cache", "--path", str(db), "--key", key]) == 2
        assert why in _one_line_error(capsys)


def _one_line_error(capsys) -> str:
    cap = capsys.readouterr()
    assert cap.out == "" and cap.err.count("\n") == 1 and cap.err.startswith("fincon: error: "), cap.err
    return cap.err


@pytest.mark.parametrize("content", [b"this is not a database\n" * 10, b""])
def test_cache_command_on_a_file_that_is_not_a_cache_is_a_one_line_error(capsys, tmp_path, content):
    bad = tmp_path / "notsqlite"
    bad.write_bytes(content)
    assert main(["llm", "cache", "--path", str(bad)]) == 2
    assert "is not an LLM call cache" in _one_line_error(capsys)
    assert bad.read_bytes() == content and [p.name for p in tmp_path.iterdir()] == ["notsqlite"]  # nothing written


def test_cache_command_on_a_directory_is_a_one_line_error(capsys, tmp_path):
    assert main(["llm", "cache", "--path", str(tmp_path)]) == 2
    assert "is not a file" in _one_line_error(capsys)


def test_model_command_with_an_unwritable_model_dir_is_a_one_line_error(capsys, tmp_path):
    assert main(["llm", "model", QWEN_0_5B.name, "--model-dir", "/proc/xx"]) == 2
    assert "pass a writable --model-dir" in _one_line_error(capsys)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["llm", "model", QWEN_0_5B.name, "--model-dir", str(blocker / "models")]) == 2
    _one_line_error(capsys)
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


def test_an_api_key_passed_as_the_variable_name_is_refused_and_not_echoed(capsys, tmp_path):
    secret = "sk-proj-Zz9PASTEDkeyXYZ"
    rc = main(
        [
            "llm",
            "ask",
            "hi",
            "--llm-backend",
            "openai",
            "--llm-model",
            "gpt-4o-mini",
            "--llm-api-key-env",
            secret,
            "--llm-cache-path",
            str(tmp_path / "c.sqlite"),
        ]
    )
    assert rc == 2
    err = _one_line_error(capsys)
    assert "must be the NAME of the environment variable" in err and secret not in err
    assert list(tmp_path.iterdir()) == []


def test_ask_help_tells_the_cache_default_it_uses(capsys):
    with pytest.raises(SystemExit):
        main(["llm", "ask", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "call cache mode (default off;" in out and "default read-write" not in out
    p = argparse.ArgumentParser()
    add_llm_arguments(p)  # backtest keeps its read-write default
    assert "default read-write" in " ".join(p.format_help().split())


def test_llm_help_is_plain_text(capsys):
    with pytest.raises(SystemExit):
        main(["llm", "--help"])
    out = capsys.readouterr().out
    assert "fincon llm model" in out and "fincon llm cache" in out
    assert "``" not in out and ":func:" not in out and ":meth:" not in out


def test_llm_cache_keeps_its_columns_under_a_long_agent_name(tmp_path, capsys):
    """Names over 22 characters (a team's reflection and critic agents) pushed their row's figures right."""
    from fincon.llm import CallCache, SamplingParams
    from fincon.llm.types import Message

    db = tmp_path / "llm.sqlite"
    cache = CallCache(db, "read-write")
    for i, agent in enumerate(("manager", "analyst-earnings-call-reflection", "news")):
        cache.put(f"k{i}", backend="local", model="m", agent=agent, messages=[Message(role="user", content=str(i))],
                  schema={}, params=SamplingParams(), answer="{}", prompt_tokens=100 * 10**i,
                  completion_tokens=10, latency_s=1.5)  # fmt: skip
    cache.close()
    assert main(["llm", "cache", "--path", str(db)]) == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    assert len(rows) == 3 and len({r.index(" calls") for r in rows}) == 1
    assert len({r.index(" prompt") for r in rows}) == 1 and len({len(r) for r in rows}) == 1
