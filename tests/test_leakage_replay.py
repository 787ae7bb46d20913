"""The leakage audit's replaying adversary (fincon.agents.replayed_prompts): a reader of the corpus who
runs fincon's own pipeline over every firm and session. Found in review 2026-12-02: a masked team run on
InvestorBench's MSFT read "blind" (0 of 105 prompts) where the news analyst's lines of a session, each
item as its topic and tone word, in order, are one firm-session's alone (557 of 755)."""

from __future__ import annotations

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


@pytest.mark.slow
def test_a_masked_team_runs_news_prompts_are_placed_by_replaying_the_pipeline(tmp_path, monkeypatch, capsys):
    """The team, masked, 8 sessions of InvestorBench's MSFT, the test kit's stub model behind the OpenAI
    path (its prompts are the team's own): the audit without the replay places no news prompt on its day;
    with it, most, on the exact day, and the run is not blind."""
    monkeypatch.chdir(tmp_path)
    assert main(["data", "import", "investorbench", str(INVESTORBENCH / "msft.json.gz"), "--out", "ib"]) == 0
    with DoubleServer(TeamStub()) as url:
        argv = ["backtest", "--data", "ib", "--ticker", "MSFT", "--strategy", "fincon", "--brain", "llm", "--param",
                "fincon.embedder=hashing", "--llm-backend", "openai", "--llm-base-url", url, "--llm-model", "stub",
                "--llm-knowledge-cutoff", "2019-01-01", "--llm-cache-path", "m.sqlite", "--start", "2020-10-01",
                "--end", "2020-10-12", "--no-progress", "--out", "m", "--ledger", "off", "--no-benchmark",
                "--anonymize"]  # fmt: skip
        assert main(argv) == 0
    info = leakage_inputs.read_run(tmp_path / "m")
    prompts, k = leakage_inputs.prompts_of(info), leakage_inputs.build_knowledge([info])
    news = lambda res: res["by_agent"]["news"]["firm_and_day"]  # noqa: E731
    before = leakage.audit(prompts, k)
    assert (news(before)["k"], news(before)["n"]) == (1, 7)  # the topics of each line, and all together
    after = leakage.audit(prompts, k, replayed=Replayed([info], k))
    assert (news(after)["k"], news(after)["n"]) == (6, 7)
    assert after["by_agent"]["news"]["day_exact"]["k"] == news(after)["k"]  # each on its exact day
    assert after["result"] == "not blind" and after["overall"]["cues"]["replayed"] >= news(after)["k"]
    # what the run wrote as it ended, and what `fincon eval leakage` prints, count it too
    assert (
        json.loads((tmp_path / "m" / "metrics.json").read_text())["model_knowledge"]["audit"]["result"] == "not blind"
    )
    capsys.readouterr()
    assert main(["eval", "leakage", "m", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["overall"]["cues"]["replayed"] >= news(after)["k"]
    # a day's lines place it: the prompt's day is among what the table gives for its lines, and only it
    guess = Replayed([info], k)(next(p for p in prompts if p.kind == "news" and p.day == "2020-10-05"))
    assert (guess.firm, guess.day, guess.exact) == ("MSFT", dt.date(2020, 10, 5), True)
