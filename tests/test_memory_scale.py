"""Procedural retrieval at a size where the index prunes by importance:
exactly the brute-force ranking (FinCon A.13), point in time, by source,
with access bonuses, after reopening, and shared between instances.
No timings here (bench/memory.py measures them)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fincon.memory import DEFAULT_DECAY, MemoryEntry, MemoryStore
from fincon.memory.embedders import HashingEmbedder
from fincon.memory.index import SMALL, ScoreIndex

N = 5000
DAY0 = pd.Timestamp("2021-01-04")
SPAN = 400
WORDS = (
    "tesla demand margin price cut delivery china battery factory recall lawsuit growth guidance "
    "revenue outlook inventory supply chip shortage autopilot energy storage"
).split()
SOURCES = ["news"] * 12 + ["analyst_note"] * 4 + ["10-Q", "earnings_call", "10-K"]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    rng = np.random.default_rng(7)
    es = [
        MemoryEntry(
            id=f"e{i:05d}",
            ticker="TSLA",
            source=SOURCES[int(rng.integers(len(SOURCES)))],
            day=DAY0 + pd.Timedelta(days=int(rng.integers(0, SPAN))),
            text=" ".join(rng.choice(WORDS, 7)),
        )
        for i in range(N)
    ]
    path = tmp_path_factory.mktemp("scale") / "mem"
    pm = MemoryStore(path, HashingEmbedder(n_features=256)).procedural("a", "TSLA")
    assert pm.add(es) == N
    marked = {e.id: 2 for e in es[:300:30]}
    for _ in range(2):
        assert pm.mark_critical(list(marked)) == len(marked)
    X = np.asarray(HashingEmbedder(n_features=256)([e.text for e in es]), dtype=np.float64)
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return path, pm, es, marked, X


def brute(es, marked, X, query, day, k=5, sources=None):
    q = np.asarray(HashingEmbedder(n_features=256)([query])[0], dtype=np.float64)
    q /= np.linalg.norm(q)
    day = pd.Timestamp(day)
    out = []
    for e, x in zip(es, X):
        if e.day > day or (sources and e.source not in sources):
            continue
        imp = DEFAULT_DECAY[e.source].importance((day - e.day).days) + 5 * marked.get(e.id, 0)
        out.append(((float(x @ q) + 1) / 2 + min(imp / 100, 1), e.id))
    out.sort(key=lambda t: (-round(t[0], 9), t[1]))
    return out[:k]


def same(got, ref):
    assert [round(s.score, 5) for s in got] == [round(b[0], 5) for b in ref]
    # ids too, except inside near-ties (float32 cosines vs this float64 reference)
    for s, (bs, bid) in zip(got, ref):
        assert s.id == bid or sum(abs(b[0] - bs) < 1e-6 for b in ref) > 1


CASES = [  # (query, day offset from DAY0, sources)
    ("tesla recall lawsuit", SPAN, None),  # a backtest's day: nothing stored after it
    ("battery factory china growth", SPAN // 2, None),  # half the memory lies in the future
    ("guidance margin outlook", SPAN + 300, None),  # stale: nothing important left, no pruning
    ("revenue outlook", SPAN - 3, ["10-K", "10-Q"]),  # a filings analyst
    ("zebra", SPAN, None),  # nothing relevant: importance decides
]


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
@pytest.mark.parametrize("query,offset,sources", CASES)
def test_top_k_equals_brute_force_at_scale(big, query, offset, sources):
    path, pm, es, marked, X = big
    day = DAY0 + pd.Timedelta(days=offset)
    got = pm.retrieve(query, day, k=5, sources=sources)
    same(got, brute(es, marked, X, query, day, sources=sources))
    assert all(s.day <= day for s in got)
    assert all(s.source in sources for s in got) if sources else True
    top10 = pm.retrieve(query, day, k=10, sources=sources)
    same(top10, brute(es, marked, X, query, day, k=10, sources=sources))


@pytest.mark.slow  # its module's fixture takes 2 s: in make test, not in make test-fast (under a minute)
def test_the_importance_bound_prunes_on_a_backtest_day(big):
    path, pm, es, marked, X = big
    assert N > SMALL
    pm.retrieve("tesla recall lawsuit", DAY0 + pd.Timedelta(days=SPAN))
    assert pm.index.last_visible == N
    assert pm.index.last_compared < N / 2  # most entries never met the query


def test_marked_entries_carry_their_bonus(big):
    path, pm, es, marked, X = big
    day = DAY0 + pd.Timedelta(days=SPAN)
    got = {s.id: s for s in pm.retrieve("tesla recall lawsuit", day, k=N)}
    for mid, n in marked.items():
        assert got[mid].access == n


def test_a_reloaded_index_ranks_like_the_live_one(big):
    path, pm, es, marked, X = big
    fresh = ScoreIndex()
    fresh.load(pm.collection)  # what a reopened store reads from chromadb
    assert fresh.n == pm.index.n == N
    emb = HashingEmbedder(n_features=256)
    for query, offset, sources in CASES:
        q = np.asarray(emb([query])[0], dtype=np.float32)
        q /= np.linalg.norm(q)
        d_ord = (DAY0 + pd.Timedelta(days=offset)).date().toordinal()
        assert fresh.top(q, d_ord, 5, DEFAULT_DECAY, sources) == pm.index.top(q, d_ord, 5, DEFAULT_DECAY, sources)


def test_instances_on_one_collection_share_the_index(big, tmp_path):
    path, pm, es, marked, X = big
    other = MemoryStore(path, HashingEmbedder(n_features=256)).procedural("a", "TSLA")
    assert other.index is pm.index
    # a write through either instance is seen by both; here on a throwaway store
    a = MemoryStore(tmp_path / "m", HashingEmbedder()).procedural("x", "TSLA")
    a.add([MemoryEntry(id="old", ticker="TSLA", source="news", day=pd.Timestamp("2022-01-03"), text="tesla recall")])
    b = MemoryStore(tmp_path / "m", HashingEmbedder()).procedural("x", "TSLA")
    b.add([MemoryEntry(id="new", ticker="TSLA", source="news", day=pd.Timestamp("2022-03-01"), text="tesla recall")])
    assert [s.id for s in a.retrieve("tesla recall", "2022-03-01", k=2)] == ["new", "old"]
    b.mark_critical(["old"])
    for _ in range(3):
        a.mark_critical(["old"])
    got = {s.id: s for s in b.retrieve("tesla recall", "2022-03-01", k=2)}
    assert got["old"].access == 4 and got["new"].access == 0
    assert got["old"].importance == pytest.approx(DEFAULT_DECAY["news"].importance(57) + 20)


def test_a_visible_source_without_decay_is_a_config_error(tmp_path):
    from fincon.errors import ConfigError
    from fincon.memory import Decay

    store = MemoryStore(tmp_path / "m", HashingEmbedder())
    store.procedural("a", "TSLA").add(
        [
            MemoryEntry(id="n", ticker="TSLA", source="news", day=pd.Timestamp("2022-03-01"), text="tesla recall"),
            MemoryEntry(id="k", ticker="TSLA", source="10-K", day=pd.Timestamp("2022-02-01"), text="annual report"),
        ]
    )
    filings_only = store.procedural("a", "TSLA", decay={"10-K": Decay(90.0, 0.995)})
    assert [s.id for s in filings_only.retrieve("report", "2022-03-02", sources=["10-K"])] == ["k"]
    with pytest.raises(ConfigError, match="'news'"):
        filings_only.retrieve("report", "2022-03-02")


def _rows(collection):
    got = collection.get(include=["documents", "metadatas"])
    return sorted(zip(got["ids"], got["documents"], [sorted(m.items()) for m in got["metadatas"]]))


def test_write_behind_holds_writes_until_flush_and_then_stores_the_same(tmp_path):
    """Held-back writes answer queries like written ones, chromadb sees them
    only at flush(), and then holds exactly what a write-through store holds
    (access counters included), so a reopened store ranks the same."""
    es = [
        MemoryEntry(
            id=f"w{i}",
            ticker="TSLA",
            source=SOURCES[i % len(SOURCES)],
            day=DAY0 + pd.Timedelta(days=i // 3),
            text=" ".join(WORDS[i % 7 : i % 7 + 4]),
            metadata={"title": f"item {i}"},
        )
        for i in range(60)
    ]
    through = MemoryStore(tmp_path / "through", HashingEmbedder()).procedural("a", "TSLA")
    store = MemoryStore(tmp_path / "behind", HashingEmbedder(), write_behind=True)
    behind = store.procedural("a", "TSLA")
    for pm in (through, behind):
        for lo in range(0, 60, 6):  # day by day, as a run adds them
            assert pm.add(es[lo : lo + 6]) == 6
        assert pm.mark_critical(["w3", "w9", "w3x"]) == 2
        assert pm.mark_critical(["w9"]) == 1
    assert behind.collection.count() == 0 and len(behind) == 60 and behind.index.pending() == 60
    day = DAY0 + pd.Timedelta(days=25)
    assert behind.retrieve("tesla demand margin", day, k=8) == through.retrieve("tesla demand margin", day, k=8)
    assert store.flush() == 60 and behind.index.pending() == 0 and store.flush() == 0
    assert _rows(behind.collection) == _rows(through.collection)
    assert {i: dict(m)["access"] for i, _, m in _rows(behind.collection) if i in ("w3", "w9")} == {"w3": 1, "w9": 2}
    # a counter changed after its row was written goes out as one update at the next flush
    behind.mark_critical(["w3"])
    through.mark_critical(["w3"])
    assert behind.index.pending() == 1 and store.flush() == 1
    assert _rows(behind.collection) == _rows(through.collection)
    fresh = ScoreIndex()
    fresh.load(behind.collection)
    q = np.asarray(HashingEmbedder()(["tesla demand margin"])[0], dtype=np.float32)
    q /= np.linalg.norm(q)
    d = day.date().toordinal()
    ids_scores = [[(t[0], round(t[4], 5)) for t in ix.top(q, d, 8, DEFAULT_DECAY)] for ix in (fresh, behind.index)]
    assert ids_scores[0] == ids_scores[1]
    assert sorted(zip(fresh.ids, fresh.docs)) == sorted(zip(behind.index.ids, behind.index.docs))
