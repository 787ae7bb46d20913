"""A forward journal's clock: the sessions of the New York Stock Exchange (exchange-calendars:
holidays and early closes known), never a weekday rule."""

from __future__ import annotations

import datetime as dt
import warnings
from functools import lru_cache

import pandas as pd

from fincon.errors import ConfigError

#: the exchange whose sessions the clock counts (exchange-calendars' code)
EXCHANGE = "XNYS"


@lru_cache(maxsize=4)
def _calendar(since: dt.date):
    """The exchange's calendar from ``since`` (exchange-calendars: holidays and early closes known)."""

    import exchange_calendars as xcals

    with warnings.catch_warnings():  # its own use of a pandas API pandas deprecates: not ours to act on
        warnings.simplefilter("ignore")
        return xcals.get_calendar(EXCHANGE, start=pd.Timestamp(since) - pd.Timedelta(days=400))


def last_known() -> dt.date:
    """The last session the calendar holds: exchange-calendars knows a year
    ahead of today (holidays are announced about that far out)."""
    return _calendar(_since(dt.date.today())).last_session.date()


def beyond(day: dt.date, what: str) -> ConfigError:
    """The one line for a day after :func:`last_known` (``what``: the flag or
    name the user gave it)."""
    return ConfigError(
        f"{what} {day} is after {last_known()}, the last session {EXCHANGE}'s calendar knows (exchange-calendars "
        "holds a year ahead of today); give an earlier date"
    )


def _holding(day: dt.date):
    """The calendar whose sessions include ``day``'s neighbourhood; a day past
    the calendar's end is a :class:`ConfigError`, not exchange-calendars' traceback."""
    if day > last_known():
        raise beyond(day, "the date")
    return _calendar(_since(day))


def _quiet(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _since(day: dt.date) -> dt.date:
    return dt.date(day.year, 1, 1)  # one calendar a year: the cache keeps a few


def sessions(start: dt.date, end: dt.date) -> list[dt.date]:
    """The exchange's sessions from ``start`` to ``end``."""
    cal = _holding(start)
    if end > last_known():
        raise beyond(end, "the date")
    return [d.date() for d in _quiet(cal.sessions_in_range, pd.Timestamp(start), pd.Timestamp(end))]


def _neighbour(day: dt.date, direction: str) -> dt.date:
    """The first session after (``next``) or the last before (``previous``) ``day``."""
    cal = _holding(day)
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


def session_to_trade(wall: dt.datetime) -> dt.date:
    """The session the next decision trades at ``wall`` (UTC): today's if it is a session not yet open,
    else the next one (a holiday's or a weekend's open, read as the day's, is the next session's)."""
    day = wall.date()
    return day if sessions(day, day) and wall < session_open(day) else next_session(day)


def session_open(day: dt.date) -> dt.datetime:
    """The session's opening time, in UTC (``day`` a session, else the next one's)."""
    return _bound(day, "session_open")


def session_close(day: dt.date) -> dt.datetime:
    """The session's closing time, in UTC (an early close's too; ``day`` a session, else the next one's)."""
    return _bound(day, "session_close")


def _bound(day: dt.date, which: str) -> dt.datetime:
    cal = _holding(day)
    t = pd.Timestamp(day)
    session = t if _quiet(cal.is_session, t) else _quiet(cal.date_to_session, t, "next")
    return _quiet(getattr(cal, which), session).to_pydatetime()
