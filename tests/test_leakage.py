"""The leakage audit (issue 43 item 1): adversaries that know the corpus, the
prices and each firm's words attack the prompts a run actually sent; a named
run is given away, a masked one is not, and each cue is shown to work by
hand on prompts built to leak it."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from fincon import data as fincon_data
from fincon.cli.main import main
from fincon.data.inputs import SAMPLE
from fincon.llm import leakage, leakage_inputs, leakage_verdict
from fincon.proportions import wilson
from fincon.testing.doubles import TeamStub
from fincon.testing.server import DoubleServer

WINDOW = ["--start", "2022-10-03", "--end", "2022-10-14"]


@pytest.fixture(scope="module")
def knowledge():
    """What the adversaries know of the bundled sample: its 11 firms' items and the 42 tickers' prices."""
    run = leakage_inputs.RunInfo(
        path=None, strategy="fincon", tickers=("TSLA",), start=dt.date(2022, 10, 3), end=dt.date(2022, 10, 14),
        masked=False, cache=None, data={"source": "sample"}, events=SAMPLE,
    )  # fmt: skip
    return leakage.build_knowledge([run])


def _item(ticker: str = "TSLA", day: str = "2022-10-04"):
    from fincon.data.inputs import open_events

    return next(
        e
        for e in open_events(SAMPLE, (ticker,)).all_events()
        if e.text and str(e.published_at.date()) == day and len(e.text.split()) > 30
    )


#: three items of two firms, each its own words (the sample's are generated from templates and share most)
TEXTS = {
    ("TSLA", "2022-10-04"): "The carmaker said its new casting line in Texas halved the number of parts in the rear "
    "underbody, and suppliers in the region reported longer shifts to keep pace with the ramp.",
    ("TSLA", "2022-10-11"): "Regulators opened a review of the driver assistance software after a series of "
    "complaints about phantom braking on highways, the agency said in a filing on Tuesday.",
    ("PFE", "2022-10-04"): "The drug maker raised its forecast for the antiviral after prescriptions climbed in "
    "the autumn wave, while warning that government purchase agreements would taper next year.",
}


def _small(knowledge):
    items = [
        leakage_inputs.Item(t, dt.date.fromisoformat(d), frozenset(leakage.shingles(leakage_inputs.tokens(x))))
        for (t, d), x in TEXTS.items()
    ]
    k = leakage.Knowledge(
        items, leakage_inputs.index_items(items), knowledge.closes, knowledge.sessions, knowledge.terms
    )
    k.bags = leakage_inputs.Bags(list(TEXTS.values()))
    return k


def test_each_adversary_by_hand(knowledge):
    small = _small(knowledge)
    text = TEXTS[("TSLA", "2022-10-04")]
    # corpus: an item word for word with an exact offset names the firm and the day exactly
    g = leakage.corpus_guess(f"News:\n[E1] 3 days before the decision day: {text}", small)
    assert (g.firm, g.firm_cue, g.day, g.exact) == ("TSLA", "corpus", dt.date(2022, 10, 7), True)
    # ... with coarse recency, the day within a week of the item's
    g = leakage.corpus_guess(f"[E1] this week: {text}", small)
    assert g.firm == "TSLA" and not g.exact and 0 < (g.day - dt.date(2022, 10, 4)).days <= 7
    # ... half of it, still; as a bag of its words (the mask's gist before 2026-11-30), no 5-word run is left
    from fincon.llm.masking_rules import topics

    assert leakage.corpus_guess(f"[E1] this week: {text[: len(text) // 2]}", small).firm == "TSLA"
    bag = "gist: " + ", ".join(sorted({w for w in leakage_inputs.tokens(text) if len(w) > 3}))
    assert leakage.corpus_guess(f"[E1] this week: {bag}", small).firm is None
    # bag of words: ... but its words still name the item, and the recency places the day
    g = leakage.bag_guess(f"[E1] this week: {bag}", small)
    assert (g.firm, g.firm_cue, g.exact) == ("TSLA", "bag of words", False) and 0 < (
        g.day - dt.date(2022, 10, 4)
    ).days <= 7
    assert leakage.bag_guess(f"[E1] the decision day: {bag}", small).day == dt.date(2022, 10, 4)
    # ... as the mask gives it now, its topic: the adversary masks the corpus the same way and looks it up,
    # naming the item only when no other story is given so (here, of three items, it is the one)
    assert topics(text) == "topics: supply"
    g = leakage.bag_guess(f"[E1] this week: {topics(text)}", small)
    assert (g.firm, g.firm_cue) == ("TSLA", "topics")
    other = "Suppliers of the drug maker warned that the autumn wave would stretch deliveries of the raw material."
    small.bags = leakage_inputs.Bags([*TEXTS.values(), other])
    small.items.append(leakage_inputs.Item("PFE", dt.date(2022, 11, 20), frozenset()))
    assert (
        topics(other) == "topics: supply" and leakage.bag_guess(f"[E1] this week: {topics(text)}", small).firm is None
    )
    # a corpus of figures only has no word to make a bag of: nothing is named, nothing fails
    small.bags = leakage_inputs.Bags(["1 2 3 4", "5 6 7 8"])
    assert leakage.bag_guess(f"[E1] this week: {bag}", small).firm is None
    # prices: three consecutive daily returns of TSLA, to two decimals
    closes = knowledge.closes["TSLA"]
    i = closes.index.get_loc(closes.loc["2022-10-10":].index[0])
    r = [100 * (closes.iloc[j] / closes.iloc[j - 1] - 1) for j in range(i - 2, i + 1)]
    g = leakage.price_guess("returns: " + ", ".join(f"{x:+.2f}%" for x in r), knowledge)
    assert (g.firm, g.day, g.exact) == ("TSLA", closes.index[i].date(), True)
    assert leakage.price_guess("returns: +1.00%, -2.00%, +3.00%", knowledge).firm is None


def test_a_reworded_sentence_in_a_report_line_is_read_by_the_bag_adversary(knowledge):
    """Found in review (a masked InvestorBench MSFT run whose analysts fell back to rules): a quoted
    sentence's key words in an analyst's report line ("- Company A news: ... key words: ...") named the
    item before the decision day in 4 of 11 manager prompts, and the audit read item lines only: it
    said "inconclusive" where reading them said "not blind". Key words anywhere are put to the bags."""
    from fincon.llm.masking_rules import reword

    small = _small(knowledge)
    kw = reword(TEXTS[("TSLA", "2022-10-04")])
    assert kw.startswith("key words: ")
    g = leakage.bag_guess(f"- Company A news: bullish (confidence 0.60). {kw} [E3]", small)
    assert (g.firm, g.firm_cue, g.exact) == ("TSLA", "bag of words", False) and 0 < (
        g.day - dt.date(2022, 10, 4)
    ).days <= 7
    assert leakage.bag_guess("- Company A news: bullish (confidence 0.60). key words: video [E3]", small).firm is None
    # vocabulary: products name the firm without its name
    assert leakage.vocabulary_guess("Cybertruck orders and Gigafactory output", knowledge).firm == "TSLA"
    assert leakage.vocabulary_guess("orders and output rose", knowledge).firm is None
    # explicit dates
    assert leakage.explicit_date("Today is Oct 5 2022. Filed 2022-09-30.") == dt.date(2022, 10, 5)


def test_the_tone_beside_a_masked_item_is_looked_up_with_its_topic(knowledge):
    """A masked item reads "topics: supply (tone +0.00)": the adversary knows the public lexicon
    too, so the tone picks among the items of one topic. To two decimals it named 8-14 % of a masked
    run's prompts on InvestorBench (docs/notes, 2026-11-30); the mask now gives it as a word."""
    from fincon.llm.masking_rules import topics

    small = _small(knowledge)
    text = TEXTS[("TSLA", "2022-10-04")]  # tone 0.00 (no word of the lexicon's)
    other = "Suppliers of the drug maker warned that the autumn wave would stretch deliveries of the raw material."
    small.bags = leakage_inputs.Bags([*TEXTS.values(), other])  # the same topic; tone -1.00 ("warned")
    small.items.append(leakage_inputs.Item("PFE", dt.date(2022, 11, 20), frozenset()))
    assert topics(text) == topics(other) == "topics: supply"
    # the topic alone names neither; with the tone, to two decimals or as a word, the one it is
    assert leakage.bag_guess("[E1] this week: topics: supply", small).firm is None
    for tone in ("+0.00", "neutral"):
        g = leakage.bag_guess(f"[E1] this week: topics: supply (tone {tone})", small)
        assert (g.firm, g.firm_cue) == ("TSLA", "topics") and 0 < (g.day - dt.date(2022, 10, 4)).days <= 7
    assert leakage.bag_guess("[E1] this week: topics: supply (tone -1.00)", small).firm == "PFE"
    # a third story of that topic, tone +0.20 (3 positive words, 2 negative): two decimals tell it from the
    # first, the word (neutral, as both) does not
    third = "Suppliers posted strong gains and improved output, with a loss and weak orders in the quarter."
    assert fincon_data.LoughranMcDonald().score(third).tone == pytest.approx(0.2)
    small.bags = leakage_inputs.Bags([*TEXTS.values(), other, third])
    small.items.append(leakage_inputs.Item("GM", dt.date(2022, 12, 20), frozenset()))
    assert leakage.bag_guess("[E1] this week: topics: supply (tone +0.00)", small).firm == "TSLA"
    assert leakage.bag_guess("[E1] this week: topics: supply (tone neutral)", small).firm is None


def test_a_days_masked_items_together_name_firm_and_day_where_each_alone_does_not(knowledge):
    """Each masked line is one of many items' (its topic and tone are another story's too), but the only
    firm and day that all the lines of a prompt fit are one: the adversary intersects the (firm, day)
    pairs each line fits, its recency giving the span (cue "topics jointly")."""
    supply, regulators = TEXTS[("TSLA", "2022-10-04")], TEXTS[("TSLA", "2022-10-11")]
    corpus = [  # (firm, published, text): TSLA's two items of 2022-10-04, and one story like each elsewhere
        ("TSLA", "2022-10-04", supply),
        ("TSLA", "2022-10-04", regulators),
        ("PFE", "2022-11-21", "Suppliers of the drug maker said the autumn wave would stretch deliveries of the raw material."),
        ("GM", "2022-12-20", "Regulators opened a review of the lane keeping software after complaints, the agency said."),
    ]  # fmt: skip
    items = [leakage_inputs.Item(t, dt.date.fromisoformat(d), frozenset()) for t, d, _ in corpus]
    k = leakage.Knowledge(items, {}, knowledge.closes, knowledge.sessions, knowledge.terms)
    k.bags = leakage_inputs.Bags([x for _, _, x in corpus])
    lines = [
        "[E1] the decision day: topics: supply (tone neutral)",
        "[E2] the decision day: topics: regulation (tone negative)",
    ]
    for line in lines:  # each alone: two stories
        assert leakage.bag_guess(line, k).firm is None
    g = leakage.bag_guess("\n".join(lines), k)
    # a line's recency counts from the day its item became visible: one session fits both, exactly
    assert (g.firm, g.firm_cue, g.day_cue, g.exact, g.day) == (
        "TSLA",
        "topics jointly",
        "topics jointly",
        True,
        dt.date(2022, 10, 4),
    )
    # a line that fits no day of that firm leaves nothing; a line of a year's span is no constraint worth its set
    assert leakage.bag_guess("\n".join([*lines, "[E3] this week: topics: dividend (tone positive)"]), k).firm is None
    assert leakage.bag_guess("\n".join([*lines, "[E3] this year: topics: dividend (tone positive)"]), k).firm == "TSLA"


def test_a_filing_analysts_one_line_names_firm_and_day_among_its_sources_items(knowledge):
    """The 10-Q analyst is asked on the day a 10-Q becomes visible, and its masked prompt lists that one
    line ("the decision day: topics: ... (tone ...)"). A reader who knows the corpus and the role looks it
    up among the corpus's 10-Qs: one with that topic and tone places firm and day exactly (an evening
    filing: the next day). The audit scored such prompts day 0 % (found in review 2026-12-02): it joined a
    prompt's lines only when there were two, among every source's items, where a news item of another
    firm shares the topic and tone."""
    from fincon.data.events.model import Event
    from fincon.llm.masking_rules import topics

    filing = TEXTS[("TSLA", "2022-10-04")]
    events = [  # TSLA's 10-Q after the close of 10-24 (visible 10-25); PFE news with the same words that day
        Event("q", "TSLA", "10-Q", "2022-10-24T16:05:00-04:00", filing),
        Event("n", "PFE", "news", "2022-10-25T09:00:00-04:00", filing),
        Event("g", "GM", "10-Q", "2022-10-25T09:00:00-04:00", TEXTS[("TSLA", "2022-10-11")]),
    ]
    k = leakage_inputs.knowledge_of(events, knowledge.closes)
    tone = fincon_data.tone_label(fincon_data.LoughranMcDonald().score(filing).tone)
    text = f"10-Q analyst. Items:\n[E1] the decision day: {topics(filing)} (tone {tone})"
    assert leakage.bag_guess(text, k).day is None  # among every source's items: two firms fit
    g = leakage.bag_guess(text, k, leakage.ROLE_SOURCE["10-q"])
    assert (g.firm, g.day, g.exact, g.day_cue) == ("TSLA", dt.date(2022, 10, 25), True, "topics jointly")
    row = leakage.audit([leakage.Prompt("r", "10-q/TSLA", "2022-10-25", "k", text, ("TSLA",))], k)
    assert (row["overall"]["firm_and_day"]["k"], row["overall"]["firm_and_day"]["n"]) == (1, 1)


def test_each_role_reads_the_source_the_audit_looks_it_up_among():
    from fincon.agents.roles import analyst_notes, annual_report, earnings_call, news, quarterly_report

    roles = (annual_report, analyst_notes, earnings_call, news, quarterly_report)
    assert {m.ROLE.name: m.ROLE.sources for m in roles} == {r: (s,) for r, s in leakage.ROLE_SOURCE.items()}


def test_a_masked_prompts_topics_name_the_firm_by_its_industry_and_never_the_day(knowledge):
    """A drug maker's items are mostly of "healthcare", a carmaker's of "vehicles": a prompt's topics,
    scored against each firm's share of every topic of the corpus, name its firm when the odds against the
    next are 10:1 or more (cue "topics' industry"). Each item here is its own story (a month apart), so no
    line names one, and topics never date an item: no day."""
    MONTHS = ("2022-10-03", "2022-11-07", "2022-12-05")
    corpus = [
        *(("TSLA", d, "The carmaker said deliveries of its vehicles in the region rose in the week.") for d in MONTHS),
        *(("PFE", d, "The drug maker said the clinical trial of its vaccine enrolled more patients.") for d in MONTHS),
        ("PFE", "2023-01-09", "The drug maker said deliveries of its vaccine to the region were delayed by a week."),
    ]  # fmt: skip
    items = [leakage_inputs.Item(t, dt.date.fromisoformat(d), frozenset()) for t, d, _ in corpus]
    k = leakage.Knowledge(items, {}, knowledge.closes, knowledge.sessions, knowledge.terms)
    k.bags = leakage_inputs.Bags([x for _, _, x in corpus])
    two = "[E1] this month: topics: healthcare (tone neutral)\n[E2] this year: topics: healthcare (tone neutral)"
    g = leakage.bag_guess(two, k)
    assert (g.firm, g.firm_cue, g.day) == ("PFE", "topics' industry", None)
    assert leakage.bag_guess("[E1] this month: topics: vehicles (tone neutral)", k).firm is None  # 5:1, under 10:1
    assert leakage.bag_guess("[E1] this month: topics: earnings (tone neutral)", k).firm is None  # no firm's topic


def test_the_linker_joins_prompts_of_one_day_that_quote_each_other():
    quote = "the supply chain is easing faster than the street expects this quarter"
    ps = [
        leakage.Prompt("r", "news/TSLA", "2022-10-05", "k1", f"insight: {quote}", ("TSLA",)),
        leakage.Prompt("r", "manager", "2022-10-05", "k2", f"reports: {quote}", ("TSLA",)),
        leakage.Prompt("r", "manager", "2022-10-06", "k3", "reports: nothing quoted here at all today", ("TSLA",)),
    ]
    groups = leakage.link(ps)
    assert groups[0] == groups[1] != groups[2]


def test_a_text_sent_again_is_one_prompt_and_gives_away_what_any_sending_does(knowledge):
    """`fincon eval leakage` on a masked training of 3 episodes counted 150 prompts where 110 texts were
    sent (each episode asks its analysts what the last asked): the Wilson interval that says "blind"
    narrowed on copies. And a copy in another run hid a day's link: the 8-word run a manager's prompt
    shares with its analyst's, found in each run, looked like another day's, so no run's day was linked.
    A text is one prompt now, giving away what any of its sendings does."""
    small = _small(knowledge)
    span = (dt.date(2022, 10, 7), dt.date(2022, 10, 7))
    quote = "the supply chain is easing faster than the street expects this quarter"
    named = f"[E1] 3 days before the decision day: {TEXTS[('TSLA', '2022-10-04')]} {quote}"
    quiet = f"reports: {quote}"  # gives nothing away alone; its day's analyst prompt does
    ps = [
        *(leakage.Prompt(f"ep-0{i}", "manager", "2022-10-07", f"m{i}", quiet, ("TSLA",), span) for i in (1, 2, 3)),
        leakage.Prompt("ep-01", "news/TSLA", "2022-10-07", "n1", named, ("TSLA",), span),
        *(leakage.Prompt(f"ep-0{i}", "news/TSLA", "2022-10-07", "n1", named, ("TSLA",), span) for i in (2, 3)),
    ]
    res = leakage.audit(ps, small)
    assert res["sent"] == 6 and res["overall"]["prompts"] == 2  # two texts
    assert res["overall"]["firm_and_day"]["k"] == 2  # the manager's, linked to its day's analyst in ep-01
    assert res["by_agent"]["manager"]["firm_and_day"]["k"] == 1
    alone = leakage.audit([ps[0], *ps[1:3]], small)  # the manager's copies alone: one text, nothing given away
    assert alone["overall"]["prompts"] == 1 and alone["overall"]["firm_and_day"]["k"] == 0
    assert "(masked; 2 prompts, distinct texts of 6 sent)" in leakage.report({**res, "masked": True})


def _rows(k: int, n: int) -> list[dict]:
    """``n`` dated prompts of which ``k`` give away firm and day."""
    return [
        {"kind": "news", "dated": True, "firm": i < k, "day_exact": i < k, "day_near": i < k, "both": i < k,
         "firm_cue": "corpus" if i < k else None, "day_cue": None}
        for i in range(n)
    ]  # fmt: skip


def test_blind_only_when_the_whole_interval_is_under_the_threshold():
    """A sceptic's point: 0 give-aways in 5 prompts (Wilson 95 % 0-43 %) is no evidence that a mask
    holds. Blind needs the interval's upper end at or under the threshold (0 in n: 3.84 / (n + 3.84)
    <= 0.10 from n = 35); a share above it is not blind; between, inconclusive, with the days
    that would settle it at the observed rate."""
    assert leakage.summarise(_rows(0, 34))["result"] == "inconclusive"  # upper 10.1 %
    assert leakage.summarise(_rows(0, 35))["result"] == "blind"  # upper 9.9 %
    assert leakage.summarise(_rows(0, 35))["blind"] is True
    res = leakage.summarise(_rows(1, 15))  # 7 %, Wilson 1 %-30 %: the run audited by hand on JNJ
    assert res["result"] == "inconclusive" and res["blind"] is None
    assert res["verdict"].startswith("inconclusive: 1 of 15 prompts (7%, Wilson 95 % 1%-30%)")
    need = leakage_verdict.to_settle(1, 15, 0.10)
    assert "about %d days at this rate would" % need in res["verdict"]
    assert wilson(round(need / 15), need)[1] <= 0.10 < wilson(round((need - 1) / 15), need - 1)[1]
    assert leakage.summarise(_rows(5, 40))["result"] == "not blind"  # 12.5 % > 10 %
    assert leakage.summarise(_rows(4, 40))["result"] == "inconclusive"  # 10 %, not above: upper 23 %
    assert leakage_verdict.to_settle(4, 40, 0.10) is None  # at the threshold no sample size shows it under
    zero = leakage.summarise(_rows(0, 500), threshold=0.0)
    assert zero["result"] == "inconclusive" and "at this rate no practical number of days would" in zero["verdict"]
    assert leakage.summarise([])["result"] == "not audited"


def test_a_days_prompts_are_one_draw_for_the_bound_that_says_blind():
    """The masked MSFT comparison of the bundled 1.5B read "blind by this audit: 0 of 63 prompts (0%,
    Wilson 95 % 0%-6%)": 63 prompts of 20 days, counted as 63 independent draws, though the linker gives a
    day's give-away to every prompt quoting it. 0 of 20 days reaches 16 %: inconclusive; blind takes 35
    days however many prompts each holds. A share over the threshold is still read on the prompts."""

    def days(k_days: int, n_days: int, per_day: int) -> list[dict]:
        rows = _rows(0, n_days * per_day)
        for i, r in enumerate(rows):
            r["day"] = f"d{i // per_day:03d}"
            r["both"] = i // per_day < k_days
        return rows

    res = leakage.summarise(days(0, 20, 3))  # 60 prompts, upper 6.0 % alone
    assert res["overall"]["firm_and_day"]["wilson_95"][1] < 0.10 and res["result"] == "inconclusive"
    assert res["overall"]["firm_and_day_days"] == {"k": 0, "n": 20, "share": 0.0, "wilson_95": list(wilson(0, 20))}
    assert res["verdict"].startswith(
        "inconclusive: 0 of 60 prompts (0%, Wilson 95 % 0%-6%) give away firm and day (within 5 sessions), on 0 of "
        "20 days (Wilson 95 % 0%-16%: a day's prompts give it away together, so the bound is never narrower than "
        "by day)"
    )
    assert "(about 35 days at this rate would: audit a longer run)" in res["verdict"]
    # the table shows the bound by day under the prompts' (it showed "all ... 0%-6%" above an inconclusive)
    by_day = next(line for line in leakage.report(res).splitlines() if line.startswith("all, by day"))
    assert by_day.split() == ["all,", "by", "day", "20", "d", "0%", "0%-16%"]
    assert leakage.summarise(days(0, 35, 3))["result"] == "blind"
    # one day given away of 40, its 3 prompts of 120: 2.5 % either way, but 1 of 40 days reaches 13 %
    assert leakage.summarise(days(1, 40, 3))["result"] == "inconclusive"
    assert leakage.summarise(days(1, 200, 3))["result"] == "blind"  # 1 of 200 days: upper 2.8 %
    # every day given away under few of the prompts (a summariser's many a day): 6 of 6 days, Wilson 61-100 %,
    # read "inconclusive" on 8 % of the prompts
    many = days(6, 6, 12)
    for i, r in enumerate(many):
        r["both"] = i % 12 == 0
    res = leakage.summarise(many)
    assert res["overall"]["firm_and_day"]["share"] < 0.10 and res["result"] == "not blind"
    assert res["verdict"].startswith("not blind: 6 of 72 prompts (8%")
    for i, r in enumerate(many):
        r["both"] = i == 0
    assert leakage.summarise(many)["result"] == "inconclusive"  # 1 of 6 days: lower end 3 %
    assert (
        leakage_verdict.outcome_of(0, 63, 0.1, 0, 20) == "inconclusive"
        and leakage_verdict.outcome_of(0, 63, 0.1, 0, 40) == "blind"
    )


@pytest.mark.slow  # two team runs through the OpenAI path (about 4 s each) and two audits
def test_a_named_run_is_given_away_and_the_masked_one_is_not(tmp_path, monkeypatch, capsys):
    """The whole path as a user runs it: the team on the sample with a model double behind an
    OpenAI-compatible server on 127.0.0.1, named and masked; `fincon eval leakage` on each."""
    monkeypatch.chdir(tmp_path)
    with DoubleServer(TeamStub()) as url:
        for name, flags in (("named", []), ("masked", ["--anonymize"])):
            argv = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "llm", "--param",
                    "fincon.transcripts=text", "--param", "fincon.embedder=hashing", "--llm-backend", "openai",
                    "--llm-base-url", url, "--llm-model", "stub", "--llm-knowledge-cutoff", "2019-01-01",
                    "--llm-cache-path", f"{name}.sqlite", *WINDOW, "--no-progress", "--out", name, "--ledger", "off",
                    "--no-benchmark", *flags]  # fmt: skip
            assert main(argv) == 0
    capsys.readouterr()
    assert main(["eval", "leakage", "named", "--json"]) == 0
    named = json.loads(capsys.readouterr().out)
    assert named["blind"] is False and named["masked"] is False
    assert named["overall"]["firm_and_day"]["share"] == 1.0 and named["overall"]["prompts"] >= 25
    assert named["overall"]["cues"]["explicit date"] == named["overall"]["prompts"]
    assert main(["eval", "leakage", "masked"]) == 0
    text = capsys.readouterr().out
    # 0 give-aways, but two weeks of prompts are too few to show a share under 10 %
    # (blind from 35 dated prompts at 0, test_blind_only_when_the_whole_interval_is_under_the_threshold)
    assert "verdict: inconclusive: 0 of" in text and "(masked;" in text and "days at this rate would" in text
    assert main(["eval", "leakage", "masked", "--threshold", "0"]) == 0  # 0 % is not above a 0 threshold
    with pytest.raises(SystemExit):
        main(["eval", "leakage", "masked", "--threshold", "2"])
    # explain of a masked day prints the items as they are, and says that the model read none of them so:
    # where the prompts as sent are, and what the audit found (a named run's says nothing of it)
    capsys.readouterr()
    assert main(["explain", "masked", "--date", "2022-10-12"]) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.startswith("masked: the model read the items above masked") and "leakage audit: inconclusive" in said
    assert main(["llm", "cache", "--path", "masked.sqlite", "--key", said.split("--key ")[1].split()[0]]) == 0
    assert "Company A" in capsys.readouterr().out
    assert main(["explain", "named", "--date", "2022-10-12"]) == 0 and "masked" not in capsys.readouterr().out
    # ... and the HTML report's timeline shows each masked day with the same line
    from fincon.report import write_report

    write_report([tmp_path / "masked"], tmp_path / "masked.html")
    assert said.replace("'", "&#x27;") in (tmp_path / "masked.html").read_text(encoding="utf-8")


def test_html_report_row_carries_the_audit_result():
    """The report's model-knowledge row shows a masked run's audit (blind / not
    blind with its count), and a named run's row stays as it was."""
    from fincon.report.runs import _knowledge

    block = {"label": "in-training-data", "cutoff": "2024-09-19"}
    masked = {**block, "audit": {"result": "not blind", "firm_and_day": 7, "prompts": 40}}
    assert _knowledge({"model_knowledge": masked})["model_knowledge"] == (
        "in-training-data (cutoff 2024-09-19); masked, leakage audit: not blind (7/40 prompts give away firm and day)"
    )
    named = {**block, "audit": {"result": "not audited"}}
    assert _knowledge({"model_knowledge": named})["model_knowledge"] == "in-training-data (cutoff 2024-09-19)"


@pytest.mark.slow  # a two-episode training of the team through the OpenAI path (about 6 s)
def test_a_masked_training_masks_what_the_belief_update_reads(tmp_path, monkeypatch, capsys):
    """Found by reading the CVRF prompts: the risk-control agent's client had no mask, so a masked
    training told the model under test "Episode 1 on TSLA, 2022-10-03 .. 2022-10-07" and the
    analysts' words in clear when it compared episodes. Every prompt the server sees is masked."""

    class Recording(TeamStub):
        def __init__(self):
            super().__init__()
            self.seen: list[tuple[str, str]] = []

        def complete(self, messages, schema, params):
            self.seen.append((str(sorted(schema.get("properties", {}))), "\n".join(m.content for m in messages)))
            return super().complete(messages, schema, params)

    monkeypatch.chdir(tmp_path)
    double = Recording()
    with DoubleServer(double) as url:
        argv = ["train", "--ticker", "TSLA", "--start", "2022-10-03", "--end", "2022-10-07", "--episodes", "2",
                "--brain", "llm", "--param", "fincon.transcripts=text", "--param", "fincon.embedder=hashing",
                "--llm-backend", "openai", "--llm-base-url", url, "--llm-model", "stub", "--anonymize",
                "--llm-cache-path", "calls.sqlite", "--no-progress", "--out", "tr"]  # fmt: skip
        assert main(argv) == 0
    capsys.readouterr()
    compared = [text for props, text in double.seen if "Better episode" in text or "Stretches:" in text]
    assert compared  # the belief update asked the model
    named = [text[:120] for _, text in double.seen if "TSLA" in text or "Tesla" in text or "2022-10-0" in text]
    assert named == []
    # the audit of the training reads its episodes' prompts too (it read none of them: they are one level deeper)
    assert main(["eval", "leakage", "tr", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert {"manager", "risk-control"} <= set(res["by_agent"]) and len(res["runs"]) == 3


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
def test_a_rules_fallback_quoting_its_items_is_reworded_in_the_managers_prompt(tmp_path, monkeypatch, capsys):
    """Found by hand (JNJ on InvestorBench, the 0.5B): an analyst whose answer was invalid twice fell
    back to the rules brain, whose insight quotes its items' first sentences; the manager's masked
    prompt showed them word for word and the corpus adversary named firm and day. A fallback's
    sentences were then reworded as a model's answers are, to their key words, which named an item too
    (11 of 28 manager prompts of a masked MSFT run): they are shown as items are."""
    monkeypatch.chdir(tmp_path)
    with DoubleServer(TeamStub(bad_ids=True)) as url:  # every analyst cites ids it was never given: fallbacks
        argv = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "llm", "--param",
                "fincon.transcripts=text", "--param", "fincon.embedder=hashing", "--param", "fincon.analysts=[news]",
                "--llm-backend", "openai", "--llm-base-url", url, "--llm-model", "stub", "--llm-knowledge-cutoff",
                "2019-01-01", "--llm-cache-path", "m.sqlite", *WINDOW, "--no-progress", "--out", "m", "--ledger",
                "off", "--no-benchmark", "--anonymize"]  # fmt: skip
        assert main(argv) == 0
    with sqlite3.connect(tmp_path / "m.sqlite") as db:
        manager = [
            json.loads(m)[1]["content"] for (m,) in db.execute("select messages from calls where agent='manager'")
        ]
    usage = pd.read_csv(tmp_path / "m" / "llm_usage.csv")
    assert len(manager) >= 8 and usage.loc[usage.agent == "news/TSLA", "fallbacks"].sum() >= 8
    # every sample news item says "... shares rose 2.1% in the latest session": never quoted to the manager
    quoted = [p for p in manager if "in the latest session" in p]
    reports = [line for p in manager for line in p.splitlines() if line.startswith("- Company A news:")]
    assert quoted == [] and len(reports) == len(manager)
    # as items are: under the default --mask-items tone "a quoted item" (its topics were still shown when
    # items were no longer: found in a live run of the 0.5B, 2026-12-02)
    assert all("a quoted item" in r and "topics: " not in r and "key words:" not in r for r in reports)


@pytest.mark.slow  # 1.5-4.6 s on 2 cores: in make test, not in make test-fast (under a minute)
def test_a_masked_belief_update_rewords_the_views_it_quotes_and_its_audit_reads_it(tmp_path, monkeypatch, capsys):
    """Found by hand (JNJ on InvestorBench: rules episodes, `--cvrf-brain llm --anonymize`): `fincon eval
    leakage` on the training ended in a traceback (the belief update is asked on "episode-1", not a
    date), and the update's prompt showed each stretch's views as the analysts wrote them, a rules
    insight's first 100 characters, an item's own sentence: the corpus adversary named the firm in
    2 prompts of 2. The views are shown as a run shows what its rules analysts said, and the audit
    takes a belief update's prompt to be about the training window."""
    monkeypatch.chdir(tmp_path)
    with DoubleServer(TeamStub()) as url:
        argv = ["train", "--ticker", "TSLA", "--start", "2022-10-03", "--end", "2022-10-14", "--episodes", "2",
                "--brain", "rules", "--cvrf-brain", "llm", "--param", "fincon.transcripts=text", "--llm-backend",
                "openai", "--llm-base-url", url, "--llm-model", "stub", "--llm-knowledge-cutoff", "2019-01-01",
                "--anonymize", "--llm-cache-path", "calls.sqlite", "--no-progress", "--out", "tr"]  # fmt: skip
        assert main(argv) == 0
    with sqlite3.connect(tmp_path / "calls.sqlite") as db:
        asked = [json.loads(m)[1]["content"] for (m,) in db.execute("select messages from calls")]
    assert len(asked) == 2 and all("Stretches:" in p and "Views at its start:" in p for p in asked)
    # the sample's 10-Q item and analyst note, as the rules analysts quote them; reworded
    for sentence in ("operates in electric vehicles", "Our desk rates"):
        assert not any(sentence in p for p in asked)
    # a rules insight's sentences, as its items are shown (their topics until 2026-12-02, which the default
    # --mask-items tone no longer shows of an item)
    assert all("a quoted item" in p and "topics: " not in p for p in asked)
    capsys.readouterr()
    assert main(["eval", "leakage", "tr", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["overall"]["prompts"] == 2 and res["overall"]["firm_and_day"]["n"] == 2  # both dated: the window
    assert res["overall"]["firm"]["k"] == 0


def test_an_experiments_runs_are_found_at_any_depth(tmp_path):
    """Found by hand: `fincon eval leakage EXPERIMENT` on a masked experiment said "no run here lists its
    model calls" over four runs that did (train/full-r1, its episodes/ep-NN, test/full-r1)."""
    for run in ("test/full-r1", "train/full-r1", "train/full-r1/episodes/ep-01", "train/full-r1/episodes/ep-02"):
        (tmp_path / run).mkdir(parents=True, exist_ok=True)
        (tmp_path / run / "llm_calls.csv").write_text("day,agent,key\n")
    (tmp_path / "baselines" / "buy-and-hold").mkdir(parents=True)  # no model: not a run to audit
    found = [p.relative_to(tmp_path).as_posix() for p in leakage_inputs.runs_in(tmp_path)]
    assert found == ["test/full-r1", "train/full-r1", "train/full-r1/episodes/ep-01", "train/full-r1/episodes/ep-02"]
    assert leakage_inputs.runs_in(tmp_path / "train" / "full-r1")[0] == tmp_path / "train" / "full-r1"


def test_a_portfolio_schema_names_no_ticker_and_the_audit_reads_one_in_title_case(knowledge):
    """Found reading the masked portfolio schema: pydantic titles each ticker's field after its alias,
    "Tsla", "Msft", "Brk-B", and the mask replaced tickers as written (in capitals) only; the schema is
    part of the prompt (and an OpenAI endpoint's response format). A title naming a firm reads as its
    pseudonym, and the vocabulary adversary reads a ticker in title case where it is no English word."""
    from fincon.agents.reports import portfolio_answer_model
    from fincon.llm.masking_terms import masker_for

    tickers = ["TSLA", "MSFT", "BRK-B"]
    m = masker_for(tickers, secret="x")
    schema = m.schema(portfolio_answer_model(tickers).model_json_schema(by_alias=True))
    titles = {k: v.get("title") for k, v in schema["properties"].items()}
    assert titles == {"Company A": "Company A", "Company B": "Company B", "Company C": "Company C",
                      "rationale": "Rationale", "relied_on": "Relied On", "size": "Size"}  # fmt: skip
    assert leakage.vocabulary_guess('{"properties":{"Company A":{"title":"Tsla"}}} Tsla Tsla', knowledge).firm == "TSLA"
    assert leakage.vocabulary_guess("All in all, the stock is on the rise", knowledge).firm is None


def test_a_short_history_is_said_without_its_length_and_the_audit_dates_the_day_by_it(knowledge):
    """A run that begins near its data's first close: the data analyst wrote "about 3-7% below the
    6-day high", the number of closes so far, which is the data's sixth session (found by hand on
    InvestorBench's MSFT from 2020-03-16, masked: 49 data-analysis prompts from "the 6-day high" to
    "the 54-day high", and the audit counted none). The audit dates a count below the run's largest
    (the full window); the analyst no longer writes one."""
    from fincon.agents.roles.data_analysis import ROLE

    closes = knowledge.closes["TSLA"]
    g = leakage.history_guess("[E5]: about 3-7% below the 6-day high", knowledge, cap=61)
    assert (g.firm, g.day, g.exact, g.day_cue) == (None, closes.index[5].date(), True, "history length")
    assert leakage.history_guess("[E5]: about 3-7% below the 61-day high", knowledge, cap=61).day is None
    assert leakage.history_guess("[E5]: about 3-7% below the 6-day high", knowledge, cap=None).day is None
    # the audit: the run's largest count is its window; the prompts below it are dated exactly
    text = (
        "Indicators computed from the daily closes up to today (label, value):\n[E5]: about 0-1% below the {}-day high"
    )
    days = [str(d.date()) for d in closes.index[:61]]
    ps = [leakage.Prompt("r", "data-analysis/TSLA", days[n - 1], f"k{n}", text.format(n), ("TSLA",)) for n in (7, 61)]
    found = leakage.audit(ps, knowledge)["by_agent"]["data-analysis"]["day_exact"]
    assert (found["k"], found["n"]) == (1, 2)
    # the analyst: a full window is named by its length, as before; a shorter history by no count
    full, _ = ROLE.indicators(closes.to_numpy()[:61], days[60], window=61)
    short, _ = ROLE.indicators(closes.to_numpy()[:6], days[5], window=61)
    # TSLA's close of 2018-03-29, 17.74, is 25.5 % under its high of 2018-02-26, 23.83: to the nearest ten, 30
    assert [i.text for i in full if "high" in i.text] == ["about 30% below the 61-day high"]
    assert [i.text for i in short if "high" in i.text] == ["about 0% below its highest close so far"]
    assert not any(str(n) in i.text for i in short for n in range(5, 8))


@pytest.mark.slow
def test_the_paraphrase_models_calls_are_not_the_model_under_tests_prompts(tmp_path, monkeypatch, capsys):
    """Found in review: with --llm-paraphrase-model the audit read the other model's inputs (each item,
    masked word by word, to be paraphrased) as prompts of the model under test, so a paraphrase run read
    not blind (11 of 28 prompts; the team's own 14 at 0 %) whatever the traded model saw."""
    from fincon.llm.types import Completion

    class Paraphrasing(TeamStub):
        def complete(self, messages, schema, params):
            if schema.get("title") == "Rewrite":
                return Completion(json.dumps({"text": "A firm reported an event; its outlook changed."}), 10, 10)
            return super().complete(messages, schema, params)

    monkeypatch.chdir(tmp_path)
    with DoubleServer(Paraphrasing()) as url:
        argv = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "llm", "--param",
                "fincon.transcripts=text", "--param", "fincon.embedder=hashing", "--llm-backend", "openai",
                "--llm-base-url", url, "--llm-model", "stub", "--llm-paraphrase-model", "other",
                "--llm-knowledge-cutoff", "2019-01-01", "--llm-cache-path", "pp.sqlite", "--start", "2022-10-25", "--end", "2022-10-28", "--no-progress",
                "--out", "pp", "--ledger", "off", "--no-benchmark", "--anonymize"]  # fmt: skip
        assert main(argv) == 0
    calls = (tmp_path / "pp" / "llm_calls.csv").read_text().splitlines()[1:]
    para = sum(",paraphrase," in c for c in calls)
    audit = json.loads((tmp_path / "pp" / "metrics.json").read_text())["model_knowledge"]["audit"]
    assert para > 5 and 10 <= audit["prompts"] <= len(calls) - para and audit["firm_and_day"] == 0, audit


@pytest.mark.slow
def test_a_masked_trainings_next_episode_rewords_the_reflections_it_carries(tmp_path, monkeypatch):
    """Found in review 2026-12-02 (HON on InvestorBench, the stub model): episode 1's prompts showed a
    reflection the model wrote as key words, and episode 2's showed it whole ("[earlier episode, days
    later] stub reflection 5: weigh the filings more than the day's news."): the carried reflections
    never reached the new episode's mask. They do (Masker.recalled), as learned beliefs' do."""
    monkeypatch.chdir(tmp_path)
    with DoubleServer(TeamStub()) as url:
        argv = ["train", "--ticker", "TSLA", "--start", "2022-10-03", "--end", "2022-10-14", "--episodes", "2",
                "--llm-backend", "openai", "--llm-base-url", url, "--llm-model", "stub", "--llm-knowledge-cutoff",
                "2019-01-01", "--anonymize", "--llm-cache-path", "calls.sqlite", "--no-progress", "--out", "tr"]  # fmt: skip
        assert main(argv) == 0
    carried = json.loads((tmp_path / "tr" / "episodes" / "ep-02" / "reflections.json").read_text())
    said = "weigh the filings more than the day's news."  # the stub's every reflection
    assert len(carried) >= 3 and all(said in r["text"] for r in carried[:3]), carried
    with sqlite3.connect(tmp_path / "calls.sqlite") as db:
        asked = [json.loads(m)[-1]["content"] for (m,) in db.execute("select messages from calls")]
    shown = [line for p in asked for line in p.splitlines() if line.startswith("- [earlier episode, ")]
    assert len(shown) >= 10, shown  # episode 2's manager read them, day after day
    assert [line for line in shown if said in line] == [], shown  # never whole
    assert all("key words: day's, filings, reflection, stub, weigh" in line for line in shown), shown


@pytest.mark.slow
def test_a_test_stage_rewords_the_reflections_its_training_carried(tmp_path, monkeypatch):
    """Found in review 2026-12-02: a training's carried reflection is learned as "[earlier episode, DAY]
    text"; the mask was told of it so, read that as an item's line when the text had a colon, and never
    found the sentence in a test stage's prompts, where it was shown whole. It is told the text alone."""
    from fincon.agents.beliefs import Beliefs, Reflection, TrainingWindow

    monkeypatch.chdir(tmp_path)
    said = "Lesson: cloud backlog grew strongly and the new console launch should carry the stock next quarter."
    learned = Beliefs.initial({"news": 1.0}).model_copy(
        update={
            "reflections": [Reflection(day="2022-10-07", text=f"[earlier episode, 2022-10-07] {said}")],
            "window": TrainingWindow(start="2022-10-03", end="2022-10-14"),
        }
    )
    Path("beliefs.json").write_text(learned.model_dump_json())
    with DoubleServer(TeamStub()) as url:
        argv = ["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--beliefs", "beliefs.json", "--start",
                "2022-10-17", "--end", "2022-10-18", "--param", "fincon.analysts=[news]", "--param", "fincon.embedder=hashing", "--llm-backend", "openai", "--llm-base-url", url,
                "--llm-model", "stub", "--llm-knowledge-cutoff", "2019-01-01", "--anonymize", "--llm-cache-path",
                "calls.sqlite", "--no-progress", "--no-benchmark", "--ledger", "off", "--out", "te"]  # fmt: skip
        assert main(argv) == 0
    with sqlite3.connect("calls.sqlite") as db:
        asked = [json.loads(m)[-1]["content"] for (m,) in db.execute("select messages from calls")]
    shown = [line for p in asked for line in p.splitlines() if line.startswith("- [earlier episode, ")]
    assert shown and [line for line in shown if "console launch" in line] == [], shown
