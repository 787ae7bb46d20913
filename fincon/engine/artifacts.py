"""Standard run artifacts beside trades.csv and equity.csv, for loading a run
into pandas without reading fincon's code.

* :func:`round_trips`: fills matched first in, first out per ticker (as
  pyfolio's round trips): one row per matched lot, long or short, with
  entry and exit, holding days, P&L net of both sides' commission (each
  fill's commission spread over its shares) and return on the entry value;
  lots still open at the end are listed with ``closed`` false, marked at
  the last close.
* :func:`summary_row`: the scalar metrics of metrics.json, one row a strategy.
* :func:`manifest`: package versions, data and corpus hashes, the config's
  hash, seeds and the git revision when fincon runs from a checkout. No
  clock time, so the same run writes the same bytes.

Pure functions of what they are handed, except :func:`manifest` reading
files' bytes and package metadata.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections import deque
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import yaml

from fincon.files import folder_hash

ROUND_TRIP_COLUMNS = [
    "ticker",
    "direction",
    "entry_date",
    "exit_date",
    "shares",
    "entry_price",
    "exit_price",
    "holding_days",
    "pnl",
    "return_pct",
    "closed",
]
PACKAGES = ("fincon", "backtrader", "pandas", "numpy", "scipy", "cvxpy", "pydantic", "chromadb", "quantstats")


def round_trips(trades: pd.DataFrame, last_close: Mapping[str, float], last_day: str) -> pd.DataFrame:
    """FIFO round trips of ``trades`` (trades.csv: date, ticker, side, size, price, commission)."""
    rows: list[dict[str, Any]] = []
    lots: dict[str, deque] = {}
    for t in trades.itertuples(index=False):
        size = float(t.size)
        fee_per_share = float(t.commission) / abs(size) if size else 0.0
        book = lots.setdefault(t.ticker, deque())
        left = size
        while left and book and (book[0][1] > 0) != (left > 0):
            day, lot, price, fee = book[0]
            n = min(abs(lot), abs(left))
            sign = 1.0 if lot > 0 else -1.0
            pnl = sign * n * (float(t.price) - price) - n * (fee + fee_per_share)
            rows.append(
                {
                    "ticker": t.ticker,
                    "direction": "long" if sign > 0 else "short",
                    "entry_date": day,
                    "exit_date": t.date,
                    "shares": n,
                    "entry_price": price,
                    "exit_price": float(t.price),
                    "holding_days": (pd.Timestamp(t.date) - pd.Timestamp(day)).days,
                    "pnl": pnl,
                    "return_pct": 100.0 * pnl / (n * price),
                    "closed": True,
                }
            )
            rest = lot - sign * n
            if abs(rest) < 1e-9:
                book.popleft()
            else:
                book[0] = (day, rest, price, fee)
            left += sign * n
            if abs(left) < 1e-9:
                left = 0.0
        if left:
            book.append((t.date, left, float(t.price), fee_per_share))
    for ticker, book in lots.items():
        for day, lot, price, fee in book:
            n, sign = abs(lot), (1.0 if lot > 0 else -1.0)
            mark = float(last_close[ticker])
            pnl = sign * n * (mark - price) - n * fee
            rows.append(
                {
                    "ticker": ticker,
                    "direction": "long" if sign > 0 else "short",
                    "entry_date": day,
                    "exit_date": last_day,
                    "shares": n,
                    "entry_price": price,
                    "exit_price": mark,
                    "holding_days": (pd.Timestamp(last_day) - pd.Timestamp(day)).days,
                    "pnl": pnl,
                    "return_pct": 100.0 * pnl / (n * price),
                    "closed": False,
                }
            )
    return pd.DataFrame(rows, columns=ROUND_TRIP_COLUMNS)


def summary_row(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The scalar entries of one strategy's metrics.json (nested sections flattened one level)."""
    out: dict[str, Any] = {}
    for k, v in metrics.items():
        if isinstance(v, dict):
            out.update({f"{k}.{kk}": vv for kk, vv in v.items() if not isinstance(vv, (dict, list))})
        elif not isinstance(v, list):
            out[k] = v
    return out


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            continue
    return out


def git_revision() -> str | None:
    """HEAD of the checkout fincon runs from (None when it is not one, or git is missing)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        res = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return res.stdout.strip() or None if res.returncode == 0 else None


@lru_cache(maxsize=1)
def code_sha256() -> str:
    """One sha256 over fincon's own files (every .py, .txt, .json and .yaml of the package, by path and
    bytes): the code and prompts that made a decision. A forward journal seals it, so that a verifier
    on other code is told so, not left to suspect the journal."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    files = (p for ext in ("py", "txt", "json", "yaml") for p in root.rglob(f"*.{ext}"))
    for f in sorted(p for p in files if "__pycache__" not in p.parts):
        h.update(f.relative_to(root).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def git_dirty() -> bool | None:
    """Whether fincon's own files differ from the checkout's HEAD (None when it is no checkout): a
    commit named for code that ran with uncommitted changes would not hold that code."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        res = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "fincon"],
                             capture_output=True, text=True, timeout=10, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(res.stdout.strip()) if res.returncode == 0 else None


def _location_free(node: Any) -> Any:
    """The config with every absolute path cut to its last component: a
    run's config names folders where it happens to live (an experiment's
    staging dir, a training's episode dir), which must not change its hash;
    the data and corpus enter the manifest by the hashes of their contents."""
    if isinstance(node, dict):
        return {k: _location_free(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_location_free(v) for v in node]
    if isinstance(node, str) and node.startswith("/"):
        return Path(node).name
    return node


def config_hash(config_yaml: str) -> str:
    """sha256 of the run config, independent of where the run's files live."""

    tree = _location_free(yaml.safe_load(config_yaml))
    return sha256_bytes(yaml.safe_dump(tree, sort_keys=True).encode())


def manifest(
    config_yaml: str,
    frames: Mapping[str, pd.DataFrame],
    corpus: Path | None,
    seeds: Mapping[str, Any],
    inputs: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """run_manifest.json's content (``inputs``: the sha256 of files the config names, such as beliefs, by key,
    hashed by what read them)."""
    data = {
        t: sha256_bytes(f.to_csv(float_format="%.10g", lineterminator="\n").encode()) for t, f in sorted(frames.items())
    }
    out = {
        "packages": _versions(),
        "config_sha256": config_hash(config_yaml),
        "data_sha256": data,
        "corpus": corpus.name if corpus is not None else None,
        "corpus_sha256": folder_hash(corpus) if corpus is not None and corpus.is_dir() else None,
        "seeds": dict(seeds),
        "git_revision": git_revision(),
        # the commit alone named code the run did not run when the checkout had changes
        "git_dirty": git_dirty(),
        "code_sha256": code_sha256(),
    }
    if inputs:  # files a config names by path only (its copy holds the last component): their bytes
        out["inputs_sha256"] = dict(sorted(inputs.items()))
    return out
