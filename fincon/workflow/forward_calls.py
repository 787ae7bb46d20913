"""A forward journal's model calls: each decision is sealed with the calls it made, copied into
``DIR/calls.sqlite`` with their prompt and answer hashes and token counts (what ``--charge-llm``
charges the book), which a verifier replays the decision from.
A call that cannot be kept stops the step (nothing sealed): a decision sealed without its calls could
never be verified.

A step's replay of a strategy whose cache is read-write reads and writes a call cache of the step's own,
``DIR/state/calls.sqlite``, rebuilt at each step to hold the calls the journal sealed and nothing else:
past sessions are answered as sealed, and the session being decided asks the model (a row the user's
cache held for its prompts, an answer forged under its keyed hash, was sealed as the model's: review
81). The calls a session seals are then written into the user's cache too (:func:`into_own_caches`).
A plan that replays a recording (``--llm-cache replay``) reads it, as it registered."""

from __future__ import annotations

import csv
import hashlib
import logging
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any, Mapping

from fincon.config import RunConfig
from fincon.errors import ConfigError, FinconError
from fincon.llm.cache import CacheMode, CallCache, copy_calls
from fincon.llm.settings import LLMSettings
from fincon.ownership import sqlite_read_only
from fincon.strategies.registry import params_model
from fincon.workflow.journal import CALLS, STATE, ForwardError

log = logging.getLogger(__name__)
#: a call's token counts, sealed with it
TOKENS = ("prompt_tokens", "completion_tokens")
#: the call cache a step's replay reads and writes, in DIR/state/: the sealed calls, and the ones it asks
STEP_CALLS = "calls.sqlite"


def check_kept(strategies: Mapping[str, Any], live: bool = False) -> None:
    """Refuse a plan whose model calls are not kept (``--llm-cache off``: found in review, its first step
    was a traceback, its next ones sealed decisions without calls, and verify could never replay them),
    and a ``live`` one that answers its model from a recording (``--llm-cache replay``: each decision would
    be a file's answer, whoever wrote it, under the model's name)."""
    for name, strategy in strategies.items():
        llm = strategy.llm_settings()
        if llm is not None and llm.cache == CacheMode.OFF:
            raise ConfigError(
                f"{name}: --llm-cache off keeps no call, and a journal seals each decision with the calls it made "
                "(verify replays them); keep --llm-cache read-write (the default)"
            )
        if live and llm is not None and llm.cache == CacheMode.REPLAY:
            raise ConfigError(
                f"{name}: --llm-cache replay answers from a recording, and a live journal asks its model each "
                "session; keep --llm-cache read-write (the default)"
            )


def _own(cfg: RunConfig, name: str) -> tuple[dict[str, Any], bool]:
    """Strategy ``name``'s own model settings, and whether they are its parameters themselves (llm-trader's
    are an ``LLMSettings``; the team's sit under ``llm``): llm-trader's own cache_path was never seen, its
    step asked the model into it and found no call to seal (diff review 81)."""
    params = dict(cfg.params(name) or {})
    if issubclass(params_model(name), LLMSettings):
        return params, True
    return dict(params.get("llm") or {}), False


def _cache_of(cfg: RunConfig, name: str) -> Path:
    return Path(_own(cfg, name)[0].get("cache_path") or cfg.llm.cache_path)


def _asks(cfg: RunConfig, name: str) -> bool:
    """Whether strategy ``name``'s call cache is read-write (a miss asks the model), not a recording."""
    return CacheMode(_own(cfg, name)[0].get("cache") or cfg.llm.cache) is CacheMode.READ_WRITE


def named_calls(root: Path, entries: list[dict[str, Any]], into: Path) -> Path:
    """The call cache at ``into`` (made if need be; its embedding vectors kept) holding the calls the
    journal's ``entries`` name, as ``DIR/calls.sqlite`` keeps them (their hashes checked by verify_chain),
    and no other: a replay answers from these, never from a row nobody sealed."""
    _copied(root, sorted({c["key"] for e in entries for c in e.get("calls") or ()}), into, only=True)
    return into


def _copied(root: Path, keys: list[str], into: Path, only: bool = False) -> None:
    """The calls ``keys`` of ``DIR/calls.sqlite`` copied into the call cache at ``into`` (made if need be,
    with the call cache's own table; a row there is kept); ``only``: its other calls removed first."""
    CallCache(into, "read-write")._open()
    with closing(sqlite3.connect(into)) as db:
        if only:
            db.execute("DELETE FROM calls")
        if keys and (root / CALLS).is_file():
            db.execute("ATTACH DATABASE ? AS sealed", (f"{(root / CALLS).resolve().as_uri()}?mode=ro",))
            copy_calls(db, "sealed", keys)
        db.commit()


def asking(root: Path, cfg: RunConfig, entries: list[dict[str, Any]]) -> RunConfig:
    """``cfg`` for a step's replay: each strategy whose call cache is read-write reads and writes
    ``DIR/state/calls.sqlite`` instead, rebuilt here from the calls the journal sealed (past sessions are
    answered as sealed; the session being decided asks the model, whatever the user's cache holds); a
    strategy replaying a recording keeps it."""
    if not any(_asks(cfg, n) for n in cfg.strategies):
        return cfg
    path = root / STATE / STEP_CALLS
    if path.exists() or any(e.get("calls") for e in entries):  # else the first call makes it (a rules brain: none)
        path.parent.mkdir(parents=True, exist_ok=True)
        named_calls(root, entries, path)
    out = cfg
    if CacheMode(cfg.llm.cache) is CacheMode.READ_WRITE:
        out = out.model_copy(update={"llm": cfg.llm.model_copy(update={"cache_path": path})})
    for name in cfg.strategies:
        own, flat = _own(cfg, name)
        if own and (_asks(cfg, name) or out.llm.cache_path != cfg.llm.cache_path):  # a recording keeps its own
            mine = {**own, "cache_path": str(path if _asks(cfg, name) else _cache_of(cfg, name))}
            out = out.with_params(name, mine if flat else {**out.params(name), "llm": mine})
    return out


def into_own_caches(root: Path, cfg: RunConfig, sealed: list[dict[str, Any]]) -> None:
    """After the seal: the calls the ``sealed`` entries name, written into the call cache ``cfg`` names for
    each strategy that asks its model (the user's record of what it was asked, as a backtest leaves it;
    first writer wins, a row there is kept). Its failure is a warning: the journal holds the calls."""
    for name in cfg.strategies:
        keys = sorted({c["key"] for e in sealed if e.get("strategy") == name for c in e.get("calls") or ()})
        if not keys or not _asks(cfg, name):
            continue
        cache = _cache_of(cfg, name)
        try:
            _copied(root, keys, cache)
        except (sqlite3.Error, FinconError) as exc:
            log.warning("%s: the calls it sealed could not be written into its call cache %s (%s); %s holds them",
                        name, cache, exc, root / CALLS)  # fmt: skip


def keep(root: Path, cfg: RunConfig, name: str, run_dir: Path, day: str) -> list[dict[str, Any]]:
    """The model calls of ``day`` (``name``'s llm_calls.csv), copied into ``DIR/calls.sqlite`` from the
    strategy's call cache with their prompt and answer hashes and token counts; a call not there stops
    the step."""
    listing = run_dir / "llm_calls.csv"
    if not listing.is_file():
        return []
    with open(listing, newline="", encoding="utf-8") as fh:
        keys = [r for r in csv.DictReader(fh) if r["day"] == day]
    if not keys:
        return []
    cache = _cache_of(cfg, name)
    CallCache(root / CALLS, "read-write")._open()  # the call cache's own table: a verifier replays from it
    dst = sqlite3.connect(root / CALLS)
    dst.row_factory = sqlite3.Row
    try:
        dst.execute("ATTACH DATABASE ? AS src", (f"{cache.resolve().as_uri()}?mode=ro",))
        out = []
        for r in keys:
            row = dst.execute("SELECT * FROM src.calls WHERE key = ?", (r["key"],)).fetchone()
            if row is None:
                raise ForwardError(
                    f"{name}: call {r['key']} of {day} ({r['agent']}) is not in its call cache {cache}, so the "
                    "decision cannot be sealed with it; nothing sealed (keep --llm-cache read-write)"
                )
            copy_calls(dst, "src", [r["key"]])
            out.append({"key": r["key"], "agent": r["agent"],
                        "prompt_sha256": hashlib.sha256(row["messages"].encode()).hexdigest(),
                        "answer_sha256": hashlib.sha256(row["answer"].encode()).hexdigest(),
                        # what --charge-llm charges the book: an edited count moved the score, unsealed
                        **{k: row[k] for k in TOKENS if k in row.keys()}})  # fmt: skip
        dst.commit()
        return out
    except sqlite3.Error as exc:
        raise ForwardError(f"{name}: its call cache {cache} could not be read ({exc}); nothing sealed") from None
    finally:
        dst.close()


def sealed_into_caches(root: Path, cfg: RunConfig, entries: list[dict[str, Any]]) -> int:
    """Write each sealed call, as ``DIR/calls.sqlite`` holds it, over the row of its key in the call cache
    the step's replay reads (the strategy's own, where today's new calls are asked and kept) wherever that
    row differs or is missing; the rows written. A step that asks past sessions again (``--charge-llm``, a
    state lost) read them from the user's cache: an edited token count there sealed a book verify then
    refused, and a row deleted there failed every step though the journal held it (found in review). The
    cache is written only when a row differs; one that cannot be is one line, nothing sealed."""
    written = 0
    for name in cfg.strategies:
        keys = sorted({c["key"] for e in entries if e.get("kind") == "session" and e.get("strategy") == name
                       for c in e.get("calls") or ()})  # fmt: skip
        if not keys or not (root / CALLS).is_file():
            continue
        cache = _cache_of(cfg, name)
        try:
            cols = _columns(root / CALLS)
            if cache.is_file():
                cols = [c for c in cols if c in _columns(cache)]
            sealed, kept = _rows(root / CALLS, cols, keys), _rows(cache, cols, keys) if cache.is_file() else {}
            stale = [k for k in sealed if kept.get(k) != sealed[k]]
            if not stale:
                continue
            CallCache(cache, "read-write")._open()  # the call cache's own table, in a cache the user removed
            with closing(sqlite3.connect(cache)) as db:
                db.execute("ATTACH DATABASE ? AS sealed", (f"{(root / CALLS).resolve().as_uri()}?mode=ro",))
                db.executemany("DELETE FROM calls WHERE key = ?", [(k,) for k in stale])
                copy_calls(db, "sealed", stale)
                db.commit()
        except sqlite3.Error as exc:
            raise ForwardError(
                f"{name}: the sealed calls of {CALLS} could not be written into its call cache {cache} ({exc}), "
                "where the step's replay reads the past sessions' calls; nothing sealed"
            ) from None
        written += len(stale)
    return written


def _columns(path: Path) -> list[str]:
    with closing(sqlite_read_only(path)) as db:
        return [r[1] for r in db.execute("PRAGMA table_info(calls)")]


def _rows(path: Path, cols: list[str], keys: list[str]) -> dict[str, tuple]:
    """The rows of ``keys`` in the call cache at ``path``, by ``cols`` (the key first), read-only."""
    with closing(sqlite_read_only(path)) as db:
        sql = f"SELECT key, {', '.join(cols)} FROM calls WHERE key IN ({', '.join('?' * len(keys))})"
        return {r[0]: tuple(r[1:]) for r in db.execute(sql, keys)}
