"""The extraction critic on real filings (issue 21, item 3): figures of the
InvestorBench 10-Q/10-K summaries restated, half perturbed in code, the
critic must flag the perturbed ones. Reads ../shared/data/investorbench
(skipped when absent); the live recording (docs/recorded/record_extraction.py),
committed in tests/recordings/investorbench, is replayed wherever the data is."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from fincon.cli.main import main
from fincon.eval import extraction
from fincon.eval.leaks import cached_prompts
from fincon.llm import CallCache, LLMClient, UsageLedger
from fincon.llm.types import Completion

REC = Path(__file__).resolve().parents[1] / "docs" / "recorded"
spec = importlib.util.spec_from_file_location("record_extraction", REC / "record_extraction.py")
record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(record)
SHARED = record.shared_dir()
needs_shared = pytest.mark.skipif(
    not (SHARED / "msft.json.gz").is_file(), reason="../shared/data/investorbench is absent"
)


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    return record.import_assets(SHARED, tmp_path_factory.mktemp("ib"))


def test_perturbations_change_the_figure_the_way_they_say():
    from fincon.agents.critics.claims import figures_in

    [g] = figures_in("revenue rose to $35.0 billion")
    assert extraction.perturb("scale", g, []) == ("$35.0 million", "scale")
    assert extraction.perturb("sign", g, []) == ("-$35.0 billion", "sign")
    assert extraction.perturb("unit", g, []) == ("35.0%", "unit")
    [o] = figures_in("cloud revenue was $13.3 billion")
    assert extraction.perturb("period", g, [o]) == ("$13.3 billion", "period")
    assert extraction.perturb("period", g, []) == ("$35.0 million", "scale")  # nothing to swap with


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
@needs_shared
def test_rules_critic_on_the_real_filings(datasets):
    res = extraction.run(datasets, "rules")
    s = res["scores"]
    assert res["filings"] == 15 and s["cases"] == 110 and s["perturbed"] == 54 and s["clean"] == 56
    # a figure the filing states for its metric stands (was: compared with the first one only, 37 right
    # figures of 81 flagged, precision 54 %); a period error quoting another figure the filing states
    # for the metric passes now (period 6 -> 4 of 14)
    assert s["true_positives"] == 42 and s["flagged"] == 42 and s["not_a_claim"] == 3
    assert s["precision"] == 1.0 and s["recall"] == pytest.approx(42 / 54, abs=1e-4)
    assert s["recall_by_kind"] == {"scale": (15, 15), "sign": (14, 14), "period": (4, 14), "unit": (9, 11)}
    assert res["usage"]["critic_calls"] == 0
    # reproducible: the same cases are perturbed the same way
    again = extraction.run(datasets, "rules")
    assert [(c.filing, c.index, c.kind, c.shown) for c in again["cases"]] == [
        (c.filing, c.index, c.kind, c.shown) for c in res["cases"]
    ]


class RestateStub:
    """Restates by copying the context the prompt quotes; the critic calls every figure right."""

    name = "stub"
    model_id = "stub-restate"
    price_model = "stub-restate"

    def __init__(self):
        self.calls = 0

    def complete(self, messages, schema, params):
        self.calls += 1
        user = messages[-1].content
        if "sentence" in schema.get("properties", {}):
            ans = {"sentence": re.search(r'where the filing says: "(.*)"\)', user).group(1)[:240]}
        else:
            ans = {
                "checks": [
                    {"figure": lb, "ok": True, "source_value": None} for lb in re.findall(r"^(F\d+):", user, re.M)
                ]
            }
        return Completion(json.dumps(ans), prompt_tokens=50, completion_tokens=10)

    def close(self):
        pass


@needs_shared
def test_llm_path_on_a_stub_and_no_prompt_names_the_perturbation(datasets, tmp_path):
    stub = RestateStub()
    cache = tmp_path / "x.sqlite"
    res = extraction.run(
        datasets[:1], "llm", LLMClient(stub, cache=CallCache(cache, "read-write"), ledger=UsageLedger()), per_filing=4
    )
    s, u = res["scores"], res["usage"]
    assert u["restate_calls"] == 20 and u["critic_calls"] == s["cases"] and s["flagged"] == 0  # a lenient critic
    assert s["recall"] == 0.0 and s["precision"] is None
    prompts = cached_prompts(cache)
    assert prompts and not any(re.search(r"perturb|original figure", p, re.I) for p in prompts)


@needs_shared
def test_the_live_recording_replays(datasets, tmp_path):
    assert main(record.args(datasets, "replay", tmp_path / "x.json")) == 0
    got = json.loads((tmp_path / "x.json").read_text())
    assert got["scores"] == json.loads(record.RESULT.read_text())["scores"]
