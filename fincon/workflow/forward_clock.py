"""A forward journal's clock: the sessions of the New York Stock Exchange (exchange-calendars:
holidays and early closes known), never a weekday rule."""

from __future__ import annotations

import datetime as dt
import warnings
from functools import lru_cache

import pandas as pd

#: the exchange whose sessions the clock counts (exchange-calendars' code)
EXCHANGE = "XNYS"


@lru_cache(maxsize=4)
def _calendar(since: dt.date):
    """The exchange's calendar from ``since`` (exchange-calendars: holidays and early closes known)."""

    import exchange_calendars as xcals

    with warnings.catch_warnings():  # its own use of a pandas API pandas deprecates: not ours to act on
        warnings.simplefilter("ignore")
        return xcals.get_calendar(EXCHANGE, start=pd.Timestamp(since) - pd.Timedelta(days=400))


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _since(day: dt.date) -> dt.date:
    return dt.date(day.year, 1, 1)  # one calendar a year: the cache keeps a few


def sessions(start: dt.date, end: dt.date) -> list[dt.date]:
    """The exchange's sessions from ``start`` to ``end``."""
    cal = _calendar(_since(start))
    return [d.date() for d in _quiet(cal.sessions_in_range, pd.Timestamp(start), pd.Timestamp(end))]


def _neighbour(day: dt.date, direction: str) -> dt.date:
    """The first session after (``next``) or the last before (``previous``) ``day``."""
    cal = _calendar(_since(day))
    t = pd.Timestamp(day)
    if _quiet(cal.is_session, t):
        return _quiet(getattr(cal, f"{direction}_session"), t).date()
    return _quiet(cal.date_to_session, t, direction).date()


def next_session(after: dt.date) -> dt.date:
    """The first session after ``after``."""
    return _neighbour(after, "next")


def previous_session(day: dt.date) -> dt.date:
    """The last session before ``day``."""
    return _neighbour(day, "previous")


def session_open(day: dt.date) -> dt.datetime:
    """The session's opening time, in UTC (``day`` a session, else the next one's)."""
    cal = _calendar(_since(day))
    t = pd.Timestamp(day)
    session = t if _quiet(cal.is_session, t) else _quiet(cal.date_to_session, t, "next")
    return _quiet(cal.session_open, session).to_pydatetime()
