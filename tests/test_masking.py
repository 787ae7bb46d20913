"""Masked prompts (issue 31 items 3-4): with --anonymize no prompt names the
firm, its people, the window's dates or its price levels; answers map back;
and a model that cheats from the real future loses its edge."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from fincon.llm import LLMClient, UsageLedger, masking_rules as rules
from fincon.llm.cache import CacheMode, CallCache
from fincon.llm.masking_terms import masker_for
from fincon.llm.settings import LLMSettings
from fincon.testing.doubles import Clairvoyant, TeamStub
from fincon.testing.markets import market_for
from fincon.testing.team import run_team

START, END = "2022-10-05", "2022-12-30"


def test_the_mask_by_hand():
    """Issue 43 item 2: names, people and products to pseudonyms and placeholders, dates to coarse
    recency (never an offset), an id's date to an opaque token mapped back in answers, dollar
    amounts to [amount] but the stock's own close to an index on the run's secret base, percentages
    bucketed, other numbers [n], other proper names [name]; fincon's own words and spans kept."""
    m = masker_for(["TSLA", "MSFT"], secret="s1")
    m.start_prices["TSLA"] = 250.0
    text = (
        "Tesla (NASDAQ: TSLA) closed at $225.00 on 2022-10-07 after Elon Musk spoke; Microsoft's Xbox revenue was "
        "$21.5 billion in October 2021, Q3 2022, up 14.2% on 30,000 seats at Contoso. Dec 30: "
        "[mem-TSLA-news-20221007-7]"
    )
    out = m.text(text, "2022-10-10")
    token = re.search(r"D[0-9a-f]{6}", out).group(0)
    assert out == (
        f"Company B (Company B) closed at price index {m.base * 225.0 / 250.0:.1f} on this week after Person B1 spoke; "
        "Company A's [term] revenue was [amount] in [month], Q3 [year], up 7-15% on [n] seats at [name]. this "
        f"year: [mem-Company B-news-{token}-7]"
    )
    assert 50 <= m.base <= 200 and m.base != masker_for(["TSLA", "MSFT"], secret="s2").base  # a secret base per run
    answer = f'{{"TSLA": "x", "Company B": "buy", "cites": ["mem-Company B-news-{token}-7"], "why": "Person B1 said"}}'
    assert m.unmask(answer, "2022-10-10") == (
        '{"TSLA": "x", "TSLA": "buy", "cites": ["mem-TSLA-news-20221007-7"], "why": "Elon Musk said"}'
    )
    assert m.schema({"properties": {"TSLA": {}, "MSFT": {}}}) == {"properties": {"Company B": {}, "Company A": {}}}
    kept = (
        "You are the 10-K analyst; over the next 20 trading days; a 61-day high; confidence 0.37 (tone +0.50); "
        "one short sentence (at most 25 words)"  # fincon's own limit: it read "at most [n] words" in every prompt
    )
    assert m.text(kept, "2022-10-10") == kept
    assert m.text("Oct 3", "2022-10-10") == "this week" and m.text("2021-06-01", "2022-10-10") == "over a year ago"


def _whole_text_pass(m, s: str, day: str | None) -> str:
    """The mask's rules applied once to the whole text, no line, segment or memo:
    what the line-by-line pass (bench/masking.py's speed) must give."""
    import datetime as dt

    from fincon.llm.masking_rules import ITEM_LINE as _ITEM_LINE

    d = dt.date.fromisoformat(day) if day else None
    s = m._words_in(m._dates(m._prices(s), d))
    return _ITEM_LINE.sub(lambda x: m._item_line(x, d), s) if "[" in s else s


def test_the_line_by_line_pass_masks_as_the_whole_text_does():
    """Issue 43 item 3 (speed): a prompt is masked line by line, an item's line as its label and date
    then its text, each part memoised, a date that reads the day filled into a template made once:
    on every form of date, a label with ": " inside, an exchange prefix, a year's turn and Feb 29,
    over days and with no day, the text is the whole-text pass's, character for character. And a line
    with more than ten held spans keeps them (the whole-text pass once masked the stand-in of the 11th,
    "12", as a number: the label was lost and its item reached the model word for word)."""
    lines = [
        "You are the news analyst. Stock: TSLA (NASDAQ: TSLA), last close $225.00.",
        "[E1] Dec 30: Tesla: strong signals on capital spending. Tesla (TSLA) shares fell 0.4% in the latest session.",
        "[E2] 2022-10-07: Elon Musk said deliveries rose 14.2% to 343,830 in Q3 2022, up from Sep 2021.",
        "Shares (NASDAQ: TSLA) rose 3%: on Oct 4, 2022 deliveries beat.",
        "[note: Zorblax 1234 2022-09-30] Feb 29: revenue was $21.5 billion for the quarter ended September 30, 2022.",
        "TSLA hold (gross exposure 1.00); by 2022-10-10 a loss (-0.05%). Why: filings, 4th October 2022, '21.",
        "[mem-TSLA-news-20221007-7] 12 Oct: shares traded at $230 on NYSE: TSLA; 20 trading days; FY2021 H1.",
        "Current position (fraction of the portfolio; negative = short): TSLA -1.10",
        " ".join(f"[E{i}] [n] [amount]" for i in range(1, 9)) + ": later 12 and 13.5% of 2021",
    ]
    text = "\n".join(lines)
    days = ["2022-10-10", "2022-10-11", "2023-01-03", "2024-03-01", "2022-12-31", None]
    fast = masker_for(["TSLA"], secret="s1")
    slow = masker_for(["TSLA"], secret="s1")
    for m in (fast, slow):
        m.start_prices["TSLA"] = 250.0
    for day in days + days[::-1]:  # twice: the second time from the memos
        for t in (text, *lines):
            assert fast.text(t, day) == _whole_text_pass(slow, t, day), (t, day)
    out = fast.text(lines[-1], "2022-10-10")
    assert all(f"[E{i}]" in out for i in range(1, 9)) and "\x00" not in out


def test_an_item_is_read_as_its_topics_and_an_answer_is_never_quoted_verbatim():
    """Issue 43 item 2: a listed item of 12 words or more reaches the model as the first topic of a
    fixed list it touches (none of its own words: a bag of them names the item to a reader of the corpus,
    fincon.llm.leakage.bag_guess); a sentence a model answered is, in any later prompt, its key words
    (the manager never quotes its analysts)."""
    m = masker_for(["MSFT"])
    line = "[E1] Oct 4: The new server product line grew sales as demand for cloud software rose. (tone +0.50)"
    assert m.text(line, "2022-10-10") == "[E1] this week: topics: product (tone positive)"
    line = "[E2] Oct 4: The new server line is designed for demanding applications in many industries. (tone +0.50)"
    assert m.text(line, "2022-10-10") == "[E2] this week: topics: none of the list (tone positive)"
    # its tone as a word, as the summariser labels it (to two decimals, beside the topic, it named the item to
    # a reader of the corpus who knows the public lexicon: fincon.llm.leakage_inputs.Bags.named)
    for tone, word in (("+0.20", "neutral"), ("-0.20", "neutral"), ("-0.21", "negative"), ("+1.00", "positive")):
        line = f"[E3] Oct 4: The new server product line grew sales as demand for cloud software rose. (tone {tone})"
        assert m.text(line, "2022-10-10") == f"[E3] this week: topics: product (tone {word})"
    # a short item too (it was kept whole, found in a real run), its tone a word (two decimals named items)
    assert (
        m.text("[E4] Oct 4: shares rose (tone +0.33)", "2022-10-10") == "[E4] this week: topics: rise (tone positive)"
    )
    m.unmask('{"insights": [{"text": "Cloud demand keeps growing across every large enterprise customer."}]}')
    prompt = "- news: bullish (confidence 0.70). Cloud demand keeps growing across every large enterprise customer."
    assert m.text(prompt, "2022-10-11") == (
        "- news: bullish (confidence 0.70). key words: across, cloud, customer, demand, enterprise, every, growing, "
        "keeps, large"
    )


def _prompts(path: Path) -> list[str]:
    with sqlite3.connect(path) as c:
        return [m + s for m, s in c.execute("select messages, schema from calls")]


#: what must never reach a masked prompt of a TSLA run in Q4 2022
LEAKS = [r"\bTSLA\b", r"\bTesla\b", r"Elon Musk", r"\b2022-1[0-2]-\d\d\b", r"\b2022\b", r"\bOct(ober)? \d"]


def _team(tmp: Path, backend, masked: bool):
    cache = CallCache(tmp / "llm.sqlite", CacheMode.READ_WRITE)
    client = LLMClient(backend, cache=cache, ledger=UsageLedger())
    res, team = run_team(
        ["TSLA"], START, END, tmp / "run", client=client, settings=LLMSettings(anonymize=masked), brain="llm"
    )
    cache.close()
    return res, team, tmp / "llm.sqlite"


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_no_masked_prompt_names_the_firm_or_the_window_and_an_unmasked_one_does(tmp_path):
    """Every prompt of a masked run, read back from the call cache, is scanned
    for the ticker, the company, its CEO and the window's dates: no hit. The
    same scan of the unmasked run finds every one of them (so it can fail)."""
    plain, _, plain_db = _team(tmp_path / "plain", TeamStub(), False)
    masked, team, masked_db = _team(tmp_path / "masked", TeamStub(), True)
    plain_text, masked_text = "\n".join(_prompts(plain_db)), "\n".join(_prompts(masked_db))
    assert len(_prompts(masked_db)) > 100
    for pattern in LEAKS[:2] + LEAKS[3:]:
        assert re.search(pattern, plain_text), pattern
    hits = {p: re.findall(p, masked_text)[:3] for p in LEAKS if re.search(p, masked_text)}
    assert not hits, hits
    assert "Company A" in masked_text and "price index" not in plain_text
    # answers map back: the decisions name TSLA and cite real ids
    days = masked.decisions
    assert all(set(d.get("actions", {"TSLA": 0})) == {"TSLA"} for d in days)
    cited = [c for d in days for c in d.get("evidence", ())]
    assert cited and all("Company" not in c and "T-" not in c for c in cited)
    assert json.loads((tmp_path / "masked" / "run" / "masking.json").read_text())["pseudonyms"] == {"TSLA": "Company A"}


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_a_masked_run_replays_byte_for_byte(tmp_path):
    res, _, db = _team(tmp_path / "rec", TeamStub(), True)
    client = LLMClient(TeamStub(), cache=CallCache(db, CacheMode.REPLAY), ledger=UsageLedger())
    again, _ = run_team(
        ["TSLA"], START, END, tmp_path / "replay", client=client, settings=LLMSettings(anonymize=True), brain="llm"
    )
    assert [json.dumps(d, sort_keys=True) for d in again.decisions] == [
        json.dumps(d, sort_keys=True) for d in res.decisions
    ]


def _closes() -> dict[str, pd.Series]:
    m = market_for(["TSLA"], start=pd.Timestamp("2022-06-01"), end=pd.Timestamp("2023-03-31"))
    return {"TSLA": m.frame("TSLA")["close"]}


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_a_model_that_remembers_the_window_wins_named_and_loses_its_edge_masked(tmp_path):
    """The leak pathway exists and fincon sees it: the clairvoyant double,
    reading the ticker and the date in the prompts, beats buy-and-hold by a
    wide margin; masked, it cannot tell which firm or day it is asked about,
    answers as the random double does, and the team decides exactly as it
    does with the random double: no edge left."""
    named, _, _ = _team(tmp_path / "named", Clairvoyant(_closes()), False)
    cheat = Clairvoyant(_closes())
    masked, _, _ = _team(tmp_path / "masked", cheat, True)
    rand, _, _ = _team(tmp_path / "random", TeamStub(), True)
    close = _closes()["TSLA"]
    bh = float(close.loc[END] / close.loc[START] - 1.0) * 100
    named_cr = (named.values[-1] / named.values[0] - 1.0) * 100
    print(f"buy-and-hold {bh:+.1f} %, clairvoyant named {named_cr:+.1f} %")
    assert named_cr > bh + 50  # TSLA fell ~55 % in the window; the cheat profits from the fall
    assert cheat.peeked == 0  # masked, it never found a firm and a date to look up

    def trades(res):  # what the team did each day (the call keys differ: another model's name)
        return [(d["date"], d.get("actions"), d.get("weights"), d["position"]) for d in res.decisions]

    assert trades(masked) == trades(rand)
    assert list(masked.values) == list(rand.values)


@pytest.mark.parametrize("flag", [[], ["--anonymize"]])
def test_the_rules_brain_is_untouched_by_the_flag(tmp_path, monkeypatch, capfd, flag):
    from fincon.cli.main import main

    monkeypatch.chdir(tmp_path)
    argv = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "rules", "--start", START,
            "--end", "2022-10-20", "--no-progress", "--no-benchmark", "--out", "run", *flag]  # fmt: skip
    assert main(argv) == 0
    err = capfd.readouterr().err
    assert ("--anonymize: no strategy of this run calls a model" in err) == bool(flag)
    decisions = (tmp_path / "run" / "decisions.jsonl").read_text()
    assert "Company A" not in decisions and not (tmp_path / "run" / "masking.json").exists()


def test_llm_trader_masked_writes_its_masking_json(tmp_path):
    """Issue 42 item 12: every strategy that masks what it sends says so in its run directory."""
    from fincon.agents.simple_trader import LLMTrader
    from fincon.llm import LLMClient, UsageLedger
    from fincon.llm.settings import LLMSettings
    from fincon.testing import backtest, market_for
    from fincon.testing.doubles import Scripted

    answers = [json.dumps({"action": "hold", "confidence": 0.5, "reasoning": "flat"})] * 200
    client = LLMClient(Scripted(answers), ledger=UsageLedger())
    trader = LLMTrader(LLMSettings(anonymize=True), client=client)
    market = market_for(["TSLA"], start=pd.Timestamp(START), end=pd.Timestamp("2022-10-20"))
    sent = []
    complete = client.backend.complete
    client.backend.complete = lambda messages, schema, params: (
        sent.append(messages[-1]) or complete(messages, schema, params)
    )
    backtest(market, trader, tmp_path)
    m = json.loads((tmp_path / "masking.json").read_text())
    assert m["pseudonyms"] == {"TSLA": "Company A"} and "Tesla" in m["names"]["TSLA"]
    # the days' returns summed up, not in order: ten days' buckets in a row named firm and day (53 of 63
    # prompts of a masked MSFT run), and the leakage audit did not read them
    texts = [x.content if hasattr(x, "content") else x["content"] for x in sent]
    assert texts and all(re.search(r"Over the last \d+ trading days: \d+ up, \d+ down; cumulative return "
                                   r"[+-][\d-]+%; largest daily move [+-][\d-]+%\.", t) for t in texts), texts[0]  # fmt: skip
    assert not any("Daily returns" in t for t in texts)


def test_another_model_paraphrases_the_masked_items_and_the_model_under_test_may_not():
    """Issue 43 item 2: with --llm-paraphrase-model an item reaches the team as another model's rewriting of
    the masked item, masked again (a name it puts back is a pseudonym); an answer that is no rewriting leaves
    the item's topics, counted; the model under test may not paraphrase (it would read every item first)."""
    from fincon.errors import ConfigError
    from fincon.llm.masking_terms import Paraphraser
    from fincon.testing.doubles import Scripted

    rewrite = json.dumps({"text": "Microsoft said demand for its servers rose sharply in many industries."})
    same = "Another long item about the new server line and demand for cloud applications in industries."
    echo = json.dumps({"text": same})  # the item given back: no rewriting
    backend = Scripted([rewrite, echo, echo])
    m = masker_for(["MSFT"])
    m.rewriter = Paraphraser(LLMClient(backend, ledger=UsageLedger()), "other-model")
    line = "[E1] Oct 4: The new server line is designed for demanding applications in many industries. (tone +0.50)"
    assert m.text(line, "2022-10-10") == (
        "[E1] this week: Company A said demand for its servers rose sharply in many industries. (tone positive)"
    )
    sent = backend.seen[0][-1].content
    assert "Oct 4" not in sent and sent.startswith("The new server line")  # the paraphraser sees the masked item
    assert "topics: demand" in m.text(f"[E1] Oct 5: {same}", "2022-10-10") and m.rewriter.fallbacks == 1
    assert m.manifest()["paraphrase"] == {"model": "other-model", "calls": 2, "fallbacks": 1}
    with pytest.raises(
        ConfigError, match="is the model under test.*give another model .e.g. the bundled qwen2.5-coder-0.5b"
    ):
        LLMSettings(anonymize=True, paraphrase_model="qwen2.5-coder-1.5b")
    with pytest.raises(ConfigError, match="give another model .e.g. the bundled qwen2.5-coder-1.5b"):
        LLMSettings(model="qwen2.5-coder-0.5b", anonymize=True, paraphrase_model="qwen2.5-coder-0.5b")
    with pytest.raises(ConfigError, match="goes with --anonymize"):
        LLMSettings(paraphrase_model="qwen2.5-coder-0.5b")
    assert LLMSettings(anonymize=True, paraphrase_model="qwen2.5-coder-0.5b").paraphrase_model


def test_the_model_under_test_may_not_paraphrase_under_another_name(tmp_path):
    """A sceptic's point: the same weights named twice (a GGUF path and its copy or link; the bundled
    name and its assembled file) are the model under test, and would read every item first."""
    from fincon.errors import ConfigError
    from fincon.llm.bundled import BUNDLED, weights_identity

    model = tmp_path / "under-test.gguf"
    model.write_bytes(b"GGUF" + b"\x01" * 64)
    (tmp_path / "copy.gguf").write_bytes(model.read_bytes())
    (tmp_path / "link.gguf").symlink_to(model)
    (tmp_path / "other.gguf").write_bytes(b"GGUF" + b"\x02" * 64)
    for alias in ("copy.gguf", "link.gguf"):
        with pytest.raises(ConfigError, match="is the model under test"):
            LLMSettings(model=str(model), anonymize=True, paraphrase_model=str(tmp_path / alias))
    assert LLMSettings(model=str(model), anonymize=True, paraphrase_model=str(tmp_path / "other.gguf"))
    # a bundled name is its file's pinned sha256: no hashing of a gigabyte to tell it
    assert weights_identity("qwen2.5-coder-0.5b") == BUNDLED["qwen2.5-coder-0.5b"].sha256
    # served models are told by name only (the server knows what stands behind a name, fincon does not)
    assert LLMSettings(backend="openai", model="a", anonymize=True, paraphrase_model="b").paraphrase_model == "b"


def test_a_quoted_answer_is_reworded_whatever_order_the_answers_came_in():
    """Concurrent calls answer in any order: when one sentence a model answered contains another, the
    prompt that repeats it must come out the same either way (the call cache is keyed by it)."""
    short = json.dumps({"text": "Demand rose in every region and margins grew"})  # no full stop: inside the other
    long = json.dumps({"text": "Demand rose in every region and margins grew as most analysts expected."})
    prompt = "Reports: Demand rose in every region and margins grew as most analysts expected. Then more."
    first, second = masker_for(["TSLA"]), masker_for(["TSLA"])
    first.unmask(short), first.unmask(long)
    second.unmask(long), second.unmask(short)
    got = first.text(prompt, "2022-10-10")
    assert got == second.text(prompt, "2022-10-10")
    assert got == "Reports: key words: demand, every, expected, grew, margins, region, rose Then more."
    # and what the mask learned, carried to a forward step's fresh mask, masks the same again
    third = masker_for(["TSLA"])
    third.take_up(second.learned())
    assert third.text(prompt, "2022-10-10") == got


def test_a_single_firm_corpus_mines_its_name_and_no_abbreviation_of_finance(tmp_path):
    """Found by hand on InvestorBench's HON: with no other firm to contrast, every capitalised word
    in a fifth of the items was taken for the firm's name, and CAGR (in 68 % of them) and USD (32 %)
    were masked as "Company A" ("a Company A of 3-7 %", "Company A [amount]")."""
    from fincon.data.events.model import Event
    from fincon.llm.masking_terms import mined_terms
    from fincon.testing.corpora import corpus

    texts = ["Honeywell wins an order; the market grows at a CAGR of 5% to USD 4 billion.",
             "Honeywell shares rose after the order.", "Analysts like Honeywell and the CAGR it reports."]  # fmt: skip
    events = [Event(id=f"n{i}", ticker="HON", source="news", published_at=pd.Timestamp(f"2021-01-0{i + 4}", tz="UTC"),
                    text=t) for i, t in enumerate(texts)]  # fmt: skip
    names, _ = mined_terms(str(corpus(tmp_path / "events", ["HON"], events)), ("HON",), None)
    assert names == {"HON": ["Honeywell"]}
    masked = masker_for(["HON"], names).text(texts[0], "2021-01-04")
    assert "Company A wins" in masked and "Company A of" not in masked and "Company A [amount]" not in masked


def test_a_quoted_sentence_clipped_by_the_managers_prompt_is_reworded_too():
    """Found by hand (JNJ on InvestorBench): the manager's prompt clips a long insight to its first
    clauses ("... seven different strategies…", clip_sentences); the clipped head was not the whole
    sentence the mask had kept, so it reached the manager word for word."""
    from fincon.agents.protocols.fincon import REPORT_CHARS
    from fincon.memory.distill import clip_sentences

    m = masker_for(["MSFT"])
    said = ("The report offers in-depth options trade ideas, covering up to seven different strategies, and "
            "evaluates all vital aspects of each option trade, with charts, tables and a long list of sources.")  # fmt: skip
    m.unmask(json.dumps({"insights": [{"text": said}]}))
    shown = clip_sentences(said, REPORT_CHARS)
    assert shown.endswith("…") and len(shown) < len(said)
    out = m.text(f"- news: bearish (confidence 0.63). {shown} [E2]", "2022-10-11")
    assert "options trade ideas" not in out and "key words: " in out and out.endswith("[E2]")


def test_a_fallbacks_quote_clipped_by_the_managers_prompt_is_shown_as_its_whole_is():
    """Found in review (a masked InvestorBench MSFT run whose analysts fell back to rules): a rules
    insight quotes an item's sentences; clipped by the manager's prompt, the clip was reworded as a
    model's sentence is, as its key words, which named the item of the session before in 4 of 11
    manager prompts. A clip is shown as the whole sentence would be ("a quoted item", its topics)."""
    said = ("This integration, along with free video conferencing tools for Microsoft Teams, Zoom, and "
            "GoToMeeting, is now available to all users on Calendly's Basic plan.")  # fmt: skip
    for items, shown in (("tone", "a quoted item"), ("topics", "topics: ")):
        m = masker_for(["MSFT"], items=items)
        m.said(json.dumps({"insights": [{"text": said}]}), "2020-10-12")
        whole = m.text(f"- Company news: neutral. {said} [E3]", "2020-10-13")
        clipped = m.text(f"- Company news: neutral. {said[:90]}… [E3]", "2020-10-13")
        assert shown in whole and shown in clipped and "key words" not in clipped and "video" not in clipped, clipped


def test_the_cvar_alerts_own_words_survive_the_mask():
    """Found by hand (a masked training's test run): the CVaR alert fincon writes into the manager's
    prompt read "today's [name] is -1-3%": PnL, fincon's own word, was masked as a proper name (28
    prompts of the masked MSFT recording). Words fincon writes itself are never names."""
    from fincon.risk.cvar_alert import alert_series

    reason = alert_series([100.0, 101.0, 99.0, 97.0])[-1].reason  # what the alert says, as the prompt shows it
    assert "today's PnL is" in reason
    out = masker_for(["MSFT"]).text(f"CVaR ALERT ({reason}); the P&L of the week", "2022-10-11")
    assert "[name]" not in out and "PnL" in out, out


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_the_model_double_answers_a_portfolio_manager_in_its_schema(tmp_path):
    """Found by hand: the test kit's TeamStub (`python -m fincon.testing.server --double team-stub`)
    answered the portfolio manager's `size` with "buy", so every manager call of a multi-ticker run
    fell back to the rules brain (39 of 40 days on TSLA, MSFT, PFE): the masked portfolio path was
    never the model's. It now answers a number where the schema asks one."""
    client = LLMClient(TeamStub(), ledger=UsageLedger())
    res, _ = run_team(["TSLA", "MSFT"], START, "2022-10-20", tmp_path / "run", client=client,
                      settings=LLMSettings(anonymize=True), brain="llm", analysts=["news"])  # fmt: skip
    usage = client.ledger.summary()
    assert usage["llm_fallbacks"] == 0 and usage["llm_calls"] >= 24, usage
    assert {t for d in res.decisions for t in d.get("actions", {})} == {"TSLA", "MSFT"}


def test_a_sentence_that_begins_as_a_quoted_one_is_not_cut_as_a_clip_of_it():
    """Found by this session's own test: two quoted sentences sharing their first six words ("...
    shares fell 1-3% ..." and "... shares fell 3-7% ..."); the first was taken for a clip of the second
    and cut it mid-sentence ("key words: fell3-7% in the latest session."). A head counts as clipped
    only where the prompt's clip mark follows it."""
    from fincon.llm import masking_quotes

    quoted = {"Company A (Company A) shares fell 1-3% in the latest session.": "key words: one",
              "Company A (Company A) shares fell 3-7% in the latest session.": "key words: two"}  # fmt: skip
    got = masking_quotes.unquote("- news: Company A (Company A) shares fell 3-7% in the latest session. [E2]", quoted)
    assert got == "- news: key words: two [E2]"


def test_percentages_written_every_way_are_bucketed_once():
    """Found reading the masked MSFT recording: the manager's prompt said "the daily CVaR at 3-7-15% is
    about -3-7-15%" and "volatility is about [n]-60-100%": the data analyst quoted its masked prompt's
    "3-7%" back, and the mask bucketed the "7%" of it again; a model's "40-60%" lost its lower end to the
    number rule, and "14.2 percent" or "3.5 %" (a space) were no percentages at all ("[n] percent").
    A range is one bucket, a bucket stays itself, and masked text masked again is unchanged."""
    m = masker_for(["TSLA"], secret="s1")
    cases = {
        "the daily CVaR at 3-7% is about -3-7%": "the daily CVaR at 3-7% is about -3-7%",
        "volatility is about 40-60%": "volatility is about 30-60%",
        "rose 12-18% while 2.5 – 3.5 % fell; 60-150%": "rose 7-30% while 1-7 % fell; over 60%",
        "rose 14.2 percent and 3.5 % and 12 %": "rose 7-15 percent and 3-7 % and 7-15 %",
        "up 250% and over 100%": "up over 100% and over 100%",
        # an approximation of the top bucket read "about over 100%" (the data analyst's volatility line)
        "volatility about 120% and around 60-150%": "volatility over 100% and over 60%",
        "20 trading days, a 61-day high, 30,000 seats, confidence 0.37": "20 trading days, a 61-day high, [n] seats, "
        "confidence 0.37",
    }
    for text, masked in cases.items():
        assert m.text(text, "2022-10-10") == masked
        assert m.text(masked, "2022-10-10") == masked
    # found in review: exact figures, dates and periods a remembering model places
    found = {
        "grew over 537% and over 14.73 percent": "grew over 100% and over 7-15 percent",
        "filed 30.09.2020 and 9/30/2020": "filed this month and this month",
        "FY21 Q1 beat; Q4 FY20, 3Q20 and 1H21": "FY [year] Q1 beat; Q4 FY [year], Q3 [year] and H1 [year]",
        "115M units, 7.57B, 1,000bps, 2.5x; 0.5x and 5x": "[n]M units, [n]B, [n]bps, [n]x; 0.5x and 5x",
        # a later review: a day written with hyphens or year first stood whole, as did a quarter's year
        # after a hyphen and the second year of a span
        "on 30-Sep-2020, 09-30-2020 and 2020.09.30": "on this month, this month and this month",
        "filed 2020/10/07; guided Q1-2021 and 2021-Q2": "filed this week; guided Q1 [year] and [year] Q2",
        "the 2020-2021 season, 2020-21 and 2019/20": "the [year]-[year] season, [year]-[year] and [year]/[year]",
        # and the review of that fix: a month, a fiscal span and quarters with a hyphen
        "FY2020-21 guidance after the Sep-2020 event": "FY [year]-[year] guidance after the [month] event",
        "in Q3-20 and 3Q-2020": "in Q3 [year] and 3Q [year]",
    }
    for text, masked in found.items():
        assert m.text(text, "2020-10-10") == masked
        assert m.text(masked, "2020-10-10") == masked
    assert [rules.bucket_range(a, b) for a, b in ((3, 7), (40, 60), (12, 18), (60, 150), (150, 200))] == [
        "3-7", "30-60", "7-30", "over 60", "over 100"]  # fmt: skip


def test_an_answer_recorded_while_another_prompt_is_masked_does_not_break_the_mask(monkeypatch):
    """The team's analysts ask at once (fincon.llm.run_concurrently): one thread records a model's answer
    (its sentences, reworded wherever a later prompt would quote them) while another masks its prompt
    against the sentences recorded so far. The scan read the dict as it was written: "dictionary changed
    size during iteration", a traceback mid-run, seen re-recording bench/record_masking_msft.py with the
    1.5B. Made certain here: the other thread's answer arrives during the scan."""
    m = masker_for(["MSFT"])
    from fincon.llm import masking_quotes

    m.unmask('{"text": "Cloud demand keeps growing across every large enterprise customer."}')
    head, arrived = masking_quotes._head, []

    def answer_arrives(sentence):
        if not arrived:
            arrived.append(sentence)
            m.unmask('{"text": "Another analyst thinks the software margin will widen next quarter."}')
        return head(sentence)

    monkeypatch.setattr(masking_quotes, "_head", answer_arrives)
    prompt = "- news: bullish (confidence 0.70). Cloud demand keeps growing across every large enterprise customer."
    assert (
        m.text(prompt, "2022-10-11")
        == (
            "- news: bullish (confidence 0.70). key words: across, cloud, customer, demand, enterprise, every, growing, "
            "keeps, large"
        )
        and arrived
    )


def test_a_fallback_is_shown_as_its_topics_and_a_debates_list_fallback_is_read():
    """A rules fallback's insight quotes its items' sentences; their key words (a model answer's
    rewording) named an item from the week before to the corpus adversary in 11 of 28 manager prompts
    of a masked InvestorBench MSFT run: a fallback's sentences are shown as their topics, as items are.
    The debate's trust step falls back to a list (its skeptic to a tuple): masked, that was a traceback."""
    from pydantic import BaseModel

    from fincon.agents.brains import LLMBrain, Question
    from fincon.testing.doubles import Scripted

    m = masker_for(["MSFT"])
    quote = "Microsoft shares rose after the company reported strong cloud revenue growth this quarter."
    m.said(json.dumps({"insights": [{"text": quote}]}), "2020-10-22")
    shown = m.text(f"- news: bullish (confidence 0.10). {quote} [E3]", "2020-10-23")
    assert "key words" not in shown and "topics: " in shown and "cloud" not in shown, shown

    class Trust(BaseModel):
        evidence: list[str]

    for masked in (False, True):
        client = LLMClient(Scripted(["{}", "{}"]), ledger=UsageLedger())
        client.masker = masker_for(["MSFT"]) if masked else None
        q = Question(agent="debate-trust/MSFT", day="2020-10-22", messages=lambda: [{"role": "user", "content": "x"}],
                     model=Trust, allowed=frozenset(), to_report=lambda a: a, rules=lambda: ["E1 is fresh"])  # fmt: skip
        assert LLMBrain(client).answer(q).via == "fallback"


def test_a_dated_sentence_is_reworded_on_every_later_day_its_recency_changes():
    """A quoted sentence with a date masks to another recency on a later day ("announced on this week"
    on 2020-10-02, "on this month" on 2020-10-20): kept as first masked only, it was looked for in vain
    there and reached the prompt whole ("will expand its cloud business across"); it is looked for as
    each day masks it. A forward step's saved state carries it."""
    m = masker_for(["MSFT"])
    quote = "Microsoft announced on October 1, 2020 that it will expand its cloud business across Europe."
    m.said(json.dumps({"insights": [{"text": quote}]}), "2020-10-02")
    shown = {d: m.text(f"Earlier view: {quote} Then more.", d) for d in ("2020-10-02", "2020-10-20", "2020-12-20")}
    assert len({s.split(":", 1)[1] for s in shown.values()}) == 1, shown  # the same rewording every day
    for d, s in shown.items():
        assert "cloud business" not in s and "topics: " in s, (d, s)
    # a model's dated sentence: its key words once, the same on every day (reworded twice, its key words
    # gained "words" once its recency changed: 45 of 73 manager prompts of a 40-session run, diff review)
    m2 = masker_for(["MSFT"])
    said = "Microsoft said on October 1, 2020 that cloud revenue would expand across Europe next year."
    m2.unmask(json.dumps({"insights": [{"text": said}]}), "2020-10-02")
    kw = {m2.text(f"- Company A news: bullish. {said} [E1]", d) for d in ("2020-10-02", "2020-10-05", "2020-10-20")}
    assert kw == {"- Company A news: bullish. key words: across, cloud, expand, name, next, said [E1]"}, kw
    again = masker_for(["MSFT"])
    again.take_up(json.loads(json.dumps(m.learned())))
    assert again.text(f"Earlier view: {quote}", "2021-01-20") == m.text(f"Earlier view: {quote}", "2021-01-20")
    assert "cloud business" not in again.text(f"Earlier view: {quote}", "2021-01-20")


def test_a_prompts_own_line_that_begins_like_a_models_sentence_is_no_clip_of_it():
    """Found in the diff review: the scm clip's rule (a quote cut at a count of characters) took a
    prompt line that begins like a model's sentence and ends a word later for a clip of it, and
    reworded the news prompt's own question in every later prompt. A clip ends at a word's end or
    inside a word of the sentence, not where the two part."""
    m = masker_for(["MSFT"])
    echo = "What does this news mean for Company A over the next trading days is a rebound."
    m.unmask(json.dumps({"insights": [{"text": echo}]}), "2020-10-05")
    asked = m.text("Today is 2020-10-06. What does this news mean for MSFT over the next trading days?", "2020-10-06")
    assert asked.endswith("What does this news mean for Company A over the next trading days?"), asked
    assert m.text(f"- news: bullish. {echo[:60]} [E1]", "2020-10-06").startswith("- news: bullish. key words: ")


def test_a_passage_of_the_corpus_is_its_topics_whatever_its_length_and_its_label():
    """Found in a real run (llama_cpp.server, --protocol debate --anonymize on the sample's TSLA call, a
    transcript without speakers cut a sentence a chunk): a chunk under twelve words was shown whole ("the
    short line of an indicator"), the Skeptic's evidence lines ("(cited by earnings, market, ...)", over
    40 characters before the colon) were not read as items at all, and a speaker's turn of two lines
    showed its second line whole: the leakage audit read 9 of 22 prompts not blind. A line of the corpus
    (dated, or a passage with its section) is its topics at any length; fincon's own indicators (a bare
    label: never dated) are kept."""
    from fincon.agents.protocols.debate_chunks import Chunk, chunk_transcript
    from fincon.agents.protocols.debate_prompts import _chunk_lines, _evidence_lines
    from fincon.data.events.generator import SAMPLE_DIR
    from fincon.data.events.loaders.directory import DirectoryLoader

    m, day = masker_for(["TSLA"]), "2022-11-01"
    short = "Looking ahead, we expect a difficult environment next quarter."
    assert m.text(f"[E4] (prepared remarks): {short}", day) == "[E4] (prepared remarks): topics: none of the list"
    indicator = "[E1]: 20-day momentum: flat against its usual range"
    assert m.text(indicator, day) == indicator

    call = next(e for e in DirectoryLoader(SAMPLE_DIR).load(["TSLA"]) if e.id == "TSLA-call-2022Q3")
    chunks = chunk_transcript(call.text, call.id, "TSLA", day)
    turn = "Revenue grew in every region this quarter.\nMargins were lower as we cut prices on the older models."
    chunks.append(Chunk("x#c1", "x", "TSLA", day, "qa", "Jane Doe (CFO)", 1, 0, turn))
    labels = {c.id: f"E{i}" for i, c in enumerate(chunks, 1)}
    cited = {c.id: ["earnings", "market", "sentiment", "valuation"] for c in chunks}
    prompt = m.text(_chunk_lines(chunks, labels) + "\n" + _evidence_lines(chunks, cited, labels), day)
    runs = {" ".join(w[i : i + 5]) for c in chunks for w in [c.text.split()] for i in range(len(w) - 4)}
    assert len(runs) > 40 and [r for r in runs if r in prompt] == [], prompt
    assert prompt.count("topics: ") == 2 * len(chunks), prompt


def test_the_calendar_a_word_mask_kept_is_masked():
    """Found in review on InvestorBench news: the word mask kept holiday and shopping days (Black Friday,
    Thanksgiving, the holiday season: 35 + 21 items, most of them in Nov 2020), an election, the months that
    are also words (March, May), ordinals ("its 45th anniversary") and offsets ("30 days until year-end").
    fincon's own spans ("20 trading days", "a 20-day average") are kept."""
    m = masker_for(["MSFT"])
    day = "2020-11-24"
    assert m.text("Activity during Black Friday lifts sales in the holiday season.", day) == (
        "Activity during [event] lifts sales in the [event]."
    )
    assert m.text("ahead of Thanksgiving, with Cyber Monday sales; Election Day passed", day) == (
        "ahead of [event], with [event] sales; [event] passed"
    )
    assert m.text("Sales in March rose; the May meeting, since mid-March.", day) == (
        "Sales in [month] rose; the [month] meeting, since mid-[month]."
    )
    assert m.text("its 45th anniversary, 30 days until year-end, 8 months since the launch", day) == (
        "its [n]th anniversary, [n] days until year-end, [n] months since the launch"
    )
    kept = "a 20-day average over 20 trading days, the 1st of 3 steps"
    assert m.text(kept, day) == kept


def test_an_answer_the_mask_would_change_is_reworded_where_a_later_prompt_shows_it():
    """Found in review 2026-12-02: an analyst's answer was kept as the model wrote it, and looked for in
    the masked prompt; a sentence the mask changes (a number of two digits, a percentage, a name) was
    never found there, and the manager's prompt showed it whole ("Company A ... said [name] sales rose
    7-15% in Q3 [year]"). Kept as a prompt shows it too, it is reworded as any answer is."""
    m = masker_for(["TSLA"])
    said = "Company A closed higher after management said sales rose 12% in the third quarter."
    back = m.unmask(json.dumps({"text": said}), "2022-10-10")
    assert "TSLA closed higher" in back  # the pseudonym back as its ticker: what the team keeps
    later = m.text(f"insight: {json.loads(back)['text']} Then more.", "2022-10-12")
    assert "closed higher after management" not in later, later
    assert later == "insight: key words: closed, higher, management, rose, said, sales, third Then more."


def test_a_models_earlier_reflections_are_reworded_in_a_masked_run_that_recalls_them():
    """Found in review 2026-12-02: a training episode's carried reflections (and a backtest's learned
    ones) were shown whole in a masked episode's prompts, where the episode that wrote them had shown
    them as key words; the mask is told of them (Masker.recalled) and rewords them as answers."""
    m = masker_for(["HON"])
    text = "stub reflection 5: weigh the filings more than the day's news."
    prompt = f"- [earlier episode, 2020-10-05] {text}"
    assert text in m.text(prompt, "2020-10-12")  # told nothing: shown whole
    m.recalled([text], "2020-10-12")
    got = m.text(prompt, "2020-10-13")
    assert "weigh the filings more" not in got, got
    assert got == "- [earlier episode, this month] key words: day's, filings, reflection, stub, weigh", got


def test_a_rules_insights_score_reads_as_its_word_alone():
    """Found in review (a masked scm run whose analysts fell back to rules): a rules insight's tail
    "-> reads bearish (-0.69)" (fincon.agents.brains.rules_analyst) reached the masked prompts with its
    two decimals, which narrowed the firm's day to ~2 days of a rules replay; an item's tone is a word.
    Under the mask the reading is its word alone, whole or cut by a prompt's clip; unmasked, as it was."""
    m = masker_for(["MSFT"])
    said = "Only 20% of surveyed organizations have reached full DevSecOps maturity. -> reads bearish (-0.69)"
    for shown, want in (
        (f"- MSFT news: bearish (confidence 0.10). {said} [E1]", "-> reads bearish [E1]"),
        (f"- E1 = news 2020-09-30: MSFT news: {said[:-3]}", "-> reads bearish"),  # a clip at the line's end
        (f"- E1 = news 2020-09-30: MSFT news: {said[:-2]} | MSFT 10-q: more", "-> reads bearish | Company A"),
        ("20-day momentum: down against its usual range -> reads neutral (+0.00) [E9]", "-> reads neutral [E9]"),
    ):
        out = m.text(shown, "2020-10-01")
        assert want in out and "0.69" not in out and "(-0." not in out and "+0.00" not in out, out
    assert m.text("the model reads bearish (-0.69)", "2020-10-01") == "the model reads bearish (-0.69)"


def test_the_position_a_prompt_states_keeps_its_weights_under_the_mask():
    """Found in review: the manager was told its position as "Company A [n]" when a weight passed 1
    (the number rule keeps values in [-1, 1]); a weight names no firm or day, and keeps its sign and
    value in each of the prompts' position lines. Every other text masks as before."""
    m = masker_for(["MSFT", "JNJ"])
    for line, want in (
        ("negative = short): MSFT -1.10", "negative = short): Company B -1.10"),
        ("Current position (fraction of the portfolio; negative = short): MSFT -1.10, JNJ +1.25",
         "Current position (fraction of the portfolio; negative = short): Company B -1.10, Company A +1.25"),
        ("Today: 2020-10-09. Current position: MSFT +1.50, JNJ -0.25",
         "Today: the decision day. Current position: Company B +1.50, Company A -0.25"),
        ("Today: 2020-10-09. Current position (fraction of the portfolio; negative = short): JNJ +2.00",
         "Today: the decision day. Current position (fraction of the portfolio; negative = short): Company A +2.00"),
        ("A: weights MSFT -1.10 (gross 1.10); Company A -1.10", "A: weights Company B [n] (gross [n]); Company A [n]"),
        ("Current position: MSFT 12 shares, 2021", "Current position: Company B [n] shares, [year]"),
    ):  # fmt: skip
        assert m.text(line, "2020-10-09") == want
