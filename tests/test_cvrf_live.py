"""The verbal CVRF with the model (issue 20 item 3): a recorded training on
the planted corpus (news carries the next day's return): rules episodes,
the belief update written by the bundled 1.5B model (``--cvrf-brain
llm``), replayed byte for byte.

What holds: the update compares the better and the worse episode with the
model, edits the text of at most two perspectives, records exactly whose
prompts changed, leaves every other perspective alone and writes whole
sentences; shown the perspectives ranked by what they earned, the model names
news (the planted source) first, edits the news belief, and the belief it
writes there names news ("The news provided more bullish views on Tesla's
financial performance, ..."). Before the update prompt showed what each
edited perspective earned and the compare prompt asked to begin with the
source that earned most, its text was generic ("The better episode provided
more bullish views ...") and never said anything about news.

Re-record after changing a team, reflection or CVRF prompt:
``.venv/bin/python tests/recordings/record_cvrf.py`` (~5 minutes on 2 cores).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "recordings"
spec = importlib.util.spec_from_file_location("record_cvrf", HERE / "record_cvrf.py")
record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(record)

#: the module's replay (a two-episode training on the recording) takes 7 s on 2 cores: in make test, not test-fast
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def replay(tmp_path_factory):
    assert record.CACHE.is_file(), "the recording is missing: run tests/recordings/record_cvrf.py"
    tmp = tmp_path_factory.mktemp("cvrf")
    events = record.planted_corpus(tmp / "planted")
    return record.train(events, tmp / "train", "replay")


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_the_recorded_model_update_replays_and_edits_at_most_two_perspectives(replay):
    rep = replay
    assert record.fingerprint(rep.out) == json.loads(record.FINGERPRINT.read_text())
    assert all(0 < r["tau"] < 1 for r in rep.rows[1:])  # the episodes differ: something to compare
    updates = [r["update"] for r in rep.rows[1:]]
    assert all(u["via"] == "llm" and u["calls"] >= 2 for u in updates)  # compare + edit, by the model
    changed = [u for u in updates if u["text_changed"]]
    assert changed, "the model edited no belief text"
    v0 = json.loads((rep.out / "beliefs" / "v0.json").read_text())["perspectives"]
    for u in changed:
        assert 1 <= len(u["text_changed"]) <= 2  # at most the perspectives the meta-prompt named
        # exactly whose prompts changed: the edited perspectives' analysts and the manager
        assert u["prompts_changed"] == [f"{p} analysts" for p in u["text_changed"] if p != "risk"] + ["manager"]
    edited = {p for u in changed for p in u["text_changed"]}
    for p, q in rep.beliefs.perspectives.items():
        if p not in edited:
            assert q.text == v0[p]["text"]  # nothing else was edited
        else:  # whole sentences: no text cut mid-sentence reaches the agents' prompts
            assert re.search(r"[.!?…][\"')\]]*$", q.text), q.text


def test_the_compare_prompt_ranks_the_perspectives_by_what_they_earned():
    from fincon.eval.leaks import cached_prompts

    compares = [p for p in cached_prompts(record.CACHE) if "Share of the better episode's next-day profit" in p]
    assert compares
    for p in compares:
        listed = re.search(r"earned most in the better episode first: ([^.]+)\.", p).group(1).split(", ")
        earned = re.search(r"each source's views earned: (.+)\.", p).group(1).split(", ")
        best = [e.split(" ")[0] for e in earned]
        assert listed[: len(best)] == best  # the same order as the attribution line, best first


def test_the_model_edits_the_belief_of_the_source_that_earned_most(replay):
    # news carries the planted signal and earned most of the better episode's profit:
    # the model named it first in the comparison and edited its belief
    updates = [r["update"] for r in replay.rows[1:]]
    assert "news" in updates[0]["text_changed"]  # from the first update on (text_changed is sorted)
    best = max(updates[0]["weights"]["attribution_better"].items(), key=lambda kv: kv[1])[0]
    assert best == "news"
    assert replay.beliefs.perspectives["news"].text  # the news analysts now read a belief


def test_the_edited_beliefs_name_the_informative_source(replay):
    # the news belief (the analysts of the planted source read it) names news itself; no
    # other perspective's belief was given news's name by mistake (one that lists every source,
    # its own among them, as the 2026-12-01 recording's analyst-notes belief does, mistakes none)
    news = replay.beliefs.perspectives["news"].text
    assert "news" in news.lower(), news
    for p, q in replay.beliefs.perspectives.items():
        if p != "news":
            assert "news" not in q.text.lower() or p in q.text.lower(), (p, q.text)
