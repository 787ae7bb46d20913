"""SEC EDGAR filings: the MD&A of 10-K (Item 7) and 10-Q (Part I, Item 2).

Fetching goes through ``edgartools`` (the SEC requires a User-Agent naming
you: pass ``user_agent`` or set ``FINCON_SEC_USER_AGENT``, e.g.
``"Jane Doe jane@example.com"``). The MD&A section is cut out of the
primary document's HTML by :func:`extract_mdna`, a pure function tested on
fixture filings written by the project. Parsed events are cached on disk per
(ticker, forms, window) so reruns are offline and byte-identical.

Point in time: an event is stamped with the filing's SEC acceptance time when
edgartools provides it; otherwise with 17:30 New York on the filing date
(after the close, so it first counts on the next trading day).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import pandas as pd

from fincon.data.events.loaders import window
from fincon.data.events.loaders.online import cache_root, read_events, require_reachable, write_events
from fincon.data.events.model import MARKET_TZ, Event
from fincon.errors import ConfigError, DataError, SourceUnavailable

log = logging.getLogger(__name__)
FORMS = ("10-K", "10-Q")
SEC_HOST = "www.sec.gov"


@dataclass(frozen=True)
class RawFiling:
    """What a fetcher returns for one filing (the provider's own data)."""

    ticker: str
    form: str
    accession: str
    filing_date: str  # YYYY-MM-DD
    html: str
    accepted: str | None = None  # SEC acceptance datetime, e.g. 2022-10-24T16:05:12-04:00
    url: str | None = None


def html_to_text(html: str) -> str:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "lxml")
    for tag in soup(["script", "style", "ix:header"]):
        tag.decompose()
    for br in soup.find_all(["br", "p", "div", "tr", "li", "h1", "h2", "h3", "h4", "table"]):
        br.insert_after("\n")
    text = soup.get_text(" ")
    text = text.replace("\xa0", " ").replace("\u2019", "'")
    lines = [re.sub(r"[ \t]+", " ", ln).strip() for ln in text.splitlines()]
    return "\n".join(ln for ln in lines if ln)


_STARTS = {
    "10-K": re.compile(r"^item\s*7\s*[.:\-\u2013\u2014]?\s*management'?s\s+discussion", re.I | re.M),
    "10-Q": re.compile(r"^item\s*2\s*[.:\-\u2013\u2014]?\s*management'?s\s+discussion", re.I | re.M),
}
_ENDS = {
    "10-K": re.compile(r"^item\s*(7a|8)\s*[.:\-\u2013\u2014]?\s", re.I | re.M),
    "10-Q": re.compile(r"^item\s*(3|4)\s*[.:\-\u2013\u2014]?\s", re.I | re.M),
}


def extract_mdna(html: str, form: str) -> str:
    """The MD&A section's text. The table of contents also names the item, so
    every start is tried and the longest span up to the next item wins."""
    base = form.split("/")[0]
    if base not in _STARTS:
        raise ConfigError(f"MD&A extraction knows {', '.join(FORMS)}, not {form}")
    text = html_to_text(html)
    best = ""
    for m in _STARTS[base].finditer(text):
        end = _ENDS[base].search(text, m.end())
        span = text[m.start() : end.start() if end else len(text)].strip()
        if len(span) > len(best):
            best = span
    if len(best) < 200:
        raise DataError(
            f"no {base} MD&A section found ({'Item 7' if base == '10-K' else 'Part I, Item 2'}); the filing layout is not recognised"
        )
    return best


def accepted_at(raw: RawFiling) -> dt.datetime:
    if raw.accepted:
        ts = pd.Timestamp(raw.accepted)
        if ts.tzinfo is None:
            ts = ts.tz_localize(MARKET_TZ)
        return ts.to_pydatetime()
    d = pd.Timestamp(raw.filing_date).date()
    return dt.datetime(d.year, d.month, d.day, 17, 30, tzinfo=MARKET_TZ)


def filing_event(raw: RawFiling) -> Event:
    form = raw.form.split("/")[0]
    text = extract_mdna(raw.html, form)
    return Event(
        id=f"{raw.ticker}-{form}-{raw.accession}",
        ticker=raw.ticker.upper(),
        source=form,
        published_at=accepted_at(raw),
        text=text,
        metadata={
            "accession": raw.accession,
            "filing_date": raw.filing_date,
            "form": raw.form,
            "section": "MD&A",
            "title": f"{raw.ticker.upper()} {form} MD&A filed {raw.filing_date}",
            "url": raw.url or "",
            "provider": "sec-edgar",
        },
    )


def edgartools_fetch(ticker: str, forms: Sequence[str], start: str, end: str, user_agent: str) -> Iterable[RawFiling]:
    """The real fetcher: edgartools with our User-Agent."""
    import edgar

    edgar.set_identity(user_agent)
    filings = edgar.Company(ticker).get_filings(form=list(forms), filing_date=f"{start}:{end}", amendments=False)
    for f in filings:
        accepted = None
        for attr in ("acceptance_datetime", "accepted"):
            v = getattr(f, attr, None)
            if v:
                accepted = str(v)
                break
        html = f.html()
        if not html:
            log.warning("EDGAR %s %s has no HTML document; skipped", ticker, f.accession_no)
            continue
        yield RawFiling(
            ticker=ticker,
            form=str(f.form),
            accession=str(f.accession_no),
            filing_date=str(f.filing_date),
            html=html,
            accepted=accepted,
            url=getattr(f, "url", None) or getattr(f, "filing_url", None),
        )


class EdgarLoader:
    name = "edgar"

    def __init__(
        self,
        user_agent: str | None = None,
        cache_dir: str | Path | None = None,
        forms: Sequence[str] = FORMS,
        fetch: Callable[..., Iterable[RawFiling]] | None = None,
        timeout: float = 3.0,
    ):
        self.user_agent = user_agent or os.environ.get("FINCON_SEC_USER_AGENT") or os.environ.get("EDGAR_IDENTITY")
        self.cache = cache_root(cache_dir) / "edgar"
        bad = [f for f in forms if f not in FORMS]
        if bad:
            raise ConfigError(f"EDGAR loader handles {', '.join(FORMS)}, not {bad[0]}")
        self.forms = tuple(forms)
        self.fetch = fetch
        self.timeout = timeout
        self.skipped = 0

    def _cache_file(self, ticker: str, start: str, end: str) -> Path:
        key = hashlib.sha256(f"{ticker}|{','.join(self.forms)}|{start}|{end}".encode()).hexdigest()[:16]
        return self.cache / f"{ticker}-{key}.jsonl"

    def load(self, tickers: Sequence[str], start: Any = None, end: Any = None) -> list[Event]:
        if start is None or end is None:
            raise ConfigError("the EDGAR loader needs a window: pass start and end dates")
        s, e = str(pd.Timestamp(start).date()), str(pd.Timestamp(end).date())
        out: list[Event] = []
        for t in (x.upper() for x in tickers):
            cf = self._cache_file(t, s, e)
            if cf.is_file():
                out += read_events(cf)
                continue
            if self.fetch is None:
                if not self.user_agent:
                    raise ConfigError(
                        "SEC EDGAR needs a User-Agent naming you: set FINCON_SEC_USER_AGENT='Name email@example.com'"
                    )
                require_reachable(
                    SEC_HOST, "SEC EDGAR", f"nothing is cached for {t} {s}..{e} in {self.cache}", self.timeout
                )
                fetch = edgartools_fetch
            else:
                fetch = self.fetch
            try:
                raws = list(fetch(t, self.forms, s, e, self.user_agent or ""))
            except (OSError, ConnectionError) as exc:
                raise SourceUnavailable(f"SEC EDGAR failed for {t}: {exc.__class__.__name__}; retry later") from exc
            evs = []
            for raw in raws:
                try:
                    evs.append(filing_event(raw))
                except DataError as exc:
                    self.skipped += 1
                    log.warning("EDGAR %s %s skipped: %s (%d skipped so far)", t, raw.accession, exc, self.skipped)
            evs = sorted(filter(window(s, e), evs), key=lambda x: (x.published_at, x.id))
            write_events(cf, evs)
            out += evs
        return out
