"""``fincon data import csv``: a news/filing table (CSV or JSONL, generic or
FNSPID column names) plus a folder of ``TICKER.csv`` prices."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.data.events.loaders.directory import DirectoryLoader
from fincon.data.events.store import EventStore
from fincon.data.importers.common import ImportOptions
from fincon.data.importers.synthetic import table_rows, write_price_folder, write_table
from fincon.data.importers.table import read
from fincon.data.prices import validate_bars

DAYS = [d.date() for d in pd.bdate_range("2020-01-02", "2020-01-10")]
YAHOO = "Date,Open,High,Low,Close,Adj Close,Volume\n"

GENERIC = [
    # ticker, published, source, title, text, url
    {
        "ticker": "AAA",
        "published": "2020-01-03",
        "source": "news",
        "title": "AAA beats",
        "text": "AAA beats estimates.",
        "url": "https://example.invalid/1",
    },
    {
        "ticker": "aaa",
        "published": "2020-01-03",
        "source": "news",
        "title": "AAA beats (wire copy)",
        "text": "AAA  beats estimates.",
        "url": "",
    },  # same ticker, day and text: a duplicate
    {
        "ticker": "AAA",
        "published": "2020-01-06T15:59:00",
        "source": "news",
        "title": "",
        "text": "AAA before the close.",
        "url": "",
    },
    {
        "ticker": "AAA",
        "published": "2020-01-06T16:01:00",
        "source": "news",
        "title": "",
        "text": "AAA after the close.",
        "url": "",
    },
    {
        "ticker": "AAA",
        "published": "2020-01-07T10:00:00-05:00",
        "source": "10-Q",
        "title": "",
        "text": "AAA quarterly report.",
        "url": "",
    },
    {"ticker": "BBB", "published": "2020-01-07", "source": "", "title": "BBB headline only", "text": "", "url": ""},
    {"ticker": "", "published": "2020-01-07", "source": "news", "title": "", "text": "No ticker.", "url": ""},
    {"ticker": "BBB", "published": "2020-01-08", "source": "10k", "title": "", "text": "BBB annual report.", "url": ""},
]


def prices_folder(root: Path, aaa_rows: str | None = None) -> Path:
    """AAA: Close 100, Adj Close 50 (open 98, high 104, low 96); BBB: close only, 20."""
    root.mkdir(parents=True, exist_ok=True)
    days = ["2020-01-02", "2020-01-03", "2020-01-06", "2020-01-07", "2020-01-08", "2020-01-09", "2020-01-10"]
    (root / "AAA.csv").write_text(
        YAHOO + (aaa_rows if aaa_rows is not None else "".join(f"{d},98,104,96,100,50,1000\n" for d in days))
    )
    (root / "BBB.csv").write_text("Date,Close\n" + "".join(f"{d},20\n" for d in days))
    return root


def run_cli(args: list[str], capsys) -> tuple[int, str, str]:
    rc = main(args)
    out, err = capsys.readouterr()
    return rc, out, err


def first_seen(store: EventStore, event_id: str) -> dt.date | None:
    for d in DAYS:
        if any(e.id == event_id for e in store.view_at(d).events()):
            return d
    return None


def test_generic_table_counts_ids_metadata_and_prices(tmp_path, capsys):
    table = write_table(tmp_path / "items.csv", GENERIC)
    px = prices_folder(tmp_path / "px")
    out = tmp_path / "ds"
    rc, _, err = run_cli(["data", "import", "csv", str(table), "--prices", str(px), "--out", str(out)], capsys)
    assert rc == 0, err
    m = json.loads((out / "dataset.json").read_text())
    assert m["tickers"] == ["AAA", "BBB"]
    assert m["items"] == {"AAA": {"news": 3, "10-Q": 1}, "BBB": {"news": 1, "10-K": 1}}
    assert m["items_total"] == 6 and m["duplicates_dropped"] == 1
    assert m["notes"] == [
        "close-only prices for BBB: every ticker imported close-only (Close = Adj Close where given)",
        "1 rows without a ticker skipped",
        "1 items without text took their title as text",
    ]
    # BBB is close-only, so AAA is written close-only too, with Close = Adj Close
    assert m["prices"] == "close"
    assert pd.read_csv(out / "prices" / "AAA.csv").iloc[0].tolist() == ["2020-01-02", 50.0]

    evs = {e.id: e for e in DirectoryLoader(out / "events").load()}
    assert sorted(evs) == [
        "AAA-10-Q-20200107-0",
        "AAA-news-20200103-0",
        "AAA-news-20200106-0",
        "AAA-news-20200106-1",
        "BBB-10-K-20200108-0",
        "BBB-news-20200107-0",
    ]
    e = evs["AAA-news-20200103-0"]
    assert e.text == "AAA beats estimates."
    assert e.metadata == {
        "corpus": "csv",
        "date": "2020-01-03",
        "time": "date only",
        "visibility": "next-session",
        "title": "AAA beats",
        "url": "https://example.invalid/1",
    }
    assert evs["BBB-news-20200107-0"].text == "BBB headline only"
    assert evs["AAA-10-Q-20200107-0"].published_at == dt.datetime(2020, 1, 7, 15, 0, tzinfo=dt.timezone.utc)
    # found in review: a price file lost from the dataset was "unknown ticker 'BBB'" of a ticker it lists
    (out / "prices" / "BBB.csv").unlink()
    rc, _, err = run_cli(["backtest", "--data", str(out), "--ticker", "AAA", "--start", "2020-01-02"], capsys)
    assert rc == 2 and "dataset.json lists BBB, and prices/ holds no BBB.csv: an incomplete dataset" in err


def test_yahoo_prices_are_adjusted(tmp_path):
    px = prices_folder(tmp_path / "px")
    corpus = read([write_table(tmp_path / "t.csv", GENERIC[:1])], ImportOptions(tickers=("AAA",), prices=px))
    assert corpus.price_kind == "ohlcv"
    bars = validate_bars(corpus.prices["AAA"], "AAA", "test")
    # the volume in the adjusted price's units (Adj Close / Close = 0.5): 50 x 2000 is the day's $100,000
    assert bars.iloc[0][["open", "high", "low", "close", "volume"]].tolist() == [49.0, 52.0, 48.0, 50.0, 2000.0]


def test_visibility_date_only_and_after_close(tmp_path):
    table = write_table(tmp_path / "t.csv", GENERIC)
    px = prices_folder(tmp_path / "px")
    store = EventStore(read([table], ImportOptions(prices=px)).events)
    # Friday's date-only item: Monday's decision; 15:59 Monday: Monday; 16:01 Monday: Tuesday
    assert first_seen(store, "AAA-news-20200103-0") == dt.date(2020, 1, 6)
    assert first_seen(store, "AAA-news-20200106-0") == dt.date(2020, 1, 6)
    assert first_seen(store, "AAA-news-20200106-1") == dt.date(2020, 1, 7)
    # a date-only filing: the next trading day
    assert first_seen(store, "BBB-10-K-20200108-0") == dt.date(2020, 1, 9)
    same = EventStore(read([table], ImportOptions(prices=px, visibility="same-day")).events)
    assert first_seen(same, "AAA-news-20200103-0") == dt.date(2020, 1, 3)
    assert first_seen(same, "AAA-news-20200106-1") == dt.date(2020, 1, 7)  # a real time is never moved


def test_fnspid_names_as_published(tmp_path):
    """FNSPID's columns, dates in UTC ("... UTC"): 20:59 UTC is 15:59 New York
    in January, 21:01 UTC is after the close; 00:00:00 UTC is a bare date."""
    cols = "Date,Article_title,Stock_symbol,Url,Publisher,Author,Article,Lsa_summary,Luhn_summary,Textrank_summary,Lexrank_summary\n"
    rows = [
        "2020-01-06 20:59:00 UTC,AAA up,AAA,https://example.invalid/a,Wire,Ann,AAA rallies.,s,s,s,s",
        "2020-01-06 21:01:00 UTC,AAA down,AAA,https://example.invalid/b,Wire,,AAA slips.,,,,",
        "2020-01-03 00:00:00 UTC,AAA title only,AAA,,Wire,,,,,,",
        "2020-01-07 14:00:00 UTC,ZZZ news,ZZZ,,Wire,,Other ticker.,,,,",
    ]
    table = tmp_path / "nasdaq_exteral_data.csv"
    table.write_text(cols + "\n".join(rows) + "\n")
    px = prices_folder(tmp_path / "px")
    corpus = read([table], ImportOptions(tickers=("AAA",), prices=px))
    evs = {e.id: e for e in corpus.events}
    assert sorted(evs) == ["AAA-news-20200103-0", "AAA-news-20200106-0", "AAA-news-20200106-1"]
    assert evs["AAA-news-20200106-0"].metadata == {
        "corpus": "csv",
        "date": "2020-01-06",
        "time": "15:59:00",
        "visibility": "next-session",
        "title": "AAA up",
        "url": "https://example.invalid/a",
        "publisher": "Wire",
        "author": "Ann",
    }
    assert evs["AAA-news-20200103-0"].text == "AAA title only"
    assert evs["AAA-news-20200103-0"].metadata["time"] == "date only"
    store = EventStore(corpus.events)
    assert first_seen(store, "AAA-news-20200106-0") == dt.date(2020, 1, 6)
    assert first_seen(store, "AAA-news-20200106-1") == dt.date(2020, 1, 7)
    assert first_seen(store, "AAA-news-20200103-0") == dt.date(2020, 1, 6)


def test_csv_and_jsonl_give_the_same_dataset(tmp_path, capsys):
    rows = table_rows(["AAA", "BBB"], "2020-01-01", "2020-03-31", 80)
    px = tmp_path / "px"
    write_price_folder(px, ["AAA", "BBB"], "2019-12-02", "2020-04-30")
    outs = []
    for name in ("t.csv", "t.jsonl"):
        out = tmp_path / f"ds-{name}"
        assert (
            run_cli(
                [
                    "data",
                    "import",
                    "csv",
                    str(write_table(tmp_path / name, rows)),
                    "--prices",
                    str(px),
                    "--out",
                    str(out),
                ],
                capsys,
            )[0]
            == 0
        )
        outs.append(out)
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file() and p.name != "dataset.json")
    assert len(files) == 4
    for f in files:
        assert (outs[0] / f).read_bytes() == (outs[1] / f).read_bytes(), f
    m = [json.loads((o / "dataset.json").read_text()) for o in outs]
    assert m[0]["items"] == m[1]["items"] and m[0]["items_total"] == 80


def test_items_and_prices_after_t_change_nothing_up_to_t(tmp_path):
    cut = dt.date(2020, 2, 14)
    rows = table_rows(["AAA", "BBB"], "2020-01-01", "2020-03-31", 300)
    later = []
    for r in rows:
        day = dt.date.fromisoformat(r["published"][:10])
        if day > cut:
            later.append({**r, "text": f"{r['ticker']} bankruptcy fraud {day}", "title": "leaked"})
        else:
            later.append(r)
    later += [
        {**r, "text": r["text"] + " (second copy)", "published": r["published"][:10]}
        for r in rows
        if dt.date.fromisoformat(r["published"][:10]) > cut
    ]
    px_a, px_b = tmp_path / "px-a", tmp_path / "px-b"
    frames = write_price_folder(px_a, ["AAA", "BBB"], "2019-12-02", "2020-04-30")
    px_b.mkdir()
    for t, f in frames.items():
        f = f.copy()
        after = pd.to_datetime(f["Date"]).dt.date > cut
        for c in ("Open", "High", "Low", "Close", "Adj Close"):
            f.loc[after, c] = f.loc[after, c] * 1.7
        f.to_csv(px_b / f"{t}.csv", index=False)
    a = read([write_table(tmp_path / "a.csv", rows)], ImportOptions(prices=px_a))
    b = read([write_table(tmp_path / "b.csv", later)], ImportOptions(prices=px_b))
    sa, sb = EventStore(a.events), EventStore(b.events)
    days = [d for d in pd.bdate_range("2020-01-01", "2020-03-31")]
    upto = [d for d in days if d.date() <= cut]
    for d in upto:
        assert [e.to_dict() for e in sa.view_at(d).events()] == [e.to_dict() for e in sb.view_at(d).events()]
    assert len(sa.view_at(upto[-1]).events()) > 100
    nxt = [d for d in days if d.date() > cut][1]
    assert [e.to_dict() for e in sa.view_at(nxt).events()] != [e.to_dict() for e in sb.view_at(nxt).events()]
    for t in ("AAA", "BBB"):
        keep = pd.to_datetime(a.prices[t]["Date"]).dt.date <= cut
        assert a.prices[t][keep].reset_index(drop=True).equals(b.prices[t][keep].reset_index(drop=True))
        assert not a.prices[t]["Close"].equals(b.prices[t]["Close"])


# ---- bad input: one line, exit 2, nothing written ----------------------------------------------


def _rows_without(col: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k != col} for r in GENERIC]


AAA_DAYS = ["2020-01-02", "2020-01-03", "2020-01-06"]
BAD = [
    ("no ticker column", _rows_without("ticker"), None, [], "no ticker column; name it ticker or symbol"),
    ("no date column", _rows_without("published"), None, [], "no date column; name it published_at or published"),
    ("unknown ticker", GENERIC, None, ["--tickers", "AAA,ZZZ"], "has no ZZZ; it holds AAA, BBB"),
    (
        "zero price",
        GENERIC,
        "2020-01-02,98,104,96,100,50,1000\n2020-01-03,98,104,96,0,50,1000\n",
        [],
        "non-positive Close (0) on 2020-01-03",
    ),
    (
        "inf price",
        GENERIC,
        "2020-01-02,98,104,96,100,50,1000\n2020-01-03,98,104,96,100,inf,1000\n",
        [],
        "infinite Adj Close on 2020-01-03",
    ),
    (
        "nan price",
        GENERIC,
        "2020-01-02,98,104,96,100,50,1000\n2020-01-03,,104,96,100,50,1000\n",
        [],
        "missing or non-numeric Open on 2020-01-03",
    ),
    (
        "bad date",
        [*GENERIC, {**GENERIC[0], "published": "03/01/2020"}],
        None,
        [],
        "row 9: published '03/01/2020' is not YYYY-MM-DD",
    ),
    (
        "date past the last instant",  # found in review: an OverflowError traceback
        [*GENERIC, {**GENERIC[0], "published": "9999-12-31T23:59:59-12:00"}],
        None,
        [],
        "row 9: published '9999-12-31T23:59:59-12:00' is out of range (a mistyped year?)",
    ),
    ("bad source", [*GENERIC, {**GENERIC[0], "source": "tweet"}], None, [], "row 9: source 'tweet' is not one of"),
    ("no price file", [*GENERIC, {**GENERIC[0], "ticker": "CCC"}], None, [], "has no CCC.csv"),
]


@pytest.mark.parametrize("case", BAD, ids=[c[0] for c in BAD])
def test_bad_input_one_line_exit_2_nothing_written(case, tmp_path, capsys):
    _, rows, aaa, flags, expect = case
    table = write_table(tmp_path / "t.csv", rows)
    px = prices_folder(tmp_path / "px", aaa)
    out = tmp_path / "ds"
    rc, _, err = run_cli(["data", "import", "csv", str(table), "--prices", str(px), "--out", str(out), *flags], capsys)
    assert rc == 2
    assert err.count("\n") == 1 and err.startswith("fincon: error: ") and expect in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["px", "t.csv"]


def test_bad_out_and_missing_files(tmp_path, capsys):
    table = write_table(tmp_path / "t.csv", GENERIC)
    px = prices_folder(tmp_path / "px")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "keep.txt").write_text("mine\n")
    cases = [
        ([str(table), "--prices", str(px), "--out", str(busy)], "exists and is not a fincon dataset"),
        ([str(tmp_path / "none.csv"), "--prices", str(px), "--out", str(tmp_path / "x")], "none.csv: no such file"),
        ([str(table), "--prices", str(tmp_path / "nopx"), "--out", str(tmp_path / "x")], "nopx: no such folder"),
        ([str(table), "--out", str(tmp_path / "x")], "give the price files with --prices DIR"),
    ]
    for args, expect in cases:
        rc, _, err = run_cli(["data", "import", "csv", *args], capsys)
        assert rc == 2 and err.count("\n") == 1 and expect in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["busy", "px", "t.csv"]
    assert [p.name for p in busy.iterdir()] == ["keep.txt"]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_streamed_in_blocks_same_items_and_row_numbers(suffix, tmp_path, monkeypatch):
    """The table is read in blocks (FNSPID is millions of rows): blocks of 3
    rows give the same items, and an error still names the file's row."""
    import fincon.data.importers.table as table_mod

    px = prices_folder(tmp_path / "px")
    path = write_table(tmp_path / f"t{suffix}", GENERIC)
    whole = read([path], ImportOptions(prices=px))
    monkeypatch.setattr(table_mod, "CHUNK_ROWS", 3)
    blocks = read([path], ImportOptions(prices=px))
    assert [e.to_json() for e in blocks.events] == [e.to_json() for e in whole.events]
    assert blocks.notes == whole.notes and blocks.duplicates == whole.duplicates == 1
    only_bbb = read([path], ImportOptions(prices=px, tickers=("BBB",)))
    assert sorted(e.id for e in only_bbb.events) == ["BBB-10-K-20200108-0", "BBB-news-20200107-0"]
    bad = write_table(tmp_path / f"bad{suffix}", [*GENERIC, {**GENERIC[5], "published": "next week"}])
    with pytest.raises(Exception, match=r"row 9: published 'next week' is not YYYY-MM-DD"):
        read([bad], ImportOptions(prices=px))


def test_gzipped_price_files_are_read_as_a_run_reads_them(tmp_path):
    """--prices refused a folder of TICKER.csv.gz ("has no TSLA.csv"), which `--data` reads, and in which
    the sample's own prices are kept; a plain TICKER.csv beside its .csv.gz is the one read."""
    import gzip

    px = prices_folder(tmp_path / "px")
    gz = tmp_path / "gz"
    gz.mkdir()
    for t in ("AAA", "BBB"):
        (gz / f"{t}.csv.gz").write_bytes(gzip.compress((px / f"{t}.csv").read_bytes()))
    table = write_table(tmp_path / "t.csv", GENERIC[:1])
    plain, zipped = (read([table], ImportOptions(tickers=("AAA",), prices=d)) for d in (px, gz))
    assert zipped.prices["AAA"].equals(plain.prices["AAA"]) and zipped.price_kind == "ohlcv"
    (gz / "AAA.csv").write_text((px / "BBB.csv").read_text())  # beside it, a plain file of other prices
    assert read([table], ImportOptions(tickers=("AAA",), prices=gz)).price_kind == "close"


def test_a_row_with_more_fields_than_the_header_is_refused_naming_its_line(tmp_path, capsys):
    """An unquoted comma in a title shifted the row's text into the url (and
    a ticker column in FNSPID's order) with exit 0: pandas drops a row's extra
    fields without a word when only some columns are read. One line, naming
    the line and what to do."""
    px = prices_folder(tmp_path / "px")
    table = tmp_path / "t.csv"
    table.write_text(
        "ticker,published,source,title,text,url\n"
        "AAA,2020-01-03,news,AAA beats,Revenue rose,https://x.invalid/1\n"
        "AAA,2020-01-06,news,AAA misses, shares fall,Revenue fell 9%,https://x.invalid/2\n"
    )
    rc, _, err = run_cli(
        ["data", "import", "csv", str(table), "--prices", str(px), "--out", str(tmp_path / "ds")], capsys
    )
    assert rc == 2 and err.count("\n") == 1, err
    assert "line 3 has 7 fields where the header has 6" in err and "quote" in err, err
    assert not (tmp_path / "ds").exists()


def test_rows_that_each_hold_one_field_too_many_are_refused_not_shifted(tmp_path, capsys):
    """Found in review: when every row held one unquoted comma, pandas read the first column as an index
    and shifted the rest left: 0 items imported, exit 0 (and a price file with a trailing comma on each
    row: "date '10' ... is not YYYY-MM-DD"). One line each, nothing written."""
    px = prices_folder(tmp_path / "px")
    table = tmp_path / "t.csv"
    table.write_text(
        "ticker,published,title,text\n"
        "AAA,2020-01-03,Results,Revenue up, margins down\n"
        "AAA,2020-01-06,Guidance,Outlook raised, shares up\n"
    )
    argv = ["data", "import", "csv", str(table), "--prices", str(px), "--tickers", "AAA", "--out", str(tmp_path / "ds")]
    rc, _, err = run_cli(argv, capsys)
    assert rc == 2 and err.count("\n") == 1 and "rows hold more fields than the header's 4" in err, err
    assert not (tmp_path / "ds").exists()
    table.write_text('ticker,published,title,text\nAAA,2020-01-03,Results,"Revenue up, margins down"\n')
    price = next(px.glob("AAA*"))
    head, *rows = price.read_text().splitlines()
    price.write_text("\n".join([head, *(row + "," for row in rows)]) + "\n")
    rc, _, err = run_cli(argv, capsys)
    assert rc == 2 and f"{price}: its rows hold more fields than the header's" in err, err
    assert not (tmp_path / "ds").exists()


def test_a_dotted_tickers_price_file_is_found(tmp_path, capsys):
    """BRK.B.csv was read as BRK's ("--prices has no BRK.B.csv")."""
    px = prices_folder(tmp_path / "px")
    (px / "AAA.csv").rename(px / "BRK.B.csv")
    rows = [{**GENERIC[0], "ticker": "BRK.B"}]
    table = write_table(tmp_path / "t.csv", rows)
    out = tmp_path / "ds"
    rc, _, err = run_cli(
        ["data", "import", "csv", str(table), "--prices", str(px), "--out", str(out), "--tickers", "BRK.B"], capsys
    )
    assert rc == 0, err
    assert (out / "prices" / "BRK.B.csv").exists() or (out / "prices" / "BRK.B.csv.gz").exists()
    from fincon.data.sources import CsvDirSource

    assert "BRK.B" in CsvDirSource(px).tickers()


def test_a_labelled_strategy_reads_the_datasets_events(tmp_path, capsys):
    """finsent@b, finmem@b and fincon@rules kept the bundled sample's news beside a dataset with its
    own (a label is not a registered name): each reads the corpus its unlabelled twin reads."""
    from fincon.config import RunConfig
    from fincon.workflow import inputs_for
    from fincon.workflow.runner import with_events

    table = write_table(tmp_path / "t.csv", GENERIC)
    out = tmp_path / "ds"
    assert (
        run_cli(
            ["data", "import", "csv", str(table), "--prices", str(prices_folder(tmp_path / "px")), "--out", str(out)],
            capsys,
        )[0]
        == 0
    )
    names = ["finsent", "finsent@b", "finmem@b", "fincon@rules"]
    cfg = RunConfig.model_validate(
        {"tickers": ["AAA"], "data": {"source": "csv", "dir": str(out)}, "strategies": names,
         "start": "2020-01-02", "end": "2020-01-10"}
    )  # fmt: skip
    resolved = with_events(cfg, inputs_for(cfg))
    assert {n: resolved.params(n)["events"] for n in names} == {n: str(out / "events") for n in names}


def test_the_folder_a_command_runs_in_is_refused_as_out(tmp_path, capsys, monkeypatch):
    """`--out .` in an empty folder staged the import inside itself and failed as "written by another
    command while this one ran": one line that says what is wrong."""
    table = write_table(tmp_path / "t.csv", GENERIC)
    px = prices_folder(tmp_path / "px")
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    rc, _, err = run_cli(["data", "import", "csv", str(table), "--prices", str(px), "--out", "."], capsys)
    assert rc == 2 and "--out . is the folder this command runs in; give a new folder" in err, err
    assert list(here.iterdir()) == []


def test_an_item_after_the_close_renumbers_nothing_seen_that_day_and_a_repost_keeps_the_first(tmp_path):
    """Found in review: ids counted in file order within a day, so one item published after day D's close,
    added to a table written newest first, renumbered D's items and the team's rules analyst read others on
    D (hold became a 25 % short); a repost after the close was kept and the morning's item dropped from D.
    Items are numbered in publication order now (file order among equals), a duplicate keeps the earliest."""
    day = "2020-01-06"
    morning = [
        {"ticker": "AAA", "published": f"{day}T0{h}:00:00-05:00", "source": "news", "title": "", "text": f"AAA item {h}.", "url": ""}
        for h in range(5, 9)
    ]  # fmt: skip
    late = {**morning[0], "published": f"{day}T18:30:00-05:00", "text": "AAA after hours."}
    repost = {**morning[1], "published": f"{day}T18:00:00-05:00"}
    seen = []
    for i, rows in enumerate((morning, [*morning, late], [*morning, repost])):
        path = write_table(tmp_path / f"t{i}.csv", list(reversed(rows)))  # newest first
        store = EventStore(read([path], ImportOptions(prices=prices_folder(tmp_path / f"px{i}"))).events)
        seen.append([(e.id, e.text, str(e.published_at)) for e in store.view_at(dt.date(2020, 1, 6)).events()])
    assert seen[0] == seen[1] == seen[2] and len(seen[0]) == 4, seen
    assert [t for _, t, _ in seen[0]] == [f"AAA item {h}." for h in range(5, 9)]
    assert [i for i, _, _ in seen[0]] == [f"AAA-news-20200106-{n}" for n in range(4)]
