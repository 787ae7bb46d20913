"""The debate evaluated on real filings (issue 21, item 5): every 10-Q/10-K
of the imported InvestorBench assets, read on its first visible day, scored
against the return over the stated horizon, beside always-bullish and the
news sentiment tags. Reads ../shared/data/investorbench (skipped when absent)."""

from __future__ import annotations

import pytest

from fincon.cli.main import main
from fincon.eval import debate_filings
from fincon.testing import INVESTORBENCH

SHARED = INVESTORBENCH  # InvestorBench's MSFT, JNJ and HON files (third party: read where they live)
pytestmark = pytest.mark.skipif(
    not (SHARED / "msft.json.gz").is_file(), reason="../shared/data/investorbench is absent"
)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    out = []
    for t in ("msft", "jnj", "hon"):
        d = tmp_path_factory.mktemp("ib") / t
        assert main(["data", "import", "investorbench", str(SHARED / f"{t}.json.gz"), "--out", str(d)]) == 0
        out.append(d)
    return out


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_rules_debate_on_the_real_filings(datasets):
    res = debate_filings.run(datasets, "rules")
    assert res["filings"] == 15 and res["tickers"] == ["MSFT", "JNJ", "HON"] and res["model_calls"] == 0
    by = {r.event_id: r for r in res["results"]}
    q = by["MSFT-10-Q-20200429-0"]  # filed 2020-04-29 (date only): read the next session
    assert q.day == "2020-04-30" and q.final == "bullish" and q.horizon == 20
    t = res["table"]
    # the rules debate never reverses a report: the three debate rows agree, flip rate 0
    assert t["report"] == t["debate (safe)"] == t["debate (leader raw)"] and res["flip_rate"] == 0.0
    assert res["debated"] == 13 and t["report"]["directional"] == 13
    assert t["report"]["acc_1d"] == pytest.approx(9 / 13, abs=1e-4)
    assert t["report"]["acc_own_h"] == pytest.approx(5 / 11, abs=1e-4)
    assert t["always bullish"]["acc_own_h"] == pytest.approx(8 / 13, abs=1e-4)
    # every visible week of news was tagged positive more than negative: the tags call bullish each time
    assert t["sentiment tags"]["directional"] == 15
    out = debate_filings.report(res)
    assert "sentiment tags" in out and "always bullish" in out and "flip rate 0.0" in out


def test_the_cli_scores_filings(datasets, capsys):
    assert main(["eval", "debate", "--dataset", str(datasets[0])]) == 0
    out = capsys.readouterr().out
    assert "debate on filings, brain rules: 5 10-Q/10-K of MSFT" in out
