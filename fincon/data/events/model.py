"""The one event model for text (and audio) the agents read.

An :class:`Event` is one published item: a news story, a 10-K or 10-Q MD&A
section, an analyst note or an earnings call (audio and/or transcript).
Whatever the loader, events carry a timezone-aware ``published_at`` and are
judged against one explicit decision time: the close of the US market,
16:00 America/New_York (13:00 on the exchange's early closes). An event is
visible on trading day ``t`` only if it was published strictly before
``t``'s decision time; an item published at the close or later belongs to
the next trading day.

An item known only by its date (``2021-01-27``, no time) may have been
published after that day's close (an evening press release, a filing
accepted at 17:30), so it is read as published *at* the close: visible from
the next trading day's decision. A source that knows its dated items came
out before the close says so with an explicit time; the benchmarks' own
same-day convention is an explicit import option (``fincon data import
--same-day``), never a default (docs/data.md).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping
from zoneinfo import ZoneInfo

import pandas as pd

from fincon.data import SOURCES
from fincon.errors import DataError

MARKET_TZ = ZoneInfo("America/New_York")
DECISION_TIME = dt.time(16, 0)
UTC = dt.timezone.utc


@functools.cache
def _early_closes() -> dict[dt.date, dt.time]:
    """The New York Stock Exchange's early closes (the day after Thanksgiving, Christmas Eve: 13:00), from
    exchange-calendars, whose sessions the forward journal's clock reads too."""
    import exchange_calendars  # ~0.4 s to load: only when a decision time is asked for

    with warnings.catch_warnings():  # pandas' deprecation notes about the package's own calls, not the user's
        warnings.simplefilter("ignore")
        cal = exchange_calendars.get_calendar("XNYS")
        return {d.date(): cal.session_close(d).tz_convert(MARKET_TZ).time() for d in cal.early_closes}


def close_time(day: dt.date) -> dt.time:
    """``day``'s decision time in New York: the close, 16:00, or an early close's (13:00)."""
    return _early_closes().get(day, DECISION_TIME)


def decision_cutoff(day: Any) -> dt.datetime:
    """The decision time of ``day`` (its close: 16:00 New York, 13:00 on an early close) in UTC."""
    d = pd.Timestamp(day).date()
    local = dt.datetime.combine(d, close_time(d), tzinfo=MARKET_TZ)
    return local.astimezone(UTC)


def parse_timestamp(value: Any, timed: bool = False) -> dt.datetime:
    """ISO-8601 (or datetime) -> aware UTC datetime.

    A timestamp without an offset is read as New York local time (that is
    what US filings and news desks mean). A bare date (``YYYY-MM-DD``, or a
    ``datetime.date``) is read as that day's close, 16:00 New York, so the
    item is visible from the *next* trading day's decision: a date alone
    cannot show that the item came out before the close. A timestamp of
    exactly midnight is such a date too, with an offset or without (a date a
    spreadsheet, pandas or a JSON encoder wrote with a time: "2022-03-02
    00:00:00 UTC" read as an instant was 19:00 New York on 03-01, visible a
    session early), as the importers read it (importers/timing.py); unless
    ``timed``: an item fincon's importer timed to the second (its metadata's
    ``time`` is a clock time), whose midnight in UTC is the instant it wrote.
    """
    if isinstance(value, dt.datetime):
        ts = value
    elif isinstance(value, dt.date):
        return dt.datetime.combine(value, DECISION_TIME, tzinfo=MARKET_TZ).astimezone(UTC)
    elif isinstance(value, str) and is_bare_date(value):
        try:
            d = dt.date.fromisoformat(value.strip())
        except ValueError:
            raise DataError(f"bad published_at {value!r}: not a calendar date") from None
        return dt.datetime.combine(d, DECISION_TIME, tzinfo=MARKET_TZ).astimezone(UTC)
    elif isinstance(value, str) and _ISO_TIME.match(value):  # ISO 8601 only: "now" or "today" read the wall clock
        try:
            ts = pd.Timestamp(value.strip()).to_pydatetime()
        except (ValueError, TypeError, OverflowError) as exc:
            raise DataError(f"bad published_at {value!r}: not a real date and time ({exc})") from None
    else:
        raise DataError(f"bad published_at {value!r}: use ISO 8601, e.g. 2022-11-01T08:30:00-04:00")
    if ts is pd.NaT:
        raise DataError(f"bad published_at {value!r}: use ISO 8601, e.g. 2022-11-01T08:30:00-04:00")
    try:
        if ts.time() == dt.time(0, 0) and not (timed and ts.tzinfo is not None):  # a date with a midnight: the day
            return parse_timestamp(ts.date())
        if ts.tzinfo is None:
            ts = ts.replace(tzinfo=MARKET_TZ)
        return ts.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:59:59-12:00: past the last instant a datetime holds
        raise DataError(f"bad published_at {value!r}: out of range; a mistyped year?") from None


#: the ``time`` an importer records for an item it timed to the second (importers/timing.py)
_CLOCK = re.compile(r"^\d{2}:\d{2}:\d{2}$")
_BARE_DATE = re.compile(r"^\s*\d{4}-\d{2}-\d{2}\s*$")
#: an ISO 8601 date and time, the offset optional (Z, +HH:MM, or " UTC"/" GMT" as FNSPID, BigQuery and
#: fincon's importers write it; either case, as the importers read it)
_ISO_TIME = re.compile(
    r"^\s*\d{4}-\d{2}-\d{2}[T ]\d{1,2}:\d{2}(:\d{2}(\.\d{1,9})?)?\s*(Z|UTC|GMT|[+-]\d{2}(:?\d{2})?)?\s*$", re.I
)


def is_bare_date(value: Any) -> bool:
    """True for a date without a time (``2021-01-27``): see :func:`parse_timestamp`."""
    return isinstance(value, str) and bool(_BARE_DATE.match(value))


def visible_day(published_at: dt.datetime) -> pd.Timestamp:
    """The first calendar day at whose decision time the item is visible:
    its New York publication date, or the next day if published at or after
    its close (16:00, an early close's 13:00). (The first *trading* day is
    the first session on or after it.)"""
    local = published_at.astimezone(MARKET_TZ)
    d = pd.Timestamp(local.date())
    return d + pd.Timedelta(days=1) if local.time() >= close_time(local.date()) else d


def day_int(day: Any) -> int:
    """A date as a YYYYMMDD integer (chromadb range filters need numbers)."""
    d = pd.Timestamp(day)
    return d.year * 10000 + d.month * 100 + d.day


@dataclass(frozen=True)
class Event:
    """One published item about one ticker.

    ``text`` holds the content (for an earnings call: its transcript, when
    one exists); ``audio`` is the path of the recording (relative paths are
    resolved by the store against the corpus directory). At least one of the
    two is set. ``metadata`` holds source specifics (title, form, fiscal
    period, ``synthetic``...); keep it JSON-serialisable.
    """

    id: str
    ticker: str
    source: str
    published_at: dt.datetime
    text: str | None = None
    audio: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.id:
            raise DataError("event without an id: every event needs a unique id")
        if self.source not in SOURCES:
            raise DataError(f"event {self.id}: unknown source {self.source!r}; use one of {', '.join(SOURCES)}")
        if not self.ticker or self.ticker != self.ticker.upper():
            raise DataError(f"event {self.id}: ticker must be upper case, got {self.ticker!r}")
        if not self.text and not self.audio:
            raise DataError(f"event {self.id}: needs text or an audio path")
        if not isinstance(self.metadata, Mapping):
            shown = str(self.metadata)[:40]
            raise DataError(f"event {self.id}: metadata must be a JSON object, not {shown} (give {{}} or drop it)")
        timed = _CLOCK.match(str(self.metadata.get("time", ""))) is not None
        try:
            published = parse_timestamp(self.published_at, timed=timed)
        except DataError as exc:
            raise DataError(f"event {self.id}: {exc}") from None
        object.__setattr__(self, "published_at", published)

    def visible_on(self, day: Any) -> bool:
        """True if published before ``day``'s decision time."""
        return self.published_at < decision_cutoff(day)

    @property
    def synthetic(self) -> bool:
        return bool(self.metadata.get("synthetic", False))

    @property
    def title(self) -> str:
        t = self.metadata.get("title")
        if t:
            return str(t)
        return (self.text or self.audio or "").strip().split("\n", 1)[0][:100]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "ticker": self.ticker,
            "source": self.source,
            "published_at": self.published_at.isoformat().replace("+00:00", "Z"),
            "text": self.text,
            "audio": self.audio,
            "metadata": dict(self.metadata),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, ensure_ascii=False)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Event":
        missing = [k for k in ("id", "ticker", "source", "published_at") if not d.get(k)]
        if missing:
            raise DataError(f"event record {d.get('id', '?')} lacks {', '.join(missing)}")
        meta = d.get("metadata")
        if meta is None or meta == "":
            meta = {}
        elif isinstance(meta, str):  # a JSON string (CSV): an object too ('[[1,2]]' was read as {1: 2})
            try:
                meta = json.loads(meta)
            except json.JSONDecodeError:
                meta = None
            if not isinstance(meta, dict):
                raise DataError(f"event {d['id']}: metadata is not a JSON object") from None
        text = d.get("text")
        audio = d.get("audio")
        return cls(
            id=str(d["id"]),
            ticker=str(d["ticker"]).upper(),
            source=str(d["source"]),
            published_at=d["published_at"],  # read in __post_init__, with the metadata's time
            text=str(text) if text not in (None, "") and not _isnan(text) else None,
            audio=str(audio) if audio not in (None, "") and not _isnan(audio) else None,
            metadata=dict(meta) if isinstance(meta, Mapping) else meta,  # anything else: refused (__post_init__)
        )


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and x != x
