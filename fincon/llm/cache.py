"""Content-addressed call cache in SQLite: replay, sharing and audit trail.

A call is keyed by the SHA-256 of the canonical JSON of (backend, model,
messages, output schema, sampling parameters). The same key always means the
same question to the same model, so the cache can be shared by every run and
training episode that uses one file, and a second identical run answers every
call from it (zero model calls, byte-identical outputs).

Each row keeps the prompt, the raw answer (also the invalid ones, so a replay
re-walks the same re-asks), token counts, the live latency and when the call
was made: the cache *is* the audit trail of what the model was asked and said.
The wall-clock time stored here never reaches a run's outputs.

Modes: ``off`` (no reads, no writes), ``read-write`` (default) and ``replay``
(reads only; a miss raises :class:`~fincon.llm.errors.CacheMiss` naming the
call, so a replay can never silently go live).

First writer wins. Two runs sharing one file may ask the same question at the
same time and, since servers are not deterministic even at temperature 0, get
different answers. :meth:`CallCache.put` therefore returns the row the cache
*holds* after the write (the other run's, if it stored first), and the client
acts on that: every run acts on exactly what its replay will read.

A read-write cache file is created by its first write, not when the cache is
opened: a run that fails before its first answer (server down, wrong URL)
leaves nothing behind. An existing file is checked when opened, so a file
that is not a cache fails before day one.

Each row also records the structured-output mode (``response_format``) that
produced the answer, so a run summary can say which mode its answers came
from, identically in a recording and its replay.

In the worker processes of ``fincon experiment --executor ray`` the
environment variable :data:`SERVER_ENV` names a Ray actor on the driver's
machine that owns every cache file: each cache then reads and writes through
it instead of opening the file (SQLite is not safe on a network filesystem,
and one owner keeps "first writer wins" across machines; see
:mod:`fincon.llm.remote_cache` and :mod:`fincon.workflow.executors`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path
from typing import Any, Iterator, Sequence

from fincon import llm
from fincon.llm.errors import CacheMiss, LLMError, LLMUnavailable
from fincon.llm.schema import canonical_json
from fincon.llm.types import Message, SamplingParams
from fincon.ownership import sqlite_foreign, sqlite_read_only, sqlite_wal

DEFAULT_CACHE_PATH = Path("runs/.cache/llm.sqlite")
#: set by the Ray executor in its workers: the actor that owns the cache files
SERVER_ENV = "FINCON_LLM_CACHE_SERVER"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    agent TEXT NOT NULL,
    messages TEXT NOT NULL,
    schema TEXT NOT NULL,
    params TEXT NOT NULL,
    answer TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    latency_s REAL NOT NULL,
    created_at TEXT NOT NULL,
    structured_mode TEXT NOT NULL DEFAULT '',
    answer_sha256 TEXT NOT NULL DEFAULT ''
)
"""
_COLUMNS = (
    "key",
    "backend",
    "model",
    "agent",
    "messages",
    "schema",
    "params",
    "answer",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
    "created_at",
    "structured_mode",
    "answer_sha256",
)
#: the columns a cache written before them lacks (read as ""; added when a run writes to it)
_LATER = ("structured_mode", "answer_sha256")
_READ = "key, answer, prompt_tokens, completion_tokens, latency_s, created_at"


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


class CacheMode(str, Enum):
    OFF = "off"
    READ_WRITE = "read-write"
    REPLAY = "replay"


def call_key(
    backend: str,
    model: str,
    messages: Sequence[Message],
    schema: dict[str, Any],
    params: SamplingParams,
) -> str:
    """SHA-256 hex digest identifying one call (see module docstring)."""
    payload = {
        "backend": backend,
        "model": model,
        "messages": [m.model_dump() for m in messages],
        "schema": schema,
        "params": params.model_dump(),
    }
    return hashlib.sha256(canonical_json(payload).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedCall:
    key: str
    answer: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    created_at: str
    #: response format that produced the answer ("" when the backend did not say, or an old cache)
    structured_mode: str = ""


def copy_calls(conn: sqlite3.Connection, source: str, keys: Sequence[str]) -> None:
    """The rows of ``keys`` from the attached database ``source`` into ``calls``, by the columns both hold (a
    cache written before a column lacks it: ``SELECT *`` failed on the count, found in the day's suite)."""
    have = {r[1] for r in conn.execute(f"PRAGMA {source}.table_info(calls)")}
    cols = ", ".join(c for c in _COLUMNS if c in have)
    sql = f"INSERT OR IGNORE INTO calls ({cols}) SELECT {cols} FROM {source}.calls WHERE key = ?"
    conn.executemany(sql, [(k,) for k in keys])


def answer_hash(key: str, answer: str) -> str:
    """What a row seals of its answer: a hand edit of the answer (or of the key it answers) no longer
    matches. Not a secret: an audit trail against edits, not against a forger (a forward journal seals
    its calls' hashes in its chain)."""
    return hashlib.sha256(f"{key}\0{answer}".encode("utf-8")).hexdigest()


#: what SQLite says of a cache whose folder takes no write (read-only media, a full disk)
_NO_WRITE = ("unable to open database file", "disk I/O error", "readonly database", "database or disk is full")


class CallCache:
    """Thread-safe SQLite store of calls. ``path=None`` with mode ``off``
    creates nothing on disk."""

    def __init__(self, path: Path | str | None = DEFAULT_CACHE_PATH, mode: CacheMode | str = CacheMode.READ_WRITE):
        self.mode = CacheMode(mode)
        self.path = Path(path) if path is not None else None
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._read = _READ + ", ''" * len(_LATER)
        self._server = None
        if self.mode is CacheMode.OFF:
            return
        if self.path is None:
            raise LLMError("an LLM cache path is required unless the cache mode is 'off'")
        if os.environ.get(SERVER_ENV):
            # the file is opened (and checked) on the driver's machine
            self._server = llm.RemoteCache(os.environ[SERVER_ENV], self.path, self.mode)
            return
        if self.mode is CacheMode.REPLAY and not self.path.exists():
            raise CacheMiss.no_recording(self.path)
        if self.path.exists():
            # a database of the user's is never given a calls table in silence; the
            # team's embedding vectors share the file (fincon.memory.vectors)
            why = sqlite_foreign(self.path, {"calls": _COLUMNS[: -len(_LATER)], "vectors": ("key", "vec")})
            if why:
                raise LLMError(
                    f"--llm-cache-path {self.path} is not an LLM call cache ({why}); it was left as it is: "
                    "pass another --llm-cache-path"
                )
            self._open()  # a file that is not a usable cache fails here, before day one
        # otherwise the file is created on the first write: a run that fails before
        # its first answer (bad URL, server down) leaves nothing behind

    def _open(self) -> sqlite3.Connection:
        """Open (creating if needed) the SQLite file; callers hold the lock or are ``__init__``."""
        if self._conn is not None:
            return self._conn
        assert self.path is not None
        try:
            if self.mode is CacheMode.REPLAY:
                # read only, no -wal/-shm files: a replay may read a cache shipped
                # inside an installed (read-only) package, like the demo's
                conn = sqlite_read_only(self.path, check_same_thread=False, isolation_level=None)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(str(self.path), timeout=30.0, check_same_thread=False, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise LLMError(
                f"cannot open the LLM cache {self.path} ({_one_line(exc)}); pass another --llm-cache-path"
            ) from None
        try:
            conn.execute("PRAGMA busy_timeout=30000")
            if self.mode is not CacheMode.REPLAY:
                sqlite_wal(conn)
                conn.execute(_SCHEMA)
            else:
                conn.execute("SELECT COUNT(*) FROM calls").fetchone()
            columns = {r[1] for r in conn.execute("PRAGMA table_info(calls)")}
            for later in _LATER if self.mode is CacheMode.READ_WRITE else ():
                if later in columns:
                    continue
                try:  # a cache written before the column existed: add it (old rows read as "")
                    conn.execute(f"ALTER TABLE calls ADD COLUMN {later} TEXT NOT NULL DEFAULT ''")
                except sqlite3.OperationalError as exc:
                    if "duplicate column" not in str(exc):  # another run added it just now
                        raise
                columns.add(later)
        except sqlite3.DatabaseError as exc:
            conn.close()
            if self.mode is not CacheMode.REPLAY and any(w in str(exc) for w in _NO_WRITE):
                # a read-only folder or a full disk: the file is a cache, its folder takes no write (it was
                # called "not a usable SQLite file", found in review)
                raise LLMError(
                    f"cannot write beside the LLM cache {self.path} ({_one_line(exc)}): its folder is read-only "
                    "or its disk is full; free space, or replay it as it is with --llm-cache replay"
                ) from None
            raise LLMError(
                f"LLM cache {self.path} is not a usable SQLite file ({_one_line(exc)}); move it away or "
                "pass another --llm-cache-path"
            ) from None
        # a replay never alters the file, so an old cache is read without the columns
        self._read = _READ + "".join(f", {c}" if c in columns else ", ''" for c in _LATER)
        self._conn = conn
        return conn

    def _connection(self, create: bool) -> sqlite3.Connection | None:
        """The connection; an existing file is opened (another run may have
        created it since we started), a missing one only created for a write."""
        if (
            self._conn is None
            and not self._closed
            and self.mode is not CacheMode.OFF
            and (create or self.path.exists())
        ):
            self._open()
        return self._conn

    @property
    def local_file(self) -> Path | None:
        """The cache file when this process opens it itself: None when the
        cache is off or goes through the Ray driver's actor."""
        return None if self.mode is CacheMode.OFF or self._server is not None else self.path

    @property
    def reads(self) -> bool:
        return self.mode in (CacheMode.READ_WRITE, CacheMode.REPLAY)

    @property
    def writes(self) -> bool:
        return self.mode is CacheMode.READ_WRITE

    def get(self, key: str) -> CachedCall | None:
        if not self.reads:
            return None
        if self._server is not None:
            return self._server.get(key)
        with self._lock, self._failing("read"):
            conn = self._connection(create=False)
            if conn is None:
                return None
            row = conn.execute(f"SELECT {self._read} FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        hit, sealed = CachedCall(*row[:-1]), row[-1]
        if sealed and sealed != answer_hash(key, hit.answer):
            raise LLMUnavailable(  # replayed as recorded, a hand edit moved a run's numbers without a word
                f"the LLM cache {self.path}: call {key[:16]}'s answer differs from the one recorded (its hash "
                "differs: edited after the call?); move the cache away or pass another --llm-cache-path"
            )
        if not (isinstance(hit.answer, str) and type(hit.prompt_tokens) is int and type(hit.completion_tokens) is int):
            raise LLMUnavailable(  # a row edited by hand ('5x' tokens): a ValueError traceback in the ledger
                f"the LLM cache {self.path}: call {key[:16]} holds no answer and token counts as fincon writes "
                "them (edited?); move it away or pass another --llm-cache-path"
            )
        return hit

    @contextlib.contextmanager
    def _failing(self, what: str) -> Iterator[None]:
        """A database error mid-run (a damaged page, a file another process keeps locked past the 30 s
        wait) was a sqlite3 traceback that lost the run's days; the run stops as when the model is
        unreachable, its days kept, with one line."""
        try:
            yield
        except sqlite3.Error as exc:
            raise LLMUnavailable(
                f"the LLM cache {self.path} could not be {what} ({_one_line(exc)}); move it away or pass another "
                "--llm-cache-path"
            ) from None

    def put(
        self,
        key: str,
        *,
        backend: str,
        model: str,
        agent: str,
        messages: Sequence[Message],
        schema: dict[str, Any],
        params: SamplingParams,
        answer: str,
        prompt_tokens: int,
        completion_tokens: int,
        latency_s: float,
        structured_mode: str = "",
    ) -> CachedCall:
        """Store a call unless its key is already stored, and return what the
        cache holds for the key afterwards: this answer, or the one another
        run (or thread) stored first. Callers must act on the returned
        answer, never on their own, or a replay would not reproduce them.
        Without writes (mode ``off`` or ``replay``) the given answer comes back."""
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        mine = CachedCall(
            key, answer, int(prompt_tokens), int(completion_tokens), float(latency_s), now, structured_mode
        )
        if not self.writes:
            return mine
        if self._server is not None:
            return self._server.put(
                key,
                backend=backend,
                model=model,
                agent=agent,
                messages=messages,
                schema=schema,
                params=params,
                answer=answer,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                latency_s=latency_s,
                structured_mode=structured_mode,
            )
        values = (
            key,
            backend,
            model,
            agent,
            canonical_json([m.model_dump() for m in messages]),
            canonical_json(schema),
            canonical_json(params.model_dump()),
            answer,
            int(prompt_tokens),
            int(completion_tokens),
            float(latency_s),
            now,
            structured_mode,
            answer_hash(key, answer),
        )
        with self._lock, self._failing("written"):
            conn = self._connection(create=True)
            if conn is None:  # closed
                return mine
            # one write transaction: the row read back is the row that won
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    f"INSERT OR IGNORE INTO calls ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                    values,
                )
                row = conn.execute(f"SELECT {self._read} FROM calls WHERE key = ?", (key,)).fetchone()
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return CachedCall(*row[:-1])

    def __len__(self) -> int:
        if self._server is not None:
            return len(self._server)
        with self._lock:
            conn = self._connection(create=False)
            return 0 if conn is None else int(conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0])

    def rows(self) -> list[dict[str, Any]]:
        """Every stored call (for audits and tests), oldest first."""
        if self._server is not None:
            return self._server.rows()
        with self._lock:
            conn = self._connection(create=False)
            if conn is None:
                return []
            cur = conn.execute("SELECT * FROM calls ORDER BY created_at, key")
            cols = [c[0] for c in cur.description]
            return [dict(zip(cols, r)) for r in cur.fetchall()]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._server = None
            if self._conn is not None:
                self._conn.close()
                self._conn = None
