"""Historical news from the Alpaca News API (the source the FinCon study used).

Enabled only when a key is set (``APCA_API_KEY_ID`` / ``APCA_API_SECRET_KEY``).
``GET https://data.alpaca.markets/v1beta1/news`` is paged with
``next_page_token``; :func:`parse_alpaca_news` maps one page's ``news`` items
to events (one per requested symbol an item mentions). Pages are cached per
(ticker, window). The HTTP transport is injectable so pagination and parsing
are tested on fixture pages in Alpaca's format.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from fincon.data.events.loaders.online import cache_root, read_events, require_reachable, write_events
from fincon.data.events.model import Event, parse_timestamp
from fincon.errors import ConfigError, SourceUnavailable

ALPACA_URL = "https://data.alpaca.markets/v1beta1/news"
ALPACA_HOST = "data.alpaca.markets"
_TAG = re.compile(r"<[^>]+>")


def alpaca_keys() -> tuple[str, str] | None:
    k = os.environ.get("APCA_API_KEY_ID") or os.environ.get("ALPACA_API_KEY")
    s = os.environ.get("APCA_API_SECRET_KEY") or os.environ.get("ALPACA_SECRET_KEY")
    return (k, s) if k and s else None


def _latest(created: str, updated: str | None) -> Any:
    """The later of the item's two times (as written; either may be absent or equal)."""
    if not updated:
        return created
    return updated if parse_timestamp(updated) > parse_timestamp(created) else created


def parse_alpaca_news(page: dict, tickers: Sequence[str]) -> list[Event]:
    want = {t.upper() for t in tickers}
    out = []
    for it in page.get("news", []):
        body = _TAG.sub(" ", it.get("content") or "")
        body = re.sub(r"\s+", " ", body).strip()
        text = "\n".join(x for x in (it.get("headline", ""), it.get("summary", ""), body) if x)
        for sym in sorted(set(it.get("symbols") or []) & want):
            out.append(
                Event(
                    id=f"{sym}-alpaca-{it['id']}",
                    ticker=sym,
                    source="news",
                    # the text is the latest revision: it exists from updated_at on (a headline revised
                    # after the close was shown at that day's decision, stamped with the first version's time)
                    published_at=_latest(it["created_at"], it.get("updated_at")),
                    text=text,
                    metadata={
                        "title": it.get("headline", ""),
                        "author": it.get("author", ""),
                        "url": it.get("url", ""),
                        "publisher": it.get("source", ""),
                        "provider": "alpaca",
                        "updated_at": it.get("updated_at", ""),
                    },
                )
            )
    return out


class AlpacaNewsLoader:
    name = "alpaca"

    def __init__(
        self,
        cache_dir: str | Path | None = None,
        transport: Any = None,
        timeout: float = 5.0,
        keys: tuple[str, str] | None = None,
        page_limit: int = 50,
    ):
        self.keys = keys or alpaca_keys()
        self.cache = cache_root(cache_dir) / "alpaca"
        self.transport = transport
        self.timeout = timeout
        self.page_limit = page_limit

    @property
    def enabled(self) -> bool:
        return self.keys is not None

    def _pages(self, ticker: str, start: str, end: str):
        import httpx

        if self.transport is None:
            require_reachable(
                ALPACA_HOST, "Alpaca News", f"nothing is cached for {ticker} {start}..{end}", self.timeout
            )
        if self.keys is None:
            raise SourceUnavailable("Alpaca News needs its API keys: set APCA_API_KEY_ID and APCA_API_SECRET_KEY")
        headers = {"APCA-API-KEY-ID": self.keys[0], "APCA-API-SECRET-KEY": self.keys[1]}
        params: dict[str, Any] = {
            "symbols": ticker,
            "start": f"{start}T00:00:00Z",
            "end": f"{end}T23:59:59Z",
            "limit": self.page_limit,
            "include_content": "true",
            "sort": "asc",
        }
        with httpx.Client(timeout=self.timeout, transport=self.transport, headers=headers) as client:
            token = None
            while True:
                q = dict(params, **({"page_token": token} if token else {}))
                try:
                    r = client.get(ALPACA_URL, params=q)
                except httpx.HTTPError as exc:
                    raise SourceUnavailable(
                        f"Alpaca News request failed ({exc.__class__.__name__}); retry later"
                    ) from exc
                if r.status_code in (401, 403):
                    raise ConfigError("Alpaca News rejected the key: check APCA_API_KEY_ID / APCA_API_SECRET_KEY")
                if r.status_code != 200:
                    raise SourceUnavailable(f"Alpaca News answered HTTP {r.status_code}; retry later")
                page = r.json()
                yield page
                token = page.get("next_page_token")
                if not token:
                    break

    def load(self, tickers: Sequence[str], start: Any = None, end: Any = None) -> list[Event]:
        if not self.enabled:
            raise ConfigError("Alpaca News needs a key: set APCA_API_KEY_ID and APCA_API_SECRET_KEY")
        if start is None or end is None:
            raise ConfigError("the Alpaca News loader needs a window: pass start and end dates")
        s, e = str(pd.Timestamp(start).date()), str(pd.Timestamp(end).date())
        out: list[Event] = []
        for t in (x.upper() for x in tickers):
            # "|revised": items stamped at their latest revision (a cache of the first versions' times is not read)
            key = hashlib.sha256(f"{t}|{s}|{e}|revised".encode()).hexdigest()[:16]
            cf = self.cache / f"{t}-{key}.jsonl"
            if cf.is_file():
                out += read_events(cf)
                continue
            evs: dict[str, Event] = {}
            for page in self._pages(t, s, e):
                for ev in parse_alpaca_news(page, [t]):
                    evs[ev.id] = ev
            got = sorted(evs.values(), key=lambda x: (x.published_at, x.id))
            write_events(cf, got)
            out += got
        return out
