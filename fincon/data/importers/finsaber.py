"""The FINSABER-2 parquet layout, as the benchmark publishes it.

One folder holding four tables, each partitioned by year::

    ROOT/price_daily/year=YYYY/part-000.parquet  date, symbol, cik, open, high, low,
                                                 close, adjusted_close, volume
    ROOT/news_items/year=YYYY/part-000.parquet   date, symbol, cik, item_index, news_text,
                                                 text_len, text_crc32
    ROOT/filingk/year=YYYY/part-000.parquet      date, symbol, filing_idx, filing_text
    ROOT/filingq/year=YYYY/part-000.parquet      (the same, 10-Q)

(the columns the ``finsaber`` package's ``FinsaberParquetDataset`` reads;
this is an independent reader). Every part file's schema is checked before
anything is read, so a file missing a column is named with the column; then
each table is read with :mod:`pyarrow.dataset`, the year partitions pruned
and the date and ticker filter pushed down to the files.

Prices become Yahoo-layout frames with ``Adj Close`` = ``adjusted_close``;
:func:`fincon.data.prices.validate_bars` scales open/high/low by
``adjusted_close / close``, as the benchmark does. News become ``news``
items, ``filingk`` ``10-K`` and ``filingq`` ``10-Q``, each timed by
:func:`fincon.data.importers.timing.item_time`: the layout stores dates, so
by default an item (a filing too) is visible from the trading day after its
date; a ``date`` column holding real times is used as such. Ids are
``TICKER-SOURCE-YYYYMMDD-INDEX`` with the layout's own ``item_index`` /
``filing_idx``.

``price_daily`` is required; a missing news or filing folder is allowed and
said in the dataset's notes.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from fincon.data.dataset import ImportedCorpus
from fincon.data.events.model import Event
from fincon.data.importers.common import ImportOptions, dedupe, pick_tickers
from fincon.data.importers.timing import BadTime, item_time, options_record as _record
from fincon.data.prices import validate_bars
from fincon.errors import DataError

PRICE_COLUMNS = ("date", "symbol", "cik", "open", "high", "low", "close", "adjusted_close", "volume")
NEWS_COLUMNS = ("date", "symbol", "cik", "item_index", "news_text", "text_len", "text_crc32")
FILING_COLUMNS = ("date", "symbol", "filing_idx", "filing_text")
#: table folder -> (documented columns, event source, index column, text column)
ITEM_TABLES = {
    "news_items": (NEWS_COLUMNS, "news", "item_index", "news_text"),
    "filingk": (FILING_COLUMNS, "10-K", "filing_idx", "filing_text"),
    "filingq": (FILING_COLUMNS, "10-Q", "filing_idx", "filing_text"),
}
_YEAR_DIR = re.compile(r"^year=(\d{4})$")


@dataclass(frozen=True)
class Table:
    """One of the layout's tables: its folder, part files and date type."""

    name: str
    folder: Path
    files: tuple[Path, ...]
    date_type: pa.DataType
    year_type: pa.DataType = pa.int32()  # the files' own year column's type, if they repeat it

    def dataset(self) -> ds.Dataset:
        partitioning = ds.partitioning(pa.schema([("year", self.year_type)]), flavor="hive")
        try:
            return ds.dataset(
                [str(f) for f in self.files],
                format="parquet",
                partitioning=partitioning,
                partition_base_dir=str(self.folder),
            )
        except (pa.ArrowInvalid, pa.ArrowTypeError, OSError) as exc:
            raise DataError(f"{self.folder}: cannot open the parquet files ({_first_line(exc)})") from None

    def read(self, columns: list[str], expr: ds.Expression | None) -> tuple[pa.Table, list[Path]]:
        """The filtered table and the part files it came from (after partition pruning)."""
        dset = self.dataset()
        try:
            used = sorted(Path(f.path) for f in dset.get_fragments(filter=expr))
            table = dset.to_table(columns=columns, filter=expr)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, OSError) as exc:
            raise DataError(
                f"{self.folder}: cannot read ({_first_line(exc)}); the part files may disagree on a column's type"
            ) from None
        return table, used


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def open_table(root: Path, name: str, columns: tuple[str, ...]) -> Table | None:
    """Check every part file of ``root/name`` for the documented columns; None if the folder is absent."""
    folder = root / name
    if not folder.is_dir():
        return None
    files: list[Path] = []
    for sub in sorted(folder.iterdir()):
        if sub.is_dir():
            if not _YEAR_DIR.match(sub.name):
                raise DataError(f"{sub}: not a year partition; FINSABER's tables hold year=YYYY/part-000.parquet")
            files += sorted(sub.glob("*.parquet"))
    if not files:
        raise DataError(f"{folder}: no year=YYYY/*.parquet files")
    date_type: pa.DataType | None = None
    year_type: pa.DataType = pa.int32()
    for f in files:
        try:
            schema = pq.read_schema(f)
        except (pa.ArrowInvalid, OSError) as exc:
            raise DataError(f"{f}: not a readable parquet file ({_first_line(exc)})") from None
        missing = [c for c in columns if c not in schema.names]
        if missing:
            raise DataError(f"{f}: missing column {missing[0]!r}; FINSABER's {name} files hold {', '.join(columns)}")
        t = schema.field("date").type
        if not (
            pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_string(t) or pa.types.is_large_string(t)
        ):
            raise DataError(f"{f}: column 'date' is {t}; expected a date, a timestamp or YYYY-MM-DD text")
        if "year" in schema.names:
            year_type = schema.field("year").type
            if not pa.types.is_integer(year_type):
                raise DataError(f"{f}: column 'year' is {year_type}; expected the integer year of the partition")
        if date_type is None:
            date_type = t
        elif t != date_type:
            raise DataError(f"{f}: column 'date' is {t} but {files[0]} has {date_type}; one type per table")
    assert date_type is not None
    return Table(name=name, folder=folder, files=tuple(files), date_type=date_type, year_type=year_type)


def window_filter(table: Table, options: ImportOptions, symbols: list[str] | None) -> ds.Expression | None:
    """Year partitions, date range and symbols as one pushed-down expression.

    Timestamps are compared with a day of slack on each side (their day is
    taken in New York afterwards); the exact window is applied per row.
    """
    t = table.date_type
    slack = dt.timedelta(days=0 if pa.types.is_date(t) else 1)
    parts: list[ds.Expression] = []

    def bound(day: dt.date) -> Any:
        if pa.types.is_date(t):
            return pa.scalar(day, type=pa.date32())
        if pa.types.is_timestamp(t):
            return pa.scalar(dt.datetime.combine(day, dt.time(0, 0)), type=pa.timestamp("s")).cast(t)
        return day.isoformat()

    if options.start is not None:
        lo = options.start - slack
        parts += [ds.field("year") >= lo.year, ds.field("date") >= bound(lo)]
    if options.end is not None:
        hi = options.end + slack + dt.timedelta(days=1)
        parts += [ds.field("year") <= hi.year, ds.field("date") < bound(hi)]
    if symbols is not None:
        parts.append(ds.field("symbol").isin(symbols))
    expr = None
    for p in parts:
        expr = p if expr is None else expr & p
    return expr


def _day(value: Any) -> dt.date:
    """A price row's day: the stored date (a timestamp's own calendar day)."""
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str) and re.match(r"^\d{4}-\d{2}-\d{2}", value.strip()):
        return dt.date.fromisoformat(value.strip()[:10])
    raise ValueError(value)


def read_prices(
    table: Table, options: ImportOptions, symbols: dict[str, str]
) -> tuple[dict[str, pd.DataFrame], list[Path]]:
    """Yahoo-layout frames per ticker, validated (named by ticker and folder)."""
    cols = list(PRICE_COLUMNS)
    tab, used = table.read(cols, window_filter(table, options, sorted(symbols.values())))
    data = {c: tab[c].to_pylist() for c in cols}
    rows: dict[str, list[tuple]] = {t: [] for t in symbols}
    by_symbol = {s: t for t, s in symbols.items()}
    for i, raw_day in enumerate(data["date"]):
        try:
            day = _day(raw_day)
        except ValueError:
            raise DataError(f"{table.folder}: {data['symbol'][i]}: date {raw_day!r} is not YYYY-MM-DD") from None
        if not options.in_window(day):
            continue
        rows[by_symbol[data["symbol"][i]]].append(
            (
                day,
                data["open"][i],
                data["high"][i],
                data["low"][i],
                data["close"][i],
                data["adjusted_close"][i],
                data["volume"][i],
            )
        )
    frames: dict[str, pd.DataFrame] = {}
    for t, rs in rows.items():
        if not rs:
            raise DataError(f"{table.folder}: no prices for {t} in the chosen window")
        rs.sort(key=lambda r: r[0])
        frame = pd.DataFrame(rs, columns=["Date", "Open", "High", "Low", "Close", "Adj Close", "Volume"])
        frame["Date"] = [d.isoformat() for d in frame["Date"]]
        for c in ("Open", "High", "Low", "Close", "Adj Close", "Volume"):
            frame[c] = pd.to_numeric(frame[c], errors="coerce").astype(float)
        validate_bars(frame, t, str(table.folder))
        frames[t] = frame
    return frames, used


def read_items(
    table: Table, options: ImportOptions, symbols: dict[str, str]
) -> tuple[list[Event], int, int, list[Path]]:
    """Events of one item table; returns events, duplicates dropped, empty texts, files read."""
    _, source, index_col, text_col = ITEM_TABLES[table.name]
    cols = ["date", "symbol", index_col, text_col] + (["cik"] if "cik" in ITEM_TABLES[table.name][0] else [])
    tab, used = table.read(cols, window_filter(table, options, sorted(symbols.values())))
    tab = tab.sort_by([("symbol", "ascending"), ("date", "ascending"), (index_col, "ascending")])
    by_symbol = {s: t for t, s in symbols.items()}
    dates, syms = tab["date"].to_pylist(), tab["symbol"].to_pylist()
    idxs, texts = tab[index_col].to_pylist(), tab[text_col].to_pylist()
    ciks = tab["cik"].to_pylist() if "cik" in cols else [None] * len(dates)
    timed: dict[Any, tuple[dt.date, dt.datetime, str]] = {}
    events: list[Event] = []
    empty = 0
    for raw_day, sym, idx, text, cik in zip(dates, syms, idxs, texts, ciks):
        when = timed.get(raw_day)
        if when is None:
            try:
                when = timed[raw_day] = item_time(raw_day, options.visibility)
            except BadTime as exc:
                raise DataError(f"{table.folder}: {sym}: date {raw_day!r}: {exc}") from None
        day, published, clock = when
        if not options.in_window(day):
            continue
        if idx is None:
            raise DataError(f"{table.folder}: {sym} {day}: empty {index_col}; every item needs its index")
        text = (text or "").strip()
        if not text:
            empty += 1
            continue
        ticker = by_symbol[sym]
        meta: dict[str, Any] = {
            "corpus": "finsaber",
            "date": day.isoformat(),
            "time": clock,
            "visibility": options.visibility,
            index_col: idx,
        }
        if source != "news":
            meta["form"] = source
        if cik is not None:
            meta["cik"] = cik
        # the id names the date as stored, which the index numbers its items within (a timestamp late in
        # the UTC day is the New York day before: two stored dates' item 0 shared one id and were refused)
        stored = (
            raw_day.date() if isinstance(raw_day, dt.datetime) else raw_day if isinstance(raw_day, dt.date) else day
        )
        events.append(
            Event(
                id=f"{ticker}-{source}-{stored.strftime('%Y%m%d')}-{idx}",
                ticker=ticker,
                source=source,
                published_at=published,
                text=text,
                metadata=meta,
            )
        )
    kept, dups = dedupe(events, lambda e: e.metadata["date"])
    repeated = [k for k, n in Counter(e.id for e in kept).items() if n > 1]
    if repeated:
        e = next(e for e in kept if e.id == repeated[0])
        stamp = e.id.rsplit("-", 2)[-2]
        raise DataError(
            f"{table.folder}: {e.ticker} {stamp[:4]}-{stamp[4:6]}-{stamp[6:]}: {index_col} {e.metadata[index_col]} "
            "holds two different texts; each item of a stored date needs its own index"
        )
    return kept, dups, empty, used


def available_symbols(table: Table, options: ImportOptions) -> list[str]:
    tab, _ = table.read(["symbol"], window_filter(table, options, None))
    return sorted(s for s in pc.unique(tab["symbol"]).to_pylist() if s)


def read(sources: list[Path], options: ImportOptions) -> ImportedCorpus:
    if len(sources) != 1:
        raise DataError("finsaber: give one folder (the one holding price_daily/, news_items/, filingk/, filingq/)")
    root = sources[0]
    if not root.is_dir():
        raise DataError(
            f"{root}: no such folder"
            if not root.exists()
            else f"{root}: is a file; give the folder holding price_daily/ and news_items/"
        )
    prices_table = open_table(root, "price_daily", PRICE_COLUMNS)
    if prices_table is None:
        raise DataError(
            f"{root}: no price_daily/ folder; not the FINSABER layout "
            "(price_daily/, news_items/, filingk/, filingq/ with year=YYYY/part-000.parquet)"
        )
    item_tables = {name: open_table(root, name, spec[0]) for name, spec in ITEM_TABLES.items()}

    found = available_symbols(prices_table, options)
    upper = {s.upper(): s for s in found}
    span = (
        ""
        if options.start is None and options.end is None
        else f" in {options.start or 'its first day'}..{options.end or 'its last day'}"
    )
    tickers = pick_tickers(list(upper), options.tickers, f"{prices_table.folder}{span}")
    symbols = {t: upper[t] for t in tickers}

    prices, files = read_prices(prices_table, options, symbols)
    events: list[Event] = []
    dups = empty = 0
    notes = ["prices: open/high/low scaled by adjusted_close/close, close = adjusted_close (as FINSABER does)"]
    for name, table in item_tables.items():
        if table is None:
            notes.append(f"no {name}/ folder: no {ITEM_TABLES[name][1]} items")
            continue
        evs, d, e, used = read_items(table, options, symbols)
        events += evs
        dups, empty, files = dups + d, empty + e, files + used
    if empty:
        notes.append(f"{empty} empty texts skipped")
    return ImportedCorpus(
        format="finsaber",
        sources=files,
        prices=prices,
        price_kind="ohlcv",
        events=events,
        visibility=options.visibility,
        duplicates=dups,
        options=_record(options),
        notes=notes,
    )
