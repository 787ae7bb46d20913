"""Recent news headlines through yfinance (``Ticker(t).news``).

Yahoo only serves the latest items, so this loader is for live or paper
runs, not for backtests of past windows. Raw responses are cached per ticker
and fetch day; :func:`parse_yahoo_news` (tested on fixtures in both payload
shapes yfinance has returned: the flat pre-2024 one and the ``content``
one) turns them into events.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from fincon.data.events.loaders import window
from fincon.data.events.loaders.online import cache_root, require_reachable, write_json
from fincon.data.events.model import Event

log = logging.getLogger(__name__)
YAHOO_HOST = "query2.finance.yahoo.com"


def _ts(v: Any) -> dt.datetime | None:
    if v in (None, ""):
        return None
    if isinstance(v, (int, float)):
        return dt.datetime.fromtimestamp(int(v), tz=dt.timezone.utc)
    return pd.Timestamp(str(v)).to_pydatetime()


def parse_yahoo_news(ticker: str, items: Sequence[dict]) -> list[Event]:
    out = []
    for it in items:
        content = it.get("content")
        c: dict = content if isinstance(content, dict) else it
        uid = str(it.get("id") or it.get("uuid") or c.get("id") or "")
        title = c.get("title") or ""
        published = _ts(c.get("pubDate") or c.get("displayTime") or c.get("providerPublishTime"))
        if not uid or not title or published is None:
            log.warning("yfinance item without id/title/time skipped")
            continue
        summary = c.get("summary") or c.get("description") or ""
        provider = (
            c.get("provider", {}).get("displayName") if isinstance(c.get("provider"), dict) else c.get("publisher")
        )
        url = (c.get("canonicalUrl") or {}).get("url") if isinstance(c.get("canonicalUrl"), dict) else c.get("link")
        text = title + ("\n" + summary if summary else "")
        out.append(
            Event(
                id=f"{ticker}-yahoo-{uid}",
                ticker=ticker.upper(),
                source="news",
                published_at=published,
                text=text,
                metadata={"title": title, "publisher": provider or "", "url": url or "", "provider": "yfinance"},
            )
        )
    return out


class YahooNewsLoader:
    name = "yfinance"

    def __init__(
        self,
        cache_dir: str | Path | None = None,
        fetch: Callable[[str], list[dict]] | None = None,
        timeout: float = 3.0,
        today: Any = None,
    ):
        self.cache = cache_root(cache_dir) / "yfinance"
        self.fetch = fetch
        self.timeout = timeout
        self.today = pd.Timestamp(today or dt.date.today()).date()

    def _fetch(self, ticker: str) -> list[dict]:
        if self.fetch is not None:
            return self.fetch(ticker)
        require_reachable(
            YAHOO_HOST,
            "Yahoo Finance",
            f"no news for {ticker} is cached for {self.today} in {self.cache}",
            self.timeout,
        )
        import yfinance as yf

        return list(yf.Ticker(ticker).news or [])

    def load(self, tickers: Sequence[str], start: Any = None, end: Any = None) -> list[Event]:
        out: list[Event] = []
        for t in (x.upper() for x in tickers):
            f = self.cache / f"{t}-{self.today:%Y%m%d}.json"
            if f.is_file():
                items = json.loads(f.read_text(encoding="utf-8"))
            else:
                items = self._fetch(t)
                write_json(f, items)
            out += filter(window(start, end), parse_yahoo_news(t, items))
        return out
