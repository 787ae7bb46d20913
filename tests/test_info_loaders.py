"""Online loaders: parsing on fixtures in the providers' formats, caching,
and failing fast offline (this machine reaches no SEC/Yahoo/Alpaca host)."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import time

import httpx
import pandas as pd
import pytest

from fincon.data.events import EventStore
from fincon.data.events.loaders import EventLoader
from fincon.data.events.loaders.alpaca import AlpacaNewsLoader, parse_alpaca_news
from fincon.data.events.loaders.directory import DirectoryLoader
from fincon.data.events.loaders.edgar import EdgarLoader, RawFiling, extract_mdna, filing_event
from fincon.data.events.loaders.yahoo import YahooNewsLoader, parse_yahoo_news
from fincon.errors import ConfigError, DataError, SourceUnavailable

MDNA_10K = "Our revenue grew on strong demand for vehicles. " * 20
TENK = f"""<html><body>
<p>TABLE OF CONTENTS</p>
<table><tr><td>Item 7.</td><td>Management's Discussion and Analysis of Financial Condition</td><td>35</td></tr>
<tr><td>Item 7A.</td><td>Quantitative and Qualitative Disclosures About Market Risk</td><td>50</td></tr></table>
<div><p>PART II</p></div>
<div><span style="font-weight:bold">Item 7. Management&#8217;s Discussion and Analysis of Financial Condition and Results of Operations</span></div>
<div><p>Overview</p><p>{MDNA_10K}</p><p>Liquidity&#160;and Capital Resources</p><p>Cash was $17.6 billion.</p></div>
<div><span>Item 7A. Quantitative and Qualitative Disclosures About Market Risk</span></div>
<p>Interest rate risk text that must not be included.</p>
<div><span>Item 8. Financial Statements and Supplementary Data</span></div>
</body></html>"""
TENQ = f"""<html><body>
<p>PART I. FINANCIAL INFORMATION</p><p>Item 1. Financial Statements</p><p>Balance sheet ...</p>
<p>ITEM 2. MANAGEMENT'S DISCUSSION AND ANALYSIS OF FINANCIAL CONDITION AND RESULTS OF OPERATIONS</p>
<p>{"Quarterly deliveries rose while margins declined. " * 12}</p>
<p>ITEM 3. QUANTITATIVE AND QUALITATIVE DISCLOSURES ABOUT MARKET RISK</p><p>Not included.</p>
</body></html>"""


def test_extract_mdna_skips_the_table_of_contents():
    k = extract_mdna(TENK, "10-K")
    assert k.startswith("Item 7. Management's Discussion") and "Cash was $17.6 billion." in k
    assert "Interest rate risk" not in k and "Liquidity and Capital Resources" in k
    q = extract_mdna(TENQ, "10-Q")
    assert q.startswith("ITEM 2.") and "margins declined" in q and "Not included" not in q
    with pytest.raises(DataError, match="MD&A"):
        extract_mdna("<p>Item 1. Business</p>", "10-K")


def test_filing_event_time_is_acceptance_or_after_close():
    raw = RawFiling("TSLA", "10-Q", "0000950170-22-019867", "2022-10-24", TENQ, accepted="2022-10-24T06:02:11-04:00")
    ev = filing_event(raw)
    assert ev.source == "10-Q" and ev.visible_on("2022-10-24")
    raw2 = RawFiling("TSLA", "10-K", "0000950170-22-000796", "2022-02-07", TENK)
    ev2 = filing_event(raw2)
    assert not ev2.visible_on("2022-02-07") and ev2.visible_on("2022-02-08")
    assert ev2.metadata["accession"] == "0000950170-22-000796" and ev2.metadata["section"] == "MD&A"


def test_edgar_loader_caches_parsed_filings(tmp_path):
    calls = []

    def fetch(ticker, forms, start, end, ua):
        calls.append((ticker, forms, start, end, ua))
        return [
            RawFiling(ticker, "10-K", "A1", "2022-02-07", TENK),
            RawFiling(ticker, "10-Q", "A2", "2022-04-25", TENQ),
            RawFiling(ticker, "10-Q", "A3", "2022-07-25", "<p>garbled</p>"),
        ]

    ld = EdgarLoader(user_agent="Jane Doe jane@example.com", cache_dir=tmp_path, fetch=fetch)
    assert isinstance(ld, EventLoader)
    evs = ld.load(["tsla"], "2022-01-01", "2022-12-31")
    assert [e.id for e in evs] == ["TSLA-10-K-A1", "TSLA-10-Q-A2"] and ld.skipped == 1
    again = EdgarLoader(cache_dir=tmp_path, fetch=lambda *a: 1 / 0).load(["TSLA"], "2022-01-01", "2022-12-31")
    assert [e.to_json() for e in again] == [e.to_json() for e in evs] and len(calls) == 1
    assert calls[0][4] == "Jane Doe jane@example.com"


def test_edgar_needs_a_user_agent(tmp_path, monkeypatch):
    monkeypatch.delenv("FINCON_SEC_USER_AGENT", raising=False)
    monkeypatch.delenv("EDGAR_IDENTITY", raising=False)
    with pytest.raises(ConfigError, match="User-Agent"):
        EdgarLoader(cache_dir=tmp_path).load(["TSLA"], "2022-01-01", "2022-12-31")


YAHOO_NEW = [
    {
        "id": "9f1c",
        "content": {
            "id": "9f1c",
            "contentType": "STORY",
            "title": "Tesla cuts prices again",
            "summary": "The carmaker lowered prices in China.",
            "pubDate": "2024-03-07T13:45:00Z",
            "provider": {"displayName": "Reuters"},
            "canonicalUrl": {"url": "https://example.com/a"},
        },
    }
]
YAHOO_OLD = [
    {
        "uuid": "b2e0",
        "title": "Tesla deliveries beat",
        "publisher": "Bloomberg",
        "link": "https://example.com/b",
        "providerPublishTime": 1704297600,
        "type": "STORY",
    }
]


def test_yahoo_news_both_payload_shapes(tmp_path):
    a = parse_yahoo_news("TSLA", YAHOO_NEW)[0]
    assert a.id == "TSLA-yahoo-9f1c" and a.metadata["publisher"] == "Reuters" and "lowered prices" in a.text
    assert a.published_at == dt.datetime(2024, 3, 7, 13, 45, tzinfo=dt.timezone.utc)
    b = parse_yahoo_news("TSLA", YAHOO_OLD)[0]
    assert b.published_at == dt.datetime(2024, 1, 3, 16, 0, tzinfo=dt.timezone.utc) and b.metadata["url"].endswith("/b")
    ld = YahooNewsLoader(cache_dir=tmp_path, fetch=lambda t: YAHOO_NEW + YAHOO_OLD, today="2024-03-08")
    assert len(ld.load(["TSLA"])) == 2
    cached = YahooNewsLoader(cache_dir=tmp_path, fetch=lambda t: 1 / 0, today="2024-03-08").load(
        ["TSLA"], start="2024-03-01"
    )
    assert [e.id for e in cached] == ["TSLA-yahoo-9f1c"]


def alpaca_page(ids, token):
    return {
        "news": [
            {
                "id": i,
                "headline": f"Headline {i}",
                "author": "Benzinga Newsdesk",
                "source": "benzinga",
                "created_at": f"2022-11-0{i}T13:3{i}:00Z",
                "updated_at": f"2022-11-0{i}T13:40:00Z",
                "summary": "Summary",
                "content": "<p>Body <b>text</b></p>",
                "url": f"https://example.com/{i}",
                "symbols": ["TSLA", "AAPL"] if i % 2 else ["TSLA"],
            }
            for i in ids
        ],
        "next_page_token": token,
    }


def test_alpaca_pagination_parsing_and_cache(tmp_path):
    seen = []

    def handler(req: httpx.Request):
        seen.append(req)
        tok = req.url.params.get("page_token")
        return httpx.Response(200, json=alpaca_page([1, 2], "p2") if tok is None else alpaca_page([3], None))

    ld = AlpacaNewsLoader(cache_dir=tmp_path, transport=httpx.MockTransport(handler), keys=("k", "s"))
    evs = ld.load(["TSLA"], "2022-11-01", "2022-11-30")
    assert [e.id for e in evs] == ["TSLA-alpaca-1", "TSLA-alpaca-2", "TSLA-alpaca-3"]
    assert evs[0].text == "Headline 1\nSummary\nBody text" and evs[0].metadata["publisher"] == "benzinga"
    assert seen[0].headers["APCA-API-KEY-ID"] == "k" and seen[0].url.params["symbols"] == "TSLA"
    assert seen[1].url.params["page_token"] == "p2"
    both = parse_alpaca_news(alpaca_page([1], None), ["TSLA", "AAPL"])
    assert sorted(e.ticker for e in both) == ["AAPL", "TSLA"]
    n = len(seen)
    assert [e.id for e in ld.load(["TSLA"], "2022-11-01", "2022-11-30")] == [e.id for e in evs] and len(seen) == n
    # found in review: the text is the latest revision, so the item is stamped when it was revised (a
    # headline revised after the close was shown at that day's decision, with the first version's time)
    assert evs[0].published_at == pd.Timestamp("2022-11-01T13:40:00Z").to_pydatetime()
    page = alpaca_page([1], None)
    page["news"][0]["updated_at"] = "2022-11-01T22:30:00Z"
    (late,) = parse_alpaca_news(page, ["TSLA"])
    assert not late.visible_on("2022-11-01") and late.visible_on("2022-11-02")
    page["news"][0]["updated_at"] = "2022-11-01T12:00:00Z"  # an earlier "update" than the creation: the creation
    assert parse_alpaca_news(page, ["TSLA"])[0].published_at == pd.Timestamp("2022-11-01T13:31:00Z").to_pydatetime()


def test_alpaca_errors(tmp_path, monkeypatch):
    for k in ("APCA_API_KEY_ID", "APCA_API_SECRET_KEY", "ALPACA_API_KEY", "ALPACA_SECRET_KEY"):
        monkeypatch.delenv(k, raising=False)
    with pytest.raises(ConfigError, match="needs a key"):
        AlpacaNewsLoader(cache_dir=tmp_path).load(["TSLA"], "2022-11-01", "2022-11-02")
    deny = httpx.MockTransport(lambda r: httpx.Response(403, json={"message": "forbidden"}))
    with pytest.raises(ConfigError, match="rejected"):
        AlpacaNewsLoader(cache_dir=tmp_path, transport=deny, keys=("k", "s")).load(["TSLA"], "2022-11-01", "2022-11-02")


@pytest.mark.parametrize(
    "make",
    [
        lambda d: EdgarLoader(user_agent="Jane Doe jane@example.com", cache_dir=d),
        lambda d: YahooNewsLoader(cache_dir=d),
        lambda d: AlpacaNewsLoader(cache_dir=d, keys=("k", "s")),
    ],
    ids=["edgar", "yfinance", "alpaca"],
)
def test_online_loaders_fail_fast_offline(make, tmp_path):
    t0 = time.perf_counter()
    with pytest.raises(SourceUnavailable, match="unreachable"):
        make(tmp_path).load(["TSLA"], "2022-01-01", "2022-12-31")
    assert time.perf_counter() - t0 < 10


def test_loaders_combine_into_one_store(tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    (d / "e.jsonl").write_text(
        json.dumps(
            {
                "id": "x1",
                "ticker": "TSLA",
                "source": "analyst_note",
                "published_at": "2022-11-01T06:30:00-04:00",
                "text": "note",
            }
        )
        + "\n"
    )
    alp = AlpacaNewsLoader(
        cache_dir=tmp_path,
        keys=("k", "s"),
        transport=httpx.MockTransport(lambda r: httpx.Response(200, json=alpaca_page([1], None))),
    )
    store = EventStore(DirectoryLoader(d).load(["TSLA"]) + alp.load(["TSLA"], "2022-11-01", "2022-11-30"))
    assert [e.id for e in store.view_at("2022-11-01").events()] == ["x1", "TSLA-alpaca-1"]


def test_build_store_from_specs(tmp_path):
    from fincon.data.events.sources import build_store

    d = tmp_path / "dir"
    d.mkdir()
    (d / "e.jsonl").write_text(
        json.dumps(
            {
                "id": "x1",
                "ticker": "TSLA",
                "source": "news",
                "published_at": "2022-11-01T06:30:00-04:00",
                "text": "own note",
            }
        )
        + "\n"
    )
    store = build_store(
        [{"type": "sample"}, {"type": "directory", "path": str(d)}], ["TSLA"], "2022-10-01", "2022-11-30"
    )
    evs = store.view_at("2022-11-01").events("TSLA")
    assert "x1" in {e.id for e in evs} and all(e.published_at.date() >= dt.date(2022, 10, 1) for e in evs)
    call = next(e for e in store.all_events() if e.source == "earnings_call")
    assert store.audio_path(call).is_absolute() and store.audio_path(call).is_file()
    with pytest.raises(ConfigError, match="unknown event source"):
        build_store([{"type": "twitter"}], ["TSLA"])
    with pytest.raises(ConfigError, match="needs a path"):
        build_store([{"type": "directory"}], ["TSLA"])


def test_a_dataset_folder_given_as_an_event_directory_says_to_give_it_as_data(tmp_path):
    """Found in review: `--events DIR` on a dataset `fincon data import` wrote read DIR/prices/*.csv as
    event records ("prices/JNJ.csv:2: event record ? lacks id, ticker, ..."), which says not what to do."""
    d = tmp_path / "ib"
    (d / "prices").mkdir(parents=True)
    (d / "events").mkdir()
    (d / "dataset.json").write_text(json.dumps({"fincon_dataset": 1}))
    (d / "prices" / "JNJ.csv").write_text("Date,Open,High,Low,Close,Adj Close,Volume\n2021-01-04,1,1,1,1,1,10\n")
    (d / "events" / "JNJ.jsonl").write_text(
        json.dumps({"id": "n1", "ticker": "JNJ", "source": "news", "published_at": "2021-01-04", "text": "x"}) + "\n"
    )
    with pytest.raises(DataError) as err:
        DirectoryLoader(d).load(["JNJ"])
    assert str(err.value) == (
        f"{d} is a dataset (dataset.json), not an event directory: give it as --data {d} (its prices and its "
        f"events), or --events {d / 'events'} for its events alone"
    )
    assert [e.id for e in DirectoryLoader(d / "events").load(["JNJ"])] == ["n1"]  # the folder the message names
    shutil.rmtree(d / "events")  # a dataset of prices alone (an import without items)
    with pytest.raises(DataError, match=r"give it as --data \S+ \(its prices: it holds no events\)$"):
        DirectoryLoader(d).load(["JNJ"])
