"""The leakage audit's replaying adversary (fincon.agents.replayed_prompts): a reader of the corpus who
runs fincon's own pipeline over every firm and session. Found in review 2026-12-02: a masked team run on
InvestorBench's MSFT read "blind" (0 of 105 prompts) where the news analyst's lines of a session, each
item as its topic and tone word, in order, are one firm-session's alone (557 of 755)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pytest

from fincon.agents.replayed_prompts import Replayed, item_lines
from fincon.cli.main import main
from fincon.llm import leakage, leakage_inputs
from fincon.testing import INVESTORBENCH
from fincon.testing.doubles import TeamStub
from fincon.testing.server import DoubleServer

pytestmark = pytest.mark.skipif(not (INVESTORBENCH / "msft.json.gz").is_file(), reason="InvestorBench not here")


def test_a_prompts_item_lines_are_read_without_their_labels():
    text = "News:\n[E1] the decision day: topics: product (tone positive)\n[E2] this week: topics: none of the list\n"
    assert item_lines(text) == (
        "the decision day: topics: product (tone positive)",
        "this week: topics: none of the list",
    )


def test_masked_as_tone_an_item_is_its_tone_word_and_an_indicator_loses_its_level():
    """`--mask-items tone` (the default): an item of the corpus is "an item" beside its tone word, and
    fincon's own risk indicators keep their words, not their bucketed levels (together they placed 13 %
    of InvestorBench's firm-days); `topics` is the mask as it was."""
    from fincon.llm.masking_terms import masker_for

    block = (
        "[E1]: annualised volatility about 34%\n[E2]: daily CVaR at 5%: about -4% (mean of the worst days)\n"
        "[E3]: 20-day momentum: up against its usual range\n"
        "[E4] 2020-10-05: Microsoft said cloud revenue rose 20% on strong demand for Azure. (tone +0.50)"
    )
    tone = masker_for(("MSFT",), {}, items="tone").text(block, "2020-10-05").splitlines()
    assert tone == [
        "[E1]: annualised volatility about [level]",
        "[E2]: daily CVaR at [level]: about [level] (mean of the worst days)",
        "[E3]: 20-day momentum: up against its usual range",
        "[E4] the decision day: an item (tone positive)",
    ]
    topics = masker_for(("MSFT",), {}, items="topics").text(block, "2020-10-05").splitlines()
    assert topics[0] == "[E1]: annualised volatility about 30-60%" and topics[3].startswith(
        "[E4] the decision day: topics: "
    )


@pytest.mark.slow
def test_a_masked_team_runs_news_prompts_are_placed_by_replaying_the_pipeline(tmp_path, monkeypatch, capsys):
    """The team, masked, 8 sessions of InvestorBench's MSFT, the test kit's stub model behind the OpenAI
    path (its prompts are the team's own). Each item as its topics (the mask until 2026-12-02): the audit
    without the replay places 1 news prompt of 7 on its day; with it, 6, each on the exact day, and the run
    is not blind. Each item as its tone word alone (the default now): 1 of 6, inconclusive."""
    monkeypatch.chdir(tmp_path)
    assert main(["data", "import", "investorbench", str(INVESTORBENCH / "msft.json.gz"), "--out", "ib"]) == 0
    assert main(["data", "import", "investorbench", str(INVESTORBENCH / "jnj.json.gz"), "--out", "jnj"]) == 0
    with DoubleServer(TeamStub()) as url:
        for items in ("topics", "tone"):
            argv = ["backtest", "--data", "ib", "--ticker", "MSFT", "--strategy", "fincon", "--brain", "llm",
                    "--param", "fincon.embedder=hashing", "--llm-backend", "openai", "--llm-base-url", url,
                    "--llm-model", "stub", "--llm-knowledge-cutoff", "2019-01-01", "--llm-cache-path", "m.sqlite",
                    "--start", "2020-10-01", "--end", "2020-10-12", "--no-progress", "--out", items, "--ledger",
                    "off", "--no-benchmark", "--anonymize", *(["--mask-items", items] if items == "topics" else [])]  # fmt: skip
            assert main(argv) == 0
    news = lambda res: (res["by_agent"]["news"]["firm_and_day"]["k"], res["by_agent"]["news"]["firm_and_day"]["n"])  # noqa: E731
    info = leakage_inputs.read_run(tmp_path / "topics")
    # another firm's corpus beside it (each firm masked with its own terms: a firm after the first was once
    # tabulated as "an item", found in review)
    prompts, k = leakage_inputs.prompts_of(info), leakage_inputs.build_knowledge([info], [tmp_path / "jnj"])
    assert news(leakage.audit(prompts, k)) == (1, 7)  # the topics of each line, and all together
    after = leakage.audit(prompts, k, replayed=Replayed([info], k))
    assert news(after) == (6, 7)
    assert after["by_agent"]["news"]["day_exact"]["k"] == 6  # each on its exact day
    assert after["result"] == "not blind" and after["overall"]["cues"]["replayed"] >= 6
    # what the run wrote as it ended, and what `fincon eval leakage` prints, count it too
    assert (
        json.loads((tmp_path / "topics" / "metrics.json").read_text())["model_knowledge"]["audit"]["result"]
        == "not blind"
    )
    capsys.readouterr()
    assert main(["eval", "leakage", "topics", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["cues"]["replayed"] >= 6
    # a day's lines place it: the prompt's day is what the table gives for its lines, and only it
    guess = Replayed([info], k)(next(p for p in prompts if p.kind == "news" and p.day == "2020-10-05"))
    assert (guess.firm, guess.day, guess.exact) == ("MSFT", dt.date(2020, 10, 5), True)
    # each item as its tone word alone: the same days' lines are many firm-sessions' (one still places its day)
    tone = leakage_inputs.read_run(tmp_path / "tone")
    res = leakage.audit(leakage_inputs.prompts_of(tone), k, replayed=Replayed([tone], k))
    # the default, written into config.yaml and masking.json (an unset key was read back as topics)
    assert tone.mask_items == "tone" and all("topics:" not in p.text for p in leakage_inputs.prompts_of(tone))
    assert (news(res), res["result"]) == ((1, 6), "inconclusive")  # from 6 of 7, not blind
    # read together, the run's call log names what each prompt alone does not (beside the verdict, not in it)
    capsys.readouterr()
    assert main(["eval", "leakage", "tone", "--against", "jnj"]) == 0
    together = capsys.readouterr().out.splitlines()[-1]  # 2 corpora of 291 sessions: 582 windows of one
    assert together.endswith("among up to 582 windows: 1 session: 2 of 7, 3 sessions: 5 of 5, 5 sessions: 3 of 3")
    # the run kept it as it ended (its own corpus alone), for the report card's temporal integrity to print
    kept = json.loads((tmp_path / "tone" / "metrics.json").read_text())["model_knowledge"]["audit"]["together"]
    assert kept == {"1": {"k": 3, "n": 7}, "3": {"k": 5, "n": 5}, "5": {"k": 3, "n": 3}, "10": {"k": 0, "n": 0}}
    # and `explain` of a masked day says what the model read of an item (it said "its topic and tone word")
    capsys.readouterr()
    assert main(["explain", "tone", "--date", "2020-10-05"]) == 0
    said = capsys.readouterr().out.splitlines()[-1]
    assert "an item as its tone word;" in said and "topic" not in said
    assert main(["explain", "topics", "--date", "2020-10-05"]) == 0
    assert "an item as its topic and tone word;" in capsys.readouterr().out


def test_two_corpora_holding_the_same_items_are_known_once(tmp_path):
    """Found in review 2026-12-02: a forward journal's folder audited at once (its team read the journal's
    frozen items, its llm-trader no corpus, read as the sample's) gave the adversaries every TSLA item
    twice, and the replay placed none of the team's prompts: 0 of 51 where the team's folder alone gave
    1 of 19. An item two corpora hold is known once, and the folder reads as its runs do."""
    import dataclasses
    from pathlib import Path

    from fincon.data.events.loaders.directory import DirectoryLoader, write_jsonl_gz
    from fincon.testing.corpora import SAMPLE_DIR

    frozen = tmp_path / "frozen"  # the sample's TSLA items, copied as a journal freezes them
    frozen.mkdir()
    items = [e for e in DirectoryLoader(SAMPLE_DIR).load(["TSLA"]) if not e.audio]  # text items: what is read
    write_jsonl_gz(frozen / "TSLA.jsonl.gz", items)

    def run(name: str, events: str) -> leakage_inputs.RunInfo:
        return leakage_inputs.RunInfo(path=Path(name), strategy=name, tickers=("TSLA",), start=dt.date(2022, 10, 3),
                                      end=dt.date(2022, 10, 14), masked=True, cache=Path("x"), data={},
                                      events=events)  # fmt: skip

    team = leakage_inputs.build_knowledge([run("fincon", str(frozen))])
    both = leakage_inputs.build_knowledge([run("fincon", str(frozen)), run("llm-trader", "sample")])
    tsla = {e.id for e in team.events if e.ticker == "TSLA"}
    assert len(tsla) > 50 and tsla == {e.id for e in items if e.text}
    ids = [e.id for e in both.events if e.ticker == "TSLA"]  # the sample's, its calls' transcripts too
    assert len(ids) == len(set(ids)) and set(ids) - tsla == {
        e.id for e in both.events if e.source == "earnings_call" and e.ticker == "TSLA"
    }  # once each
    assert len({e.ticker for e in both.events}) > 1  # the sample's other firms: more to tell apart
    # an importer numbers its items by day (TICKER-news-YYYYMMDD-N): another corpus's item of that id and
    # time is another item when its text differs, and a prompt quoting it is placed (review of this change)
    other = tmp_path / "other"
    other.mkdir()
    first = next(e for e in items if e.source == "news")
    write_jsonl_gz(other / "TSLA.jsonl.gz", [dataclasses.replace(first, text="Another desk's words, all its own.")])
    two = leakage_inputs.build_knowledge([run("fincon", str(frozen)), run("x", str(other))])
    assert sorted(e.text for e in two.events if e.id == first.id) == sorted(
        [first.text, "Another desk's words, all its own."]
    )


@pytest.mark.slow  # three corpora read: about 3 s
def test_a_run_is_audited_against_the_corpus_it_read_or_refused(tmp_path):
    """Found in review 2026-12-02: the audit read whatever corpus the run's config names now; a masked
    MSFT run whose folder was re-imported as JNJ+HON read "blind by this audit" (0 of 30) where its own
    corpus gave 1 of 30, with no word. The corpus is checked against the run's run_manifest.json (a run
    without one is read as it is), and a missing --against folder names --against, not --data."""
    import json
    from pathlib import Path

    from fincon.data.events.loaders.directory import DirectoryLoader, write_jsonl_gz
    from fincon.errors import DataError
    from fincon.files import folder_hash
    from fincon.testing.corpora import SAMPLE_DIR

    events = tmp_path / "data" / "events"
    events.mkdir(parents=True)
    items = [e for e in DirectoryLoader(SAMPLE_DIR).load(["TSLA"]) if not e.audio]
    write_jsonl_gz(events / "TSLA.jsonl.gz", items)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    seal = {"corpus": "events", "corpus_sha256": folder_hash(events)}
    (run_dir / "run_manifest.json").write_text(json.dumps(seal))
    config = {"strategies": ["fincon"], "strategy_params": {"fincon": {"events": str(events)}}}
    (run_dir / "config.yaml").write_text(json.dumps(config))  # YAML reads JSON
    run = leakage_inputs.RunInfo(path=run_dir, strategy="fincon", tickers=("TSLA",), start=dt.date(2022, 10, 3),
                                 end=dt.date(2022, 10, 14), masked=True, cache=Path("x"), data={},
                                 events=str(events))  # fmt: skip
    assert len(leakage_inputs.build_knowledge([run]).events) == len([e for e in items if e.text])
    write_jsonl_gz(events / "TSLA.jsonl.gz", items[:-1])  # re-imported since: one item fewer
    with pytest.raises(DataError, match="holds other files than the run read"):
        leakage_inputs.build_knowledge([run])
    with pytest.raises(DataError, match="point the run's config.yaml"):  # the way round, named
        leakage_inputs.build_knowledge([run])
    # a second strategy that read another folder (fincon@b): the seal is the team's corpus, not its own
    # (the diff review: every imported corpus's folder is named events, and it was refused)
    other = {"strategies": ["fincon", "fincon@b"], "strategy_params": {"fincon": {"events": "sample"}}}
    (run_dir / "config.yaml").write_text(json.dumps(other))
    assert leakage_inputs.build_knowledge([run]).events
    (run_dir / "config.yaml").write_text(json.dumps(config))
    (run_dir / "run_manifest.json").unlink()
    assert leakage_inputs.build_knowledge([run]).events  # no seal: read as it is
    with pytest.raises(DataError, match="^--against .*nowhere: not a directory"):
        leakage_inputs.build_knowledge([run], [tmp_path / "nowhere"])


@pytest.mark.slow  # a corpus known three times: about 3 s
def test_a_corpus_known_again_is_found_and_one_edited_item_is_known_anew(tmp_path):
    """The knowledge of a corpus is kept for the next audit in the process (a training audits each
    episode, a test session the sample again and again: 4.6 CPU-s a time), by what it is of, item
    text and prices compared whole: an item edited in place (its id and date kept) is known anew."""
    from fincon.data.events.loaders.directory import DirectoryLoader, write_jsonl_gz
    from fincon.testing.corpora import SAMPLE_DIR

    events = tmp_path / "events"
    events.mkdir()
    items = [e for e in DirectoryLoader(SAMPLE_DIR).load(["TSLA"]) if e.text and not e.audio]
    write_jsonl_gz(events / "TSLA.jsonl.gz", items)
    run = leakage_inputs.RunInfo(path=None, strategy="fincon", tickers=("TSLA",), start=dt.date(2022, 10, 3),
                                 end=dt.date(2022, 10, 14), masked=True, cache=None, data={"source": "sample"},
                                 events=str(events))  # fmt: skip
    first, again = leakage_inputs.build_knowledge([run]), leakage_inputs.build_knowledge([run])
    assert again.items is first.items and again is not first  # found, its corpus_of its own
    edited = dataclasses.replace(items[0], text="Quokka lemurs juggle seventeen turquoise accordions at dawn.")
    write_jsonl_gz(events / "TSLA.jsonl.gz", [edited, *items[1:]])
    anew = leakage_inputs.build_knowledge([run])
    assert anew.items is not first.items
    assert [e.text for e in anew.events].count(edited.text) == 1 and edited.text not in [e.text for e in first.events]
