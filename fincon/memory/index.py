"""Exact top-k scoring of a procedural memory, in numpy, beside chromadb.

chromadb stays the memory store: every entry's text, metadata and embedding
are written there first, and the texts and metadata of the returned memories
are read back from there. What a query needs for *every* visible entry, its
cosine to the query and its decayed importance, is kept here as well, per
collection and per process, in columns:

* the unit embedding (float32, one row per entry, in insertion order);
* the day ordinal, the source (as a small code) and the access counter.

Why: at 100k entries, asking chromadb for those costs a metadata-filtered
search or ``get`` per query (hundreds of ms: its ``where`` filters scan the
SQLite metadata), and its HNSW search is approximate, so a ranking built on
it equals brute force only up to the index's recall. Here the ranking *is*
brute force, done cheaply:

    score = (cos + 1) / 2 + imp_scaled  <=  1 + imp_scaled

so once the k-th best score of a seed (the entries with the highest
importance) is known, an entry whose ``1 + imp_scaled`` is below it can't
reach the top-k and needs no cosine. In a backtest the memory is queried
each day, recent entries are important and the bound leaves a few percent of
the rows; when it can't prune (every entry old, so nothing is important any
more), the cosines of all rows are one float32 matrix-vector product.

The columns take 4 bytes per embedding dimension per entry (100k entries
of 384 dims: 154 MB). They are filled from chromadb once (paged ``get``,
0.1-0.2 ms per entry on 2 cores, so a *reopened* store of 100k entries pays
10-20 s on its first query or add; a run's store is built in the process
that queries it and pays nothing) and then kept in step by
:class:`~fincon.memory.procedural.ProceduralMemory`, which appends after
each chromadb ``add`` and updates access counters after each ``update``.
All instances opened on one collection in a process share one index (keyed
by the collection's id), so a second instance never sees a stale copy.
Writes to the same store from *another process* while this one holds it are
not seen (a run store has one writer).

The index also keeps each entry's text and metadata, so a query reads
nothing back from chromadb, and it can hold writes back: rows appended with
``saved=False`` and access counters changed by ``set_access`` wait in the
index until :meth:`ScoreIndex.flush` writes them to the collection in a few
large calls. Why: chromadb pays ~5 ms per ``add`` or ``update`` call on
top of ~1 ms per row (2 cores), a team run makes one per analyst and ticker
per day, and reading back the texts of a query's top-k cost a ``get`` per
query. Held back for a few weeks, a year of a 5-ticker rules team takes 29 s
instead of 70 (docs/benchmarks.md). Rankings do not change: they never read
chromadb.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Mapping, Sequence

import numpy as np

from fincon.errors import ConfigError

IMPORTANCE_SCALE = 100.0
ACCESS_BONUS = 5.0
#: below this many visible rows every cosine is computed (no pruning pass)
SMALL = 2048
#: entries with the highest importance scored first to set the bound
SEED = 256
#: slack on the bound and on ties, far above float32 rounding of a cosine
EPS = 1e-6
PAGE = 5000  # rows per chromadb get when loading (SQLite variable limit)

_INDEXES: "weakref.WeakValueDictionary[str, ScoreIndex]" = weakref.WeakValueDictionary()
_REGISTRY_LOCK = threading.Lock()
_BLAS: list = []  # the threadpoolctl controller, made on first use
_BLAS_LOCK = threading.Lock()


def matvec(X: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``X @ q`` on one BLAS thread. The product is memory-bound; OpenBLAS's
    second thread gains little on an idle machine and, on a busy 2-core one,
    its spinning workers slowed the whole query several-fold (bench/memory.py,
    stale case at 10k: 15 ms with threads, 4 ms without)."""
    with _BLAS_LOCK:
        if not _BLAS:
            from threadpoolctl import ThreadpoolController  # a scikit-learn dependency

            _BLAS.append(ThreadpoolController())
        with _BLAS[0].limit(limits=1, user_api="blas"):
            return X @ q


def index_for(collection) -> "ScoreIndex":
    """The process-wide index of ``collection`` (created empty, loaded on first use)."""
    key = str(collection.id)
    with _REGISTRY_LOCK:
        ix = _INDEXES.get(key)
        if ix is None:
            ix = ScoreIndex()
            _INDEXES[key] = ix
        return ix


def unit_rows(embeddings: Sequence[Any]) -> np.ndarray:
    X = np.asarray(embeddings, dtype=np.float32)
    if X.ndim != 2:
        X = X.reshape(len(embeddings), -1)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return X / norms


class ScoreIndex:
    """Columns of one collection; see the module docstring."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.loaded = False
        self.n = 0
        self.ids: list[str] = []
        self.rows: dict[str, int] = {}
        self.sources: list[str] = []
        self._codes: dict[str, int] = {}
        self._emb = np.zeros((0, 0), dtype=np.float32)
        self._ord = np.zeros(0, dtype=np.int64)
        self._src = np.zeros(0, dtype=np.int16)
        self._acc = np.zeros(0, dtype=np.int64)
        #: per row: the text and the metadata chromadb holds (or will hold) for it
        self.docs: list[str] = []
        self.metas: list[dict[str, Any]] = []
        #: rows not written to chromadb yet (row -> the embedding as the embedder gave it)
        self.unsaved: dict[int, Any] = {}
        #: saved rows whose access counter changed since they were written
        self.dirty: set[int] = set()
        #: of the last top(): visible rows, and rows whose cosine was computed
        self.last_visible = self.last_compared = 0

    # ---- filling -----------------------------------------------------------
    def load(self, collection) -> None:
        """Read every entry of ``collection`` once (no-op when loaded)."""
        with self.lock:
            if self.loaded:
                return
            off = 0
            while True:
                got = collection.get(include=["embeddings", "metadatas", "documents"], limit=PAGE, offset=off)
                ids = got["ids"]
                if not len(ids):
                    break
                metas = [dict(m) for m in got["metadatas"]]
                self._append(ids, got["embeddings"], metas, got["documents"])
                off += len(ids)
                if len(ids) < PAGE:
                    break
            self.loaded = True

    def append(
        self,
        ids: Sequence[str],
        embeddings: Sequence[Any],
        metas: Sequence[Mapping[str, Any]],
        docs: Sequence[str],
        saved: bool = True,
    ) -> None:
        """New rows (loaded index only): ``saved`` when chromadb already holds
        them, else held until :meth:`flush`. ``metas`` carry ``ordinal``,
        ``source`` and ``access``."""
        with self.lock:
            if not self.loaded:
                raise RuntimeError("append() before load(): the index would miss the collection's rows")
            lo = self.n
            added = self._append(ids, embeddings, [dict(m) for m in metas], docs)
            if not saved:
                for r, j in zip(range(lo, self.n), added):
                    self.unsaved[r] = embeddings[j]

    def set_access(self, ids: Sequence[str], access: Sequence[int]) -> None:
        """New access counters; written to chromadb at the next :meth:`flush`."""
        with self.lock:
            for i, a in zip(ids, access):
                r = self.rows.get(i)
                if r is not None:
                    self._acc[r] = int(a)
                    if r not in self.unsaved:
                        self.dirty.add(r)

    def meta(self, row: int) -> dict[str, Any]:
        """The row's metadata as chromadb holds it after the next flush."""
        return {**self.metas[row], "access": int(self._acc[row])}

    def pending(self) -> int:
        """Rows and access counters not written to chromadb yet."""
        return len(self.unsaved) + len(self.dirty)

    def flush(self, collection, batch: int) -> int:
        """Write held rows (one ``add`` per ``batch`` rows, in row order) and
        changed access counters (one ``update``) to ``collection``. Returns
        how many rows and counters were written."""
        with self.lock:
            rows = sorted(self.unsaved)
            for lo in range(0, len(rows), batch):
                chunk = rows[lo : lo + batch]
                collection.add(
                    ids=[self.ids[r] for r in chunk],
                    documents=[self.docs[r] for r in chunk],
                    embeddings=[self.unsaved[r] for r in chunk],
                    metadatas=[self.meta(r) for r in chunk],
                )
                for r in chunk:
                    del self.unsaved[r]
            dirty = sorted(self.dirty)
            for lo in range(0, len(dirty), batch):
                chunk = dirty[lo : lo + batch]
                collection.update(ids=[self.ids[r] for r in chunk], metadatas=[self.meta(r) for r in chunk])
            self.dirty.clear()
            return len(rows) + len(dirty)

    def _code(self, source: str) -> int:
        c = self._codes.get(source)
        if c is None:
            c = self._codes[source] = len(self.sources)
            self.sources.append(source)
        return c

    def _append(self, ids, embeddings, metas, docs) -> list[int]:
        """Append the rows not held yet; returns their positions in ``ids``."""
        fresh = [j for j, i in enumerate(ids) if i not in self.rows]
        if not fresh:
            return fresh
        X = unit_rows(embeddings)[fresh]
        m, dim = len(fresh), X.shape[1]
        need = self.n + m
        if self._emb.shape[1] not in (0, dim):
            raise ConfigError(f"memory embeddings changed width ({self._emb.shape[1]} -> {dim})")
        if need > len(self._ord):
            cap = max(need, 2 * len(self._ord), 1024)
            emb = np.zeros((cap, dim), dtype=np.float32)
            if self.n:
                emb[: self.n] = self._emb[: self.n]
            self._emb = emb
            for name in ("_ord", "_src", "_acc"):
                old = getattr(self, name)
                new = np.zeros(cap, dtype=old.dtype)
                new[: self.n] = old[: self.n]
                setattr(self, name, new)
        lo = self.n
        self._emb[lo:need] = X
        self._ord[lo:need] = [int(metas[j]["ordinal"]) for j in fresh]
        self._src[lo:need] = [self._code(str(metas[j]["source"])) for j in fresh]
        self._acc[lo:need] = [int(metas[j].get("access", 0)) for j in fresh]
        for r, j in enumerate(fresh, start=lo):
            self.ids.append(ids[j])
            self.rows[ids[j]] = r
            self.docs.append(docs[j])
            self.metas.append(metas[j])
        self.n = need
        return fresh

    # ---- scoring -----------------------------------------------------------
    def top(
        self, qn: np.ndarray, d_ord: int, k: int, decay: Mapping[str, Any], sources: Sequence[str] | None = None
    ) -> list[tuple[str, int, float, float, float]]:
        """The top-``k`` visible rows (ordinal <= ``d_ord``), best first, as
        ``(id, row, cosine, importance, score)``; ties on score (to 9 decimals)
        broken by id. Exact: equal to scoring every visible row."""
        with self.lock:
            n = self.n
            if n == 0 or k <= 0:
                return []
            ords, src = self._ord[:n], self._src[:n]
            vis = ords <= d_ord
            if sources is not None:
                vis &= np.isin(src, [self._codes[s] for s in sources if s in self._codes])
            rows = None if vis.all() else np.flatnonzero(vis)  # None: every row is visible
            m = n if rows is None else len(rows)
            if m == 0:
                return []
            v_src = src if rows is None else src[rows]
            value = np.full(len(self.sources), np.nan)
            theta = np.ones(len(self.sources))
            for c, name in enumerate(self.sources):
                d = decay.get(name)
                if d is not None:
                    value[c], theta[c] = d.value, d.theta
            if np.isnan(value).any():  # a source without (v, theta): an error only if one of its entries is visible
                seen = np.bincount(v_src, minlength=len(self.sources)) > 0
                bad = [self.sources[c] for c in np.flatnonzero(seen & np.isnan(value))]
                if bad:
                    raise ConfigError(f"no (v, theta) decay configured for source {bad[0]!r}")
            age = d_ord - (ords if rows is None else ords[rows])
            lo = int(age.min())
            # v * theta ** age for every (source, age) once, then looked up per row
            table = value[:, None] * theta[:, None] ** np.arange(lo, int(age.max()) + 1, dtype=np.float64)[None, :]
            imp = table[v_src, age - lo]
            imp += ACCESS_BONUS * (self._acc[:n] if rows is None else self._acc[rows])
            imp_s = np.minimum(imp / IMPORTANCE_SCALE, 1.0)

            self.last_visible, self.last_compared = m, 0

            def cosines(pos: np.ndarray | None) -> np.ndarray:
                """Cosines of visible positions ``pos`` (None: all)."""
                if pos is None or len(pos) > m // 2:  # one contiguous pass beats a large gather
                    self.last_compared += n
                    allc = matvec(self._emb[:n], qn)
                    c = allc if rows is None else allc[rows]
                    return (c if pos is None else c[pos]).astype(np.float64)
                r = pos if rows is None else rows[pos]
                self.last_compared += len(r)
                return matvec(self._emb[r], qn).astype(np.float64)

            if m <= SMALL:
                cand = None
            else:
                ns = min(m, max(SEED, 16 * k))
                seed = np.argpartition(imp_s, m - ns)[m - ns :]
                sc = (cosines(seed) + 1.0) / 2.0 + imp_s[seed]
                kth = np.partition(sc, ns - k)[ns - k] if ns >= k else -np.inf
                # (cos + 1) / 2 <= 1: nothing with 1 + imp_scaled below the seed's k-th can make the top-k
                cand = np.flatnonzero(imp_s >= kth - 1.0 - EPS)
            cos = cosines(cand)
            pos = np.arange(m) if cand is None else cand
            score = (cos + 1.0) / 2.0 + imp_s[pos]
            if len(score) > k:
                kth = np.partition(score, len(score) - k)[len(score) - k]
                keep = np.flatnonzero(score >= kth - EPS)
            else:
                keep = np.arange(len(score))
            out = []
            for j in keep:
                r = int(pos[j]) if rows is None else int(rows[pos[j]])
                out.append((self.ids[r], r, float(cos[j]), float(imp[pos[j]]), float(score[j])))
            out.sort(key=lambda t: (-round(t[4], 9), t[0]))
            return out[:k]

    def access(self, row: int) -> int:
        return int(self._acc[row])

    def source(self, row: int) -> str:
        return self.sources[int(self._src[row])]
