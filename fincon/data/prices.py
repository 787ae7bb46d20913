"""Daily price bars: one validated frame per ticker, from any source.

Every source (bundled sample, a directory of CSVs, yfinance) produces raw
frames in the Yahoo column layout ``Date,Open,High,Low,Close,Adj Close,Volume``.
:func:`validate_bars` turns a raw frame into the engine's form, or raises a
:class:`~fincon.errors.DataError` whose one line names the ticker, the file
and the problem. Prices are adjusted by ``Adj Close / Close`` so that every
return and metric is computed from Adj Close (dividends and splits included).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Protocol

import numpy as np
import pandas as pd

from fincon.data.calendar import EDGE_SESSIONS, Calendar, gaps_note, infer_calendar, sessions_between
from fincon.errors import DataError

RAW_COLUMNS = ("Date", "Open", "High", "Low", "Close", "Adj Close", "Volume")
#: A close-only file (InvestorBench publishes one price a day) has these.
CLOSE_ONLY_COLUMNS = ("Date", "Close")


def is_close_only(raw: pd.DataFrame) -> bool:
    """True for a ``Date,Close`` (optionally ``Adj Close``) frame: no open,
    high, low or volume. Such bars can fill at the close only."""
    cols = set(raw.columns)
    return set(CLOSE_ONLY_COLUMNS) <= cols and not cols & {"Open", "High", "Low", "Volume"}


def expand_close_only(raw: pd.DataFrame) -> pd.DataFrame:
    """A close-only frame in the Yahoo layout: open = high = low = close,
    volume 0. Only for the engine's bookkeeping; the run refuses anything
    that would read the invented columns (``--fill next-open``)."""
    out = raw.copy()
    if "Adj Close" not in out.columns:
        out["Adj Close"] = out["Close"]
    for col in ("Open", "High", "Low"):
        out[col] = out["Close"]
    out["Volume"] = 0
    return out[list(RAW_COLUMNS)]


class PriceSource(Protocol):
    """Anything that returns raw daily bars for a ticker.

    ``load`` returns the full history the source holds for the ticker (the
    caller cuts the window) and raises :class:`DataError` for an unknown
    ticker or :class:`~fincon.errors.SourceUnavailable` when offline.
    """

    name: str

    def load(self, ticker: str, start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame: ...

    def describe(self, ticker: str) -> str:
        """Where the ticker's bars come from (a path or URL), for messages."""
        ...


#: the largest move accepted within a bar (High/Low) or from one close to the next, adjusted: the
#: sample's largest is 1.9x, the largest one-day gains of listed stocks about 30x; a decimal point
#: moved two places is 100x
MAX_BAR_RATIO = 50.0

#: a close this many times both its neighbours (or a fifth of both) is a decimal point moved one place:
#: a market may gain 10x in a day, but it does not give it all back the next (the sample's largest
#: one-day excursion and return is 1.2x)
SPIKE_RATIO = 5.0

#: how far an open or a close may lie outside its day's Low..High: a vendor's late print a little
#: outside is read as it is; 10 % outside is a mistyped price, and a next-open fill would pay it
BAR_SLACK = 1.1

#: the longest gap between two daily bars accepted: longer is a mistyped date, not a market holiday
MAX_GAP_DAYS = 370


def _header_hint(header: list[Any]) -> str:
    """Why a header that holds the columns did not match them: another separator, or their case or
    spaces (names are read exactly)."""
    if len(header) == 1 and any(sep in str(header[0]) for sep in ";\t|"):
        return f"; its header is one column ({str(header[0])[:40]!r}): fincon reads commas, not another separator"
    near = [c for c in header if str(c).strip().lower() in {r.lower() for r in RAW_COLUMNS} and c not in RAW_COLUMNS]
    return (
        f"; its header has {', '.join(repr(c) for c in near[:3])}: names are read exactly (case and spaces)"
        if near
        else ""
    )


def validate_bars(raw: pd.DataFrame, ticker: str, origin: str) -> pd.DataFrame:
    """Check a raw Yahoo-layout frame and return adjusted bars.

    Returns a frame indexed by date with columns open/high/low/close/volume
    where ``close`` is Adj Close, open/high/low are scaled by the same
    factor and volume by its inverse (shares in the adjusted price's units:
    price x volume is the dollars the day traded, never scaled by a
    dividend paid later; a participation cap and top-volume read it).
    Raises DataError (one line) on missing columns, unparsable or duplicate
    or unsorted dates, NaNs, or non-positive prices.
    """
    where = f"{ticker} ({origin})"
    close_only = is_close_only(raw)
    if close_only:
        raw = expand_close_only(raw)

    def named(column: str) -> str:  # a close-only file's bars are all its Close: name the column it has
        return "Close" if close_only and column != "Volume" else column

    missing = [c for c in RAW_COLUMNS if c not in raw.columns]
    if missing:
        raise DataError(
            f"{where}: missing column(s) {', '.join(missing)}; expected {','.join(RAW_COLUMNS)} "
            "(or Date,Close for close-only prices)"
            + (
                "; if Close is already adjusted (yfinance's auto_adjust, its default), copy it into an Adj Close column"
                if missing == ["Adj Close"]
                else _header_hint(list(raw.columns))
            )
        )
    if raw.empty:
        raise DataError(f"{where}: no rows")
    _check_date_format(raw["Date"], where)
    if pd.api.types.is_datetime64_any_dtype(raw["Date"]):
        dates = pd.to_datetime(raw["Date"], errors="coerce")
    else:  # the day as written (YYYY-MM-DD first, checked above): a time or a UTC offset after it changes nothing
        dates = pd.to_datetime(raw["Date"].astype(str).str[:10], errors="coerce", format="%Y-%m-%d")
    if dates.isna().any():
        row = int(np.flatnonzero(dates.isna().to_numpy())[0])
        raise DataError(f"{where}: unparsable date {raw['Date'].iloc[row]!r} at data row {row + 1}")
    if getattr(dates.dt, "tz", None) is not None:
        dates = dates.dt.tz_localize(None)
    dates = dates.dt.normalize()
    dup = dates.duplicated()
    if dup.any():
        raise DataError(f"{where}: duplicate date {dates[dup].iloc[0].date()}; keep one bar per day")
    if not dates.is_monotonic_increasing:
        bad = int(np.flatnonzero(np.diff(dates.to_numpy()) < np.timedelta64(0))[0])
        raise DataError(
            f"{where}: dates not sorted ascending ({dates.iloc[bad].date()} is followed by "
            f"{dates.iloc[bad + 1].date()}); sort the file by Date"
        )
    values = raw[list(RAW_COLUMNS[1:])].apply(pd.to_numeric, errors="coerce")
    nan_mask = values.isna().to_numpy()
    if nan_mask.any():
        r, c = np.argwhere(nan_mask)[0]
        raise DataError(
            f"{where}: missing or non-numeric {named(RAW_COLUMNS[1 + c])} on {dates.iloc[r].date()}; "
            "fill or drop that row"
        )
    inf_mask = np.isinf(values.to_numpy(dtype=float))
    if inf_mask.any():
        r, c = np.argwhere(inf_mask)[0]
        raise DataError(
            f"{where}: infinite {named(RAW_COLUMNS[1 + c])} on {dates.iloc[r].date()}; fix or drop that row"
        )
    prices = values[["Open", "High", "Low", "Close", "Adj Close"]].to_numpy()
    if (prices <= 0).any():
        r, c = np.argwhere(prices <= 0)[0]
        raise DataError(
            f"{where}: non-positive {named(['Open', 'High', 'Low', 'Close', 'Adj Close'][c])} "
            f"({prices[r, c]}) on {dates.iloc[r].date()}"
        )
    hi, lo = values["High"].to_numpy(), values["Low"].to_numpy()
    if (hi < lo).any():
        r = int(np.flatnonzero(hi < lo)[0])
        raise DataError(f"{where}: High {hi[r]} is below Low {lo[r]} on {dates.iloc[r].date()}; fix or drop that row")
    for col in ("Open", "Close"):
        v = values[col].to_numpy()
        off = (v > hi * BAR_SLACK) | (v < lo / BAR_SLACK)
        if off.any():
            r = int(np.flatnonzero(off)[0])
            raise DataError(
                f"{where}: {col} {v[r]:.5g} lies outside the day's Low..High ({lo[r]:.5g}..{hi[r]:.5g}) on "
                f"{dates.iloc[r].date()}: a mistyped price? fix or drop that row"
            )
    vol = values["Volume"].to_numpy()
    if (vol < 0).any():
        r = int(np.flatnonzero(vol < 0)[0])
        raise DataError(f"{where}: negative Volume ({vol[r]:g}) on {dates.iloc[r].date()}; fix or drop that row")
    gaps = np.diff(dates.to_numpy()) > np.timedelta64(MAX_GAP_DAYS, "D")
    if gaps.any():
        r = int(np.flatnonzero(gaps)[0])
        raise DataError(
            f"{where}: {dates.iloc[r].date()} is followed by {dates.iloc[r + 1].date()}, more than "
            f"{MAX_GAP_DAYS} days later: a mistyped date (a bar decades away)? Daily bars have no year-long gap"
        )
    factor = values["Adj Close"].to_numpy() / values["Close"].to_numpy()
    _check_spikes(values, factor, dates, where, named)
    out = pd.DataFrame(
        {
            "open": values["Open"].to_numpy() * factor,
            "high": values["High"].to_numpy() * factor,
            "low": values["Low"].to_numpy() * factor,
            "close": values["Adj Close"].to_numpy(),
            "volume": values["Volume"].to_numpy(dtype=float) / factor,
        },
        index=pd.DatetimeIndex(dates.to_numpy(), name="date"),
    )
    return out


def _check_spikes(values: pd.DataFrame, factor: np.ndarray, dates: pd.Series, where: str, named: Any) -> None:
    """A price :data:`MAX_BAR_RATIO` times its neighbours is a typo (a moved decimal point, 1e300),
    not a market move: left in, it turns every metric of the run into nonsense without a word. Read on
    adjusted prices, so that a split (raw Close halves, Adj Close does not) is no spike."""

    hi, lo = values["High"].to_numpy() * factor, values["Low"].to_numpy() * factor
    wide = hi > lo * MAX_BAR_RATIO
    if wide.any():
        r = int(np.flatnonzero(wide)[0])
        raise DataError(
            f"{where}: {named('High')} ({values['High'].iloc[r]:.5g}) is {hi[r] / lo[r]:.3g} times "
            f"{named('Low')} ({values['Low'].iloc[r]:.5g}) on {dates.iloc[r].date()}: a mistyped price? "
            f"No daily bar moves {MAX_BAR_RATIO:g}x; fix or drop that row"
        )
    close = values["Adj Close"].to_numpy()
    ratio = close[1:] / close[:-1]
    jump = (ratio > MAX_BAR_RATIO) | (ratio < 1 / MAX_BAR_RATIO)
    if jump.any():
        r = int(np.flatnonzero(jump)[0]) + 1
        raise DataError(
            f"{where}: Close jumps from {values['Close'].iloc[r - 1]:.5g} ({dates.iloc[r - 1].date()}) to "
            f"{values['Close'].iloc[r]:.5g} ({dates.iloc[r].date()}), x{ratio[r - 1]:.3g} in one bar: a mistyped "
            f"price? No daily bar moves {MAX_BAR_RATIO:g}x; fix or drop that row"
        )
    up, back = ratio[:-1], ratio[1:]  # into a close, and out of it the next day
    spike = ((up > SPIKE_RATIO) & (back < 1 / SPIKE_RATIO)) | ((up < 1 / SPIKE_RATIO) & (back > SPIKE_RATIO))
    if spike.any():
        r = int(np.flatnonzero(spike)[0]) + 1
        c = values["Close"]
        raise DataError(
            f"{where}: Close jumps from {c.iloc[r - 1]:.5g} ({dates.iloc[r - 1].date()}) to {c.iloc[r]:.5g} "
            f"({dates.iloc[r].date()}) and back to {c.iloc[r + 1]:.5g} ({dates.iloc[r + 1].date()}), "
            f"x{ratio[r - 1]:.3g} and back in one bar: a mistyped price? fix or drop that row"
        )


_ISO_DATE = r"^\s*\d{4}-\d{2}-\d{2}([ T].*)?\s*$"


def _check_date_format(col: pd.Series, where: str) -> None:
    """Dates must be YYYY-MM-DD (a time part is tolerated): day-first or
    month-first text would otherwise be parsed ambiguously and show up later
    as "dates not sorted"."""
    if pd.api.types.is_datetime64_any_dtype(col):
        return
    text = col.astype(str)
    bad = ~text.str.match(_ISO_DATE)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(
            f"{where}: date {text.iloc[row]!r} at data row {row + 1} is not YYYY-MM-DD; write dates as e.g. 2023-01-31"
        )


@dataclass(frozen=True)
class LoadedPrices:
    """Aligned bars for a run: ``frames`` share one calendar; ``first_index``
    is the row of the first backtest day (earlier rows are warm-up)."""

    frames: Mapping[str, pd.DataFrame]
    first_index: int
    #: the calendar of the sessions the tickers share, read from their whole price files (a window
    #: of weekdays is still a coin's: the run is annualised with it)
    calendar: Calendar
    #: what the shared bars' missing days do to annualised figures (a 24/7 file with gaps), or None
    gaps: str | None
    dropped_dates: int = 0
    #: the dropped dates said: how many, the first and the tickers without a bar on it
    dropped_note: str | None = None
    close_only: tuple[str, ...] = ()  # tickers whose source has no open/high/low/volume
    #: the ticker whose prices begin last, and its first date: what bounds the warm-up
    latest_start: tuple[str, pd.Timestamp] | None = None

    def short_history(self, wants: Mapping[str, int]) -> str | None:
        """A line naming the strategies (name -> sessions of history they want) that get fewer sessions
        before the window than they ask for, or None: the team and sma-cross decided on the few rows
        there were, unsaid, where markowitz warned in the same run."""
        short = {n: w for n, w in wants.items() if w > self.first_index}
        if not short or self.latest_start is None:
            return None
        t, first = self.latest_start
        asked = ", ".join(f"{n} {w}" for n, w in sorted(short.items()))
        return (
            f"only {self.first_index} session(s) of history before the window ({t}'s prices begin "
            f"{first.date()}); strategies wanting more decide their first days on fewer ({asked}): start later"
        )


def load_prices(
    source: PriceSource,
    tickers: tuple[str, ...],
    start: pd.Timestamp,
    end: pd.Timestamp,
    warmup: int = 0,
    min_days: int = 2,
) -> LoadedPrices:
    """Load, validate and align ``tickers`` on the window [start, end].

    ``warmup`` trading days before ``start`` are kept for lookbacks. Tickers
    are aligned on the dates they all share; the window must hold at least
    ``min_days`` common trading days (two for a backtest; a forward step's
    first session is one) and every ticker must cover the whole window.
    """
    if start > end:
        raise DataError(f"start {start.date()} is after end {end.date()}")
    frames: dict[str, pd.DataFrame] = {}
    close_only: list[str] = []
    for ticker in tickers:
        raw = source.load(ticker, start, end)
        if is_close_only(raw):
            close_only.append(ticker)
        bars = validate_bars(raw, ticker, source.describe(ticker))
        first, last = bars.index[0], bars.index[-1]
        if end < first or start > last:
            raise DataError(
                f"{ticker}: no data in {start.date()}..{end.date()}; {source.name} has {first.date()}..{last.date()}"
            )
        # a window may start or end on a weekend or a holiday next to the data; a session more means
        # days are missing (the run would end early under the window's name)
        before = sessions_between(start - pd.Timedelta(days=1), first - pd.Timedelta(days=1), bars.index)
        after = sessions_between(last, end, bars.index)
        if max(before, after) > EDGE_SESSIONS:
            raise DataError(
                f"{ticker}: {start.date()}..{end.date()} is outside the data "
                f"({source.name} has {first.date()}..{last.date()}); pick dates inside it, e.g. "
                f"{max(start, first).date()}..{min(end, last).date()}"
            )
        frames[ticker] = bars
    common = frames[tickers[0]].index
    for t in tickers[1:]:
        common = common.intersection(frames[t].index)
    in_window = common[(common >= start) & (common <= end)]
    if len(in_window) < min_days:
        need = "two trading days" if min_days == 2 else f"{min_days} trading day{'s' if min_days != 1 else ''}"
        raise DataError(f"fewer than {need} common to {','.join(tickers)} in {start.date()}..{end.date()}")
    union_in_window = set()
    for f in frames.values():
        union_in_window.update(f.index[(f.index >= start) & (f.index <= end)])
    gone = sorted(union_in_window.difference(in_window))
    dropped = len(gone)
    first_pos = int(common.get_loc(in_window[0]))
    lo = max(0, first_pos - warmup)
    keep = common[lo : int(common.get_loc(in_window[-1])) + 1]
    aligned = {t: f.loc[keep] for t, f in frames.items()}
    return LoadedPrices(
        frames=aligned,
        first_index=first_pos - lo,
        dropped_dates=dropped,
        dropped_note=(
            f"{dropped} date(s) not shared by all tickers were dropped, the first {gone[0].date()} "
            f"({', '.join(t for t, f in frames.items() if gone[0] not in f.index)} had no bar)"
            if gone
            else None
        ),
        close_only=tuple(close_only),
        latest_start=max(((t, f.index[0]) for t, f in frames.items()), key=lambda x: (x[1], x[0])),
        calendar=infer_calendar(common),
        gaps=gaps_note("+".join(tickers), common),
    )
