"""Information-layer benchmarks.

* top-5 retrieval latency (p50, p95) of ProceduralMemory.retrieve (FinCon A.13
  ranking) at 1k, 10k and 100k memory events, embedded chromadb on disk;
* embedding throughput of the offline embedders (MiniLM from its wheel,
  the hashing embedder);
* transcription speed: compute seconds per minute of audio, both backends.

The collections are filled with 384-dim hashing embeddings (MiniLM's width)
so the 100k build takes minutes, not an hour; the retrieval latency below
therefore excludes the query's embedding, which is reported separately
(MiniLM, one query). Memory events are spread over 500 simulated days and
queried at the end of that span, as a backtest does (nothing after the query
day is stored). Run: ``python bench/memory.py [--sizes 1000,10000]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def corpus_texts(n: int) -> list[tuple[str, str]]:
    from fincon.data.events import sample_store

    evs = [e for e in sample_store().all_events() if e.text]
    return [(evs[i % len(evs)].source, evs[i % len(evs)].text or "") for i in range(n)]


def bench_retrieval(sizes, queries: int) -> list[dict]:
    from fincon.memory import MemoryEntry, MemoryStore
    from fincon.memory.embedders import HashingEmbedder

    out = []
    qtexts = [f"Profile: analyst. Task: trade {t} on demand, margins and guidance" for t in
              ("Tesla", "Apple", "Pfizer", "Netflix", "Coinbase")]
    texts = corpus_texts(max(sizes))
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            ms = MemoryStore(Path(tmp) / "mem", HashingEmbedder(n_features=384))
            pm = ms.procedural("bench", "TSLA")
            day0 = pd.Timestamp("2021-01-04")
            span = 500
            entries = [MemoryEntry(id=f"m{i}", ticker="TSLA", source=texts[i][0],
                                   day=day0 + pd.Timedelta(days=int(i * span / n)), text=f"{texts[i][1]} #{i}")
                       for i in range(n)]
            t0 = time.perf_counter()
            pm.add(entries)
            build = time.perf_counter() - t0
            lat = []
            rng = np.random.default_rng(0)
            for j in range(queries):
                # as in a backtest: the memory holds entries up to the query day only
                day = day0 + pd.Timedelta(days=span + int(rng.integers(0, 5)))
                t0 = time.perf_counter()
                top = pm.retrieve(qtexts[j % len(qtexts)], day, k=5)
                lat.append(time.perf_counter() - t0)
                assert len(top) == 5
            lat_ms = sorted(x * 1000 for x in lat)
            row = {"events": n, "build_s": round(build, 1), "p50_ms": round(statistics.median(lat_ms), 1),
                   "p95_ms": round(lat_ms[int(0.95 * (len(lat_ms) - 1))], 1), "queries": queries}
            print(json.dumps({"retrieval": row}), flush=True)
            out.append(row)
    return out


def bench_embedding(n: int) -> list[dict]:
    from fincon.memory.embedders import HashingEmbedder, MiniLMEmbedder

    texts = [t for _, t in corpus_texts(n)]
    sents = [t.split("\n")[-1].split(". ")[0] for t in texts]
    rows = []
    for name, emb in (("minilm", MiniLMEmbedder()), ("hashing", HashingEmbedder())):
        emb(["warm up"])
        for kind, data in (("sentences", sents), ("memory texts", texts)):
            t0 = time.perf_counter()
            emb(data)
            dt = time.perf_counter() - t0
            row = {"embedder": name, "input": kind, "n": len(data), "per_s": round(len(data) / dt, 1)}
            print(json.dumps({"embedding": row}), flush=True)
            rows.append(row)
    one = []
    for i in range(20):
        t0 = time.perf_counter()
        MiniLMEmbedder()([f"Profile: analyst. Task: trade Tesla on day {i}"])
        one.append(time.perf_counter() - t0)
    rows.append({"embedder": "minilm", "input": "one query (median of 20)", "n": 1,
                 "ms": round(statistics.median(one) * 1000, 1)})
    print(json.dumps({"embedding": rows[-1]}), flush=True)
    return rows


def bench_transcription(n_files: int) -> list[dict]:
    from fincon.data.events import sample_store
    from fincon.data.transcription import Transcriber, word_error_rate

    store = sample_store(["AAPL", "COIN"])
    calls = [e for e in store.all_events() if e.source == "earnings_call"][:n_files]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for backend in ("openai-whisper", "faster-whisper"):
            tr = Transcriber(backend=backend, cache_dir=Path(tmp) / backend)
            tr.transcribe(store.audio_path(calls[0]))  # load (and convert) the model once
            audio = comp = 0.0
            wers = []
            for e in calls[1:]:
                r = tr.transcribe(store.audio_path(e))
                audio += r.audio_seconds
                comp += r.compute_seconds
                wers.append(word_error_rate(e.text or "", r.text))
            row = {"backend": backend, "files": len(calls) - 1, "audio_min": round(audio / 60, 2),
                   "s_per_audio_min": round(comp / (audio / 60), 1), "mean_wer": round(float(np.mean(wers)), 4)}
            print(json.dumps({"transcription": row}), flush=True)
            rows.append(row)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--embed-n", type=int, default=2000)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--skip", default="", help="comma list of: retrieval, embedding, transcription")
    ap.add_argument("--out", type=Path, help="also write the results as JSON here")
    a = ap.parse_args()
    skip = set(a.skip.split(",")) if a.skip else set()
    res = {"machine": {"python": platform.python_version(), "cpu": platform.processor() or platform.machine()}}
    if "embedding" not in skip:
        res["embedding"] = bench_embedding(a.embed_n)
    if "transcription" not in skip:
        res["transcription"] = bench_transcription(a.calls + 1)
    if "retrieval" not in skip:
        res["retrieval"] = bench_retrieval([int(x) for x in a.sizes.split(",")], a.queries)
    if a.out:
        a.out.write_text(json.dumps(res, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
