"""A dataset directory: the one shape every imported corpus takes.

``fincon data import FORMAT SOURCE... --out DIR`` writes::

    DIR/dataset.json        what is inside and the rules it was built by
    DIR/prices/TICKER.csv   daily bars (Yahoo layout, or Date,Close only)
    DIR/events/TICKER.jsonl.gz   items in the event-directory format

and every command takes ``--data DIR`` as it is: prices come from
``DIR/prices``, the agent team reads ``DIR/events`` (unless ``--events``
points elsewhere), and each run is annualised with the calendar of its
own tickers' bars (:mod:`fincon.data.calendar`). ``dataset.json`` states
the point-in-time rule that was applied to items known only by their date,
so a reader of a result knows whether that day of look-ahead was in it.

Nothing here knows a corpus format: the importers in
:mod:`fincon.data.importers` hand over an :class:`ImportedCorpus`, and
:func:`write_dataset` validates it, writes it into a staging directory and
renames that into place only when complete (a failed import leaves nothing).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from fincon import __version__, stopping
from fincon.data.calendar import ALWAYS_OPEN, Calendar, gaps_note, infer_calendar, weekend_bars
from fincon.data.events.loaders.directory import write_jsonl_gz
from fincon.data.events.model import SOURCES, Event
from fincon.data.prices import RAW_COLUMNS, validate_bars
from fincon.errors import DataError
from fincon.files import sha256_file
from fincon.ownership import OwnedFolder

MANIFEST = "dataset.json"
FORMAT_VERSION = 1

Visibility = Literal["next-session", "same-day"]
PriceKind = Literal["ohlcv", "close"]

#: What each visibility setting means, written into dataset.json.
VISIBILITY_RULES: dict[str, str] = {
    "next-session": (
        "items with a full timestamp are visible at the first decision (16:00 New York) after it; "
        "items known only by their date are read as published at that day's close and are visible "
        "from the next trading day's decision"
    ),
    "same-day": (
        "BENCHMARK CONVENTION (one day of look-ahead): items known only by their date are visible at "
        "that day's own decision, as in the benchmark's published numbers; an after-close item "
        "then reaches that day's trade"
    ),
}


class SourceFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str
    sha256: str
    bytes: int


class Manifest(BaseModel):
    """``dataset.json``: enough to know what a dataset is without opening it."""

    model_config = ConfigDict(extra="forbid")
    fincon_dataset: int = FORMAT_VERSION
    format: str
    created_by: str
    sources: list[SourceFile]
    tickers: list[str]
    start: dt.date
    end: dt.date
    prices: PriceKind
    calendar: Calendar
    visibility: Visibility
    visibility_rule: str
    items: dict[str, dict[str, int]]  # ticker -> source -> count
    items_total: int
    duplicates_dropped: int
    options: dict[str, Any]
    notes: list[str] = []
    #: ticker -> the firm's names the source gives (masked with --anonymize beside fincon's own table)
    names: dict[str, list[str]] = {}


@dataclass
class ImportedCorpus:
    """What an importer hands to :func:`write_dataset`.

    ``prices`` are raw frames in the Yahoo layout (``Date,Open,High,Low,
    Close,Adj Close,Volume``) or close-only (``Date,Close``), one per ticker;
    ``events`` are already deduplicated (``duplicates`` counts what was
    dropped) and carry the visibility rule in their ``published_at``.
    """

    format: str
    sources: list[Path]
    prices: dict[str, pd.DataFrame]
    price_kind: PriceKind
    events: list[Event]
    visibility: Visibility
    duplicates: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: ticker -> the firm's names the source gives (a table's company column)
    names: dict[str, list[str]] = field(default_factory=dict)


def is_dataset(path: Path) -> bool:
    return (Path(path) / MANIFEST).is_file()


@dataclass(frozen=True)
class Dataset:
    """An opened dataset directory."""

    root: Path
    manifest: Manifest

    @property
    def prices_dir(self) -> Path:
        return self.root / "prices"

    @property
    def events_dir(self) -> Path:
        return self.root / "events"

    @property
    def has_events(self) -> bool:
        return self.manifest.items_total > 0


def open_dataset(path: str | Path) -> Dataset:
    """Read ``DIR/dataset.json``; one-line errors for anything off."""
    root = Path(path)
    mf = root / MANIFEST
    if not root.is_dir():
        what = "is a file, not a dataset folder" if root.exists() else "does not exist"
        raise DataError(
            f"{root} {what}; import a corpus into a new folder first (`fincon data import FORMAT FILE --out "
            "data/NAME`), then give that folder"
        )
    if not mf.is_file():
        raise DataError(f"{root} has no {MANIFEST}: not a fincon dataset (write one with `fincon data import`)")
    try:
        raw = json.loads(mf.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{mf}: not valid JSON ({type(exc).__name__}); re-run the import") from None
    if not isinstance(raw, dict):
        raise DataError(f"{mf}: expected a JSON object; re-run the import")
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(x) for x in first["loc"])
        raise DataError(f"{mf}: {loc}: {first['msg']}; re-run the import") from None
    if manifest.fincon_dataset > FORMAT_VERSION:
        raise DataError(
            f"{mf}: dataset format {manifest.fincon_dataset} is newer than this fincon reads "
            f"({FORMAT_VERSION}); upgrade fincon"
        )
    ds = Dataset(root=root, manifest=manifest)
    missing = [d for d in ("prices", *(("events",) if ds.has_events else ())) if not (root / d).is_dir()]
    if missing:
        raise DataError(
            f"{root}: its {missing[0]}/ folder is missing (dataset.json lists "
            f"{manifest.items_total if missing[0] == 'events' else len(manifest.tickers)} "
            f"{'items' if missing[0] == 'events' else 'tickers'}); import the dataset again"
        )
    lost = [
        t for t in manifest.tickers if not any((root / "prices" / f"{t}{x}").is_file() for x in (".csv", ".csv.gz"))
    ]
    if lost:  # else "unknown ticker" of a ticker the dataset says it holds
        raise DataError(
            f"{root}: dataset.json lists {lost[0]}{f' and {len(lost) - 1} more' if len(lost) > 1 else ''}, and "
            f"prices/ holds no {lost[0]}.csv: an incomplete dataset; import the dataset again"
        )
    return ds


def resolve_dataset(path: str | Path | None) -> Dataset | None:
    """The dataset at ``path`` if it is one, else None (a plain CSV folder)."""
    if path is None or not is_dataset(Path(path)):
        return None
    return open_dataset(path)


def _own_files(out: Path) -> set[str] | None:
    """The files the import that wrote the dataset at ``out`` made (its
    manifest and each ticker's prices and items), or None when ``out``'s
    dataset.json is not one fincon wrote."""
    try:
        data = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or not str(data.get("created_by", "")).startswith("fincon"):
        return None
    tickers = [t for t in data.get("tickers") or [] if isinstance(t, str)]
    return {MANIFEST, *(f"prices/{t}.csv" for t in tickers), *(f"events/{t}.jsonl.gz" for t in tickers)}


#: a dataset: written whole by ``fincon data import``, replaced only with --replace when it is one fincon wrote
DATASET = OwnedFolder("dataset", MANIFEST, "fincon import", _own_files)


def check_out(out: Path, replace: bool) -> None:
    """``--out`` must be new, or an earlier dataset with ``--replace``."""
    DATASET.check_out(out, replace)


def _price_frame_out(raw: pd.DataFrame, kind: PriceKind) -> pd.DataFrame:
    cols = ["Date", "Close"] if kind == "close" else list(RAW_COLUMNS)
    out = raw[cols].copy()
    if pd.api.types.is_datetime64_any_dtype(out["Date"]):
        out["Date"] = pd.to_datetime(out["Date"]).dt.strftime("%Y-%m-%d")
    else:  # the day as written (validate_bars read it so): a time or UTC offset after it is dropped
        out["Date"] = out["Date"].astype(str).str[:10]
    return out


def build_manifest(corpus: ImportedCorpus, source_files: list[SourceFile]) -> Manifest:
    spans = []
    own: dict[str, str] = {}  # ticker -> its own calendar's name
    gaps: list[str | None] = []  # per ticker: a 24/7 file's missing days
    for ticker, raw in sorted(corpus.prices.items()):
        bars = validate_bars(raw, ticker, f"{corpus.format} import")
        spans.append(bars.index)
        own[ticker] = infer_calendar(bars.index).name
        gaps.append(gaps_note(ticker, bars.index))
    all_dates = spans[0]
    for idx in spans[1:]:
        all_dates = all_dates.union(idx)
    items: dict[str, dict[str, int]] = {t: {} for t in sorted(corpus.prices)}
    for e in corpus.events:
        items.setdefault(e.ticker, {})
        items[e.ticker][e.source] = items[e.ticker].get(e.source, 0) + 1
    items = {t: {s: c[s] for s in SOURCES if s in c} for t, c in items.items()}
    calendar = infer_calendar(all_dates)
    notes = list(corpus.notes)
    notes += [g for g in gaps if g]
    if len(set(own.values())) > 1:
        notes.append(
            f"calendars differ by ticker ({', '.join(f'{t}: {c}' for t, c in own.items())}): a run is "
            "annualised with the sessions its own tickers share, not with this dataset's calendar"
        )
    stray = weekend_bars(all_dates)
    if stray and calendar.name != ALWAYS_OPEN.name:
        first = next(d for d in all_dates if d.day_of_week >= 5)
        notes.append(
            f"{stray} bar(s) on a weekend (first {first.date()}) in an exchange calendar: kept, and "
            f"annualised with {calendar.days_per_year} days (a 24/7 market has weekend bars on most weekends)"
        )
    return Manifest(
        format=corpus.format,
        created_by=f"fincon {__version__}",
        sources=source_files,
        tickers=sorted(corpus.prices),
        start=all_dates[0].date(),
        end=all_dates[-1].date(),
        prices=corpus.price_kind,
        calendar=calendar,
        visibility=corpus.visibility,
        visibility_rule=VISIBILITY_RULES[corpus.visibility],
        items=items,
        items_total=len(corpus.events),
        duplicates_dropped=corpus.duplicates,
        options=dict(sorted(corpus.options.items())),
        notes=notes,
        names=corpus.names,
    )


#: how far before the first bar or after the last an item may be dated: further is a mistyped date
ITEM_SLACK_DAYS = 366


def _check_item_dates(events: Sequence[Event], manifest: Manifest) -> None:
    """An item dated more than a year outside the prices (decades away: a
    mistyped date) would be read on no day, or on the wrong one: refused."""
    lo = manifest.start - dt.timedelta(days=ITEM_SLACK_DAYS)
    hi = manifest.end + dt.timedelta(days=ITEM_SLACK_DAYS)
    far = [e for e in events if not lo <= e.published_at.date() <= hi]
    if far:
        e = far[0]
        raise DataError(
            f"{len(far)} item(s) dated far outside the prices ({manifest.start}..{manifest.end}), first {e.id} "
            f"({e.ticker}) on {e.published_at.date()}: a mistyped date? fix or drop them (--start/--end keep a span)"
        )


def write_dataset(corpus: ImportedCorpus, out: Path, *, replace: bool = False) -> Manifest:
    """Validate ``corpus`` and write it as a dataset directory at ``out``.

    Everything is checked before the first byte is written; the files go to
    a staging folder beside ``out`` that is renamed into place at the end,
    so an interrupted or failed import leaves no half-written dataset.
    Output is byte-identical for the same input (no timestamps, sorted keys,
    gzip without mtime).
    """

    out = Path(out)
    check_out(out, replace)
    if not corpus.prices:
        raise DataError("the import found no prices; nothing to write")
    missing = sorted({e.ticker for e in corpus.events} - set(corpus.prices))
    if missing:
        raise DataError(f"items for {', '.join(missing)} but no prices for them; every ticker needs prices")
    sources = [SourceFile(path=str(p), sha256=sha256_file(p), bytes=p.stat().st_size) for p in corpus.sources]
    manifest = build_manifest(corpus, sources)
    _check_item_dates(corpus.events, manifest)
    by_ticker: dict[str, list[Event]] = {t: [] for t in manifest.tickers}
    for e in sorted(corpus.events, key=lambda e: (e.published_at, e.id)):
        by_ticker[e.ticker].append(e)

    staging = DATASET.staging(out)
    try:
        (staging / "prices").mkdir()
        (staging / "events").mkdir()
        for ticker, raw in sorted(corpus.prices.items()):
            _price_frame_out(raw, corpus.price_kind).to_csv(
                staging / "prices" / f"{ticker}.csv", index=False, float_format="%.10g", lineterminator="\n"
            )
        for ticker, evs in by_ticker.items():
            if evs:
                write_jsonl_gz(staging / "events" / f"{ticker}.jsonl.gz", evs)
        (staging / MANIFEST).write_text(
            json.dumps(manifest.model_dump(mode="json"), indent=2, sort_keys=True, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        DATASET.swap_in(staging, out, replace)
    except BaseException:
        with stopping.held():  # a second stop must not end the removal half way
            shutil.rmtree(staging, ignore_errors=True)
        raise
    return manifest


def summary_rows(m: Manifest) -> list[tuple[str, str]]:
    """``fincon data info``'s table: label, value."""
    rows = [
        ("format", m.format),
        ("tickers", ", ".join(m.tickers)),
        (
            "prices",
            f"{m.start} .. {m.end}, "
            + ("close only (fill at the close only)" if m.prices == "close" else "open, high, low, close, volume"),
        ),
        ("calendar", f"{m.calendar.name}: {m.calendar.note}"),
        ("visibility", f"{m.visibility}: {m.visibility_rule}"),
        ("items", f"{m.items_total:,} ({m.duplicates_dropped:,} duplicates dropped)"),
    ]
    for s in m.sources:
        rows.append(("source", f"{s.path}  sha256 {s.sha256[:16]}...  {s.bytes:,} bytes"))
    for k, v in m.options.items():
        rows.append((f"option {k}", json.dumps(v)))
    for n in m.notes:
        rows.append(("note", n))
    return rows


def item_table(m: Manifest) -> list[str]:
    """Items per ticker and source, as aligned text lines (sources in the
    event model's order, only those present)."""
    present = [s for s in SOURCES if any(s in m.items.get(t, {}) for t in m.tickers)]
    head = ["ticker", *present, "total"]
    body = []
    for t in m.tickers:
        c = m.items.get(t, {})
        body.append([t, *(f"{c.get(s, 0):,}" for s in present), f"{sum(c.values()):,}"])
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    fmt = lambda r: "  ".join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(r, widths)))  # noqa: E731
    return [fmt(head), *(fmt(r) for r in body)]


def manifest_dict(m: Manifest) -> Mapping[str, Any]:
    return m.model_dump(mode="json")
