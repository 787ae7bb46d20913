"""Which days a price file has sessions on, and so how many a year a
daily return is annualised with: an exchange's weekdays (252) or a coin's
every day (365). Read from the bars themselves, per file: a dataset that
holds a coin and a stock has both, and each run is annualised with the
sessions its own tickers share (:func:`fincon.data.prices.load_prices`)."""

from __future__ import annotations

from typing import Literal, Sequence

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
