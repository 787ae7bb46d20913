"""Whole evidence within a budget: items are distilled to whole sentences
once (cached by content hash), prompts carry whole items most relevant first
until the analyst's budget is spent, and the earnings-call analyst reads the
distilled transcript, not its title."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from fincon.agents.roles import ANALYSTS
from fincon.agents.roles.base import Item, memory_text, within_budget
from fincon.data.events.model import Event
from fincon.memory.distill import Distiller, approx_tokens, clip_sentences, sentences

FILING = (
    "Microsoft Corporation is a technology company. The company has offices in many countries. "
    "Revenue increased 12% to $37.2 billion, driven by cloud demand and strong margins. "
    "The weather in Redmond was mild this year and the campus cafeteria added a new menu. "
    "Management raised its guidance for the next quarter on higher Azure orders. "
    "Employees enjoy a range of benefits."
)


def test_distilled_text_is_whole_sentences_within_budget_in_order():
    d = Distiller()
    out = d.distill(FILING, 45)
    assert approx_tokens(out) <= 45
    kept = sentences(out)
    assert kept and all(s in sentences(FILING) for s in kept)  # whole sentences only
    order = [sentences(FILING).index(s) for s in kept]
    assert order == sorted(order)
    # the figures and the guidance beat the cafeteria and the benefits
    assert "Revenue increased 12% to $37.2 billion" in out and "guidance" in out
    assert "cafeteria" not in out and "benefits" not in out
    # within budget: the whole text; the same text again is a cache hit
    assert d.distill("Short news. Two sentences.", 60) == "Short news. Two sentences."
    assert d.distill(FILING, 45) == out and d.hits == 1


def test_a_sentence_longer_than_the_budget_is_kept_whole_not_cut():
    long = "Revenue " + " ".join(["grew"] * 80) + "."
    assert Distiller().distill(long, 10) == long


def test_clip_keeps_whole_sentences_and_memory_text_never_cuts():
    assert clip_sentences("One two three. Four five six. Seven.", 30) == "One two three. Four five six."
    clipped = clip_sentences("a, " * 100 + "end.", 40)
    assert clipped.endswith("…") and len(clipped) <= 40 and not clipped[:-1].endswith(" ")
    body = "Revenue rose. " * 30
    assert (
        memory_text(f"[news 2022-10-05 08:12] Title. {body} Tone: neutral (LM +0.00).", None)
        == f"Title. {body}".strip()
    )


def test_within_budget_keeps_whole_items_most_relevant_first():
    items = [Item(f"m{n}", "2022-10-05", "news", " ".join(["word"] * w) + ".") for n, w in enumerate([30, 30, 50, 5])]
    kept = within_budget(items, 80)
    # m0 + m1 = 2 x (31 + 6) = 74; m2 (57) no longer fits, m3 (12) does not either (86): budget 80
    assert [i.id for i in kept] == ["m0", "m1"]
    assert [i.id for i in within_budget(items, 90)] == ["m0", "m1", "m3"]
    assert [i.id for i in within_budget(items[2:3], 10)] == ["m2"]  # the first item always, whole


def test_earnings_call_analyst_reads_the_distilled_transcript_not_the_title():
    call = Event(
        id="c1",
        ticker="MSFT",
        source="earnings_call",
        published_at=dt.datetime(2021, 1, 26, 17, 0),
        text="Q2 2021 earnings call\n"
        + " ".join(["Thank you operator and welcome everyone."] * 20)
        + " Commercial cloud revenue grew 34% to $16.7 billion and we expect margins to expand."
        + " "
        + " ".join(["We appreciate your questions today."] * 20),
        metadata={"title": "Q2 2021 earnings call"},
    )
    events = SimpleNamespace(audio_path=lambda e: None)
    lex = ANALYSTS["earnings-call"].lexicon(events, {"transcripts": "text", "distiller": Distiller()})
    text, meta = lex.summary(call)
    assert "Commercial cloud revenue grew 34% to $16.7 billion" in text
    assert text.count("Thank you operator") <= 2  # the filler is not what the analyst reads


def test_a_model_answer_cut_by_the_schema_cap_keeps_whole_sentences():
    """Issue 20 item 1: no text reaches a prompt cut mid-sentence, model answers included."""
    from fincon.agents.brains import llm_to_report
    from fincon.agents.reports import INSIGHT_CHARS, AnalystAnswer, InsightAnswer
    from fincon.agents.roles.base import Item, RoleInputs
    from fincon.memory.distill import whole_sentences

    assert whole_sentences("Revenue rose 5%. Margins fell, while costs ") == "Revenue rose 5%."
    assert whole_sentences("Shares rose 1.8%, helped by demand from ") == "Shares rose 1.8%…"
    assert whole_sentences('He said "fine."') == 'He said "fine."'
    item = Item(id="n1", date="2022-10-05", source="news", text="x")
    inp = RoleInputs(role="news", agent="news/TSLA", ticker="TSLA", day="2022-10-05", items=(item,))
    cut = ("Demand looks firm. " + "Shares rose 1.8% on the report, helped by strong orders and " * 3)[:INSIGHT_CHARS]
    short = "Demand looks firm and shares rose"  # below the cap: the model's own ending, kept
    for text, want in ((cut, "Demand looks firm."), (short, short)):
        ans = AnalystAnswer(direction="bullish", confidence=0.6, insights=[InsightAnswer(text=text, cites=["n1"])])
        assert llm_to_report(inp, ans).insights[0].text == want
