"""When an imported item counts as published: one rule for every table format.

Corpora store an item's time in three ways, and each gets the issue's
point-in-time rule:

* a bare date (``2020-06-05``, a parquet ``date32``): the time is unknown,
  so the item may have come out after that day's close; it is published at
  that day's close (visible from the next trading day's decision), or at
  00:00 with ``--same-day`` (:func:`fincon.data.importers.common.published_at`);
* a timestamp whose clock reads exactly 00:00:00 (``2019-09-09 00:00:00
  UTC`` in FNSPID, a ``timestamp`` column filled from dates): read as a bare
  date of its own calendar day. A real item published at midnight sharp is
  rare; a date stored in a timestamp column is common, and taking it at face
  value (00:00 UTC is 20:00 the evening before in New York) would show an
  item of unknown time at that day's own decision;
* any other timestamp: that instant (New York time when it has no offset),
  visible at the first decision after it (:class:`~fincon.data.events.model.Event`).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

import pandas as pd

from fincon.data.events.model import MARKET_TZ, UTC
from fincon.data.importers.common import published_at

_ISO_START = re.compile(r"^\d{4}-\d{2}-\d{2}")
_BARE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
DATE_ONLY = "date only"


class BadTime(ValueError):
    """A value that is neither a date nor a timestamp (the caller names the row)."""


def item_time(value: Any, visibility: str) -> tuple[dt.date, dt.datetime, str]:
    """``(day, published_at UTC, time label)`` of one item.

    ``day`` is the item's calendar day (New York for a timestamp with a
    time, the stored day for a date); the label is ``"date only"`` or the
    New York clock time ``HH:MM:SS`` and goes into the item's metadata so a
    reader sees which rule timed it. Raises :class:`BadTime`.
    """
    if value is None or value is pd.NaT or (isinstance(value, float) and value != value):
        raise BadTime("empty")
    if isinstance(value, pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0, 0):
            day = value.date()
            return day, published_at(day, visibility), DATE_ONLY
        try:
            local = value.replace(tzinfo=MARKET_TZ) if value.tzinfo is None else value.astimezone(MARKET_TZ)
            return local.date(), local.astimezone(UTC), local.strftime("%H:%M:%S")
        except OverflowError:  # 9999-12-31T23:59:59-12:00: past the last instant a datetime holds
            raise BadTime("out of range (a mistyped year?)") from None
    if isinstance(value, dt.date):
        return value, published_at(value, visibility), DATE_ONLY
    if isinstance(value, str):
        s = value.strip()
        if not _ISO_START.match(s):
            raise BadTime("not YYYY-MM-DD")
        try:
            if _BARE.match(s):
                return item_time(dt.date.fromisoformat(s), visibility)
            ts = pd.Timestamp(s)
        except (ValueError, TypeError):
            raise BadTime("not a date or timestamp") from None
        return item_time(ts, visibility)
    raise BadTime(f"a {type(value).__name__}, not a date")


def options_record(options: Any) -> dict[str, Any]:
    """The import options worth recording for a table format (no sentiment flag: that is InvestorBench's)."""
    return {k: v for k, v in options.as_record().items() if k != "keep_sentiment_in_text"}
