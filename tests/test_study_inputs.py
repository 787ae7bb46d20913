"""A study resumed on inputs that changed since its finished units ran is refused (review, 2026-12-01).

A training stopped after two episodes and resumed after a price row, an event or fincon's code changed
learned its beliefs from both (episode manifests with two data hashes, beliefs labelled as one); an
experiment resumed its baselines run on old prices beside a team run on new ones (buy-and-hold +4.3 %
marked best where a clean run gives -18.3 %); a rolling evaluation resumed after a ticker was added
relabelled MSFT's window as JNJ's. The status file keeps a fingerprint of the inputs (workflow.study
.inputs_state) beside the config; a rerun on other inputs is refused in one line naming what changed."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import pytest

from fincon.cli.main import main
from fincon.testing import training_corpus

SAMPLE = Path(__file__).resolve().parents[1] / "fincon" / "data" / "sample" / "prices"


def prices(folder: Path) -> Path:
    folder.mkdir()
    (folder / "TSLA.csv").write_bytes(gzip.decompress((SAMPLE / "TSLA.csv.gz").read_bytes()))
    return folder


def revise(folder: Path, day: str = "2022-02-10") -> None:
    """A data revision: one close (and its adjusted close) inside the day's range moved by 0.4 %."""
    path = folder / "TSLA.csv"
    rows = path.read_text().splitlines()
    for i, row in enumerate(rows):
        if row.startswith(day):
            d, o, h, lo, c, a, v = row.split(",")
            moved = f"{float(c) * 0.996:.6f}"
            rows[i] = ",".join([d, o, h, lo, moved, moved, v])
    path.write_text("\n".join(rows) + "\n")


def rerun(argv: list[str], capsys) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    return capsys.readouterr().err


@pytest.mark.slow
def test_a_training_resumed_on_changed_prices_or_events_is_refused(tmp_path, capsys):
    data, events = prices(tmp_path / "px"), training_corpus(tmp_path / "ev")
    (events / "audio").mkdir(exist_ok=True)
    (events / "audio" / "TSLA-2022Q1.ogg").write_bytes(b"a call")
    argv = ["train", "--ticker", "TSLA", "--brain", "rules", "--episodes", "2", "--start", "2022-01-03", "--end",
            "2022-02-28", "--data", str(data), "--events", str(events), "--param", "fincon.transcripts=text",
            "--no-progress", "--out", str(tmp_path / "t")]  # fmt: skip
    assert main(argv) == 0
    assert main(argv) == 0  # the same inputs: resumed (nothing to run)
    revise(data)
    err = rerun(argv, capsys)
    assert err.count("\n") == 1 and "whose finished episodes ran on other inputs (the price data changed" in err
    shutil.copy(data / "TSLA.csv", tmp_path / "revised.csv")
    prices_back = tmp_path / "px2"
    prices(prices_back)
    shutil.rmtree(data)
    prices_back.rename(data)
    assert main(argv) == 0  # the data as it was: resumed
    item = next(events.glob("*.jsonl*"))
    kept = item.read_bytes()
    item.write_bytes(kept + (gzip.compress(b"\n") if item.suffix == ".gz" else b"\n"))
    err = rerun(argv, capsys)
    assert "(the event corpus changed since)" in err
    item.write_bytes(kept)
    assert main(argv) == 0
    # a call's audio re-recorded (the team transcribes it): found in review, resumed without a word
    (events / "audio" / "TSLA-2022Q1.ogg").write_bytes(b"another call")
    assert "(the event corpus changed since)" in rerun(argv, capsys)
    (events / "audio" / "TSLA-2022Q1.ogg").write_bytes(b"a call")
    assert main(argv) == 0
    # wherever the corpus keeps a call, whatever its ticker's name (found in review of the fix: audio/ only,
    # and a name filter that read "BRK-B-2022Q1.ogg" as BRK's)
    (events / "calls").mkdir()
    (events / "calls" / "BRK-B-2022Q1.ogg").write_bytes(b"a call")
    assert "(the event corpus changed since)" in rerun(argv, capsys)


@pytest.mark.slow
def test_an_experiment_resumed_on_revised_prices_is_refused(tmp_path, capsys):
    data = prices(tmp_path / "px")
    argv = ["experiment", "--ticker", "TSLA", "--brain", "rules", "--data", str(data), "--events", "sample",
            "--param", "fincon.transcripts=text", "--train-start", "2022-01-03", "--train-end", "2022-01-31",
            "--test-start", "2022-02-01", "--test-end", "2022-02-28", "--repeats", "1", "--episodes", "1",
            "--ablations", "full", "--baselines", "buy-and-hold", "--bootstrap-reps", "1000", "--no-progress",
            "--ledger", "off", "--out", str(tmp_path / "x")]  # fmt: skip
    assert main(argv) == 0
    revise(data, "2022-02-15")
    err = rerun(argv, capsys)
    assert err.count("\n") == 1 and "experiment whose finished units ran on other inputs (the price data" in err


def test_a_rolling_evaluation_on_other_inputs_is_refused(tmp_path):
    """The rolling evaluation claims its directory its own way: the same config on other inputs (a
    ticker added to the dataset, whose picks then differ) is refused too, before any window runs."""
    import json

    from fincon.errors import FinconError
    from fincon.workflow.rolling import _claim
    from fincon.workflow.status import versioned
    from fincon.workflow.study import Study

    out = tmp_path / "roll"
    out.mkdir()
    old = versioned({"config": {"a": 1}, "inputs": {"prices": "p1", "events": None, "code": "c"}})
    (out / "rolling.json").write_text(json.dumps({**old, "status": "complete"}))
    same = Study(out, "rolling.json", {"config": {"a": 1}, "inputs": old["inputs"]}, "rolling evaluation")
    assert _claim(same) is True
    moved = Study(out, "rolling.json", {"config": {"a": 1}, "inputs": {**old["inputs"], "prices": "p2"}}, "x")
    with pytest.raises(FinconError, match=r"rolling evaluation whose finished units ran on other inputs \(the price"):
        _claim(moved)


def test_inputs_that_change_while_a_study_runs_leave_it_failed_not_complete(tmp_path, monkeypatch):
    """Found in review: a dataset replaced (--same-day, look-ahead) while an experiment ran gave a table of
    units from two corpora marked complete; only a rerun noticed. The fingerprint is read again before
    ``complete``: changed, the study is failed with what changed."""
    import json

    from fincon.errors import FinconError
    from fincon.workflow.study import Study

    seen = {"prices": "p1", "events": "e1", "code": "c1"}
    study = Study(tmp_path / "x", "experiment.json", {"config": {}, "inputs": dict(seen)}, "experiment",
                  inputs_now=lambda: dict(seen))  # fmt: skip

    def body():
        (tmp_path / "x" / "unit").mkdir()
        seen["events"] = "e2"  # the dataset replaced while the units ran

    with pytest.raises(FinconError, match="the event corpus changed while the experiment ran"):
        study.run(body)
    state = json.loads((tmp_path / "x" / "experiment.json").read_text())
    assert state["status"] == "failed" and "not marked complete" in state["error"]
    seen["events"] = "e1"
    again = Study(tmp_path / "y", "experiment.json", {"config": {}, "inputs": dict(seen)}, "experiment",
                  inputs_now=lambda: dict(seen))  # fmt: skip
    again.run(lambda: None)
    assert json.loads((tmp_path / "y" / "experiment.json").read_text())["status"] == "complete"
