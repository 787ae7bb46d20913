"""`fincon data sample`, `fincon data show`, `fincon transcribe`."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.data.events import sample_store
from fincon.data.events.loaders.directory import DirectoryLoader


def test_data_sample_writes_a_planted_corpus(tmp_path, capsys):
    out = tmp_path / "ev"
    rc = main(
        [
            "data",
            "sample",
            "--tickers",
            "TSLA,GM",
            "--start",
            "2022-03-01",
            "--end",
            "2022-05-31",
            "--planted",
            "news:0.3",
            "--out",
            str(out),
            "--no-audio",
        ]
    )
    assert rc == 0
    msg = capsys.readouterr().out
    assert "SYNTHETIC" in msg and "PLANTED" in msg
    evs = DirectoryLoader(out).load()
    assert {e.ticker for e in evs} == {"TSLA", "GM"}
    assert all(e.metadata["planted"] == "news:0.3" and e.synthetic for e in evs)
    assert {e.source for e in evs} == {"news", "analyst_note", "10-Q", "earnings_call"}
    assert all(e.audio is None for e in evs)
    assert "planted look-ahead source: news:0.3" in (out / "README.md").read_text()


def _sample(out, tickers, *extra):
    return main(["data", "sample", "--tickers", tickers, "--start", "2022-03-01", "--end", "2022-03-31",
                 "--no-audio", "--out", str(out), *extra])  # fmt: skip


def test_data_sample_never_mixes_two_corpora_in_one_folder(tmp_path, capsys):
    """A second sample written into a folder holding a planted TSLA corpus
    used to add its files beside it, under a README that named the new
    tickers only and 'planted look-ahead source: none'."""
    out = tmp_path / "ev"
    assert _sample(out, "TSLA", "--planted", "news:0.3") == 0
    assert _sample(out, "GM") == 2
    assert "already holds a sample corpus; pass --replace" in capsys.readouterr().err
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "TSLA.jsonl.gz"]
    assert _sample(out, "GM", "--replace") == 0  # replaced whole: the planted TSLA is gone
    assert sorted(p.name for p in out.iterdir()) == ["GM.jsonl.gz", "README.md"]
    assert "planted look-ahead source: none" in (out / "README.md").read_text()
    (out / "notes.txt").write_text("mine")
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert _sample(out, "TSLA", "--replace") == 2
    assert "holds notes.txt, which no `fincon data sample` wrote" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    other = tmp_path / "mine"
    other.mkdir()
    (other / "prices.csv").write_text("Date,Close\n")
    assert _sample(other, "TSLA", "--replace") == 2
    assert "is not a fincon sample corpus" in capsys.readouterr().err
    assert [p.name for p in other.iterdir()] == ["prices.csv"]
    (other / "README.md").write_text("# my project\n")  # a README of the user's is no sample corpus
    assert _sample(other, "TSLA") == 2
    assert f"--out {other}: {other}/README.md was not written by fincon" in capsys.readouterr().err
    assert sorted(p.name for p in other.iterdir()) == ["README.md", "prices.csv"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ev", "mine"]  # no staging folder left


def test_an_interrupted_sample_leaves_no_half_corpus(tmp_path, monkeypatch, capsys):
    from fincon.data.events import sample_folder

    calls = []

    def render(text, target, bitrate="12k"):
        calls.append(target)
        if len(calls) == 2:
            raise KeyboardInterrupt  # what SIGTERM becomes in the CLI
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"OggS")

    monkeypatch.setattr(sample_folder, "render_call_audio", render)
    monkeypatch.setattr("fincon.data.require_binary", lambda *a: "/bin/true")
    rc = main(["data", "sample", "--tickers", "TSLA", "--start", "2022-01-03", "--end", "2022-12-30",
               "--out", str(tmp_path / "ev")])  # fmt: skip
    assert rc == 130 and "partial output removed" in capsys.readouterr().err
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []  # before: ev/ with TSLA.jsonl.gz and one call


def test_a_day_with_no_item_visible_is_not_called_the_synthetic_sample(tmp_path, capsys):
    """Found in review: InvestorBench's MSFT on a day before any item was visible read "SYNTHETIC sample
    corpus; 0 events visible" (all() of no item is true)."""
    (tmp_path / "TSLA.jsonl").write_text(json.dumps({"id": "late", "ticker": "TSLA", "source": "news",
                                                     "published_at": "2022-11-01T17:00:00-04:00", "text": "x"}) + "\n")  # fmt: skip
    rc = main(["data", "show", "--ticker", "TSLA", "--date", "2022-11-01", "--events", str(tmp_path), "--k", "0",
               "--json"])  # fmt: skip
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["visible_events"] == 0 and out["synthetic"] is False


def test_data_show_json(capsys):
    rc = main(["data", "show", "--ticker", "TSLA", "--date", "2022-11-01", "--embedder", "hashing", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["synthetic"] and out["decision_time"] == "2022-11-01T16:00:00-04:00"

    assert [e["id"] for e in out["new_today"]] == ["TSLA-call-2022Q3", "TSLA-news-20221101-1", "TSLA-news-20221101-0"]
    assert len(out["memories"]) == 5
    for m in out["memories"]:
        assert m["score"] == pytest.approx(m["relevancy"] + m["importance"], abs=2e-4)
        assert 0 <= m["relevancy"] <= 1 and 0 <= m["importance"] <= 1
    # nothing after the decision time
    visible = {e.id for e in sample_store(["TSLA"]).view_at("2022-11-01").events("TSLA")}
    assert all(m["id"].removeprefix("mem-") in visible for m in out["memories"])


@pytest.mark.parametrize(
    "argv",
    [
        ["data", "show", "--ticker", "TSLA", "--date", "2022-11-05", "--embedder", "hashing"],
        ["data", "show", "--ticker", "ZZZ", "--date", "2022-11-01", "--embedder", "hashing"],
        ["data", "show", "--ticker", "TSLA", "--date", "yesterday-ish", "--embedder", "hashing"],
        ["data", "sample", "--planted", "news:7", "--out", "/tmp/never"],
        ["data", "sample", "--tickers", "NOPE", "--out", "/tmp/never", "--no-audio"],
        ["transcribe", "/no/such/file.ogg"],
    ],
)
def test_bad_input_is_one_line_exit_2(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # a flag argparse refuses (--date: ISO dates only)
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("fincon: error:") and "\n" not in err and "Traceback" not in err


@pytest.mark.parametrize("text", ["", "\n", " ... -- !\n"])
def test_a_reference_without_words_is_refused_before_any_model_loads(text, tmp_path, capsys, monkeypatch):
    """It printed 'WER 6200.0%' (62 words heard against none)."""
    from fincon.cli import transcribe

    store = sample_store(["PFE"])
    audio = store.audio_path([e for e in store.all_events() if e.source == "earnings_call"][0])
    monkeypatch.setattr(transcribe, "Transcriber", lambda **kw: pytest.fail("a model was loaded"))
    ref = tmp_path / "script.txt"
    ref.write_text(text, encoding="utf-8")
    assert main(["transcribe", str(audio), "--reference", str(ref)]) == 2
    assert (
        capsys.readouterr().err
        == f"fincon: error: reference file {ref} holds no words; pass the call's script as a text file\n"
    )


@pytest.mark.slow
def test_transcribe_cli_with_reference(tmp_path, capsys):
    store = sample_store(["PFE"])
    ev = [e for e in store.all_events() if e.source == "earnings_call"][0]
    ref = tmp_path / "script.txt"
    ref.write_text(ev.text, encoding="utf-8")
    rc = main(
        [
            "transcribe",
            str(store.audio_path(ev)),
            "--backend",
            "faster-whisper",
            "--reference",
            str(ref),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--json",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["backend"] == "faster-whisper" and out["wer"] <= 0.15 and "Pfizer" in out["text"]


@pytest.mark.slow
def test_data_show_anonymize_prints_what_a_masked_run_reads(capsys):
    """A sceptic checking the mask asked `data show` what a masked run's analysts read on a day and got
    the firm's name, its ticker and the dates: `--anonymize` shows the view through the run's own mask
    (its pseudonym, dates as recency, percentages as buckets, an item listed as its tone word) and names
    neither firm nor day."""
    argv = ["data", "show", "--ticker", "TSLA", "--date", "2022-11-01", "--embedder", "hashing", "--anonymize"]
    assert main([*argv, "--k", "0"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Company ") and "masked as a run's prompts read it" in text
    # an event's title as its tone word too: a headline of under twelve words was shown whole (a call's short
    # sentences named the call to the leakage audit's corpus adversary; found in a real run), then as its
    # topics (their order named a session, fincon.agents.replayed_prompts)
    assert "this week  an item" in text and "the decision day  an item" in text and "topics:" not in text
    assert main([*argv, "--json"]) == 0
    raw = capsys.readouterr().out
    out = json.loads(raw)
    assert out["ticker"].startswith("Company ") and out["masked"] is True
    assert len(out["new_today"]) == 3 and len(out["memories"]) == 5
    # found in review: the running count of items seen so far maps to one trading day (92 % of JNJ's)
    assert out["visible_events"] is None and out["visible_by_source"] is None and "events visible" not in text
    # a memory is listed as a prompt lists an item: as an item (its tone word, where it has one)
    assert {m["text"] for m in out["memories"]} == {"an item"}
    for shown in (text, raw):
        for clue in ("Tesla", "TSLA", "2022", "Oct 31", "181.70", "Elon"):
            assert clue not in shown, clue


def test_data_show_reads_dates_with_an_offset_as_a_run_does(tmp_path):
    """Found in review: price dates written with their offset ("2020-03-12 00:00:00-04:00"), which every
    run reads, made `data show` a TypeError traceback: its trading days are read as a run reads them."""
    from fincon.memory.day_view import trading_days

    days = ["2020-03-12", "2020-03-13", "2020-03-16"]
    (tmp_path / "MSFT.csv").write_text(
        "Date,Close\n" + "".join(f"{d} 00:00:00-04:00,{100 + i}\n" for i, d in enumerate(days))
    )
    got = trading_days("MSFT", pd.Timestamp("2020-03-01"), pd.Timestamp("2020-03-31"), tmp_path)
    assert [str(d.date()) for d in got] == days
