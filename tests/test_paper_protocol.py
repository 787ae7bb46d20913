"""``fincon experiment --preset fincon-paper`` (issue 33 item 3): the paper's
two tasks as ordinary experiments, one per stock and portfolio, laid beside
the paper's published figures."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from fincon.cli.main import main
from fincon.errors import ConfigError
from fincon.workflow import paper
from fincon.workflow.paper_protocol import PORTFOLIO_BASELINES, SINGLE_BASELINES, plan, tables


def test_the_plan_is_the_papers_eight_stocks_and_two_portfolios():
    blocks = plan({"tickers": None, "repeats": None})
    assert [b.key for b in blocks] == [*paper.SINGLE_TICKERS, "portfolio-TSLA-MSFT-PFE", "portfolio-AMZN-GM-LLY"]
    tsla, port = blocks[0].overrides, blocks[-2].overrides
    assert (tsla["train.start"], tsla["train.end"], tsla["test.start"]) == ("2022-01-03", "2022-10-04", "2022-10-05")
    assert tsla["repeats"] == 5 and tsla["ablations"] == ["full"] and tsla["team.brain"] == "rules"
    assert tsla["baselines"] == SINGLE_BASELINES and port["baselines"] == PORTFOLIO_BASELINES
    assert tsla["tickers"] == ["TSLA"] and port["tickers"] == ["TSLA", "MSFT", "PFE"]
    # the single agents think with the team's brain: the paper's claim as a like-for-like ablation
    assert tsla["strategy_params.finmem.brain"] == tsla["strategy_params.finsent.brain"] == "rules"
    assert "strategy_params.finmem.brain" not in port


def test_flags_win_and_chosen_tickers_make_one_portfolio():
    blocks = plan({"tickers": ["MSFT", "JNJ"], "repeats": 2, "team.brain": "llm",
                   "strategy_params.a2c.timesteps": 500, "strategy_params.finrl-a2c.timesteps": 700})  # fmt: skip
    assert [b.key for b in blocks] == ["MSFT", "JNJ", "portfolio-MSFT-JNJ"]
    msft, port = blocks[0].overrides, blocks[2].overrides
    assert msft["repeats"] == 2 and msft["strategy_params.finsent.brain"] == "llm"
    # each task keeps its own baselines' parameters (the other's would be refused as unused)
    assert msft["strategy_params.a2c.timesteps"] == 500 and "strategy_params.finrl-a2c.timesteps" not in msft
    assert port["strategy_params.finrl-a2c.timesteps"] == 700 and "strategy_params.a2c.timesteps" not in port
    assert plan({}, ["MSFT"])[0].key == "MSFT" and len(plan({}, ["MSFT"])) == 1  # a one-asset dataset: no portfolio


def test_a_dataset_outside_the_papers_windows_asks_for_windows():
    span = (dt.date(2020, 3, 12), dt.date(2021, 6, 1))
    with pytest.raises(ConfigError, match="give --train-start, --train-end, --test-start and --test-end"):
        plan({}, ["MSFT"], span)
    assert plan({"test.start": "2020-10-01"}, ["MSFT"], span)[0].overrides["test.start"] == "2020-10-01"


@pytest.mark.slow  # a minute on 2 cores: in make test, not in make test-fast
def test_one_command_prints_both_tables_beside_the_papers_figures(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["experiment", "--preset", "fincon-paper", "--tickers", "TSLA,MSFT", "--repeats", "1", "--episodes", "1",
            "--train-start", "2022-09-01", "--test-end", "2022-10-31", "--no-progress", "--out", "paper",
            "--bootstrap-reps", "1000"]  # fmt: skip
    for name in ("a2c", "ppo", "dqn", "finrl-a2c"):
        argv += ["--param", f"{name}.timesteps=200"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "Table 2: single-stock trading" in text and "Table 3: portfolio management" in text
    assert "differs from the paper: the model is none" in text
    doc = json.loads((tmp_path / "paper" / "paper.json").read_text())
    assert sorted(doc["blocks"]) == ["MSFT", "TSLA", "portfolio-TSLA-MSFT"]
    tsla = doc["blocks"]["TSLA"]
    # a test window that is not the paper's: its figures are of another period, so its column stays empty
    assert tsla["model_knowledge"]["label"] == "no-model"  # the rules brain: no model to remember anything
    assert tsla["paper_published"] is None and "not the paper's: its column is left empty" in text
    # fincon's column is each block's own experiment: the team's median run and every baseline's run
    res = json.loads((tmp_path / "paper" / "TSLA" / "results.json").read_text())
    assert tsla["fincon"]["fincon"]["cr_pct"] == res["median"]["full"]["cr_pct"]
    # and the paper's eq. 5 CR of that run, as its metrics.json has it (a stock's block only)
    eq5 = json.loads((tmp_path / "paper" / "TSLA" / res["median"]["full"]["run_dir"] / "metrics.json").read_text())
    assert tsla["fincon"]["fincon"]["cr_paper_pct"] == res["median"]["full"]["cr_paper_pct"] == eq5["cr_paper_pct"]
    assert "cr_paper_pct" not in doc["blocks"]["portfolio-TSLA-MSFT"]["fincon"]["fincon"]
    assert set(tsla["fincon"]) == {"fincon", *SINGLE_BASELINES}
    for name in SINGLE_BASELINES:
        assert tsla["fincon"][name]["sharpe"] == res["baselines"][name]["sharpe"]
    # Table 3's team: its weights 1/N by the manager's signs on most days, said under the block (it was not)
    port = json.loads((tmp_path / "paper" / "portfolio-TSLA-MSFT" / "results.json").read_text())["median"]["full"]
    days, bound = port["team_mv_days"], port["team_mv_at_bounds"]
    assert days == port["n_days"] - 1 and 2 * bound >= days  # a decision each day but the last
    assert (
        f"FLAG: fincon full (median: r1): its portfolio weights were 1/N by the manager's signs on {bound} of {days} days"
        in text
    )
    assert "team_mv_days" not in res["median"]["full"]  # a single stock has no portfolio weights
    # the rows a block cannot tell apart (runs that traded identically) are named under it, as an experiment's
    from fincon.workflow.tables import identical_flags

    said = [
        f
        for b in doc["blocks"]
        for f in identical_flags(json.loads((tmp_path / "paper" / b / "results.json").read_text()))
    ]
    assert said and all(f"FLAG: {f}" in text for f in said)
    b_and_h = [line for line in text.splitlines() if line.startswith("B&H")][0]
    assert f"{res['baselines']['buy-and-hold']['cr_pct']:.3f}" in b_and_h and "6.425" not in b_and_h
    # a second run resumes every block: nothing runs again, the same tables
    assert main(argv) == 0
    assert "resumed:" in capsys.readouterr().out
    # the report of the paper's directory: one experiment section per block, every baseline in them
    from fincon.report import write_report

    write_report([tmp_path / "paper"], tmp_path / "paper.html")
    page = (tmp_path / "paper.html").read_text(encoding="utf-8")
    for name in (*SINGLE_BASELINES, *PORTFOLIO_BASELINES):
        assert f">{name}<" in page, name
    # the paper's comparison is the table paper.md prints: the same cells, laid out as HTML
    section = page[page.index('<section id="paper">') : page.index("</section>", page.index('<section id="paper">'))]
    assert "<h4>portfolio TSLA, MSFT</h4>" in section and "differs from the paper: the model is none" in section
    cells = b_and_h.split()  # B&H, buy-and-hold, then seven figures (the book's CR, eq. 5's, SR, MDD, the paper's)
    row = "<tr><td class=text>B&amp;H</td><td class=text>buy-and-hold</td>" + "".join(
        f"<td>{c}</td>" for c in cells[2:]
    )
    assert len(cells) == 9 and row + "</tr>" in section


def test_llm_rows_carry_their_windows_knowledge_label():
    from fincon.workflow.paper_protocol import knowledge_line

    block = {"label": "in-training-data", "cutoff": "2024-09-19", "source": "Qwen2.5 report"}
    line = knowledge_line(block)
    assert line.startswith("LLM rows (fincon, finsent, finmem): in-training-data") and "2024-09-19" in line
    assert knowledge_line({"label": "no-model"}) == "" and knowledge_line({}) == ""
    blocks = plan({"tickers": ["TSLA"]})
    text = tables(blocks, {}, "differs: ...", {"TSLA": line})
    assert text.splitlines()[1].startswith("TSLA") and line in text.splitlines()


def test_the_papers_figures_sit_beside_only_on_the_papers_window():
    from fincon.workflow.experiment import load_experiment
    from fincon.workflow.paper import published
    from fincon.workflow.paper_protocol import papers_window

    blocks = plan({})
    assert published(blocks[0].paper_key)["FinCon"] == {"cr_pct": 82.871, "sharpe": 1.972, "mdd_pct": 29.727}
    assert published(plan({"tickers": ["TSLA", "JNJ"]})[-1].paper_key) is None  # not one of the paper's portfolios
    assert papers_window(load_experiment(None, blocks[0].overrides))
    assert not papers_window(load_experiment(None, {**blocks[0].overrides, "test.end": "2022-11-30"}))
    text = tables(blocks[:1], {}, "", None, papers_window=False)
    assert "82.871" not in text and "82.871" in tables(blocks[:1], {}, "")


def test_report_and_plot_on_a_paper_comparison_name_its_experiments(tmp_path, capsys):
    """Its blocks write their experiments first and paper.json at the end: before that, `fincon report DIR`
    said 'not a fincon run directory (no metrics.json, ...)' about a folder of experiments."""
    for block in ("TSLA", "AMZN"):
        (tmp_path / "paper" / block).mkdir(parents=True)
        (tmp_path / "paper" / block / "experiment.json").write_text('{"status": "running"}')
    assert main(["report", str(tmp_path / "paper"), "--out", str(tmp_path / "p.html")]) == 2
    assert capsys.readouterr().err == (
        f"fincon: error: {tmp_path / 'paper'} holds experiments (AMZN, TSLA) but no paper.json: a --preset "
        f"fincon-paper comparison that has not finished; report one of them ({tmp_path / 'paper' / 'AMZN'}), or "
        "rerun its command to finish it\n"
    )
    assert not (tmp_path / "p.html").exists()
    # plot, finished or not: one block at a time (it said "not a run directory")
    assert main(["plot", str(tmp_path / "paper"), "--out", str(tmp_path / "p.png")]) == 2
    assert capsys.readouterr().err == (
        f"fincon: error: {tmp_path / 'paper'} is a --preset fincon-paper comparison: plot one of its experiments "
        f"({tmp_path / 'paper' / 'AMZN'}, {tmp_path / 'paper' / 'TSLA'}); `fincon report {tmp_path / 'paper'}` "
        "shows them all\n"
    )


def test_the_line_under_the_tables_names_every_setting_that_is_not_the_papers():
    """Found in review: a run with a one-month training window, one repeat, one episode and a 1 %
    commission printed the paper's figures beside its own under a line naming none of it (and "the
    team's figure is its median of the repeats" of one run); --tickers MSFT,TSLA,PFE left Table 3's
    column empty, the paper's portfolio looked up in its own order only."""
    from fincon.workflow.experiment import load_experiment
    from fincon.workflow.paper import published
    from fincon.workflow.paper_protocol import differs

    base = plan({"tickers": ["MSFT"]})[0].overrides
    plain = differs(load_experiment(None, base), "the sample")
    assert "median of the repeats" in plain and "training window" not in plain and "broker" not in plain
    assert "metrics" not in plain
    short = {**base, "repeats": 1, "episodes": 1, "train.start": "2022-09-01",
             "broker.commission": {"model": "percent", "rate": 0.01}, "metrics.risk_free": 0.05}  # fmt: skip
    line = differs(load_experiment(None, short), "the sample")
    for said in ("the team's figure is its one run", "the training window is 2022-09-01..2022-10-04 (the paper's: "
                 "2022-01-03..2022-10-04)", "1 repeat(s) (the preset's: 5)", "1 training episode(s) (the paper's: 4)",
                 "the broker's commission set", "the metrics' risk_free 0.05 (not the preset's)"):  # fmt: skip
        assert said in line, said
    assert published(("MSFT", "TSLA", "PFE")) == published(("TSLA", "MSFT", "PFE")) is not None


def test_the_line_under_the_tables_names_the_corpus_the_team_read_and_a_planted_look_ahead(tmp_path):
    """Found in review: a team given a planted corpus with --events (its news carry the next day's return)
    was laid beside the paper's figures as "fincon's synthetic sample"."""
    from fincon.data.events.generator import Planted
    from fincon.testing.corpora import generated_corpus
    from fincon.workflow.experiment_config import ExperimentConfig
    from fincon.workflow.paper_protocol import corpus_read

    for name, planted in (("ev", None), ("ev-planted", Planted("news", 0.3))):
        generated_corpus(tmp_path / name, ["MSFT"], "2022-09-01", "2022-09-09", planted)
    exp = lambda **team: ExperimentConfig.model_validate({"tickers": ["MSFT"], "team": team})  # noqa: E731
    assert corpus_read(exp()) == "fincon's synthetic sample"
    assert corpus_read(exp(events=str(tmp_path / "ev"))) == "the corpus ev"
    assert corpus_read(exp(events=str(tmp_path / "ev-planted"))) == (
        "the corpus ev-planted, with a PLANTED look-ahead (news:0.3): never evidence of skill"
    )


def test_a_users_own_paper_md_is_never_written_over(tmp_path):
    """Found in review: --out was accepted when it held files named paper.json or paper.md whoever wrote
    them, and the run wrote its tables over the user's notes. Only the tables a paper run wrote are its own."""
    from fincon.workflow.paper_protocol import _claim

    out = tmp_path / "mine"
    out.mkdir()
    (out / "paper.md").write_text("# My notes on the FinCon paper\n")
    with pytest.raises(ConfigError, match="holds paper.md, which is not this paper run's"):
        _claim(out, ["tsla"])
    (out / "paper.json").write_text(json.dumps({"paper": paper.PAPER, "blocks": {}}))
    with pytest.raises(ConfigError, match="holds paper.md"):
        _claim(out, ["tsla"])
    (out / "paper.md").write_text("```\nthe tables\n```\n")
    _claim(out, ["tsla"])  # a paper run's own: resumed into
    (out / "paper.json").write_text('{"mine": 1}')
    with pytest.raises(ConfigError, match="holds paper.json"):
        _claim(out, ["tsla"])


def test_a_stocks_block_lays_the_papers_eq5_cr_beside_the_books(tmp_path):
    """Found in review: the team's book CR (100 x the sum of its value's daily log returns, 28.292 on TSLA)
    stood beside Table 2's CR (82.871), which is the paper's eq. 5 (the direction held times the log price
    change, whatever the position's size), while fincon's own eq. 5 CR of that run was 106.197. A stock's
    block shows both, each labelled, and the line under the tables says what each is; a portfolio's block,
    which eq. 5 does not describe, keeps the book's alone. The figures are that review run's metrics.json."""
    from pathlib import Path

    from fincon.report.load import ReportData
    from fincon.report.studies import section_paper
    from fincon.workflow import experiment_results as er
    from fincon.workflow.experiment import load_experiment
    from fincon.workflow.paper_protocol import differs, figures

    run = tmp_path / "full-r1"
    run.mkdir()
    (run / "metrics.json").write_text(json.dumps({"cr_pct": 28.291907267, "cr_paper_pct": 106.1970420263,
                                                  "sharpe": 2.2681318491, "mdd_pct": 7.3958413395}))  # fmt: skip
    full = {**er._metrics(run), "repeat": 1, "cr_pct_min": 28.291907267, "cr_pct_max": 28.291907267}
    bh = {"cr_pct": 1.4797970227, "cr_paper_pct": 1.4797970241, "sharpe": 0.0339728587, "mdd_pct": 55.1098380339}
    finsent = {"cr_pct": 81.0693427901, "cr_paper_pct": 103.392, "sharpe": 2.1145538364, "mdd_pct": 27.99122}
    tsla = figures({"tickers": ["TSLA"], "baselines": {"buy-and-hold": bh, "finsent": finsent},
                    "median": {"full": full}})  # fmt: skip
    assert tsla["fincon"]["cr_paper_pct"] == 106.1970420263 and tsla["finsent"]["cr_paper_pct"] == 103.392
    port = figures({"tickers": ["TSLA", "MSFT"], "baselines": {"equal-weight": {**bh, "cr_paper_pct": None}},
                    "median": {"full": {**full, "cr_paper_pct": None}}})  # fmt: skip
    assert "cr_paper_pct" not in port["fincon"] and "cr_paper_pct" not in port["equal-weight"]
    blocks = plan({"tickers": ["TSLA", "MSFT"]})  # TSLA, MSFT, then their portfolio
    text = tables(blocks, {"TSLA": tsla, "portfolio-TSLA-MSFT": port}, "")
    lines = text.splitlines()
    heads = ["paper's", "model", "fincon", "strategy", "book", "CR", "%", "eq.5", "CR", "%", "SR", "MDD", "%",
             "paper", "CR", "%", "paper", "SR", "paper", "MDD", "%"]  # fmt: skip
    assert lines[2].split() == heads
    row = lambda start, model: next(x for x in lines[start:] if x.startswith(model + " ")).split()  # noqa: E731
    assert row(2, "FinCon") == ["FinCon", "fincon", "28.292", "106.197", "2.268", "7.396", "82.871", "1.972", "29.727"]
    assert row(2, "FinGPT") == ["FinGPT", "finsent", "81.069", "103.392", "2.115", "27.991", "1.549", "0.044", "42.400"]
    assert row(2, "B&H") == ["B&H", "buy-and-hold", "1.480", "1.480", "0.034", "55.110", "6.425", "0.145", "58.150"]
    at = lines.index("Table 3: portfolio management")
    assert lines[at + 2].split() == heads[:7] + heads[10:]  # no eq.5 column
    assert row(at, "FinCon") == ["FinCon", "fincon", "28.292", "2.268", "7.396", "n/a", "n/a", "n/a"]
    # the line under the tables says what each CR is
    exp = load_experiment(None, blocks[0].overrides)
    line = differs(exp, "the sample")
    assert (
        "; Table 2's CR is the paper's eq. 5, 100 x the sum of ln(p_t+1 / p_t) x action_t (the direction held times "
        "the log price change, whatever the position's size), fincon's by the same formula its eq.5 CR % column; "
        "the book CR % column is the sum of the book value's daily log returns (what money the book made), and SR "
        "and MDD % are the book's too; "
    ) in line
    alone = differs(exp, "the sample", stocks=False)
    assert "eq. 5" not in alone and "; the book CR % column is the sum of the book value's daily log returns" in alone
    # the page lays the same cells out from paper.json
    doc = {"paper": paper.PAPER, "differs": line, "blocks": {
        "TSLA": {"tickers": ["TSLA"], "fincon": tsla, "paper_published": paper.published("TSLA")},
        "portfolio-TSLA-MSFT": {"tickers": ["TSLA", "MSFT"], "fincon": port, "paper_published": None}}}  # fmt: skip
    page = section_paper(ReportData([], [], [(Path("paper1"), doc)]))
    cells = "".join(f"<td>{c}</td>" for c in ("28.292", "106.197", "2.268", "7.396", "82.871", "1.972", "29.727"))
    assert "<td class=text>FinCon</td><td class=text>fincon</td>" + cells + "</tr>" in page
    assert page.count("eq.5 CR %</th>") == 1 and page.count("book CR %</th>") == 2  # the portfolio: the book's
