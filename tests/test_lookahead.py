"""The lookahead probes (issue 31 item 2), shown to work against a model that
cheats: the clairvoyant double answers from the real future whenever a
prompt names the firm and a date."""

from __future__ import annotations

import datetime as dt
import json

import pandas as pd
import pytest

from fincon.data.aliases import NAMES
from fincon.data.events.generator import DEFAULT_TICKERS
from fincon.data.events.sources import build_store
from fincon.eval import lookahead
from fincon.llm import LLMClient, UsageLedger
from fincon.testing.doubles import Clairvoyant, TeamStub
from fincon.testing.markets import market_for

START, END = dt.date(2022, 10, 5), dt.date(2023, 3, 31)


def _closes() -> pd.Series:
    return market_for(["TSLA"], start=pd.Timestamp("2022-01-03"), end=pd.Timestamp("2023-06-09")).frame("TSLA")["close"]


def _run(backend, n=60, tickers=DEFAULT_TICKERS, end=END):
    events = build_store([{"type": "sample"}], tuple(tickers)).all_events()
    client = LLMClient(backend, ledger=UsageLedger())
    return lookahead.run(
        client, "TSLA", START, end, _closes(), events, name="Tesla", candidates=sorted(NAMES), samples=n,
        seed=3, anonymize=True,
    )  # fmt: skip


def _row(res, probe, mode):
    return next(r for r in res["rows"] if r["probe"] == probe and r["mode"] == mode)


def test_the_probe_flags_a_model_that_remembers_and_the_mask_removes_it(monkeypatch):
    from fincon.llm import leakage

    sent, audit = [], leakage.audit
    monkeypatch.setattr(leakage, "audit", lambda prompts, *a, **k: sent.extend(prompts) or audit(prompts, *a, **k))
    res = _run(Clairvoyant({"TSLA": _closes()}))
    for probe in ("recall up/down-5", "recall up/down-20", "recall bucket-20"):
        named, masked = _row(res, probe, "named"), _row(res, probe, "masked")
        assert named["accuracy"] >= 0.95 and named["p_value"] < 1e-6, named  # it remembers: flagged
        assert masked["p_value"] > 0.01, masked  # masked: inside what chance gives
        assert (
            masked["wilson_95"][0] <= masked["chance"] <= masked["wilson_95"][1]
            or masked["accuracy"] < masked["chance"]
        )
    assert _row(res, "reid-company", "named")["accuracy"] >= 0.9  # the items name the firm (most by its ticker)
    assert _row(res, "reid-year", "named")["accuracy"] == 1.0  # and carry their date
    assert _row(res, "reid-company", "masked")["p_value"] > 0.01
    assert _row(res, "reid-year", "masked")["p_value"] > 0.01
    assert (
        res["verdict"].startswith("the model recalls this window")
        and "masked: no recall above chance" in res["verdict"]
    )
    assert all(r["calls"] > 0 for r in res["rows"] if r["probe"] != "reid-year")
    # issue 43: the probe's own masked prompts are audited, and a team run that is not blind is never cleared
    # (each probe's 60 questions, masked: a text sent again is one prompt, and masked, 73 of the 240 read
    # as another day's)
    assert len(sent) == 4 * 60 and res["leakage"]["prompts"] == len({p.text for p in sent}) == 167
    assert res["leakage"]["result"] == "blind"
    line = lookahead.verdict(res["rows"], res["leakage"], {"result": "not blind", "firm_and_day": 88, "prompts": 88})
    assert "masked: no recall above chance" in line and line.endswith(
        "the team run audited is not blind (88 of 88 prompts give away firm and day): its masked figures are not "
        "evidence of skill"
    )
    few = {"result": "inconclusive", "firm_and_day": 0, "prompts": 16}  # 0 of 16: Wilson 0 %-19 %
    line = lookahead.verdict(res["rows"], few)
    assert "blind" not in line.replace("to show they are blind", "")
    assert "but too few masked prompts to show they are blind (0 of 16 prompts give away firm and day" in line
    team = {"result": "inconclusive", "firm_and_day": 1, "prompts": 15}
    assert lookahead.verdict(res["rows"], res["leakage"], team).endswith(
        "; the team run audited is inconclusive (1 of 15 prompts give away firm and day, too few prompts to show "
        "it blind): audit a longer run before its masked figures count"
    )


def test_a_model_whose_every_answer_is_invalid_is_inconclusive_not_clear():
    """Issue 42 item 11: a probe that measured nothing says so; it never reads as "no recall"."""
    res = _run(TeamStub())  # no probe schema it knows: invalid answers, counted, never right
    named = _row(res, "recall up/down-5", "named")
    assert named["invalid"] == named["n"] == 60 and named["correct"] == 0
    assert named["inconclusive"] == "60 of 60 answers invalid"
    assert res["verdict"].startswith("inconclusive: no recall probe measured anything (60 of 60 answers invalid")
    assert "inconclusive" in lookahead.report(res)


class _Flaky(Clairvoyant):
    """Remembers every answer, but on a fixed share of prompts (and every bucket prompt) answers no JSON."""

    def complete(self, messages, schema, params):
        import hashlib

        from fincon.llm.types import Completion

        h = int(hashlib.sha256(messages[1].content.encode()).hexdigest(), 16) % 1000
        if h < 400 or "letter of the range" in messages[1].content:
            return Completion("I am not sure", prompt_tokens=10, completion_tokens=5)
        return super().complete(messages[:2], schema, params)


@pytest.mark.slow  # 60 samples of the probes against a model double
def test_an_invalid_answer_is_no_answer_never_a_wrong_one():
    """Found in review: a model right on every one of its 71 valid answers, invalid on 23 and 26 of 60
    direction prompts, scored 62 % and 57 % against chances of 52 % and 62 % and was cleared: "no recall
    detected". Invalid answers are left out of the accuracy and the test (and counted): it recalls."""
    res = _run(_Flaky({"TSLA": _closes()}))
    row = _row(res, "recall up/down-5", "named")
    assert 0 < row["invalid"] < row["n"] / 2 and row["correct"] == row["n"] - row["invalid"]
    assert row["accuracy"] == 1.0 and row["p_value"] < 0.01
    assert res["verdict"].startswith("the model recalls this window (recall up/down-")
    bucket = _row(res, "recall bucket-20", "named")
    assert bucket["accuracy"] is None and bucket["wilson_95"] == [None, None] and bucket["inconclusive"]
    assert "n/a" in lookahead.report(res)


class _AlwaysTSLA:
    """A model that answers the probed ticker, the year 2022 and "up" to every question."""

    name = model_id = price_model = "always-tsla"

    def complete(self, messages, schema, params):
        from fincon.llm.types import Completion

        props = schema.get("properties", {})
        ans = {"ticker": "TSLA", "year": 2022} if "ticker" in props else {"answer": "up" if "up" in str(props) else "C"}
        return Completion(json.dumps(ans), prompt_tokens=10, completion_tokens=5)

    def close(self):
        pass


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
def test_a_constant_answer_scores_no_better_than_the_best_constant_answer():
    """Issue 42 item 11: the items come from several firms and the company is scored against the most
    common one's share, so naming the probed ticker every time is chance (it scored p = 3e-7 against 1/42);
    a window inside one year makes the year half measure nothing, which it says."""
    res = _run(_AlwaysTSLA())
    company = _row(res, "reid-company", "named")
    firms = {q["gold"].split("|")[0] for q in res["questions"]["named reid"]}
    assert len(firms) >= 5 and company["accuracy"] <= company["chance"] < 0.5 and company["p_value"] > 0.5
    one_year = _run(_AlwaysTSLA(), end=dt.date(2022, 12, 30))
    year = _row(one_year, "reid-year", "named")
    assert year["chance"] == 1.0 and year["inconclusive"].startswith("the best constant answer is always right")
    assert "reid-year inconclusive" in one_year["verdict"] or "reid-year" not in one_year["verdict"]


def test_a_window_with_no_answerable_day_is_refused_before_any_call():
    from fincon.errors import DataError

    class Never:
        name = model_id = price_model = "never"

        def complete(self, *a):
            raise AssertionError("asked")

    closes = _closes()
    with pytest.raises(DataError, match="has 20 trading days of prices after it"):
        lookahead.run(LLMClient(Never(), ledger=UsageLedger()), "TSLA", dt.date(2023, 6, 1), dt.date(2023, 6, 9),
                      closes, [], name="Tesla", candidates=["TSLA"])  # fmt: skip


def test_wilson_and_binomial_by_hand():
    lo, hi, p = lookahead.wilson_and_p(50, 100, 0.5)
    assert (round(lo, 4), round(hi, 4)) == (0.4038, 0.5962)  # Wilson: 0.5 -/+ 1.96 sqrt(.25/100) shrunk
    assert p == pytest.approx(0.5397946186935895)  # P(X >= 50 | n=100, 0.5)
    assert lookahead.wilson_and_p(10, 10, 0.5)[2] == pytest.approx(0.5**10)


def test_every_question_has_its_answer_after_the_day():
    closes = _closes()
    days = lookahead.sample_days(closes, START, END, 30, 1)
    qs = lookahead.recall_questions("TSLA", "Tesla", closes, days)
    assert len(qs) == 3 * len(days) == 90
    for q in qs:
        assert q.day in q.prompt and q.gold in ("up", "down", "A", "B", "C", "D", "E")
    buckets = [q.gold for q in qs if q.kind == "bucket-20"]
    assert {b: buckets.count(b) for b in "ABCDE"} == {b: 6 for b in "ABCDE"}  # quintiles of the sampled days


RECORDED = __import__("pathlib").Path(__file__).resolve().parent / "recordings" / "lookahead-tsla"


def test_the_live_probe_of_the_bundled_model_replays(tmp_path, monkeypatch, capsys):
    """The bundled 1.5B probed live on TSLA 2022-10-05..2023-03-31 (20 days and
    items, named and masked), recorded in tests/recordings/lookahead-tsla.*;
    the replay asks no model and gives the recorded rows, whatever they show."""
    from fincon.cli.main import main

    monkeypatch.chdir(tmp_path)
    argv = ["eval", "lookahead", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2023-03-31", "--samples",
            "20", "--anonymize", "--mask-items", "topics", "--llm-cache", "replay", "--llm-cache-path",
            str(RECORDED.with_suffix(".sqlite")),
            "--out", "probe.json"]  # fmt: skip
    assert main(argv) == 0
    got = json.loads((tmp_path / "probe.json").read_text())
    want = json.loads(RECORDED.with_suffix(".json").read_text())
    assert got["rows"] == want["rows"] and got["verdict"] == want["verdict"]
    # the audit of its masked prompts: 80 sent, 64 texts (16 read as another question's)
    assert got["leakage"] == want["leakage"] and want["leakage"]["prompts"] == 64
    out = capsys.readouterr().out
    assert "verdict:" in out and "model qwen2.5-coder-1.5b: cutoff 2024-09-19" in out and "in-training-data" in out
    # issue 42 item 11: --max-tokens stops the probe (cached answers count, as in every command): one line, no file
    assert main([*argv[:-2], "--out", "capped.json", "--max-tokens", "500"]) == 2
    assert "LLM token budget exhausted" in capsys.readouterr().err and not (tmp_path / "capped.json").exists()


@pytest.mark.slow
def test_the_live_probe_on_investorbench_msft_replays(tmp_path, monkeypatch, capsys):
    """The bundled 1.5B probed live on InvestorBench's MSFT test window
    2020-10-01..2021-05-06 (20 days and items, named and masked), recorded in
    tests/recordings/investorbench/lookahead-msft.* beside the benchmark's
    licence: replayed wherever the corpus is, no model asked."""
    from fincon.cli.main import main
    from fincon.testing import IB_RECORDINGS, INVESTORBENCH

    if not (INVESTORBENCH / "msft.json.gz").is_file():
        pytest.skip("../shared/data/investorbench is absent")
    monkeypatch.chdir(tmp_path)
    assert main(["data", "import", "investorbench", str(INVESTORBENCH / "msft.json.gz"), "--out", "ib-msft"]) == 0
    recorded = IB_RECORDINGS / "lookahead-msft"
    argv = ["eval", "lookahead", "--ticker", "MSFT", "--data", "ib-msft", "--start", "2020-10-01", "--end",
            "2021-05-06", "--samples", "20", "--anonymize", "--mask-items", "topics", "--llm-cache", "replay",
            "--llm-cache-path",
            str(recorded.with_suffix(".sqlite")), "--out", "probe.json"]  # fmt: skip
    assert main(argv) == 0
    got = json.loads((tmp_path / "probe.json").read_text())
    want = json.loads(recorded.with_suffix(".json").read_text())
    assert got["rows"] == want["rows"] and got["verdict"] == want["verdict"] and got["leakage"] == want["leakage"]
    assert "verdict:" in capsys.readouterr().out


class _Reader:
    """A model with no memory that reads: the year off the item's date line, the firm off the first ticker
    of the list its text names; "up" and "C" to every recall question."""

    name = model_id = price_model = "reader"

    def complete(self, messages, schema, params):
        import re

        from fincon.llm.types import Completion

        text = messages[-1].content
        if "ticker" in schema.get("properties", {}):
            year = re.search(r"\[E1\] \w+ \d+ (\d{4})", text)
            names = text[text.rfind("one of:") :].split("(")[0].replace("one of:", "").split(",")
            firm = next((t.strip() for t in names if re.search(rf"\b{re.escape(t.strip())}\b", text[:900])), "TSLA")
            ans = {"ticker": firm, "year": int(year.group(1)) if year else 2022}
        else:
            ans = {"answer": "up" if "up" in str(schema) else "C"}
        return Completion(json.dumps(ans), prompt_tokens=10, completion_tokens=5)

    def close(self):
        pass


@pytest.mark.slow
def test_a_model_that_only_reads_the_named_items_is_not_called_one_that_remembers():
    """Found in review: named, an item names its firm and carries its date, so a model with no memory that
    reads them re-identified 95 % of them, and the verdict called that "re-identifies its items ... not
    evidence of skill"; the named re-identification rows are the text's baseline, the verdict is recall's.
    And masked, the bucket question's five ranges were masked alike ("from -15-30% to -15-30%"): no memory
    could pick one; they stay in the clear as the firm and year choices do."""
    res = _run(_Reader(), n=30)
    assert _row(res, "reid-year", "named")["accuracy"] == 1.0  # it reads the date line
    assert not res["verdict"].startswith("the model") and "re-identifies" not in res["verdict"]
    assert res["verdict"].startswith("no recall detected at 30 samples")
    named = {q["day"]: q["prompt"] for q in res["questions"]["named recall bucket-20"]}
    for q in res["questions"]["masked recall bucket-20"]:
        choices = named[q["day"]][named[q["day"]].rfind("Answer the letter") :]
        assert q["sent"].endswith(choices) and "%" in choices and "TSLA" not in q["sent"]


def test_run_must_be_of_the_probed_ticker_and_window(tmp_path, monkeypatch, capsys):
    """Found in review: `--run` audited any folder, and a masked MSFT run of October 2020 was audited
    into a TSLA 2022-23 verdict ("the team run audited: ..."). It is refused in one line, before any call."""
    from fincon.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "msft").mkdir()
    (tmp_path / "msft" / "config.yaml").write_text("tickers: [MSFT]\nstart: 2020-10-01\nend: 2020-10-28\n")
    argv = ["eval", "lookahead", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2023-03-31", "--samples",
            "5", "--run", "msft", "--llm-cache", "replay", "--llm-cache-path", "none.sqlite"]  # fmt: skip
    assert main(argv) == 2
    assert "--run msft: a run of MSFT over 2020-10-01..2020-10-28, not of TSLA over 2022-10-05..2023-03-31" in (
        capsys.readouterr().err
    )


@pytest.mark.slow
def test_the_masked_probe_masks_items_as_the_runs_mask_items_says(monkeypatch):
    """Found in review 2026-12-02: `eval lookahead --anonymize --mask-items tone` asked about items as their
    topics (the flag was taken and ignored); the probe masks as the team it vouches for does."""
    from fincon.llm import leakage

    events, audit = build_store([{"type": "sample"}], tuple(DEFAULT_TICKERS)).all_events(), leakage.audit
    for items, shown in (("tone", "an item"), ("topics", "topics: ")):
        sent: list = []
        monkeypatch.setattr(leakage, "audit", lambda prompts, *a, **k: sent.extend(prompts) or audit(prompts, *a, **k))
        client = LLMClient(TeamStub(), ledger=UsageLedger())
        lookahead.run(client, "TSLA", START, END, _closes(), events, name="Tesla", candidates=sorted(NAMES),
                      samples=3, seed=3, anonymize=True, mask_items=items)  # fmt: skip
        reid = [p.text for p in sent if p.agent == "probe-company+year"]
        assert reid and all(shown in t for t in reid), (items, reid[:1])
