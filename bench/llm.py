"""Benchmark of the LLM layer's local backend and its cache.

Prints, for the chosen bundled model (or GGUF path):

* live calls: calls per second, completion tokens per second (end to end)
  and prompt+completion tokens per second, through the real client
  (schema instruction, grammar-constrained JSON, validation);
* raw llama.cpp throughput: prompt evaluation and generation tokens/s;
* latency of a cache hit vs a live call, as a ratio;
* with ``--sampling``: the same calls with llama-cpp-python's own sampler
  chain and state saving, then with fincon's (``fincon.llm.backends.fast_llama``:
  the grammar checked for the most likely token first, states saved without
  logits), side by side in one run: the time ratio and whether every answer
  is the same text. ``--prompts CACHE.sqlite`` takes the calls from a
  recorded run (e.g. the MSFT team recording) instead of the sample prompts.

    python bench/llm.py                       # the default 1.5B model
    python bench/llm.py --model qwen2.5-coder-0.5b --calls 8
    python bench/llm.py --sampling --prompts ~/.cache/fincon/recordings/team-MSFT-2020-10-01-2021-05-06.sqlite --calls 24
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fincon.agents.simple_trader import TradeCall, build_messages
from fincon.llm import CallCache, LLMClient, SamplingParams, UsageLedger
from fincon.llm.backends.local import LocalLlamaBackend


def prompts(n: int) -> list[list[dict]]:
    rng = np.random.default_rng(0)
    return [build_messages(f"T{i:02d}", rng.normal(0.0, 0.02, 10)) for i in range(n)]


def raw_throughput(backend: LocalLlamaBackend) -> dict[str, float]:
    """Prompt-eval and generation speed of llama.cpp itself (no grammar)."""
    llm = backend.load()
    text = " ".join(["The quarterly report showed revenue growth and stable margins."] * 25)
    llm.reset()
    t0 = time.perf_counter()
    out = llm.create_completion(text, max_tokens=1, temperature=0.0)
    prompt_s = time.perf_counter() - t0
    n_prompt = out["usage"]["prompt_tokens"]
    llm.reset()
    t0 = time.perf_counter()
    out = llm.create_completion("Write a short note about index funds:", max_tokens=64, temperature=0.0)
    gen_s = time.perf_counter() - t0
    n_gen = out["usage"]["completion_tokens"]
    return {
        "prompt_tok_per_s": n_prompt / prompt_s,
        "gen_tok_per_s": n_gen / gen_s,
        "prompt_tokens": n_prompt,
        "gen_tokens": n_gen,
    }


def recorded_calls(path: Path, n: int) -> list[tuple[list[dict], dict, dict]]:
    """The first ``n`` calls of a recorded run, in the order they were made:
    the messages as sent (schema instruction included), schema, sampling."""
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    rows = conn.execute("select messages, schema, params from calls order by created_at limit ?", (n,)).fetchall()
    conn.close()
    return [(json.loads(m), json.loads(s), json.loads(p)) for m, s, p in rows]


def sample_calls(n: int) -> list[tuple[list[dict], dict, dict]]:
    from fincon.llm.client import with_schema_instruction
    from fincon.llm.schema import schema_for
    from fincon.llm.types import as_messages

    schema = schema_for(TradeCall)
    return [
        ([m.model_dump() for m in with_schema_instruction(as_messages(msgs), schema)], schema, {"max_tokens": 120})
        for msgs in prompts(n)
    ]


def sampling_side_by_side(model: str, threads: int | None, calls) -> dict:
    """Wall time of ``calls`` with llama-cpp-python's sampler chain and state
    saving, then with fincon's fast path; each on a freshly loaded model, the
    load not counted."""
    from fincon.llm.types import Message

    out: dict[bool, tuple[float, list[str], int]] = {}
    for fast in (False, True):
        backend = LocalLlamaBackend(model, n_ctx=4096, n_threads=threads, fast_sampling=fast)
        backend.load()
        texts, tokens = [], 0
        t = time.perf_counter()
        for msgs, schema, params in calls:
            done = backend.complete([Message(**m) for m in msgs], schema, SamplingParams(**params))
            texts.append(done.text)
            tokens += done.completion_tokens
        out[fast] = (time.perf_counter() - t, texts, tokens)
        backend.close()
    stock, fast_run = out[False], out[True]
    same = sum(a == b for a, b in zip(stock[1], fast_run[1]))
    return {
        "calls": len(calls),
        "stock_s": stock[0],
        "fast_s": fast_run[0],
        "stock_over_fast": stock[0] / fast_run[0],
        "same_answers": same,
        "completion_tokens": fast_run[2],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="bundled model name or GGUF path")
    ap.add_argument("--calls", type=int, default=5, help="live calls to time (default 5)")
    ap.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default min(2, cores))")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    ap.add_argument(
        "--sampling",
        action="store_true",
        help="only compare llama-cpp-python's sampler chain with fincon's fast path on the same calls",
    )
    ap.add_argument("--prompts", type=Path, help="--sampling: take the calls from this recorded LLM cache (.sqlite)")
    args = ap.parse_args(argv)

    if args.sampling:
        calls = recorded_calls(args.prompts.expanduser(), args.calls) if args.prompts else sample_calls(args.calls)
        r = sampling_side_by_side(args.model, args.threads, calls)
        if args.json:
            print(json.dumps(r, sort_keys=True))
        else:
            print(
                f"sampling, {r['calls']} calls ({r['completion_tokens']} completion tokens): "
                f"llama-cpp-python {r['stock_s']:.1f} s, fincon fast path {r['fast_s']:.1f} s: "
                f"{r['stock_over_fast']:.2f}x; same answers {r['same_answers']}/{r['calls']}"
            )
        return 0 if r["same_answers"] == r["calls"] else 1

    t0 = time.perf_counter()
    backend = LocalLlamaBackend(args.model, n_threads=args.threads)
    backend.load()
    load_s = time.perf_counter() - t0
    raw = raw_throughput(backend)

    with tempfile.TemporaryDirectory() as tmp:
        cache_path = Path(tmp) / "llm.sqlite"
        params = SamplingParams(max_tokens=120)
        live = LLMClient(backend, cache=CallCache(cache_path, "read-write"), ledger=UsageLedger(), params=params)
        msgs = prompts(args.calls)
        lat, comp, total = [], 0, 0
        t_all = time.perf_counter()
        for m in msgs:
            t = time.perf_counter()
            r = live.ask(m, TradeCall, agent="bench")
            lat.append(time.perf_counter() - t)  # the whole ask(): key, cache, model, validation
            comp += r.usage.completion_tokens
            total += r.usage.total_tokens
        live_s = time.perf_counter() - t_all
        reasks = live.ledger.summary()["llm_reasks"]

        replay = LLMClient(backend, cache=CallCache(cache_path, "replay"), ledger=UsageLedger(), params=params)
        hits = []
        for _ in range(20):
            for m in msgs:
                t = time.perf_counter()
                r = replay.ask(m, TradeCall, agent="bench")
                hits.append(time.perf_counter() - t)
                assert r.usage.cache_hit
    backend.close()

    live_med, hit_med = statistics.median(lat), statistics.median(hits)
    res = {
        "model": backend.model_name,
        "threads": backend.n_threads,
        "load_s": round(load_s, 2),
        "calls": args.calls,
        "reasks": reasks,
        "calls_per_s": args.calls / live_s,
        "completion_tok_per_s": comp / live_s,
        "total_tok_per_s": total / live_s,
        "raw_prompt_tok_per_s": raw["prompt_tok_per_s"],
        "raw_gen_tok_per_s": raw["gen_tok_per_s"],
        "live_call_median_s": live_med,
        "cache_hit_median_s": hit_med,
        "live_over_hit": live_med / hit_med,
    }
    if args.json:
        print(json.dumps(res, sort_keys=True))
        return 0
    print(f"local backend, {res['model']} on {res['threads']} threads (load {res['load_s']}s)")
    print(
        f"  live calls       : {args.calls} calls, {res['calls_per_s']:.3f} calls/s, "
        f"{res['completion_tok_per_s']:.1f} completion tok/s, {res['total_tok_per_s']:.1f} total tok/s "
        f"({reasks} re-asks)"
    )
    print(
        f"  llama.cpp raw    : prompt {res['raw_prompt_tok_per_s']:.1f} tok/s ({raw['prompt_tokens']} tokens), "
        f"generation {res['raw_gen_tok_per_s']:.1f} tok/s ({raw['gen_tokens']} tokens)"
    )
    print(f"  latency (median) : live call {live_med * 1000:.0f} ms, cache hit {hit_med * 1000:.3f} ms")
    print(f"  ratio            : a cache hit is {res['live_over_hit']:,.0f}x faster than a live call")
    return 0


if __name__ == "__main__":
    sys.exit(main())
