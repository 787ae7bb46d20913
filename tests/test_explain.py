"""fincon explain prints what the team saw, said and did, with its evidence."""

import json

import pytest

from fincon.cli.main import main


@pytest.fixture(scope="module")
def team_run(tmp_path_factory, recorded_transcripts):
    """The team with its defaults (MiniLM, Whisper transcripts), the calls'
    transcripts replayed from tests/recordings (Whisper is not tested here)."""
    out = tmp_path_factory.mktemp("explain") / "run"
    code = main(
        [
            "backtest",
            "--tickers",
            "TSLA,MSFT",
            "--strategy",
            "fincon,buy-and-hold",
            "--brain",
            "rules",
            "--start",
            "2022-10-24",
            "--end",
            "2022-11-04",
            "--no-progress",
            "--out",
            str(out),
            "--param",
            f"fincon.transcript_cache={recorded_transcripts.path}",
        ]
    )
    assert code == 0
    recorded_transcripts.assert_all_replayed()
    return out


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_explain_quotes_every_citation(team_run, capsys):
    assert main(["explain", str(team_run), "--date", "2022-11-01"]) == 0
    text = capsys.readouterr().out
    day = next(
        json.loads(line)
        for line in (team_run / "fincon" / "decisions.jsonl").read_text().splitlines()
        if json.loads(line)["date"] == "2022-11-01"
    )
    assert text.startswith("2022-11-01  brain=rules")
    for agent in day["record"]["agents"]:
        assert agent["agent"] in text
        inputs = {x["id"]: x for x in agent["inputs"]}
        for ins in agent["insights"]:
            for c in ins["citations"]:
                ev = inputs[c["id"]]
                # id, source, date and the first words of what the agent read
                assert f"[{c['id']}] {ev['source']} {ev['date']}: {' '.join(ev['text'].split())[:30]}" in text
    assert "WHAT THE TEAM DID" in text and "actions: MSFT" in text
    assert "model calls: 0 made" in text


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
def test_explain_json_and_errors(team_run, capsys):
    assert main(["explain", str(team_run / "fincon"), "--date", "2022-10-25", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["date"] == "2022-10-25"
    assert main(["explain", str(team_run), "--date", "2022-10-22"]) == 2  # a Saturday
    assert "not a decision day" in capsys.readouterr().err
    assert main(["explain", str(team_run / "buy-and-hold"), "--date", "2022-10-25"]) == 2
    assert "is a run of buy-and-hold, not of the agent team (explain reads the team's records: --strategy fincon); its " \
        "line of 2022-10-25 holds this strategy's decision {'MSFT': " in capsys.readouterr().err  # fmt: skip


def test_explain_of_a_single_agents_day_names_the_call_it_cites(tmp_path, capsys):
    """explain reads a team's records; of llm-trader's day it said only "no team record (is this a --strategy
    fincon run?)", though the line holds its decision and the key of the call it cites, which `fincon llm
    cache --key` prints (found by hand)."""
    run = tmp_path / "llm-trader"
    run.mkdir()
    (run / "config.yaml").write_text("llm: {cache_path: runs/.cache/trader.sqlite}\nstrategies: [llm-trader]\n")
    line = {"date": "2022-10-05", "actions": {"TSLA": "buy"}, "evidence": ["0e190382bd7b6ce4" + "0" * 48],
            "rationale": "TSLA: buy (0.95)"}  # fmt: skip
    (run / "decisions.jsonl").write_text(json.dumps(line) + "\n")
    assert main(["explain", str(run), "--date", "2022-10-05"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "is a run of llm-trader, not of the agent team (explain reads the team's records: --strategy fincon); its "
        "line of 2022-10-05 holds this strategy's decision {'TSLA': 'buy'}, and the call it cites: fincon llm cache "
        "--path runs/.cache/trader.sqlite --key 0e190382bd7b6ce4"
    )
    # several calls cited: one command that runs (the first key), and how many more (they were joined by commas)
    line["evidence"].append("1" * 64)
    (run / "decisions.jsonl").write_text(json.dumps(line) + "\n")
    assert main(["explain", str(run), "--date", "2022-10-05"]) == 2
    assert capsys.readouterr().err.strip().endswith("--key 0e190382bd7b6ce4 (and 1 more on that line)")


@pytest.mark.slow  # its module's fixture takes 2 s: in make test, not in make test-fast (under a minute)
def test_explain_names_a_session_a_forward_journal_missed(team_run, tmp_path, capsys):
    """A journal's replay asks the team nothing on a session no step ran (its decisions.jsonl marks it
    missed); explain said '... has no team record (is this a --strategy fincon run?)' of the team's own run."""
    import shutil

    run = shutil.copytree(team_run / "fincon", tmp_path / "fincon")
    lines = (run / "decisions.jsonl").read_text().splitlines()
    day = json.loads(lines[2])["date"]
    lines[2] = json.dumps({"date": day, "missed": True, "decision": None, "position": {}})
    (run / "decisions.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["explain", str(run), "--date", day]) == 2
    assert capsys.readouterr().err == (
        f"fincon: error: {day} is a session the forward journal sealed missed (its journal, not beside this run, "
        "says why): the team was asked nothing, every position was kept\n"
    )
    # beside its journal, the reason it sealed: a session is missed for three ("no step ran" was said of all)
    why = "decided at 2022-10-26 13:40:00 UTC, after 2022-10-26 opened at 13:30 UTC: too late to trade it"
    (tmp_path / "journal.jsonl").write_text(json.dumps({"kind": "missed", "session": day, "reason": why}) + "\n")
    assert main(["explain", str(run), "--date", day]) == 2
    assert capsys.readouterr().err == (
        f"fincon: error: {day} is a session the forward journal sealed missed ({why}): the team was asked "
        "nothing, every position was kept\n"
    )


def test_explain_of_finsents_day_is_not_read_as_a_team_and_names_the_items_it_scored(tmp_path, capsys):
    """finsent's decision lines hold a record of their own (each item's score): explain printed it as a
    team's day, "brain=None protocol=None", a manager of "None", and every item finsent scored "(not among
    the agent's inputs)". A comparison with finsent in it was taken for a team run too (found by hand)."""
    argv = ["backtest", "--ticker", "TSLA", "--strategy", "sma-cross,finsent", "--param", "finsent.brain=rules",
            "--start", "2022-10-25", "--end", "2022-11-04", "--no-progress", "--ledger", "off", "--no-benchmark",
            "--out", str(tmp_path / "cmp")]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["explain", str(tmp_path / "cmp"), "--date", "2022-11-01"]) == 2
    assert capsys.readouterr().err.strip().endswith("holds no agent-team run (no decisions.jsonl with team records)")
    assert main(["explain", str(tmp_path / "cmp" / "finsent"), "--date", "2022-11-01"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(
        "is a run of finsent, not of the agent team (explain reads the team's records: --strategy fincon); its line "
        "of 2022-11-01 holds this strategy's decision {'TSLA': 'hold'}, and the 3 items it scored (TSLA-call-2022Q3 -1, TSLA-news-20221101-0 +1, "
        "TSLA-news-20221101-1 +1): fincon explain --json prints the line"
    )


def test_a_day_the_rules_decided_for_the_manager_says_why():
    """`fincon explain` of a day whose manager answer was invalid twice printed "manager (fallback, 2
    call(s) ...)" and the rules' rationale as if it were the model's; it says, as an analyst's line
    does, that the model's answer was invalid twice and the rules brain decided."""
    from fincon.agents.records import format_day

    day = {"date": "2022-10-03", "record": {"brain": "llm", "protocol": "fincon", "pool": ["TSLA"], "agents": [],
           "manager": {"via": "fallback", "calls": 2, "reflections_read": 0, "rationale": "TSLA: weighted view +0.17"}}}  # fmt: skip
    text = format_day(day)
    assert "manager (model answer invalid twice, rules brain used; 2 call(s), 0 reflection(s) read):" in text
    day["record"]["manager"]["via"] = "llm"
    assert "manager (llm, 2 call(s), 0 reflection(s) read):" in format_day(day)


def test_a_rules_report_read_again_is_named_the_rules_in_explain():
    """A report reused on a later day (its inputs unchanged, no call) that was the rules' fallback read
    "reused yesterday's report": the record says `"of": "fallback"` and explain names it the rules'."""
    from fincon.agents.records import format_day

    agent = {"agent": "10-k/TSLA", "via": "reuse", "of": "fallback", "direction": "neutral", "confidence": 0.5}
    day = {"date": "2022-10-06", "record": {"agents": [agent], "manager": {"via": "llm", "calls": 1}}}
    assert "10-k/TSLA: neutral (0.50)  [reused yesterday's report, the rules brain's (the model's answer was " \
           "invalid twice; inputs unchanged, no call)]" in format_day(day)  # fmt: skip
    del agent["of"]
    assert "10-k/TSLA: neutral (0.50)  [reused yesterday's report (inputs unchanged, no call)]" in format_day(day)


def test_a_day_after_an_early_stop_is_said_to_be_after_the_stop(team_run, tmp_path, capsys):
    """Found in review: a run stopped early (a spent token budget) answered a day after its stop with
    "not a decision day of this run (..; the last day of a run makes no decision)", as if the window
    had ended there; it names the stop and its reason."""
    import shutil

    run = tmp_path / "stopped"
    shutil.copytree(team_run, run)
    for path, key, value in ((run / "fincon" / "metrics.json", "status", "stopped_early"),
                             (run / "fincon" / "summary.json", "stop_reason", "LLM token budget exhausted")):  # fmt: skip
        data = json.loads(path.read_text())
        path.write_text(json.dumps({**data, key: value}))
    capsys.readouterr()
    assert main(["explain", str(run), "--date", "2022-11-04"]) == 2
    assert capsys.readouterr().err == (
        "fincon: error: 2022-11-04 is not a decision day of this run: it stopped early after 2022-11-03 "
        "(LLM token budget exhausted)\n"
    )


def test_an_id_two_agents_read_as_different_items_shows_each():
    """Found in review: a portfolio's indicator ids name no ticker, and explain showed the last agent's
    item for every agent's: JNJ's "momentum flat" as the reason of an MSFT buy (26 of 41 days). An id read
    as different items is shown with each agent's; an id all read alike, once. The settled P&L says it
    is before costs (the risk line beside it is after them)."""
    from fincon.agents.records import format_day

    def agent(t, text):
        item = {"id": "ind-momentum-20d", "source": "prices", "date": "2020-10-15", "text": text}
        return {"agent": f"data-analysis/{t}", "direction": "bullish", "confidence": 0.5, "via": "rules",
                "inputs": [item, {"id": "mem-1", "source": "news", "date": "2020-10-14", "text": "same"}]}  # fmt: skip

    day = {"date": "2020-10-15", "record": {
        "brain": "rules", "protocol": "fincon", "pool": ["JNJ", "MSFT"],
        "agents": [agent("MSFT", "20-day momentum: up"), agent("JNJ", "20-day momentum: flat")],
        "manager": {"via": "rules", "calls": 0, "relied_on": ["ind-momentum-20d", "mem-1"]},
        "settled": {"day": "2020-10-14", "pnl": -0.0004}}}  # fmt: skip
    text = format_day(day, "close")
    assert (
        "    [ind-momentum-20d] the id of 2 different items (it names no ticker); each as its agent read it:\n"
        "      data-analysis/JNJ: [ind-momentum-20d] prices 2020-10-15: 20-day momentum: flat\n"
        "      data-analysis/MSFT: [ind-momentum-20d] prices 2020-10-15: 20-day momentum: up\n"
        "    [mem-1] news 2020-10-14: same"
    ) in text
    assert "settled 2020-10-14: P&L -0.04% (the positions' move, before costs)" in text
    # at next-open fills the team settles on the book's value, after the fills' costs (said "before" there)
    assert "settled 2020-10-14: P&L -0.04% (the book's value, after costs)" in format_day(day, "next_open")
    assert "settled 2020-10-14: P&L -0.04%\n" in format_day(day) + "\n"  # a record alone: unsaid


def test_a_protocols_steps_and_a_debates_chunks_are_explained():
    """Found in review: an scm day whose fix round alone fell back read "model answer invalid twice, rules
    brain used" for the whole day (the samples, Critic and verifier had answered as the model), and the call
    chunks a debate relied on read "(not among the agent's inputs)" like invalid citations."""
    from fincon.agents.records import format_day

    steps = {"strategist.s0": "llm", "critic": "llm", "fix": "fallback", "verify": "llm"}
    day = {"date": "2022-10-24", "record": {"brain": "llm", "protocol": "scm", "pool": ["TSLA"], "agents": [],
           "manager": {"via": "fallback", "calls": 5, "steps": steps, "rationale": "r"}}}  # fmt: skip
    assert (
        "manager (steps critic: llm | fix: fallback | strategist.s0: llm | verify: llm; model answer invalid "
        "twice, rules used for fix; 5 call(s), 0 reflection(s) read):"
    ) in format_day(day)
    cite = {"id": "TSLA-call-2022Q3#c4", "source": "earnings_call", "date": "2022-11-01"}
    final = {"insights": [{"text": "risk: a difficult quarter ahead", "citations": [cite]}]}
    day = {"date": "2022-11-01", "record": {"brain": "rules", "protocol": "debate", "pool": ["TSLA"], "agents": [],
           "manager": {"via": "rules", "relied_on": [cite["id"]], "debate": [{"final": final, "views": []}]}}}  # fmt: skip
    assert "    [TSLA-call-2022Q3#c4] earnings_call 2022-11-01: risk: a difficult quarter ahead" in format_day(day)
