"""Writing a file whole or not at all, and JSON that is JSON.

Every result fincon writes goes through here: a temporary sibling renamed
over the target (a reader, or a run stopped halfway, never sees half a
file), and JSON with no bare ``NaN`` or ``Infinity`` (which the JSON
standard does not have and strict readers refuse): a non-finite number is
written as ``null``.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any, Iterable


def name_before(name: str, suffixes: tuple[str, ...]) -> str:
    """``name`` without the first of ``suffixes`` it ends with (any case), else
    up to its first dot: a dotted ticker's file, ``BRK.B.csv``, is BRK.B's,
    not BRK's."""
    low = name.lower()
    cut = next((len(s) for s in suffixes if low.endswith(s) and len(name) > len(s)), None)
    return name[:-cut] if cut else name.split(".", 1)[0]


def write_atomic(path: Path | str, text: str | bytes) -> None:
    """Write ``text`` to ``path`` whole or not at all; the temporary file is
    removed when the write fails (the error is the caller's to word)."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
    try:
        if isinstance(text, bytes):
            tmp.write_bytes(text)
        else:
            tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def finite(obj: Any) -> Any:
    """``obj`` with every non-finite float (NaN, infinities) as None, recursively."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


def json_text(obj: Any, indent: int | None = 1, sort_keys: bool = True, **kw: Any) -> str:
    """``obj`` as sorted, indented JSON with a final newline; NaN and infinities as null, so that
    a strict reader (jq, JavaScript's JSON.parse) reads it: what every ``--json`` prints
    (``kw``: ``json.dumps``'s ``default``, ``ensure_ascii``)."""
    return json.dumps(finite(obj), indent=indent, sort_keys=sort_keys, allow_nan=False, **kw) + "\n"


def sha256_file(path: Path | str, chunk: int = 1 << 20) -> str:
    """The SHA-256 of a file's bytes, read a MiB at a time (one place: four modules had their own copy)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def corpus_hash(files: Iterable[Path], root: Path | None = None) -> str | None:
    """One sha256 over the corpus files' names (relative to ``root``, when given) and bytes, sorted by name."""
    h = hashlib.sha256()
    seen = False
    named = sorted(((f.relative_to(root).as_posix() if root is not None else f.name), f) for f in files)
    for name, f in named:
        h.update(name.encode() + b"\0" + f.read_bytes())
        seen = True
    return h.hexdigest() if seen else None


def folder_hash(folder: Path) -> str | None:
    """:func:`corpus_hash` of every file under ``folder`` (its audio/ too: two calls' audio swapped read
    byte-identical otherwise), named relative to it: what a run's manifest seals of the corpus it read."""
    return corpus_hash([p for p in sorted(folder.rglob("*")) if p.is_file()], folder)
