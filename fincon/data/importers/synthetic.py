"""Synthetic corpora in the published layouts, for tests and ``bench/import.py``.

Nothing here is market data: prices are a seeded random walk, every text
starts with ``SYNTHETIC`` and says it was generated. The writers produce the
exact shapes the importers read, at any size:

* :func:`write_finsaber` - a FINSABER-2 tree (``price_daily``, ``news_items``,
  ``filingk``, ``filingq``, each ``year=YYYY/part-000.parquet``);
* :func:`write_table` and :func:`write_price_folder` - a news/filing table
  (CSV or JSONL, generic or FNSPID column names) and a folder of
  ``TICKER.csv`` prices.

:func:`write_partitioned` writes any pyarrow table into the year layout, so
a test can hand-write the rows it checks.
"""

from __future__ import annotations

import datetime as dt
import json
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

_WORDS = (
    "revenue",
    "guidance",
    "margin",
    "demand",
    "supply",
    "outlook",
    "quarter",
    "growth",
    "costs",
    "orders",
    "shipments",
    "pricing",
    "customers",
    "inventory",
    "capital",
    "dividend",
)


def ticker_names(n: int) -> list[str]:
    """``n`` distinct synthetic tickers: S000, S001, ..."""
    return [f"S{i:03d}" for i in range(n)]


def trading_days(years: Sequence[int]) -> pd.DatetimeIndex:
    """Weekdays of the given years (a synthetic calendar: no holidays)."""
    return pd.bdate_range(f"{min(years)}-01-01", f"{max(years)}-12-31")


def write_partitioned(folder: Path, table: pa.Table) -> list[Path]:
    """Write ``table`` as ``folder/year=YYYY/part-000.parquet`` by the year of its ``date`` column."""
    years = pc.year(table["date"]).to_numpy(zero_copy_only=False)
    out = []
    for y in sorted(set(int(v) for v in years)):
        part = table.filter(pa.array(years == y))
        path = folder / f"year={y}" / "part-000.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(part, path, compression="zstd")
        out.append(path)
    return out


def price_rows(tickers: Sequence[str], days: pd.DatetimeIndex, seed: int) -> pd.DataFrame:
    """A random walk per ticker; ``adjusted_close`` = close x a factor < 1
    before a mid-sample split-like step (so the adjustment is visible)."""
    rng = np.random.default_rng(seed)
    frames = []
    for k, t in enumerate(tickers):
        n = len(days)
        close = np.round(50.0 * (1 + k % 7) * np.exp(np.cumsum(rng.normal(0, 0.015, n))), 4)
        factor = np.where(np.arange(n) < n // 2, 0.5, 1.0)
        spread = np.abs(rng.normal(0, 0.01, n))
        frames.append(
            pd.DataFrame(
                {
                    "date": days.date,
                    "symbol": t,
                    "cik": 1_000_000 + k,
                    "open": np.round(close * (1 + rng.normal(0, 0.005, n)), 4),
                    "high": np.round(close * (1 + spread + 0.005), 4),
                    "low": np.round(close * (1 - spread - 0.005), 4),
                    "close": close,
                    "adjusted_close": np.round(close * factor, 4),
                    "volume": rng.integers(100_000, 5_000_000, n),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def news_texts(n: int, syms: Sequence[str], days: Sequence[dt.date], seed: int, words: int = 40) -> list[str]:
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, len(_WORDS), size=(n, words))
    return [
        f"SYNTHETIC generated test item {i} about {s} on {d}: " + " ".join(_WORDS[j] for j in row)
        for i, (s, d, row) in enumerate(zip(syms, days, picks))
    ]


def write_finsaber(
    root: Path,
    tickers: Sequence[str] | int = 3,
    years: Sequence[int] = (2020, 2021),
    news_rows: int = 300,
    filings: bool = True,
    news_times: bool = False,
    seed: int = 7,
) -> dict:
    """A FINSABER-layout tree at ``root``; returns what was written (counts, tickers, days).

    News rows are spread uniformly over tickers and trading days (a
    ticker-day gets ``item_index`` 0, 1, ...). ``news_times`` stores the
    news ``date`` as a timestamp with a clock time (09:00-17:59 New York,
    naive) instead of a date, to exercise timestamped items. Filings: one
    10-K a year (first trading day of March) and three 10-Qs (May, August,
    November) per ticker.
    """
    tickers = ticker_names(tickers) if isinstance(tickers, int) else list(tickers)
    days = trading_days(years)
    prices = price_rows(tickers, days, seed)
    write_partitioned(root / "price_daily", pa.Table.from_pandas(prices, preserve_index=False))

    rng = np.random.default_rng(seed + 1)
    ti = rng.integers(0, len(tickers), news_rows)
    di = np.sort(rng.integers(0, len(days), news_rows))
    syms = [tickers[i] for i in ti]
    ndays = [days[i].date() for i in di]
    texts = news_texts(news_rows, syms, ndays, seed + 2)
    index: dict[tuple[str, dt.date], int] = {}
    item_index = []
    for s, d in zip(syms, ndays):
        item_index.append(index.get((s, d), 0))
        index[(s, d)] = item_index[-1] + 1
    if news_times:
        secs = rng.integers(9 * 3600, 18 * 3600, news_rows)
        date_col = pa.array(
            [dt.datetime.combine(d, dt.time()) + dt.timedelta(seconds=int(x)) for d, x in zip(ndays, secs)],
            type=pa.timestamp("s"),
        )
    else:
        date_col = pa.array(ndays, type=pa.date32())
    news = pa.table(
        {
            "date": date_col,
            "symbol": pa.array(syms, pa.string()),
            "cik": pa.array([1_000_000 + int(i) for i in ti], pa.int64()),
            "item_index": pa.array(item_index, pa.int32()),
            "news_text": pa.array(texts, pa.string()),
            "text_len": pa.array([len(t) for t in texts], pa.int32()),
            "text_crc32": pa.array([zlib.crc32(t.encode("utf-8")) for t in texts], pa.uint32()),
        }
    )
    if news_rows:
        write_partitioned(root / "news_items", news)
    counts = {
        "tickers": tickers,
        "days": len(days),
        "price_rows": len(prices),
        "news_rows": news_rows,
        "10-K": 0,
        "10-Q": 0,
    }
    if filings:
        for folder, form, months in (("filingk", "10-K", (3,)), ("filingq", "10-Q", (5, 8, 11))):
            rows = []
            for y in years:
                for m in months:
                    d = days[days >= pd.Timestamp(y, m, 1)][0].date()
                    for k, t in enumerate(tickers):
                        rows.append(
                            {
                                "date": d,
                                "symbol": t,
                                "cik": 1_000_000 + k,
                                "filing_idx": 0,
                                "filing_text": f"SYNTHETIC generated {form} of {t} filed {d}: "
                                "management's discussion of results, liquidity and risks.",
                            }
                        )
            counts[form] = len(rows)
            tab = pa.Table.from_pylist(
                rows,
                schema=pa.schema(
                    [
                        ("date", pa.date32()),
                        ("symbol", pa.string()),
                        ("cik", pa.int64()),
                        ("filing_idx", pa.int32()),
                        ("filing_text", pa.string()),
                    ]
                ),
            )
            write_partitioned(root / folder, tab)
    return counts


def write_price_folder(
    folder: Path, tickers: Sequence[str], start: str, end: str, close_only: bool = False, seed: int = 11
) -> dict[str, pd.DataFrame]:
    """``folder/TICKER.csv`` in the Yahoo layout (or ``Date,Close``); returns the frames written."""
    days = pd.bdate_range(start, end)
    raw = price_rows(list(tickers), days, seed)
    folder.mkdir(parents=True, exist_ok=True)
    out = {}
    for t, g in raw.groupby("symbol", sort=True):
        frame = pd.DataFrame(
            {
                "Date": [d.isoformat() for d in g["date"]],
                "Open": g["open"].to_numpy(),
                "High": g["high"].to_numpy(),
                "Low": g["low"].to_numpy(),
                "Close": g["close"].to_numpy(),
                "Adj Close": g["adjusted_close"].to_numpy(),
                "Volume": g["volume"].to_numpy(),
            }
        )
        if close_only:
            frame = frame[["Date", "Close"]]
        frame.to_csv(folder / f"{t}.csv", index=False, lineterminator="\n")
        out[str(t)] = frame
    return out


FNSPID_COLUMNS = (
    "Date",
    "Article_title",
    "Stock_symbol",
    "Url",
    "Publisher",
    "Author",
    "Article",
    "Lsa_summary",
    "Luhn_summary",
    "Textrank_summary",
    "Lexrank_summary",
)


def table_rows(tickers: Sequence[str], start: str, end: str, rows: int, seed: int = 13) -> list[dict]:
    """Generic rows (ticker, published, source, title, text, url): news at
    random times 06:00-21:59 at UTC-05:00 (some before the close, some
    after), plus a date-only 10-Q every tenth row."""
    rng = np.random.default_rng(seed)
    days = pd.bdate_range(start, end)
    out = []
    for i in range(rows):
        t = tickers[int(rng.integers(0, len(tickers)))]
        d = days[int(rng.integers(0, len(days)))].date()
        if i % 10 == 9:
            out.append(
                {
                    "ticker": t,
                    "published": d.isoformat(),
                    "source": "10-Q",
                    "title": f"SYNTHETIC 10-Q {i}",
                    "text": f"SYNTHETIC generated 10-Q {i} of {t} on {d}.",
                    "url": "",
                }
            )
            continue
        clock = dt.time(int(rng.integers(6, 22)), int(rng.integers(0, 60)))
        out.append(
            {
                "ticker": t,
                "published": f"{d.isoformat()}T{clock.isoformat()}-05:00",
                "source": "news",
                "title": f"SYNTHETIC headline {i} for {t}",
                "text": f"SYNTHETIC generated test item {i} about {t} on {d}.",
                "url": f"https://example.invalid/{t.lower()}/{i}",
            }
        )
    return out


def write_table(path: Path, rows: list[dict] | pd.DataFrame) -> Path:
    """Rows as CSV (``.csv``) or JSONL (``.jsonl``), chosen by the suffix."""
    frame = rows if isinstance(rows, pd.DataFrame) else pd.DataFrame(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        with open(path, "w", encoding="utf-8") as fh:
            for rec in frame.to_dict(orient="records"):
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
    else:
        frame.to_csv(path, index=False, lineterminator="\n")
    return path
