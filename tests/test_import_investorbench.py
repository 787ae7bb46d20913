"""`fincon data import investorbench`: the format, the point-in-time rule,
close-only prices, the calendar, and bad input.

The small corpora here are written by the tests in InvestorBench's layout
(our own text); the real files are read from ../shared/data/investorbench
when that folder exists (third-party text, never copied into the repo).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.data.dataset import open_dataset
from fincon.data.events.loaders.directory import DirectoryLoader
from fincon.data.events.store import EventStore

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "investorbench"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data/investorbench is absent")


def write_ib(path: Path, days: dict) -> Path:
    """A file in InvestorBench's layout; gzipped when the name ends in .gz."""
    body = json.dumps(days).encode()
    path.write_bytes(gzip.compress(body, mtime=0) if path.name.endswith(".gz") else body)
    return path


def small_days(n: int = 12, start: str = "2021-01-04") -> dict:
    """n weekdays of closes and news; day 3 has a 10-Q, day 5 a duplicate item."""
    out = {}
    for i, d in enumerate(pd.bdate_range(start, periods=n)):
        news = [f"Acme item {i} about demand. (Sentiment: {'positive' if i % 2 else 'negative'})"]
        rec = {"prices": 100.0 + i, "news": news, "10k": [], "10q": []}
        if i == 3:
            rec["10q"] = ["Acme 10-Q: revenue rose 5% to $1.2 billion."]
        if i == 5:
            rec["news"] = news + [news[0]]  # same text, same day: imported once
        out[str(d.date())] = rec
    return out


def run_cli(*argv) -> int:
    """The exit status a user sees: main's return value, or argparse's exit
    for a flag it refuses itself (a non-ISO date)."""
    try:
        return main([str(a) for a in argv])
    except SystemExit as exc:
        return int(exc.code or 0)


def events_of(root: Path) -> EventStore:
    return EventStore(DirectoryLoader(root / "events").load(), root=root / "events")


def test_import_small_file_manifest_prices_and_items(tmp_path, capsys):
    src = write_ib(tmp_path / "acme.json", small_days())
    out = tmp_path / "ds"
    assert run_cli("data", "import", "investorbench", src, "--out", out) == 0
    m = open_dataset(out).manifest
    assert m.format == "investorbench" and m.tickers == ["ACME"]
    assert (str(m.start), str(m.end)) == ("2021-01-04", "2021-01-19")
    assert m.prices == "close" and m.calendar.name == "exchange" and m.calendar.days_per_year == 252
    assert m.visibility == "next-session"
    assert m.items == {"ACME": {"news": 12, "10-Q": 1}} and m.items_total == 13
    assert m.duplicates_dropped == 1
    assert m.sources[0].sha256 == __import__("hashlib").sha256(src.read_bytes()).hexdigest()
    prices = pd.read_csv(out / "prices" / "ACME.csv")
    assert list(prices.columns) == ["Date", "Close"] and len(prices) == 12
    assert prices["Close"].iloc[4] == 104.0
    evs = events_of(out).all_events()
    news = [e for e in evs if e.source == "news"]
    # the tag is parsed out of the text into metadata
    assert news[0].text == "Acme item 0 about demand." and news[0].metadata["sentiment"] == "negative"
    assert news[1].metadata["sentiment"] == "positive"
    assert "data info" not in capsys.readouterr().err


def test_import_is_byte_identical(tmp_path):
    src = write_ib(tmp_path / "acme.json.gz", small_days())
    for name in ("a", "b"):
        assert run_cli("data", "import", "investorbench", src, "--out", tmp_path / name) == 0
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert len(files) == 3
    for f in files:
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes(), f


def test_date_only_item_visible_next_session_and_same_day_option(tmp_path):
    src = write_ib(tmp_path / "acme.json", small_days())
    run_cli("data", "import", "investorbench", src, "--out", tmp_path / "pit")
    run_cli("data", "import", "investorbench", src, "--out", tmp_path / "same", "--same-day")
    day3, day4 = pd.Timestamp("2021-01-07"), pd.Timestamp("2021-01-08")
    pit, same = events_of(tmp_path / "pit"), events_of(tmp_path / "same")
    # the 10-Q dated 2021-01-07 (date only): next trading day by default ...
    assert pit.view_at(day3).latest("ACME", "10-Q") is None
    assert pit.view_at(day4).latest("ACME", "10-Q") is not None
    # ... and that day's own close under the benchmark's convention
    assert same.view_at(day3).latest("ACME", "10-Q") is not None
    assert open_dataset(tmp_path / "same").manifest.visibility == "same-day"
    assert "BENCHMARK CONVENTION" in open_dataset(tmp_path / "same").manifest.visibility_rule
    # a Friday item is first visible on Monday
    fri = [e for e in pit.all_events() if e.metadata["date"] == "2021-01-08" and e.source == "news"][0]
    assert not pit.view_at("2021-01-08").events("ACME", ["news"])[-1].id == fri.id
    assert fri.id in {e.id for e in pit.view_at("2021-01-11").events("ACME", ["news"])}


def test_keep_sentiment_leaves_the_tag_in_the_text(tmp_path):
    src = write_ib(tmp_path / "acme.json", small_days(3))
    run_cli("data", "import", "investorbench", src, "--out", tmp_path / "k", "--keep-sentiment")
    e = events_of(tmp_path / "k").all_events()[0]
    assert e.text.endswith("(Sentiment: negative)") and e.metadata["sentiment"] == "negative"


def test_future_items_and_prices_change_nothing_up_to_t(tmp_path):
    days = small_days(12)
    t = "2021-01-12"
    perturbed = json.loads(json.dumps(days))
    for d, rec in perturbed.items():
        if d > t:
            rec["prices"] *= 3.0
            rec["news"] = [f"A different future {d}. (Sentiment: negative)"] * 2
            rec["10k"] = ["A 10-K from the future."]
    run_cli("data", "import", "investorbench", write_ib(tmp_path / "acme.json", days), "--out", tmp_path / "a")
    (tmp_path / "p").mkdir()
    run_cli(
        "data", "import", "investorbench", write_ib(tmp_path / "p" / "acme.json", perturbed), "--out", tmp_path / "b"
    )
    a, b = events_of(tmp_path / "a"), events_of(tmp_path / "b")
    for d in pd.bdate_range("2021-01-04", t):
        assert [e.to_json() for e in a.view_at(d).events()] == [e.to_json() for e in b.view_at(d).events()]
    pa, pb = (pd.read_csv(tmp_path / x / "prices" / "ACME.csv") for x in ("a", "b"))
    assert pa[pa.Date <= t].equals(pb[pb.Date <= t])


def test_close_only_refuses_next_open_fill(tmp_path, capsys):
    src = write_ib(tmp_path / "acme.json", small_days())
    run_cli("data", "import", "investorbench", src, "--out", tmp_path / "ds")
    capsys.readouterr()
    code = run_cli(
        "backtest",
        "--ticker",
        "ACME",
        "--data",
        tmp_path / "ds",
        "--start",
        "2021-01-04",
        "--end",
        "2021-01-19",
        "--fill",
        "next-open",
        "--out",
        tmp_path / "run",
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert err[0].startswith("fincon: error: --fill next-open needs an Open column") and "ACME" in err[0]
    assert not (tmp_path / "run").exists()
    # at the close it runs, and buy-and-hold's CR is the log return of the closes
    assert (
        run_cli(
            "backtest",
            "--ticker",
            "ACME",
            "--data",
            tmp_path / "ds",
            "--start",
            "2021-01-04",
            "--end",
            "2021-01-19",
            "--out",
            tmp_path / "run",
            "--no-progress",
        )
        == 0
    )
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    import math

    assert metrics["days_per_year"] == 252 and "annualised with 252 days" in metrics["annualisation"]
    assert abs(metrics["cr_pct"] - 100 * math.log(111 / 100)) < 0.05  # all-in at the first close


def test_seven_day_calendar_annualises_with_365(tmp_path):
    days = {}
    for i, d in enumerate(pd.date_range("2023-01-01", periods=30, freq="D")):
        days[str(d.date())] = {
            "prices": 20000.0 * (1.01 if i % 3 else 0.985) ** i,
            "news": [f"coin item {i} (sentiment:neutral)"],
        }
    src = write_ib(tmp_path / "coin.json", days)
    assert run_cli("data", "import", "investorbench", src, "--out", tmp_path / "ds") == 0
    m = open_dataset(tmp_path / "ds").manifest
    assert m.calendar.name == "24/7" and m.calendar.days_per_year == 365
    assert m.items == {"COIN": {"news": 30}}
    assert (
        run_cli(
            "backtest",
            "--ticker",
            "COIN",
            "--data",
            tmp_path / "ds",
            "--start",
            "2023-01-01",
            "--end",
            "2023-01-30",
            "--out",
            tmp_path / "run",
            "--no-progress",
        )
        == 0
    )
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["days_per_year"] == 365 and metrics["n_days"] == 30
    v = pd.read_csv(tmp_path / "run" / "equity.csv")["value"].to_numpy()
    import numpy as np

    r = np.log(v[1:] / v[:-1])
    assert metrics["sharpe"] == pytest.approx(r.mean() / r.std(ddof=1) * np.sqrt(365), rel=1e-6)


def _sharpe(run: Path, days: int) -> float:
    import numpy as np

    v = pd.read_csv(run / "equity.csv")["value"].to_numpy()
    r = np.log(v[1:] / v[:-1])
    return float(r.mean() / r.std(ddof=1) * np.sqrt(days))


def test_each_run_annualises_with_its_own_tickers_calendar(tmp_path):
    """A dataset that holds a coin (a bar every day) and a stock (weekdays)
    has a 24/7 calendar as a whole; the stock's runs trade weekdays and are
    annualised with 252 days, not 365 (InvestorBench's btc and hon imported
    together gave HON's buy-and-hold a Sharpe of 1.857 where its own
    calendar gives 1.543), the coin's with 365 even over a window of
    weekdays, and the two together trade the sessions they share (weekdays)."""
    coin = {}
    for i, d in enumerate(pd.date_range("2023-01-01", periods=40, freq="D")):
        coin[str(d.date())] = {"prices": 20000.0 * (1.01 if i % 3 else 0.985) ** i, "news": [f"coin item {i}"]}
    stock = small_days(28, start="2023-01-02")
    for i, rec in enumerate(stock.values()):
        rec["prices"] = 100.0 * (1.02 if i % 2 else 0.99) ** i
    srcs = [write_ib(tmp_path / "coin.json", coin), write_ib(tmp_path / "acme.json", stock)]
    assert run_cli("data", "import", "investorbench", *srcs, "--out", tmp_path / "ds") == 0
    m = open_dataset(tmp_path / "ds").manifest
    assert m.calendar.name == "24/7"  # the union of the two files' days
    assert any("ACME: exchange" in n and "COIN: 24/7" in n for n in m.notes), m.notes
    want = {  # tickers, window -> days a year, sessions traded, words in the label
        ("ACME",): (252, 20, "exchange calendar of ACME's bars (the dataset's is 24/7)"),
        ("COIN",): (365, 28, "dataset calendar 24/7"),
        ("ACME", "COIN"): (252, 20, "exchange calendar of ACME+COIN's bars (the dataset's is 24/7)"),
    }
    for tickers, (days, n, label) in want.items():
        run = tmp_path / "-".join(tickers)
        window = (
            ("2023-01-02", "2023-01-27") if len(tickers) > 1 or tickers == ("ACME",) else ("2023-01-02", "2023-01-29")
        )
        argv = ["backtest", "--tickers", ",".join(tickers), "--data", tmp_path / "ds", "--start", window[0]]
        argv += ["--end", window[1], "--out", run, "--no-progress"]
        assert run_cli(*argv) == 0, tickers
        metrics = json.loads((run / "metrics.json").read_text())
        assert (metrics["days_per_year"], metrics["n_days"]) == (days, n), tickers
        assert metrics["annualisation"] == f"annualised with {days} days: {label}"
        assert metrics["sharpe"] == pytest.approx(_sharpe(run, days), rel=1e-6)
    # the coin alone over a window of weekdays only is still annualised with 365
    run = tmp_path / "coin-weekdays"
    argv = ["backtest", "--ticker", "COIN", "--data", tmp_path / "ds", "--start", "2023-01-02", "--end", "2023-01-06"]
    assert run_cli(*argv, "--out", run, "--no-progress") == 0
    assert json.loads((run / "metrics.json").read_text())["days_per_year"] == 365


def test_a_coin_with_days_missing_is_said_to_be_annualised_too_high(tmp_path, capsys):
    """InvestorBench's ETH has no bar on 65 of the 383 days it spans (52 of them weekend days):
    a return across a gap spans several days, so 365 a year annualises each row as one day
    (Sharpe and volatility about sqrt(383 / 318) = 1.10x too high). The import says so in its
    notes, with the days a year its bars have, and a coin without gaps gets no such note."""
    days = pd.date_range("2023-01-01", periods=40, freq="D")
    gone = [d for d in days[1:] if d.day_of_week >= 5][:6] + [days[10]]  # three weekends and a Wednesday
    coin = {
        str(d.date()): {"prices": 100.0 + i, "news": [f"coin item {i}"]} for i, d in enumerate(days) if d not in gone
    }
    whole = {str(d.date()).replace("2023", "2022"): {"prices": 50.0 + i, "news": []} for i, d in enumerate(days)}
    srcs = [write_ib(tmp_path / "gappy.json", coin), write_ib(tmp_path / "whole.json", whole)]
    assert run_cli("data", "import", "investorbench", *srcs, "--out", tmp_path / "ds") == 0
    notes = [n for n in open_dataset(tmp_path / "ds").manifest.notes if "no bar" in n]
    assert notes == [
        "GAPPY: 7 of 40 calendar days have no bar (6 of them weekend days) in a 24/7 market: a return "
        "across a gap spans several days, so annualised with 365 its Sharpe and volatility come out "
        "about 1.10x too high; metrics.days_per_year: 301 (its bars a year) annualises with the sessions it has"
    ]
    # a run on it says so in its annualisation line (and on stderr); with the days set, as it says
    run = tmp_path / "run"
    argv = ["backtest", "--ticker", "GAPPY", "--data", tmp_path / "ds", "--start", "2023-01-02", "--end", "2023-02-09"]
    assert run_cli(*argv, "--out", run, "--no-progress") == 0
    line = json.loads((run / "metrics.json").read_text())["annualisation"]
    assert line == "annualised with 365 days: dataset calendar 24/7; " + notes[0]
    assert notes[0] in capsys.readouterr().err
    (tmp_path / "days.yaml").write_text("metrics:\n  days_per_year: 301\n")
    assert run_cli(*argv, "--out", tmp_path / "run301", "--no-progress", "--config", tmp_path / "days.yaml") == 0
    metrics = json.loads((tmp_path / "run301" / "metrics.json").read_text())
    assert metrics["days_per_year"] == 301 and metrics["annualisation"].startswith("annualised with 301 days, set in")
    assert metrics["sharpe"] == pytest.approx(_sharpe(tmp_path / "run301", 301), rel=1e-6)
    # an experiment says it once, before its first unit (its units run without warnings)
    from fincon.workflow.experiment import check_inputs, load_experiment

    exp = load_experiment(None, {"tickers": ["GAPPY"], "data.source": "csv", "data.dir": str(tmp_path / "ds"), "team.brain": "rules",
                                 "train.start": "2023-01-02", "train.end": "2023-01-20", "test.start": "2023-01-21",
                                 "test.end": "2023-02-09"})  # fmt: skip
    assert check_inputs(exp) == notes[0]


BAD = {
    "truncated gzip": lambda d: (d / "acme.json.gz").write_bytes(gzip.compress(b'{"2021-01-04": {"prices": 1}}')[:20]),
    "not JSON": lambda d: (d / "acme.json").write_text("<html>not json</html>"),
    "date key": lambda d: write_ib(d / "acme.json", {"04/01/2021": {"prices": 1.0, "news": []}}),
    "price zero": lambda d: write_ib(d / "acme.json", {"2021-01-04": {"prices": 0, "news": []}}),
    "price NaN": lambda d: (d / "acme.json").write_text('{"2021-01-04": {"prices": NaN, "news": []}}'),
    "news without price": lambda d: write_ib(d / "acme.json", {**small_days(3), "2021-01-07": {"news": ["x"]}}),
    "top level list": lambda d: (d / "acme.json").write_text("[1, 2]"),
}
MESSAGES = {
    "truncated gzip": "truncated or corrupt gzip",
    "not JSON": "not valid JSON",
    "date key": "is not a date",
    "price zero": "not a positive finite number",
    "price NaN": "not a positive finite number",
    "news without price": "items but no price",
    "top level list": "expected a JSON object",
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_one_line_nothing_written(tmp_path, capsys, case):
    src_dir = tmp_path / "src"
    src_dir.mkdir()
    BAD[case](src_dir)
    (src,) = list(src_dir.iterdir())
    code = run_cli("data", "import", "investorbench", src, "--out", tmp_path / "ds")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("fincon: error: ")
    assert MESSAGES[case] in err[0], err[0]
    assert not (tmp_path / "ds").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["src"]  # no staging folder left behind


def test_bad_command_lines(tmp_path, capsys):
    src = write_ib(tmp_path / "acme.json", small_days(3))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    cases = [
        (["--tickers", "MSFT"], "has no MSFT"),
        (["--tickers", ""], "--tickers is empty"),  # an unset shell variable imported every ticker (review)
        (["--out", tmp_path / "busy"], "is not a fincon dataset"),
        (["--start", "5/10/2021"], "is not a date"),
        (["--start", "2021-02-01", "--end", "2021-01-01"], "is after --end"),
        (["--prices", tmp_path], "--prices is for the csv format"),
    ]
    for extra, needle in cases:
        argv = ["data", "import", "investorbench", src]
        if "--out" not in extra:
            argv += ["--out", tmp_path / "ds"]
        assert run_cli(*argv, *extra) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], (extra, err)
        assert not (tmp_path / "ds").exists()
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    # an existing dataset needs --replace
    assert run_cli("data", "import", "investorbench", src, "--out", tmp_path / "ds") == 0
    assert run_cli("data", "import", "investorbench", src, "--out", tmp_path / "ds") == 2
    assert "pass --replace" in capsys.readouterr().err
    assert run_cli("data", "import", "investorbench", src, "--out", tmp_path / "ds", "--replace") == 0


def test_data_info_prints_the_manifest(tmp_path, capsys):
    src = write_ib(tmp_path / "acme.json", small_days())
    run_cli("data", "import", "investorbench", src, "--out", tmp_path / "ds")
    capsys.readouterr()
    assert run_cli("data", "info", tmp_path / "ds") == 0
    out = capsys.readouterr().out
    assert "investorbench" in out and "close only" in out and "next-session" in out
    table = [line.split() for line in out.splitlines()[-2:]]
    assert table == [["ticker", "news", "10-Q", "total"], ["ACME", "12", "1", "13"]]
    assert run_cli("data", "info", tmp_path / "ds", "--json") == 0
    assert json.loads(capsys.readouterr().out)["items_total"] == 13
    assert run_cli("data", "info", tmp_path) == 2
    assert "not a fincon dataset" in capsys.readouterr().err


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
@needs_shared
def test_shared_files_import_with_their_published_counts(tmp_path):
    srcs = [SHARED / f"{n}.json.gz" for n in ("msft", "jnj", "hon", "btc", "eth")]
    out = tmp_path / "ib"
    for s in srcs:
        assert run_cli("data", "import", "investorbench", s, "--out", out / s.name.split(".")[0]) == 0
    msft = open_dataset(out / "msft").manifest
    # README: 291 days, 3,636 news items, 5 filings (duplicates counted, not lost)
    assert msft.items["MSFT"]["news"] + msft.duplicates_dropped == 3636
    assert msft.items["MSFT"].get("10-K", 0) + msft.items["MSFT"].get("10-Q", 0) == 5
    assert (str(msft.start), str(msft.end)) == ("2020-03-12", "2021-05-06")
    assert len(pd.read_csv(out / "msft" / "prices" / "MSFT.csv")) == 291
    btc = open_dataset(out / "btc").manifest
    assert btc.calendar.days_per_year == 365 and "10-K" not in btc.items["BTC"]
    assert open_dataset(out / "hon").manifest.tickers == ["HON"]
    sentiments = [e.metadata.get("sentiment") for e in events_of(out / "msft").all_events() if e.source == "news"]
    assert None not in sentiments and sentiments.count("positive") > 3000


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_team_decisions_up_to_t_ignore_the_future(tmp_path):
    """The rules team on an imported corpus: perturbing every price and item
    after t leaves every decision up to t unchanged (and the next day's
    decision does see the change, so the test can fail)."""
    days = small_days(90, start="2020-09-01")
    for i, rec in enumerate(days.values()):
        rec["prices"] = 100.0 * (1.0 + 0.01 * ((i * 7) % 5 - 2)) ** (i % 4)
    dates = sorted(days)
    t = dates[80]
    perturbed = json.loads(json.dumps(days))
    for d in dates[81:]:
        perturbed[d]["prices"] *= 0.5
        perturbed[d]["news"] = ["Acme collapses; fraud found. (Sentiment: negative)"]
    (tmp_path / "p").mkdir()
    decisions = {}
    for name, content in (("a", days), ("b", perturbed)):
        src = write_ib(tmp_path / ("p" if name == "b" else ".") / "acme.json", content)
        assert run_cli("data", "import", "investorbench", src, "--out", tmp_path / f"ds-{name}") == 0
        assert (
            run_cli(
                "backtest",
                "--ticker",
                "ACME",
                "--strategy",
                "fincon",
                "--brain",
                "rules",
                "--data",
                tmp_path / f"ds-{name}",
                "--start",
                dates[70],
                "--end",
                dates[-1],
                "--no-benchmark",
                "--out",
                tmp_path / f"run-{name}",
                "--no-progress",
            )
            == 0
        )
        lines = (tmp_path / f"run-{name}" / "decisions.jsonl").read_text().splitlines()
        decisions[name] = {json.loads(x)["date"]: x for x in lines}
    assert sorted(decisions["a"]) == dates[70:89]  # the last day holds no decision: no next day to trade into
    upto = [d for d in decisions["a"] if d <= t]
    assert len(upto) == 11
    for d in upto:
        assert decisions["a"][d] == decisions["b"][d], d
    after = [d for d in decisions["a"] if d > t]
    assert any(decisions["a"][d] != decisions["b"][d] for d in after)


def test_a_listed_weekday_without_a_price_or_an_item_is_said(tmp_path, capsys):
    """Found in review: a listed Friday with ``"prices": null`` and no items vanished without a word (its
    move joined Monday's bar; a day with items and no price is refused). It is dropped and said now; a
    listed weekend without a price is no session and is not."""
    days = small_days()
    days["2021-01-08"] = {"prices": None, "news": [], "10k": [], "10q": []}  # a Friday
    days["2021-01-09"] = {"prices": None, "news": [], "10k": [], "10q": []}  # a Saturday
    assert (
        run_cli("data", "import", "investorbench", write_ib(tmp_path / "acme.json", days), "--out", tmp_path / "ds")
        == 0
    )
    notes = open_dataset(tmp_path / "ds").manifest.notes
    said = "weekdays listed with no price and no item dropped (the move over each falls into the next bar): "
    assert said + "ACME 1 (first 2021-01-08)" in notes, notes
    assert "2021-01-08" not in pd.read_csv(tmp_path / "ds" / "prices" / "ACME.csv")["Date"].tolist()
