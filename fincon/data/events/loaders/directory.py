"""Events from a directory of JSONL / CSV files plus audio files.

Format (see docs/information.md): every ``*.jsonl``, ``*.jsonl.gz`` or
``*.csv`` file under the directory holds one event per line/row with the
fields ``id, ticker, source, published_at, text, audio, metadata``.
``published_at`` is ISO 8601 (no offset = New York local time); ``audio`` is
a path relative to the directory; ``metadata`` is a JSON object (a JSON
string in CSV). Audio files may live anywhere under the directory.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

from fincon.data.events.loaders import window
from fincon.data.events.model import Event
from fincon.errors import DataError


class DirectoryLoader:
    """Reads an event directory (the bundled sample corpus uses this format)."""

    name = "directory"

    def __init__(self, root: str | Path):
        self.root = Path(root)

    def files(self) -> list[Path]:
        if not self.root.is_dir():
            raise DataError(
                f"event directory {self.root} does not exist; create it or run `fincon data sample --out {self.root}`"
            )
        if (self.root / "dataset.json").is_file():  # its prices/*.csv read as event records (review)
            events = self.root / "events"
            what = (
                f" (its prices and its events), or --events {events} for its events alone"
                if events.is_dir()
                else " (its prices: it holds no events)"
            )
            raise DataError(
                f"{self.root} is a dataset (dataset.json), not an event directory: give it as --data {self.root}{what}"
            )
        pats = ("*.jsonl", "*.jsonl.gz", "*.csv")
        return sorted({p for pat in pats for p in self.root.rglob(pat)})

    def load(self, tickers: Sequence[str] | None = None, start: Any = None, end: Any = None) -> list[Event]:
        want = {t.upper() for t in tickers} if tickers else None
        keep = window(start, end)
        out: list[Event] = []
        for path in self.files():
            for e in _events(path):
                if want is not None and e.ticker not in want:
                    continue
                audio = Path(e.audio) if e.audio and Path(e.audio).is_absolute() else self.root / (e.audio or "")
                if e.audio and not audio.exists():  # an absolute path too (found only on the call's day: exit 3)
                    where = "which does not exist" if Path(e.audio).is_absolute() else f"which is not in {self.root}"
                    raise DataError(f"{path.name}: event {e.id} names audio {e.audio} {where}")
                if e.audio and audio.is_file() and audio.stat().st_size == 0:
                    raise DataError(
                        f"{path.name}: event {e.id} names audio {e.audio}, an empty (0-byte) file; "
                        "render or copy it again"
                    )
                if keep(e):
                    out.append(e)
        return out


#: a file of at most MEMO_BYTES is parsed once per process per content (below), and the memo
#: holds at most MEMO_TOTAL bytes of files (the least recently read go first): a big corpus is
#: parsed each time it is read, rather than kept in memory for the life of the process
MEMO_BYTES = 8 * 2**20
MEMO_TOTAL = 64 * 2**20
_MEMO: OrderedDict[tuple[str, str], tuple[int, tuple[Event, ...]]] = OrderedDict()
_MEMO_LOCK = threading.Lock()


def _events(path: Path) -> tuple[Event, ...]:
    """Every event of one file, validated. A small file is parsed once per
    process and kept under the digest of its bytes (a file changed in any way
    is parsed again): an experiment runs dozens of units in one process, and
    each opened the same corpus, parsing every record of every ticker again
    (0.2 s a unit on the bundled sample). Reading and hashing the bytes is a
    few milliseconds. Events are frozen; nothing changes one after it is read."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read event file {path}: {exc}") from exc
    if len(raw) > MEMO_BYTES:
        return _parse(path, raw)
    key = ("".join(path.suffixes[-2:]), hashlib.sha256(raw).hexdigest())
    with _MEMO_LOCK:
        hit = _MEMO.get(key)
        if hit is not None:
            _MEMO.move_to_end(key)
            return hit[1]
    events = _parse(path, raw)
    with _MEMO_LOCK:
        _MEMO[key] = (len(raw), events)
        while sum(n for n, _ in _MEMO.values()) > MEMO_TOTAL:
            _MEMO.popitem(last=False)
    return events


def _parse(path: Path, raw: bytes) -> tuple[Event, ...]:
    out = []
    for n, rec in _records(path, raw):
        if not isinstance(rec, dict):
            raise DataError(f"{path}:{n}: expected a JSON object with id, ticker, source, published_at")
        try:
            e = Event.from_dict(rec)
        except DataError as exc:
            raise DataError(f"{path}:{n}: {exc}") from None
        if not YEARS[0] <= e.published_at.year <= YEARS[1]:  # 2202 for 2022: the corpus seemed to cover to 2202
            raise DataError(
                f"{path}:{n}: event {e.id} is dated {e.published_at.date()}, far outside any plausible span "
                f"({YEARS[0]}..{YEARS[1]}): a mistyped date? fix or drop it"
            )
        out.append(e)
    return tuple(out)


#: the years an item may be dated in (as `fincon data import` refuses items far outside the prices:
#: the directory has no prices to measure against, and one item of 2202 stretched the corpus' coverage)
YEARS = (1900, 2100)


def _csv_records(path: Path, raw: bytes):
    """The rows of a CSV event file, strictly: a file cut inside a quoted field, or a row of more or fewer
    fields than the header, is damage (read leniently, the cut call lost its audio and metadata)."""
    reader = csv.reader(io.StringIO(raw.decode("utf-8-sig"), newline=""), strict=True)
    first, header = 1, None
    try:
        for row in reader:
            if header is None:
                header = row
            elif row:  # a blank line holds no row
                if len(row) != len(header):
                    raise csv.Error(f"{len(row)} fields, the header has {len(header)}")
                yield first, dict(zip(header, row))
            first = reader.line_num + 1
    except csv.Error as exc:
        raise DataError(
            f"{path}:{first}: truncated or malformed CSV row ({exc}); fix its quoting and fields, or write it again"
        ) from None


def _records(path: Path, raw: bytes):
    name = path.name
    try:
        if name.endswith(".csv"):
            yield from _csv_records(path, raw)
            return
        if name.endswith(".gz"):
            raw = gzip.decompress(raw)
        for n, line in enumerate(io.StringIO(raw.decode("utf-8-sig")), 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield n, json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{n}: not a JSON object ({exc.msg})") from exc
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read event file {path}: {exc}") from exc


def write_jsonl_gz(path: Path, events: Sequence[Event]) -> None:
    """Byte-reproducible gzip JSONL (no mtime, no file name in the header)."""
    body = "".join(e.to_json() + "\n" for e in events).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(body)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
