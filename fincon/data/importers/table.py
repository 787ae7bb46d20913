"""The ``csv`` format: a news/filing table plus a folder of price files.

The table is CSV or JSONL (``.csv``, ``.jsonl``, ``.ndjson``, each optionally
``.gz``), one item a row, streamed with pandas' readers in blocks of rows
(only the columns below are loaded and, with ``--tickers``, only those
tickers' rows are kept, so FNSPID's multi-gigabyte file need not fit in
memory). Columns are matched without
regard to case, under the generic names or FNSPID's as published
(``Date, Article_title, Stock_symbol, Url, Publisher, Author, Article, ...``):

===========  ==================================================  ==========
role         accepted names (first found wins)                   required
===========  ==================================================  ==========
ticker       ticker, symbol, stock_symbol, stock                 yes
published    published_at, published, date, datetime, timestamp  yes
source       source (news, 10-K, 10-Q, analyst_note,             no: news
             earnings_call; 10k/10q accepted)
title        title, article_title, headline                      text or title
text         text, article, body, content                        text or title
url          url, link                                           no
company      company, company_name, issuer                       no
===========  ==================================================  ==========

A company column gives the firm's names, kept in ``dataset.json``'s
``names`` (a masked run masks them beside fincon's own table).

``publisher`` and ``author`` go into the item's metadata with the title and
url. An item without text takes its title as text (FNSPID has headline-only
rows). ``published`` is a date (visible from the next trading day's
decision, or that day's with ``--same-day``) or a timestamp (visible at the
first decision after it; no offset means New York); a timestamp at exactly
00:00:00 counts as a date (:mod:`fincon.data.importers.timing`). A row
without a ticker is skipped and counted; any other unreadable row is an
error naming the file and row.

Prices come from ``--prices DIR``: ``TICKER.csv`` in the Yahoo layout
(``Date,Open,High,Low,Close,Adj Close,Volume``) or close-only
(``Date,Close``). If any imported ticker is close-only, all are imported
close-only (``Close`` = ``Adj Close`` where given), and the notes say so.
Every ticker of the table or the folder is imported unless ``--tickers``
names some; each needs a price file.

Ids are ``TICKER-SOURCE-YYYYMMDD-N``, N counting that ticker's items of
that source and day in file order, after duplicates are dropped.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
from pathlib import Path
from typing import Any, Iterator

import pandas as pd

from fincon.data.dataset import ImportedCorpus, PriceKind
from fincon.data.events.model import SOURCES, Event
from fincon.data.importers.common import ImportOptions, dedupe, pick_tickers
from fincon.data.importers.timing import BadTime, item_time, options_record as _record
from fincon.data.prices import is_close_only, validate_bars
from fincon.errors import DataError
from fincon.files import name_before

ROLES: dict[str, tuple[str, ...]] = {
    "ticker": ("ticker", "symbol", "stock_symbol", "stock"),
    "published": ("published_at", "published", "date", "datetime", "timestamp"),
    "source": ("source",),
    "title": ("title", "article_title", "headline"),
    "text": ("text", "article", "body", "content"),
    "url": ("url", "link"),
    "publisher": ("publisher",),
    "author": ("author",),
    "company": ("company", "company_name", "issuer"),
}
SOURCE_NAMES = {s.lower(): s for s in SOURCES} | {"10k": "10-K", "10q": "10-Q", "": "news"}
TABLE_SUFFIXES = (".csv", ".csv.gz", ".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")


CHUNK_ROWS = 100_000
#: pandas 3 guesses no dates once dtype=False (and deprecates convert_dates);
#: pandas 2 would still turn a "date" or "published_at" column into datetimes.
_NO_DATE_GUESS = {} if int(pd.__version__.split(".")[0]) >= 3 else {"convert_dates": False}


def _check_path(path: Path) -> None:
    if not path.is_file():
        raise DataError(f"{path}: no such file" if not path.exists() else f"{path}: is a folder; give the table file")
    if not path.name.lower().endswith(TABLE_SUFFIXES):
        raise DataError(f"{path}: expected a .csv or .jsonl table (optionally .gz)")


def _unreadable(path: Path, exc: BaseException) -> DataError:
    first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
    if m := re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", first):
        return DataError(
            f"{path}: line {m[2]} has {m[3]} fields where the header has {m[1]}; "
            'quote a field that holds a comma ("a, b")'
        )
    return DataError(f"{path}: cannot read the table ({first})")


def _fields_as_header(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """``frame`` as read, or one line when its rows hold more fields than the
    header names: pandas then takes the first column for an index without a
    word and shifts every column one to the left (a table whose texts each hold
    one unquoted comma imported with 0 items)."""
    if not isinstance(frame.index, pd.RangeIndex):
        raise DataError(
            f"{path}: its rows hold more fields than the header's {len(frame.columns)} (a row's first field "
            'was read as an index); quote a field that holds a comma ("a, b") or name every column'
        )
    return frame


def chunks(path: Path) -> Iterator[pd.DataFrame]:
    """The table in blocks of rows: CSV as strings (only the columns a role
    uses: FNSPID's summaries are never loaded), JSONL as JSON values (no type
    or date guessing). One-line errors."""
    _check_path(path)
    csv = ".csv" in path.name.lower()
    try:
        if csv:
            header = pd.read_csv(path, nrows=0, encoding="utf-8-sig")
            used = sorted(set(columns_of(list(header.columns), path).values()))
            # every column is read and the unused dropped per block: with
            # usecols pandas drops a row's extra fields without a word, so an
            # unquoted comma shifted a title's end into the text column
            reader = pd.read_csv(
                path,
                encoding="utf-8-sig",  # a byte-order mark is not part of the first column's name
                dtype=str,
                keep_default_na=False,
                na_filter=False,
                chunksize=CHUNK_ROWS,
            )
            with reader:
                for block in reader:
                    yield _fields_as_header(block, path)[used]
        else:
            reader = pd.read_json(path, lines=True, dtype=False, chunksize=CHUNK_ROWS, **_NO_DATE_GUESS)
            with reader:
                yield from reader
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: empty file; no header and no rows") from None
    except TypeError:  # pandas' own words for a JSONL line that is an array or a number
        raise DataError(
            f'{path}: a line is not a JSON object; every JSONL line must be one item ({{"ticker": ..., ...}})'
        ) from None
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError, OSError, EOFError) as exc:
        raise _unreadable(path, exc) from None


def columns_of(columns: list[Any], path: Path) -> dict[str, str]:
    """role -> the table's column name; a table without ticker, date or text is an error."""
    by_lower: dict[str, str] = {}
    for c in columns:
        by_lower.setdefault(str(c).strip().lower(), str(c))
    cols = {
        role: next(by_lower[n] for n in names if n in by_lower)
        for role, names in ROLES.items()
        if any(n in by_lower for n in names)
    }
    found = ", ".join(map(str, columns)) or "none"
    for role, label in (("ticker", "ticker"), ("published", "date")):
        if role not in cols:
            raise DataError(f"{path}: no {label} column; name it {' or '.join(ROLES[role][:3])} (found: {found})")
    if "text" not in cols and "title" not in cols:
        raise DataError(f"{path}: no text column; name it text (or Article) or give a title (found: {found})")
    return cols


def _strings(col: pd.Series) -> list[str]:
    return ["" if v is None or (isinstance(v, float) and v != v) else str(v).strip() for v in col.tolist()]


@dataclasses.dataclass
class Rows:
    """The rows of one table file that can become items, by role (strings;
    ``published`` as stored), with their 1-based row numbers for messages."""

    path: Path
    published_col: str
    numbers: list[int]
    tickers: list[str]
    cols: dict[str, list[Any]]
    seen: set[str]  # every ticker in the file
    no_ticker: int  # rows without one


def load_rows(path: Path, wanted: set[str] | None) -> Rows:
    """Stream ``path`` and keep the rows of ``wanted`` tickers (all when None)."""
    rows: Rows | None = None
    start = 0
    for chunk in chunks(path):
        if rows is None:
            cols = columns_of(list(chunk.columns), path)
            rows = Rows(
                path=path,
                published_col=cols["published"],
                numbers=[],
                tickers=[],
                cols={role: [] for role in cols},
                seen=set(),
                no_ticker=0,
            )
        chunk = chunk.reindex(columns=list(dict.fromkeys(cols.values())))
        tickers = [t.upper() for t in _strings(chunk[cols["ticker"]])]
        keep = [i for i, t in enumerate(tickers) if t and (wanted is None or t in wanted)]
        rows.seen.update(tickers)
        rows.no_ticker += sum(1 for t in tickers if not t)
        rows.numbers += [start + i + 1 for i in keep]
        rows.tickers += [tickers[i] for i in keep]
        part = chunk.iloc[keep]
        for role, col in cols.items():
            if role != "ticker":
                rows.cols[role] += part[col].tolist() if role == "published" else _strings(part[col])
        start += len(chunk)
    if rows is None:  # a JSONL file without a single record
        raise DataError(f"{path}: no rows")
    rows.seen.discard("")
    return rows


def items_of(rows: Rows, wanted: set[str], options: ImportOptions) -> tuple[list[Event], dict[str, int]]:
    """Events of the wanted tickers' rows (provisional ids); counts of skipped rows."""
    skipped = {"no_ticker": rows.no_ticker, "empty": 0, "title_as_text": 0}
    timed: dict[Any, tuple[dt.date, dt.datetime, str]] = {}
    n = len(rows.tickers)
    get = {role: rows.cols.get(role, [""] * n) for role in ROLES}
    events: list[Event] = []
    for i, ticker in enumerate(rows.tickers):
        if ticker not in wanted:
            continue
        raw = get["published"][i]
        key = raw if isinstance(raw, (str, int, float)) or raw is None else str(raw)
        when = timed.get(key)
        if when is None:
            try:
                when = timed[key] = item_time(raw, options.visibility)
            except BadTime as exc:
                raise DataError(
                    f"{rows.path}: row {rows.numbers[i]}: {rows.published_col} {raw!r} is {exc}; "
                    "use YYYY-MM-DD or an ISO timestamp (e.g. 2020-06-05 14:30:00-04:00)"
                ) from None
        day, published, clock = when
        if not options.in_window(day):
            continue
        source = SOURCE_NAMES.get(get["source"][i].lower())
        if source is None:
            raise DataError(
                f"{rows.path}: row {rows.numbers[i]}: source {get['source'][i]!r} is not one of {', '.join(SOURCES)}"
            )
        text, title = get["text"][i], get["title"][i]
        if not text:
            if not title:
                skipped["empty"] += 1
                continue
            text = title
            skipped["title_as_text"] += 1
        meta: dict[str, Any] = {
            "corpus": "csv",
            "date": day.isoformat(),
            "time": clock,
            "visibility": options.visibility,
        }
        for role in ("title", "url", "publisher", "author", "company"):
            if get[role][i]:
                meta[role] = get[role][i]
        events.append(
            Event(id=f"row-{i}", ticker=ticker, source=source, published_at=published, text=text, metadata=meta)
        )
    return events, skipped


def final_ids(events: list[Event]) -> list[Event]:
    """``TICKER-SOURCE-YYYYMMDD-N``, N in the order of ``events`` within ticker, source and day (dedupe's:
    publication order, file order among equals)."""
    seen: dict[str, int] = {}
    out = []
    for e in events:
        stem = f"{e.ticker}-{e.source}-{e.metadata['date'].replace('-', '')}"
        n = seen.get(stem, 0)
        seen[stem] = n + 1
        out.append(dataclasses.replace(e, id=f"{stem}-{n}"))
    return out


def price_files(folder: Path | None) -> dict[str, Path]:
    if folder is None:
        raise DataError("csv: give the price files with --prices DIR (TICKER.csv per ticker)")
    if not folder.is_dir():
        raise DataError(
            f"--prices {folder}: no such folder"
            if not folder.exists()
            else f"--prices {folder}: is a file; give the folder of TICKER.csv files"
        )
    # TICKER.csv or TICKER.csv.gz, as --data reads them (a folder of the sample's gzipped files was refused)
    found = sorted(p for p in folder.iterdir() if p.name.lower().endswith((".csv", ".csv.gz")))
    return {
        name_before(p.name, (".csv", ".csv.gz")).upper(): p for p in reversed(found)
    }  # a plain .csv wins over its .csv.gz


def read_price_file(path: Path, ticker: str, options: ImportOptions) -> pd.DataFrame:
    """A validated raw frame cut to the window (the whole file is checked)."""
    try:
        raw = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        raise DataError(f"{path}: empty price file") from None
    except (pd.errors.ParserError, ValueError, UnicodeDecodeError, OSError) as exc:
        raise DataError(f"{path}: cannot read prices ({str(exc).strip().splitlines()[0][:200]})") from None
    raw = _fields_as_header(raw, path)
    raw.columns = [str(c).strip() for c in raw.columns]
    bars = validate_bars(raw, ticker, str(path))
    days = bars.index.date
    keep = [options.in_window(d) for d in days]
    cut = raw.loc[keep].reset_index(drop=True)
    if cut.empty:
        raise DataError(
            f"{path}: no prices in the chosen window ({bars.index[0].date()}..{bars.index[-1].date()} in the file)"
        )
    return cut


def to_close_only(raw: pd.DataFrame) -> pd.DataFrame:
    close = raw["Adj Close"] if "Adj Close" in raw.columns else raw["Close"]
    return pd.DataFrame({"Date": raw["Date"], "Close": close})


def read(sources: list[Path], options: ImportOptions) -> ImportedCorpus:
    if not sources:
        raise DataError("csv: give one or more news/filing tables (.csv or .jsonl)")
    files = price_files(options.prices)
    tables = [load_rows(p, set(options.tickers) if options.tickers else None) for p in sources]
    in_tables = {t for r in tables for t in r.seen}
    tickers = pick_tickers(sorted(in_tables | set(files)), options.tickers, f"the tables and --prices {options.prices}")
    missing = [t for t in tickers if t not in files]
    if missing:
        shown = ", ".join(missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise DataError(
            f"--prices {options.prices} has no {missing[0]}.csv; no prices for {shown} "
            f"({len(missing)} of {len(tickers)} tickers; choose tickers with --tickers)"
        )

    raw = {t: read_price_file(files[t], t, options) for t in tickers}
    close_only = sorted(t for t, f in raw.items() if is_close_only(f))
    kind: PriceKind = "close" if close_only else "ohlcv"
    notes: list[str] = []
    if close_only and len(close_only) < len(raw):
        notes.append(
            f"close-only prices for {', '.join(close_only)}: every ticker imported close-only "
            "(Close = Adj Close where given)"
        )
    prices = {t: to_close_only(f) for t, f in raw.items()} if close_only else raw

    events: list[Event] = []
    skipped = {"no_ticker": 0, "empty": 0, "title_as_text": 0}
    for r in tables:
        evs, s = items_of(r, set(tickers), options)
        events += evs
        skipped = {k: skipped[k] + s[k] for k in skipped}
    kept, dups = dedupe(events, lambda e: e.metadata["date"])
    kept = final_ids(kept)
    if skipped["no_ticker"]:
        notes.append(f"{skipped['no_ticker']} rows without a ticker skipped")
    if skipped["empty"]:
        notes.append(f"{skipped['empty']} rows without text or title skipped")
    if skipped["title_as_text"]:
        notes.append(f"{skipped['title_as_text']} items without text took their title as text")
    sources_used = [r.path for r in tables] + [files[t] for t in tickers]
    names: dict[str, list[str]] = {}  # the firm names the table gives (its company column): masked with --anonymize
    for e in kept:
        if e.metadata.get("company") and e.metadata["company"] not in names.setdefault(e.ticker, []):
            names[e.ticker].append(e.metadata["company"])
    return ImportedCorpus(
        names={t: v for t, v in sorted(names.items()) if v},
        format="csv",
        sources=sources_used,
        prices=prices,
        price_kind=kind,
        events=kept,
        visibility=options.visibility,
        duplicates=dups,
        options=_record(options),
        notes=notes,
    )
