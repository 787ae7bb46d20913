"""Embeddings kept in the LLM cache file, beside the calls that read them.

Why: a replay of a recorded LLM run answers every model call from the call
cache, yet the memory still embedded every text with MiniLM. On a one-day
replay of a recorded protocol day, 85 % of the time went to embedding the
~400 news items the analysts' memory takes in on its first day, after
loading torch and the model. The low bits of those vectors also depend on
the CPU and on which texts share a batch, so a replay on another machine
could rank memories differently from its recording and miss its calls. With
the vectors in the cache file, a replay reads what the recording computed:
no embedding model is loaded, on any machine.

Table ``vectors`` of the same SQLite file as the calls (one file is the
recording): the key is the SHA-256 of the embedder's identity and the text,
the value the float32 bytes. New vectors are held in the process and written
at :meth:`VectorCache.flush` (the memory's flush: every few weeks of a run
and at its end) in one transaction, first writer wins, and only into a file
the call cache has created: a run that stored no call (its server was down
on the first day) leaves no file behind, as before. A replay opens the file read-only and computes
what it lacks (a cache recorded before vectors were kept: all of them)
without writing.

Not used in Ray workers (the call cache goes through the driver's actor
there; each worker computes its vectors) nor without an LLM cache.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path
from typing import Sequence

import numpy as np

from fincon.ownership import sqlite_read_only, sqlite_wal

_SCHEMA = "CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)"


class VectorCache:
    """Vectors of one embedder (``identity``) in the SQLite file ``path``;
    ``writes``: store what :meth:`hold` was given at :meth:`flush`."""

    def __init__(self, path: str | Path, identity: str, writes: bool):
        self.path = Path(path)
        self.identity = identity
        self.writes = writes
        self._held: dict[str, bytes] = {}
        self._conn: sqlite3.Connection | None = None
        self.hits = 0

    def _key(self, text: str) -> str:
        return hashlib.sha256(f"{self.identity}\n{text}".encode()).hexdigest()

    def _connection(self) -> sqlite3.Connection | None:
        if self._conn is None and self.path.exists():
            if self.writes:
                conn = sqlite3.connect(str(self.path), timeout=30.0, isolation_level=None)
                conn.execute("PRAGMA busy_timeout=30000")
                sqlite_wal(conn)  # as the call cache opens it
            else:  # read only, no -wal/-shm beside a recording shipped in a checkout
                conn = sqlite_read_only(self.path)
            self._conn = conn
        return self._conn

    def lookup(self, texts: Sequence[str]) -> list[np.ndarray | None]:
        """The stored (or held) vector of each text, None where there is none."""
        keys = [self._key(t) for t in texts]
        found = {k: self._held[k] for k in keys if k in self._held}
        conn = self._connection()
        wanted = sorted({k for k in keys if k not in found})
        if conn is not None and wanted:
            try:
                for i in range(0, len(wanted), 500):  # SQLite's bound-parameter limit
                    part = wanted[i : i + 500]
                    rows = conn.execute(
                        f"SELECT key, vec FROM vectors WHERE key IN ({','.join('?' * len(part))})", part
                    ).fetchall()
                    found.update(rows)
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):  # a cache recorded before vectors were kept
                    raise
        out = [np.frombuffer(found[k], dtype=np.float32).copy() if k in found else None for k in keys]
        self.hits += sum(v is not None for v in out)
        return out

    def hold(self, texts: Sequence[str], vectors: Sequence[np.ndarray]) -> None:
        """Keep new vectors until :meth:`flush` (nothing, without writes)."""
        if self.writes:
            for t, v in zip(texts, vectors):
                self._held[self._key(t)] = np.asarray(v, dtype=np.float32).tobytes()

    def flush(self) -> int:
        """Write the held vectors (keys already stored are left as they are); returns how many were held."""
        if not self._held:
            return 0
        conn = self._connection()
        if conn is None:  # no call was ever stored: nothing to replay, and no file is left behind
            self._held.clear()
            return 0
        conn.execute(_SCHEMA)
        conn.execute("BEGIN IMMEDIATE")
        try:
            conn.executemany("INSERT OR IGNORE INTO vectors (key, vec) VALUES (?, ?)", self._held.items())
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        n = len(self._held)
        self._held.clear()
        return n

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
