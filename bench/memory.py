"""Information-layer benchmarks.

* top-5 retrieval latency (p50, p95) at 1k, 10k and 100k memory events,
  embedded chromadb on disk: the library's ``ProceduralMemory.retrieve`` and
  the path it replaced (:class:`Baseline`, kept here verbatim) on the same
  collection, in alternating blocks of queries, with the speed-up and how often each
  returned exactly the brute-force top-5 (FinCon A.13 ranking); plus a stale
  case (queried long after the last entry) and a reopened store's first query;
* embedding throughput of the offline embedders (MiniLM from its wheel,
  the hashing embedder);
* transcription speed: compute seconds per minute of audio, both backends.

The collections are filled with 384-dim hashing embeddings (MiniLM's width)
so the 100k build takes minutes, not an hour; the retrieval latency includes
embedding the query with that hashing embedder but not with MiniLM, which is
reported separately (one query). Memory events are spread over 500 simulated
days and queried at the end of that span, as a backtest does (nothing after
the query day is stored). Run: ``python bench/memory.py --skip
embedding,transcription`` for retrieval only, ``--sizes 1000,10000`` for the
quick sizes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
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


class Baseline:
    """Today's path before issue 11: ``ProceduralMemory.retrieve`` as of
    commit eb7b2be, kept here verbatim (``self`` is the ``ProceduralMemory``)
    so that the bench times it against the library's path on the same
    collection in the same run. An HNSW pool of 50 by cosine (unfiltered
    first, redone with a ``day`` filter if it saw the future), then
    metadata-filtered ``get`` calls for every entry whose importance alone
    could reach the top-k, each rescored in Python."""

    def __init__(self, pm, pool: int = 50, min_importance: float = 0.02):
        self.pm = pm
        self.collection, self.embedder, self.decay = pm.collection, pm.embedder, pm.decay
        self._decay_for = pm._decay_for
        self.pool, self.min_importance = pool, min_importance

    def _score(self, mid, emb, doc, m, qn, d_ord):
        from fincon.memory.procedural import ACCESS_BONUS, IMPORTANCE_SCALE, ScoredMemory

        rel = float(np.dot(emb, qn) / (np.linalg.norm(emb) or 1.0))
        age = d_ord - int(m["ordinal"])
        acc = int(m.get("access", 0))
        imp = self._decay_for(m["source"]).importance(age) + ACCESS_BONUS * acc
        rs, is_ = (rel + 1.0) / 2.0, min(imp / IMPORTANCE_SCALE, 1.0)
        return ScoredMemory(
            id=mid,
            source=m["source"],
            day=pd.Timestamp(dt.date.fromordinal(int(m["ordinal"]))),
            text=doc,
            relevancy=rel,
            importance=imp,
            relevancy_scaled=rs,
            importance_scaled=is_,
            score=rs + is_,
            access=acc,
            age_days=age,
            metadata={k_[2:]: v for k_, v in m.items() if k_.startswith("m_")},
        )

    def retrieve(self, query, day, k=5, sources=None):
        from fincon.data.events.model import day_int

        n = self.collection.count()
        if n == 0 or k <= 0:
            return []
        d_int, d_ord = day_int(day), pd.Timestamp(day).date().toordinal()
        base = {"day": {"$lte": d_int}}
        if sources:
            base = {"$and": [base, {"source": {"$in": list(sources)}}]}
        qv = np.asarray(self.embedder([query])[0], dtype=np.float32)
        qn = qv / (np.linalg.norm(qv) or 1.0)
        want = min(n, max(self.pool, 4 * k))
        inc = ["embeddings", "documents", "metadatas"]
        res = None if sources else self.collection.query(query_embeddings=[qv], n_results=want, include=inc)
        if res is None or any(int(m["day"]) > d_int for m in res["metadatas"][0]):
            res = self.collection.query(query_embeddings=[qv], n_results=want, where=base, include=inc)
        scored = {}
        for i, e, doc, m in zip(res["ids"][0], res["embeddings"][0], res["documents"][0], res["metadatas"][0]):
            scored[i] = self._score(i, np.asarray(e, dtype=np.float32), doc, m, qn, d_ord)
        if len(scored) >= want:
            floor = min(s.relevancy_scaled for s in scored.values())
            fetched_thr = math.inf
            for first in (True, False):
                ranked = sorted((x.score for x in scored.values()), reverse=True)
                kth = ranked[k - 1] if len(ranked) >= k else 0.0
                thr = max(kth - floor, self.min_importance)
                if first:
                    thr = max(thr, 0.5)
                if thr >= fetched_thr:
                    break
                self._fetch_important(base, day, thr, sources, scored, qn, d_ord)
                fetched_thr = thr
        out = sorted(scored.values(), key=lambda s: (-round(s.score, 9), s.id))
        return out[:k]

    def _fetch_important(self, base, day, thr, sources, scored, qn, d_ord):
        from fincon.data.events.model import day_int

        clauses = [{"access": {"$gt": 0}}]
        for src, dec in sorted(self.decay.items()):
            if sources and src not in sources:
                continue
            h = dec.horizon(thr)
            if h > 0:
                lo = day_int(pd.Timestamp(day) - pd.Timedelta(days=h))
                clauses.append({"$and": [{"source": src}, {"day": {"$gte": lo}}]})
        where = {"$and": [base, {"$or": clauses} if len(clauses) > 1 else clauses[0]]}
        ids = [i for i in self.collection.get(where=where, include=[])["ids"] if i not in scored]
        for lo in range(0, len(ids), 5000):
            got = self.collection.get(ids=ids[lo : lo + 5000], include=["embeddings", "documents", "metadatas"])
            for i, e, doc, m in zip(got["ids"], got["embeddings"], got["documents"], got["metadatas"]):
                scored[i] = self._score(i, np.asarray(e, dtype=np.float32), doc, m, qn, d_ord)


def brute_force(pm, entries, embedder, query: str, day, k: int = 5) -> list[tuple[str, float]]:
    """Every entry scored in float64 from its text: the reference ranking."""
    key = id(entries)
    if _BRUTE.get("key") != key:
        X = np.vstack(
            [
                np.asarray(embedder([e.text for e in entries[lo : lo + 5000]]), dtype=np.float64)
                for lo in range(0, len(entries), 5000)
            ]
        )
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        _BRUTE.update(
            key=key,
            X=X,
            ord=np.array([e.day.date().toordinal() for e in entries]),
            v=np.array([pm.decay[e.source].value for e in entries]),
            th=np.array([pm.decay[e.source].theta for e in entries]),
        )
    b = _BRUTE
    q = np.asarray(embedder([query])[0], dtype=np.float64)
    q /= np.linalg.norm(q)
    d_ord = pd.Timestamp(day).date().toordinal()
    vis = b["ord"] <= d_ord
    s = (b["X"] @ q + 1) / 2 + np.minimum(b["v"] * b["th"] ** np.maximum(d_ord - b["ord"], 0) / 100, 1)
    ranked = sorted(((entries[i].id, float(s[i])) for i in np.flatnonzero(vis)), key=lambda t: (-round(t[1], 9), t[0]))
    return ranked[:k]


_BRUTE: dict = {}


def same_ranking(got, ref, tol: float = 1e-6) -> bool:
    """Same scores position by position, and the same ids wherever the score
    is not a near-tie (float32 cosines may order scores within ``tol``
    differently from the float64 reference)."""
    if len(got) != len(ref) or any(abs(a - b) > tol for (_, a), (_, b) in zip(got, ref)):
        return False
    return all(gi == ri or sum(abs(s - gs) <= tol for _, s in ref) > 1 for (gi, gs), (ri, _) in zip(got, ref))


def _side_by_side(pm, entries, emb, qtexts, days, block: int = 5) -> dict:
    """Both paths on the same queries, in alternating blocks of ``block``
    queries (who goes first alternates), so that both see the same drift in
    machine load but neither runs in caches the other just churned (a
    baseline query does hundreds of ms of SQLite work)."""
    old = Baseline(pm)
    lat: dict[str, list[float]] = {"baseline": [], "new": []}
    agree = {"baseline": 0, "new": 0}
    compared = []
    rng = np.random.default_rng(0)
    work = [(qtexts[j % len(qtexts)], day0 + pd.Timedelta(days=int(rng.integers(0, 5)))) for j, day0 in enumerate(days)]
    refs = [brute_force(pm, entries, emb, q, day) for q, day in work]
    for b, lo in enumerate(range(0, len(work), block)):
        runs = [("baseline", old.retrieve), ("new", pm.retrieve)]
        for name, fn in runs if b % 2 == 0 else runs[::-1]:
            for (q, day), ref in zip(work[lo : lo + block], refs[lo : lo + block]):
                t0 = time.perf_counter()
                top = fn(q, day, k=5)
                lat[name].append(time.perf_counter() - t0)
                assert len(top) == 5
                agree[name] += same_ranking([(s.id, s.score) for s in top], ref)
                if name == "new":
                    compared.append(pm.index.last_compared / pm.index.last_visible)
    row: dict = {}
    for name in ("baseline", "new"):
        ms_ = sorted(x * 1000 for x in lat[name])
        row[f"{name}_p50_ms"] = round(statistics.median(ms_), 2)
        row[f"{name}_p95_ms"] = round(ms_[int(0.95 * (len(ms_) - 1))], 2)
        row[f"{name}_equals_brute_force"] = f"{agree[name]}/{len(days)}"
    row["speedup_p50"] = round(row["baseline_p50_ms"] / row["new_p50_ms"], 1)
    row["new_rows_compared"] = f"{statistics.median(compared):.1%}"  # cosines computed / visible entries
    return row


def bench_retrieval(sizes, queries: int, stale_days: int = 200) -> list[dict]:
    """Per size, both paths on one collection (see :func:`_side_by_side`): the
    backtest case (memory spread over 500 days, queried on the last days), a
    stale case (queried ``stale_days`` after the last entry: nothing is
    important any more, so the new path's importance bound prunes nothing)
    and a reopened store (first query of a new process-level index)."""
    import gc

    from fincon.memory import MemoryEntry, MemoryStore
    from fincon.memory.embedders import HashingEmbedder

    out = []
    qtexts = [
        f"Profile: analyst. Task: trade {t} on demand, margins and guidance"
        for t in ("Tesla", "Apple", "Pfizer", "Netflix", "Coinbase")
    ]
    texts = corpus_texts(max(sizes))
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            emb = HashingEmbedder(n_features=384)
            ms = MemoryStore(Path(tmp) / "mem", emb)
            pm = ms.procedural("bench", "TSLA")
            day0 = pd.Timestamp("2021-01-04")
            span = 500
            entries = [
                MemoryEntry(
                    id=f"m{i}",
                    ticker="TSLA",
                    source=texts[i][0],
                    day=day0 + pd.Timedelta(days=int(i * span / n)),
                    text=f"{texts[i][1]} #{i}",
                )
                for i in range(n)
            ]
            t0 = time.perf_counter()
            pm.add(entries)
            build = time.perf_counter() - t0
            for case, offset in (("backtest", span), ("stale", span + stale_days)):
                row = {
                    "events": n,
                    "case": case,
                    "build_s": round(build, 1),
                    "queries": queries,
                    **_side_by_side(pm, entries, emb, qtexts, [day0 + pd.Timedelta(days=offset)] * queries),
                }
                print(json.dumps({"retrieval": row}), flush=True)
                out.append(row)
            # a reopened store: the new path loads its columns from chromadb on the first query
            del pm, ms
            gc.collect()
            day = day0 + pd.Timedelta(days=span)
            reopened = {}
            for name in ("baseline", "new"):
                pm = MemoryStore(Path(tmp) / "mem", emb).procedural("bench", "TSLA")
                fn = Baseline(pm).retrieve if name == "baseline" else pm.retrieve
                t0 = time.perf_counter()
                fn(qtexts[0], day, k=5)
                reopened[f"{name}_first_query_ms"] = round((time.perf_counter() - t0) * 1000, 1)
                del pm, fn
                gc.collect()
            row = {"events": n, "case": "reopened store, first query", **reopened}
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
    rows.append(
        {
            "embedder": "minilm",
            "input": "one query (median of 20)",
            "n": 1,
            "ms": round(statistics.median(one) * 1000, 1),
        }
    )
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
            row = {
                "backend": backend,
                "files": len(calls) - 1,
                "audio_min": round(audio / 60, 2),
                "s_per_audio_min": round(comp / (audio / 60), 1),
                "mean_wer": round(float(np.mean(wers)), 4),
            }
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
