"""The price sources behind one interface: ``sample``, ``csv`` and ``yfinance``.

* ``sample`` - the 42 tickers bundled with the package (offline, default).
* ``csv``    - a directory of ``TICKER.csv`` (or ``.csv.gz``) files in the same
  Yahoo column layout as the sample.
* ``yfinance`` - Yahoo Finance through yfinance (online), cached on disk as
  CSVs in the same layout; a cached ticker never touches the network again.
"""

from __future__ import annotations

import io
import json
import logging
import zlib
from contextlib import redirect_stderr, redirect_stdout
from importlib import resources
from pathlib import Path

import pandas as pd

from fincon.data import DEFAULT_TICKER
from fincon.data.calendar import EDGE_SESSIONS, sessions_between
from fincon.data.events.loaders.online import cache_root
from fincon.data.events.model import MARKET_TZ
from fincon.data.prices import validate_bars
from fincon.errors import ConfigError, DataError, SourceUnavailable
from fincon.files import name_before, write_atomic

log = logging.getLogger(__name__)


def _read_csv(path: Path, ticker: str) -> pd.DataFrame:
    try:
        return pd.read_csv(path)
    except (
        pd.errors.ParserError,
        pd.errors.EmptyDataError,
        UnicodeDecodeError,
        OSError,
        EOFError,
        zlib.error,
    ) as exc:  # EOFError / zlib.error: a truncated or corrupt .csv.gz
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"{ticker} ({path}): cannot read CSV: {first}") from None


class CsvDirSource:
    """``TICKER.csv`` / ``TICKER.csv.gz`` files in one directory."""

    name = "csv"

    def __init__(self, directory: Path | str):
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise DataError(f"--data {self.directory}: not a directory")
        # a dataset directory (fincon data import) is opened by fincon.data.inputs.open_inputs,
        # which hands its prices/ folder here

    def _path(self, ticker: str) -> Path | None:
        for suffix in (".csv", ".csv.gz"):
            p = self.directory / f"{ticker}{suffix}"
            if p.exists():
                return p
        return None

    def tickers(self) -> list[str]:
        names = {name_before(p.name, (".csv", ".csv.gz")) for p in self.directory.glob("*.csv*")}
        return sorted(names)

    def describe(self, ticker: str) -> str:
        p = self._path(ticker)
        return str(p) if p else str(self.directory / f"{ticker}.csv")

    def load(self, ticker: str, start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
        p = self._path(ticker)
        if p is None:
            known = self.tickers()
            twin = next((k for k in known if k.upper() == ticker.upper()), None)
            found = self._path(twin) if twin is not None else None
            if twin is not None and found is not None:  # --ticker is read in upper case: "--ticker tsla" too
                name = ticker + found.name[len(twin) :]
                raise DataError(
                    f"unknown ticker {ticker!r}: {self.directory} has {found.name}, not {name} (tickers are read in "
                    f"upper case): rename the file {name}"
                )
            if (self.directory / "metrics.json").is_file() or (self.directory / "run_manifest.json").is_file():
                raise DataError(
                    f"--data {self.directory} is a fincon run directory (its CSV files are results), not prices: give "
                    "a dataset from `fincon data import` or a folder of TICKER.csv files"
                )
            hint = f"; available: {', '.join(known[:12])}{' ...' if len(known) > 12 else ''}" if known else ""
            if ticker == DEFAULT_TICKER and known:  # a user who typed no ticker: say where this one came from
                hint += f" ({DEFAULT_TICKER} is the default ticker: pick one of these with --ticker {known[0]})"
            raise DataError(f"unknown ticker {ticker!r}: no {ticker}.csv in {self.directory}{hint}")
        return _read_csv(p, ticker)


class SampleSource(CsvDirSource):
    """The bundled sample: real daily bars for 42 US stocks, 2018-01-02..2024-03-08."""

    name = "sample"

    def __init__(self) -> None:
        root = resources.files("fincon.data") / "sample" / "prices"
        super().__init__(Path(str(root)))


class YFinanceSource:
    """Yahoo Finance via yfinance, cached as CSV under ``cache_dir``.

    A ticker's daily history is downloaded and kept: later runs read the
    cache and never go online while it covers their window. A window it does
    not cover is downloaded again over the cache's span and the window's
    together, in one download (Yahoo's Adj Close is back-adjusted to the day
    of the download: rows of two downloads are on two bases, so they are never
    joined), and the refresh is said. Beside the file, ``TICKER.json`` records
    the last day the download asked for that had closed: a window ending on
    or before it is covered even where the file has no bar (a holiday). A
    bar of a session not yet closed (today's, in New York) is never kept, and
    a download that does not validate is never cached. Offline, yfinance does
    not raise (it prints a curl error and returns an empty frame), so an empty
    answer is treated as "unreachable".
    """

    name = "yfinance"

    def __init__(self, cache_dir: Path | str, timeout: float = 10.0, today=None):
        self.cache_dir = Path(cache_dir)
        self.timeout = timeout
        #: the New York calendar date now (a test's clock in place of the machine's)
        self.today = today or (lambda: pd.Timestamp.now(tz=MARKET_TZ).tz_localize(None).normalize())

    def _cache_path(self, ticker: str) -> Path:
        return self.cache_dir / f"{ticker}.csv"

    def describe(self, ticker: str) -> str:
        return str(self._cache_path(ticker))

    def _covers(self, ticker: str, known: pd.Series, start: pd.Timestamp, end: pd.Timestamp) -> bool:
        if not len(known):
            return False
        meta = self.cache_dir / f"{ticker}.json"
        if meta.is_file():  # asked of Yahoo from and through these days (closed): nothing more was there
            try:
                asked = json.loads(meta.read_text())
                since, through = pd.Timestamp(asked["from"]), pd.Timestamp(asked["through"])
            except (OSError, ValueError, KeyError, TypeError):
                return False
            return min(known.min(), since) <= start and end <= max(known.max(), through)
        # a cache written before the record: one session of slack, as any price file has (a holiday)
        return known.min() <= start and sessions_between(known.max(), end, known) <= EDGE_SESSIONS

    def load(self, ticker: str, start: pd.Timestamp, end: pd.Timestamp) -> pd.DataFrame:
        path = self._cache_path(ticker)
        stale, lo, hi = None, start - pd.Timedelta(days=400), end
        if path.exists():
            cached = _read_csv(path, ticker)
            dates = pd.to_datetime(cached.get("Date"), errors="coerce")
            known = dates.dropna()
            if self._covers(ticker, known, start, end):
                return cached
            if len(cached) and dates.notna().any():
                stale = f"{dates.min():%Y-%m-%d}..{dates.max():%Y-%m-%d}"
                lo, hi = min(lo, known.min()), max(hi, known.max())  # the history a user had stays
        raw = self._download(ticker, lo, hi, stale, (start, end))
        today = self.today()
        raw = raw[pd.to_datetime(raw["Date"]) < today]  # today's bar is not final before the close
        if raw.empty:
            raise SourceUnavailable(f"yfinance returned no closed session for {ticker} before {today:%Y-%m-%d}")
        try:
            validate_bars(raw, ticker, "yfinance's download")
        except DataError as exc:
            raise DataError(f"{exc}; nothing was cached ({path})") from None
        try:
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            # floats as Python writes them: what a rerun reads from the cache is what this run used
            write_atomic(path, raw.to_csv(index=False))
            through = min(hi, today - pd.Timedelta(days=1))
            asked = {"from": f"{lo:%Y-%m-%d}", "through": f"{through:%Y-%m-%d}"}
            write_atomic(self.cache_dir / f"{ticker}.json", json.dumps(asked) + "\n")
        except OSError as exc:
            raise DataError(f"cannot write the yfinance cache {path}: {exc.strerror or exc}") from None
        if stale:
            log.warning("yfinance: %s's cache held %s; downloaded again over %s..%s", ticker, stale,
                        f"{pd.Timestamp(raw['Date'].iloc[0]):%Y-%m-%d}", f"{pd.Timestamp(raw['Date'].iloc[-1]):%Y-%m-%d}")  # fmt: skip
        return _read_csv(path, ticker)

    def _download(
        self, ticker: str, start: pd.Timestamp, end: pd.Timestamp, stale: str | None, window: tuple[pd.Timestamp, ...]
    ) -> pd.DataFrame:
        import yfinance as yf

        sink = io.StringIO()
        yf_log = logging.getLogger("yfinance")
        level = yf_log.level
        yf_log.setLevel(logging.CRITICAL + 1)  # its curl errors would print several lines
        try:
            with redirect_stdout(sink), redirect_stderr(sink):
                frame = yf.download(
                    ticker,
                    start=start.strftime("%Y-%m-%d"),
                    end=(end + pd.Timedelta(days=1)).strftime("%Y-%m-%d"),
                    auto_adjust=False,
                    actions=False,
                    progress=False,
                    timeout=self.timeout,
                    multi_level_index=False,
                )
        except Exception as exc:  # yfinance raises many types; all mean "no data"
            log.debug("yfinance raised %r", exc)
            frame = None
        finally:
            yf_log.setLevel(level)
        if frame is None or frame.empty:
            log.debug("yfinance said: %s", sink.getvalue().strip())
            cached = (
                f"the cache {self._cache_path(ticker)} holds only {stale}, not {window[0]:%Y-%m-%d}..{window[1]:%Y-%m-%d}"
                if stale
                else f"nothing cached at {self._cache_path(ticker)}"
            )
            raise SourceUnavailable(
                f"yfinance returned no data for {ticker} (offline or unknown ticker); {cached}. "
                "Use --data DIR with CSVs, or the bundled --source sample"
            )
        frame = frame.reset_index()
        frame = frame.rename(columns={"index": "Date", "Datetime": "Date"})
        frame["Date"] = pd.to_datetime(frame["Date"]).dt.strftime("%Y-%m-%d")
        # the columns it has: a missing one (Adj Close) is named by validate_bars, not a KeyError traceback
        return frame[[c for c in ("Date", "Open", "High", "Low", "Close", "Adj Close", "Volume") if c in frame.columns]]


SOURCES = ("sample", "csv", "yfinance")


def make_source(name: str, data_dir: str | Path | None = None, cache_dir: str | Path | None = None):
    """Build the named price source (``csv`` needs ``data_dir``)."""
    if name == "sample":
        return SampleSource()
    if name == "csv":
        if not data_dir:
            raise ConfigError("source 'csv' needs a directory: pass --data DIR")
        return CsvDirSource(data_dir)
    if name == "yfinance":
        # $FINCON_CACHE_DIR/yfinance, beside the other on-disk caches (default ~/.cache/fincon)
        return YFinanceSource(cache_dir or cache_root(None) / "yfinance")
    raise ConfigError(f"unknown data source {name!r}; choose one of {', '.join(SOURCES)}")
