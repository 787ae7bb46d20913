"""Which days a price file has sessions on, and so how many a year a
daily return is annualised with: an exchange's weekdays (252) or a coin's
every day (365). Read from the bars themselves, per file: a dataset that
holds a coin and a stock has both, and each run is annualised with the
sessions its own tickers share (:func:`fincon.data.prices.load_prices`)."""

from __future__ import annotations

from typing import Literal, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict


class Calendar(BaseModel):
    """The trading calendar of the prices: which days have a session."""

    model_config = ConfigDict(extra="forbid")
    name: Literal["exchange", "24/7"]
    days_per_year: int
    note: str


EXCHANGE = Calendar(
    name="exchange",
    days_per_year=252,
    note="weekday sessions as in the price file (exchange holidays closed); annualised with 252 days",
)
ALWAYS_OPEN = Calendar(
    name="24/7", days_per_year=365, note="a session every calendar day (crypto); annualised with 365 days"
)


#: the share of weekend bars from which a price file is read as trading every day (a 24/7
#: market has 2/7 = 29 %); a stray weekend bar in a stock file does not switch its calendar
WEEKEND_SHARE_24_7 = 0.1


def weekend_bars(dates: Sequence[pd.Timestamp]) -> int:
    idx = pd.DatetimeIndex(dates)
    return int((idx.day_of_week >= 5).sum())


def infer_calendar(dates: Sequence[pd.Timestamp]) -> Calendar:
    """24/7 when at least a tenth of the bars fall on weekends, else an
    exchange calendar (a few weekend bars are a note, not a new calendar)."""
    idx = pd.DatetimeIndex(dates)
    return ALWAYS_OPEN if len(idx) and weekend_bars(idx) >= WEEKEND_SHARE_24_7 * len(idx) else EXCHANGE


#: the share of a 24/7 file's calendar days that may have no bar before its import says so (a
#: day or two a year is an exchange's outage; InvestorBench's ETH misses 17 %)
MISSING_SHARE_NOTED = 0.02


#: the most weekdays in a row an exchange has closed (NYSE, 2001-09-11..14): more missing is a hole in a file
MAX_CLOSED_WEEKDAYS = 4


def gaps_note(ticker: str, dates: Sequence[pd.Timestamp]) -> str | None:
    """A line for an exchange's price file with a hole longer than any closure (2022-03..09 deleted passed
    silently: annual volatility 50 % where the whole file gave 35 %), or a 24/7 price file with calendar
    days missing, else None. A return across a
    gap spans several days while 365 a year annualises each row as one: Sharpe and volatility
    come out about sqrt(days / bars) too high (a random walk's variance grows with the days),
    and the note gives the days a year its bars do have, to set as ``metrics.days_per_year``."""
    idx = pd.DatetimeIndex(dates)
    if len(idx) < 2:
        return None
    if infer_calendar(idx) != ALWAYS_OPEN:  # an exchange's: a hole longer than any closure it ever had
        days = idx.values.astype("datetime64[D]")
        missing = np.busday_count(days[:-1], days[1:]) - 1  # weekdays with no bar between two bars
        k = int(np.argmax(missing))
        if missing[k] <= MAX_CLOSED_WEEKDAYS:
            return None
        return (
            f"{ticker}: no bar on the {int(missing[k])} weekdays between {idx[k].date()} and {idx[k + 1].date()} (an "
            f"exchange has closed {MAX_CLOSED_WEEKDAYS} at most, 2001-09-11..14): the return across them is read as "
            "one day's, so volatility, Sharpe and CVaR take that move for a daily one; fill the prices, or start the "
            "window after the hole"
        )
    span = (idx[-1] - idx[0]).days + 1
    missing = pd.date_range(idx[0], idx[-1], freq="D").difference(idx)
    if len(missing) <= MISSING_SHARE_NOTED * span:
        return None
    return (
        f"{ticker}: {len(missing)} of {span} calendar days have no bar ({weekend_bars(missing)} of them weekend days) "
        "in a 24/7 market: a return across a gap spans several days, so annualised with 365 its Sharpe and "
        f"volatility come out about {(span / len(idx)) ** 0.5:.2f}x too high; metrics.days_per_year: "
        f"{round(len(idx) / span * 365)} (its bars a year) annualises with the sessions it has"
    )


def annualisation(
    cal: Calendar, gaps: str | None, tickers: Sequence[str], dataset: Calendar | None, configured: int | None
) -> tuple[int, str]:
    """Sessions per year for annualising a run, and a line saying so for metrics.json: the
    calendar of the sessions the run's tickers share (``cal``: 365 when their bars include
    weekends, else 252; ``dataset``, a dataset's own, is its files' union, a coin's beside a
    stock's), with what their ``gaps`` do to the figures (:func:`gaps_note`), unless the config
    sets another number (``configured``). The line depends only on the data and the number, so
    a rerun from the saved (resolved) config.yaml writes the same metrics.json."""
    days = cal.days_per_year
    if dataset is not None and dataset == cal:
        label = f"dataset calendar {cal.name}"
    elif dataset is not None:
        label = f"{cal.name} calendar of {'+'.join(tickers)}'s bars (the dataset's is {dataset.name})"
    else:
        label = "bars on weekends: a 24/7 calendar" if cal.name == "24/7" else "exchange calendar (weekday sessions)"
    if configured and configured != days:
        return (
            configured,
            f"annualised with {configured} days, set in the config (metrics.days_per_year; the data's {label} has {days})",
        )
    return days, f"annualised with {days} days: {label}" + (f"; {gaps}" if gaps else "")


#: the sessions a window may start before a file's first bar or end after its last: one, a holiday
#: next to the data (four calendar days let a file that stopped on a Monday serve a window to
#: Friday, the run ending four sessions early under the window's name)
EDGE_SESSIONS = 1


def sessions_between(after: pd.Timestamp, upto: pd.Timestamp, dates: Sequence[pd.Timestamp]) -> int:
    """Sessions in (after, upto] of the calendar ``dates`` are on: weekdays for an exchange's
    (its holidays unknown, so each counts), days for a coin's."""
    after, upto = pd.Timestamp(after).normalize(), pd.Timestamp(upto).normalize()
    if upto <= after:
        return 0
    if infer_calendar(dates) == ALWAYS_OPEN:
        return (upto - after).days
    one = pd.Timedelta(days=1)
    return int(np.busday_count((after + one).date(), (upto + one).date()))
