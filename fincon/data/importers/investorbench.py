"""InvestorBench's per-asset JSON files, as the benchmark publishes them.

One file per asset: ``{"YYYY-MM-DD": {"prices": close, "news": [text, ...],
"10k": [text, ...], "10q": [text, ...]}}``; the crypto files have no filing
keys and a record for every calendar day. The texts are the benchmark
authors' summaries; each news summary ends with a sentiment tag,
"(Sentiment: positive)" in the stock files and "(sentiment:positive)" in the
crypto ones. The tag is parsed into the item's ``metadata["sentiment"]`` and
cut from the text (``--keep-sentiment`` leaves it in, to compare with the
benchmark's own agents, which read it).

Items carry a date only. Under the default rule they are visible from the
next trading day's decision (``fincon.data.importers.common.published_at``); the
benchmark's same-day convention is ``--same-day``.

The ticker is the file name without ``.json`` or ``.json.gz`` (``msft.json.gz``
-> MSFT, ``brk.b.json`` -> BRK.B), or the one named after it
(``ib-nflx.json.gz=NFLX``).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import math
import re
import zlib
from pathlib import Path
from typing import Any

import pandas as pd

from fincon.data.dataset import ImportedCorpus
from fincon.data.events.model import Event
from fincon.data.importers.common import ImportOptions, dedupe, pick_tickers, published_at
from fincon.errors import DataError
from fincon.files import name_before

#: The benchmark's keys and the event sources they become.
FILING_KEYS = {"10k": "10-K", "10q": "10-Q"}
KNOWN_KEYS = {"prices", "news", *FILING_KEYS}
SENTIMENT_TAG = re.compile(r"\s*\(\s*sentiment\s*:\s*(positive|neutral|negative)\s*\)\s*$", re.IGNORECASE)
_TICKER = re.compile(r"^[A-Z0-9][A-Z0-9.\-]{0,14}$")


def ticker_of(path: Path) -> str:
    t = name_before(path.name, (".json", ".json.gz")).upper()
    if not _TICKER.match(t):
        raise DataError(
            f"{path}: cannot take a ticker from the file name {path.name!r}; "
            "name the file after the asset (msft.json) or the asset after the file (FILE=MSFT)"
        )
    return t


def split_sentiment(text: str) -> tuple[str, str | None]:
    """``"... (Sentiment: positive)"`` -> ``("...", "positive")``."""
    m = SENTIMENT_TAG.search(text)
    if not m:
        return text.strip(), None
    return text[: m.start()].strip(), m.group(1).lower()


def load_json(path: Path) -> dict[str, Any]:
    """The file's object, or one line on what is wrong with it."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if path.name.endswith(".gz") or raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error) as exc:
            raise DataError(f"{path}: truncated or corrupt gzip ({exc}); download the file again") from None
    dups: list[str] = []
    inner: dict[int, str] = {}  # id of a day's record that gave a key twice -> that key

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for k, v in items:
            if k in seen:
                dups.append(k)
                inner.setdefault(id(seen), k)
            seen[k] = v
        return seen

    try:
        # utf-8-sig: a byte-order mark is not damage; a key given twice is (JSON would keep the last)
        obj = json.loads(raw.decode("utf-8-sig"), object_pairs_hook=pairs)
    except UnicodeDecodeError:
        raise DataError(f"{path}: not UTF-8 text; expected InvestorBench's JSON") from None
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg}); the file may be truncated") from None
    if not isinstance(obj, dict):
        raise DataError(f"{path}: expected a JSON object keyed by date, found a {type(obj).__name__}")
    day_dups = sorted({k for k in dups if k in obj and re.fullmatch(r"\d{4}-\d{2}-\d{2}", k)})
    if day_dups:
        raise DataError(
            f"{path}: date {day_dups[0]} appears {dups.count(day_dups[0]) + 1} times (JSON keeps only the last "
            "record); merge or drop the duplicates"
        )
    for day, record in obj.items():
        if id(record) in inner:
            raise DataError(
                f"{path}: {day} gives {inner[id(record)]!r} twice (JSON keeps only the last); merge the two lists"
            )
    if not obj:
        raise DataError(f"{path}: the JSON object is empty; no days to import")
    return obj


def _day(key: str, path: Path) -> dt.date:
    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", key):
            raise ValueError
        return dt.date.fromisoformat(key)
    except ValueError:
        raise DataError(f"{path}: key {key!r} is not a date (YYYY-MM-DD)") from None


def _price(value: Any, day: dt.date, path: Path) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DataError(f"{path}: {day}: price {value!r} is not a number")
    x = float(value)
    if not math.isfinite(x) or x <= 0:
        raise DataError(f"{path}: {day}: price {value!r} is not a positive finite number")
    return x


def _texts(rec: dict[str, Any], key: str, day: dt.date, path: Path) -> list[str]:
    items = rec.get(key)
    if items is None:
        return []
    if not isinstance(items, list) or not all(isinstance(x, str) for x in items):
        raise DataError(f"{path}: {day}: {key!r} must be a list of texts")
    return items


def read_file(
    path: Path, ticker: str, options: ImportOptions
) -> tuple[pd.DataFrame, list[Event], int, int, list[dt.date]]:
    """Prices, events, duplicates dropped, empty texts skipped and the days
    listed without a price or an item (dropped, and said) for one asset."""
    obj = load_json(path)
    rows: list[tuple[str, float]] = []
    no_price: list[dt.date] = []
    events: list[Event] = []
    empty = 0
    for key in sorted(obj):
        day = _day(key, path)
        rec = obj[key]
        if not isinstance(rec, dict):
            raise DataError(f"{path}: {day}: expected an object with prices/news, found {type(rec).__name__}")
        unknown = sorted(set(rec) - KNOWN_KEYS)
        if unknown:
            raise DataError(
                f"{path}: {day}: unknown key {unknown[0]!r}; InvestorBench records hold {', '.join(sorted(KNOWN_KEYS))}"
            )
        if not options.in_window(day):
            continue
        texts = {k: _texts(rec, k, day, path) for k in ("news", *FILING_KEYS)}
        if rec.get("prices") is None:
            if any(texts.values()):
                raise DataError(f"{path}: {day}: items but no price; every day with news or filings needs a close")
            no_price.append(day)
            continue
        rows.append((key, _price(rec["prices"], day, path)))
        when = published_at(day, options.visibility)
        stamp = day.strftime("%Y%m%d")
        for key_, source in (("news", "news"), *FILING_KEYS.items()):
            for i, raw in enumerate(texts[key_]):
                text, sentiment = split_sentiment(raw) if source == "news" else (raw.strip(), None)
                if options.keep_sentiment and source == "news":
                    text = raw.strip()
                if not text:
                    empty += 1
                    continue
                meta: dict[str, Any] = {
                    "corpus": "investorbench",
                    "date": key,
                    "time": "date only",
                    "visibility": options.visibility,
                }
                if sentiment is not None:
                    meta["sentiment"] = sentiment
                events.append(
                    Event(
                        id=f"{ticker}-{source}-{stamp}-{i}",
                        ticker=ticker,
                        source=source,
                        published_at=when,
                        text=text,
                        metadata=meta,
                    )
                )
    if not rows:
        raise DataError(f"{path}: no days with a price in the chosen window")
    prices = pd.DataFrame(rows, columns=["Date", "Close"])
    kept, dup = dedupe(events, lambda e: e.metadata["date"])
    return prices, kept, dup, empty, no_price


def read(sources: list[Path], options: ImportOptions) -> ImportedCorpus:
    if not sources:
        raise DataError("investorbench: give one or more of the benchmark's JSON files")
    by_ticker: dict[str, Path] = {}
    for p in sources:
        named = None
        if not p.exists() and "=" in p.name:  # FILE=TICKER: the asset named, whatever the file is called
            path, _, named = str(p).rpartition("=")
            p, named = Path(path), named.strip().upper()
            if not _TICKER.match(named):
                raise DataError(f"{p}={named}: {named!r} is not a ticker (letters, digits, '.' or '-')")
        if not p.is_file():
            raise DataError(f"{p}: no such file" if not p.exists() else f"{p}: is a folder; give the JSON files")
        t = named or ticker_of(p)
        if t in by_ticker:
            raise DataError(f"{p} and {by_ticker[t]} are both {t}; give one file per asset")
        by_ticker[t] = p
    tickers = pick_tickers(list(by_ticker), options.tickers, "the given files")
    prices: dict[str, pd.DataFrame] = {}
    events: list[Event] = []
    dups = empty = 0
    unpriced: list[str] = []
    for t in tickers:
        frame, evs, d, e, gone = read_file(by_ticker[t], t, options)
        prices[t], dups, empty = frame, dups + d, empty + e
        events += evs
        weekdays = [x for x in gone if x.weekday() < 5]  # a listed weekday without a close: its move joins the next bar
        if weekdays:
            unpriced.append(f"{t} {len(weekdays)} (first {weekdays[0]})")
    notes = []
    if not options.keep_sentiment:
        notes.append("news sentiment tags parsed into metadata.sentiment and removed from the text")
    else:
        notes.append("news sentiment tags kept in the text (--keep-sentiment), as the benchmark's agents read them")
    if empty:
        notes.append(f"{empty} empty texts skipped")
    if unpriced:
        notes.append(
            "weekdays listed with no price and no item dropped (the move over each falls into the next bar): "
            + ", ".join(unpriced)
        )
    return ImportedCorpus(
        format="investorbench",
        sources=[by_ticker[t] for t in tickers],
        prices=prices,
        price_kind="close",
        events=events,
        visibility=options.visibility,
        duplicates=dups,
        options=options.as_record(),
        notes=notes,
    )
