"""`fincon data sample`, `fincon data show`, `fincon transcribe`."""

from __future__ import annotations

import json

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
