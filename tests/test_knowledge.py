"""What the model already knows (issue 31, item 1): every run labels its
window against its model's training-data cutoff."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from fincon.cli.main import main
from fincon.llm.knowledge import Cutoff, known_cutoff, label, model_knowledge, warning
from fincon.llm.settings import LLMSettings
from fincon.testing.badinput import assert_one_line_error, run_cli, tree

D = dt.date
CUT = Cutoff(D(2023, 10, 31), "test")


@pytest.mark.parametrize(
    "start,end,expected",
    [
        (D(2022, 1, 3), D(2022, 6, 30), "in-training-data"),
        (D(2023, 10, 1), D(2023, 10, 31), "in-training-data"),  # ends on the cutoff day: inside
        (D(2023, 10, 1), D(2023, 11, 1), "straddles-cutoff"),
        (D(2023, 10, 31), D(2024, 3, 1), "straddles-cutoff"),
        (D(2023, 11, 1), D(2024, 3, 1), "after-cutoff"),
    ],
)
def test_a_window_is_labelled_against_the_cutoff(start, end, expected):
    assert label(start, end, CUT) == expected
    assert label(start, end, None) == "cutoff-unknown"  # never a pass


def test_known_models_carry_their_cutoff_and_its_source():
    bundled = known_cutoff("qwen2.5-coder-1.5b")
    assert bundled is not None and bundled.date == D(2024, 9, 19) and "2409.12186" in bundled.source
    assert known_cutoff("/models/Qwen2.5-Coder-1.5B-Instruct-Q4_K_M.gguf") == bundled  # a GGUF path
    # each Qwen2.5 release its own bound (found in review): the Coder 0.5B came out on 2024-11-12, and models
    # released in 2025 under the family's name have no bound here (a September one called a window they may
    # have read after-cutoff)
    assert known_cutoff("/models/Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf").date == D(2024, 11, 12)
    assert known_cutoff("qwen2.5-7b-instruct") == bundled
    late = ("Qwen/Qwen2.5-VL-32B-Instruct", "Qwen2.5-Omni-7B", "Qwen2.5-14B-Instruct-1M", "qwen2.5-max")
    assert [known_cutoff(m) for m in late] == [None] * 4
    assert known_cutoff("gpt-4o-mini-2024-07-18").date == D(2023, 10, 31)  # the longest key wins
    assert known_cutoff("gpt-4.1-nano").date == D(2024, 6, 30)
    assert known_cutoff("my-finetune") is None


def test_the_block_prefers_the_users_cutoff_and_says_no_model_for_none():
    win = (D(2022, 10, 5), D(2023, 6, 9))
    block = model_knowledge(LLMSettings(), *win)  # the bundled default model
    assert block["label"] == "in-training-data" and block["cutoff"] == "2024-09-19"
    user = model_knowledge(LLMSettings(backend="openai", model="x", knowledge_cutoff="2022-06-30"), *win)
    assert user == {
        "label": "after-cutoff",
        "model": "x",
        "cutoff": "2022-06-30",
        "source": "given by the user (llm.knowledge_cutoff)",
        "window": {"start": "2022-10-05", "end": "2023-06-09"},
    }
    assert warning(user, "fincon") is None
    assert model_knowledge(None, *win)["label"] == "no-model"
    unknown = model_knowledge(LLMSettings(backend="openai", model="x"), *win)
    assert unknown["label"] == "cutoff-unknown" and "--llm-knowledge-cutoff" in warning(unknown, "fincon")


def test_a_users_cutoff_earlier_than_a_known_one_is_kept_as_a_claim_not_used():
    """Issue 42 item 14: gpt-4o with --llm-knowledge-cutoff 2022-01-01 on a 2022-10 window stays
    in-training-data (the known 2023-10-31), the user's date recorded as their claim and said; a later
    date of the user's is taken (a newer snapshot the table does not know)."""
    win = (D(2022, 10, 3), D(2022, 10, 31))
    claimed = model_knowledge(LLMSettings(backend="openai", model="gpt-4o", knowledge_cutoff="2022-01-01"), *win)
    assert claimed["label"] == "in-training-data" and claimed["cutoff"] == "2023-10-31"
    assert claimed["claimed_cutoff"] == "2022-01-01" and "OpenAI" in claimed["source"]
    line = warning(claimed, "fincon")
    assert "--llm-knowledge-cutoff 2022-01-01 is earlier than the known cutoff 2023-10-31" in line
    later = model_knowledge(LLMSettings(backend="openai", model="gpt-4o", knowledge_cutoff="2024-05-31"), *win)
    assert later["cutoff"] == "2024-05-31" and "claimed_cutoff" not in later


def test_a_cutoff_that_is_no_date_is_refused():
    with pytest.raises(ValueError, match="YYYY-MM-DD"):
        LLMSettings(knowledge_cutoff="Oct 2023")


def test_require_after_cutoff_refuses_before_any_model_call(tmp_path, monkeypatch, capfd):
    """With --require-after-cutoff a window the model may remember is one line
    and exit 2, before anything is written or any model loaded (the server
    named here does not exist: a call would fail differently)."""
    monkeypatch.chdir(tmp_path)
    before = tree(tmp_path)
    argv = ["backtest", "--ticker", "TSLA", "--strategy", "llm-trader", "--start", "2022-10-05", "--end",
            "2022-10-20", "--llm-backend", "openai", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model",
            "gpt-4o", "--require-after-cutoff"]  # fmt: skip
    code = run_cli(main, argv)
    out, err = capfd.readouterr()
    assert_one_line_error(code, out, err, "--require-after-cutoff: llm-trader: the window 2022-10-05..2022-10-20")
    assert "cutoff 2023-10-31" in err and "(in-training-data)" in err
    assert tree(tmp_path) == before


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_every_run_writes_its_block_and_a_rules_run_says_no_model(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    argv = ["backtest", "--ticker", "TSLA", "--strategy", "fincon,sma-cross", "--brain", "rules", "--start",
            "2022-10-05", "--end", "2022-10-20", "--no-progress", "--out", "run"]  # fmt: skip
    assert main(argv) == 0
    out, err = capfd.readouterr()
    assert "model knowledge" not in out and "warning" not in err  # no model: no label row, no warning
    for name in ("fincon", "sma-cross"):
        block = json.loads((tmp_path / "run" / name / "metrics.json").read_text())["model_knowledge"]
        assert block["label"] == "no-model" and block["window"] == {"start": "2022-10-05", "end": "2022-10-20"}
    manifest = json.loads((tmp_path / "run" / "run_manifest.json").read_text())
    assert set(manifest["model_knowledge"]) == {"fincon", "sma-cross"}
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["fincon"]["model_knowledge"] == "no-model"


@pytest.mark.slow  # an experiment's and a rolling evaluation's checks, before anything is written
def test_require_after_cutoff_reads_an_experiments_llm_baselines_too(tmp_path, monkeypatch, capfd):
    """Found in review: an experiment (and a rolling evaluation) checked --require-after-cutoff against the
    team's model alone; with the rules team and llm-trader among the baselines it passed, said nothing,
    and sent the baseline's prompts of a window inside its model's training data to the model."""
    monkeypatch.chdir(tmp_path)
    before = tree(tmp_path)
    llm = ["--llm-backend", "openai", "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "gpt-4o",
           "--require-after-cutoff", "--no-progress", "--ledger", "off"]  # fmt: skip
    for argv in (
        ["experiment", "--ticker", "TSLA", "--brain", "rules", "--baselines", "buy-and-hold,llm-trader",
         "--repeats", "1", "--episodes", "1", "--ablations", "full", "--test-end", "2022-10-31", "--out", "exp"],
        ["experiment", "--universe", "TSLA", "--brain", "rules", "--baselines", "buy-and-hold,llm-trader",
         "--episodes", "1", "--rolling", "2m", "--step", "2m", "--rolling-start", "2022-09-01", "--rolling-end",
         "2022-12-30", "--out", "roll"],
    ):  # fmt: skip
        code = run_cli(main, [*argv, *llm])
        out, err = capfd.readouterr()
        assert code == 2 and "--require-after-cutoff: " in err and "cutoff" in err, (argv[0], err)
        assert tree(tmp_path) == before


def test_beliefs_written_by_a_model_that_knew_the_window_fail_the_card_and_the_guard(tmp_path, monkeypatch, capfd):
    """Found in review: a team whose model is after its window (given cutoff 2022-10-14) read, every day,
    beliefs that gpt-4o (cutoff 2023-10-31) wrote in training; the card passed temporal integrity and
    --require-after-cutoff let it run. The beliefs' writer is labelled against the window: the guard
    refuses it, a warning says it, and the card fails it."""
    from pathlib import Path

    from fincon.agents.beliefs import Beliefs, TrainingWindow
    from fincon.agents.roles import ANALYSTS
    from fincon.report.card import FAIL, Evidence, temporal_integrity

    monkeypatch.chdir(tmp_path)
    writer = {"label": "in-training-data", "model": "gpt-4o", "cutoff": "2023-10-31", "source": "OpenAI model card",
              "window": {"start": "2022-10-03", "end": "2022-10-14"}}  # fmt: skip
    window = TrainingWindow(start="2022-10-03", end="2022-10-14")
    learned = Beliefs.initial({n: r.weight for n, r in ANALYSTS.items()}).model_copy(
        update={"model_knowledge": writer, "window": window}
    )
    (tmp_path / "b.json").write_text(learned.dump())
    before = tree(tmp_path)
    argv = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "llm", "--start", "2022-10-17",
            "--end", "2022-11-18", "--llm-backend", "openai", "--llm-base-url", "http://127.0.0.1:9/v1",
            "--llm-model", "stub", "--llm-knowledge-cutoff", "2022-10-14", "--beliefs", "b.json",
            "--require-after-cutoff"]  # fmt: skip
    code = run_cli(main, argv)
    out, err = capfd.readouterr()
    assert_one_line_error(
        code, out, err, "--require-after-cutoff: fincon (its --beliefs written by gpt-4o): the window"
    )
    assert "2022-10-17..2022-11-18 lies inside the model's training data (cutoff 2023-10-31)" in err
    assert tree(tmp_path) == before
    block = {"label": "after-cutoff", "model": "stub", "cutoff": "2022-10-14", "source": "given by the user",
             "beliefs": {**writer, "window": {"start": "2022-10-17", "end": "2022-11-18"}}}  # fmt: skip
    verdict, said = temporal_integrity(Evidence(Path("x"), None, None, None, {}, {"model_knowledge": block}, {}, []))
    assert verdict == FAIL and said.startswith("its --beliefs were written by gpt-4o, which may know the window")
