"""The ``scm`` protocol (Strategist, Critic, Moderator): rules brain end to
end (one ticker through the CLI, a portfolio under policies), constructed
cases the Moderator must never let through, an llm run on a stub backend
recorded and replayed byte for byte, and point in time."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fincon.agents.brains import Answer, ManagerTask, Reuse
from fincon.agents.policies import Policies
from fincon.agents.protocols import make_protocol
from fincon.agents.protocols.scm import (
    Alternative,
    Critique,
    Issue,
    Proposal,
    ScmProtocol,
    ScmReport,
    Verdict,
    code_checks,
)
from fincon.agents.reports import AnalystReport, Citation, Insight
from fincon.cli.main import main
from fincon.testing import ScmStub, run_team

PORTFOLIO = ["TSLA", "MSFT", "PFE"]


# -- rules brain, end to end -----------------------------------------------------


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("scm") / "run"
    code = main(
        [
            "backtest",
            "--tickers",
            "TSLA",
            "--strategy",
            "fincon",
            "--brain",
            "rules",
            "--protocol",
            "scm",
            "--start",
            "2022-10-24",
            "--end",
            "2022-11-04",
            "--no-progress",
            "--no-benchmark",
            "--param",
            "fincon.transcripts=text",
            "--param",
            "fincon.policies={max_position: 0.6}",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    return out


def _days(run_dir: Path):
    return [json.loads(x) for x in (run_dir / "decisions.jsonl").read_text().splitlines()]


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_one_ticker_through_the_cli_keeps_the_whole_exchange(cli_run, capsys):
    days = _days(cli_run)
    assert days
    for d in days:
        m = d["record"]["manager"]
        assert d["record"]["protocol"] == "scm" and m["via"] == "rules" and m["calls"] == 0
        assert 2 <= len(m["alternatives"]) <= 3 or m["alternatives"][0]["weights"]["TSLA"] == 0
        for a in m["alternatives"]:  # the five sections, citations with dates
            assert a["rule"] and a["risks"] and a["p5"] <= a["p50"] <= a["p95"] and set(a["weights"]) == {"TSLA"}
            assert all(re.fullmatch(r"\d{4}-\d{2}-\d{2}", c["date"]) for c in a["evidence"])
        assert [e["step"] for e in m["log"]][:2] == ["T0", "T1"] and m["log"][-1]["action"] in ("chose", "hold")
        chosen = [a for a in m["alternatives"] if a["status"] == "chosen"]
        assert m["held"] or (len(chosen) == 1 and chosen[0]["weights"] == m["weights"])
        assert all(abs(w) <= 0.6 + 1e-9 for w in d["weights"].values())
        assert "policy" not in m  # the protocol's own choice needed no clipping by the team
    # the policy made the full-size alternative fail a check; the fix clipped it
    crit = [i for d in days for i in d["record"]["manager"]["critiques"]]
    assert any(i["check"] == "max_position" and i["status"] == "fixed" for i in crit)
    s = json.loads((cli_run / "summary.json").read_text())["strategy_summary"]
    assert s["team_protocol"] == "scm" and s["scm_days"] == len(days) and s["scm_samples"] == 3
    assert s["scm_citation_share"] == 1.0 and s["scm_complete_share"] == 1.0 and s["scm_stability"] == 1.0
    assert s["scm_calibration_violations"] == 0 and s["scm_arithmetic_failures"] == 0
    assert s["scm_policy_violations"] > 0 and s["scm_issues_unresolved"] == 0 and s["scm_fallbacks"] == 0
    assert main(["explain", str(cli_run), "--date", days[2]["date"]]) == 0
    assert "protocol=scm" in capsys.readouterr().out


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_a_portfolio_stays_inside_the_policies_by_the_protocol_itself(tmp_path):
    res, team = run_team(
        PORTFOLIO,
        "2022-10-05",
        "2022-10-21",
        tmp_path,
        protocol="scm",
        samples=2,
        policies={"max_position": 0.3, "max_gross": 0.8},
    )
    acts = set()
    for d in res.decisions:
        m = d["record"]["manager"]
        assert "policy" not in m  # nothing left for the team's enforce to clip
        w = m["weights"]
        assert all(abs(x) <= 0.3 + 1e-9 for x in w.values()) and sum(map(abs, w.values())) <= 0.8 + 1e-9
        for t, a in d["actions"].items():
            assert a == ("buy" if w.get(t, 0) > 0 else "sell" if w.get(t, 0) < 0 else "hold") or m["held"]
        acts |= set(d["actions"].values())
    assert {"buy", "sell"} & acts  # not vacuous
    assert team.protocol.summary()["scm_issues_fixed"] > 0


# -- constructed cases: what the Moderator must never let through ----------------


@dataclass
class _Portfolio:
    weights: dict = field(default_factory=dict)


class _View:
    def __init__(self, tickers, n=80, seed=0):
        rng = np.random.default_rng(seed)
        self.tickers = tickers
        self._closes = pd.DataFrame(
            100 * np.cumprod(1 + rng.normal(0, 0.02, (n, len(tickers))), axis=0), columns=tickers
        )
        self.portfolio = _Portfolio()

    def closes(self, n=None):
        return self._closes.tail(n) if n else self._closes


def _task(tickers=("TSLA",), direction="bullish") -> ManagerTask:
    reports = {
        t: [
            AnalystReport(
                role="news",
                ticker=t,
                direction=direction,
                confidence=0.8,
                insights=[
                    Insight(
                        text="demand is strong", citations=[Citation(id=f"mem-{t}-1", date="2022-10-03", source="news")]
                    )
                ],
            )
        ]
        for t in tickers
    }
    return ManagerTask(day="2022-10-05", tickers=tuple(tickers), reports=reports, weights={"news": 1.0})


def _alt(name, w, ev=("mem-TSLA-1",), p=(-3.0, 0.2, 3.0), gross=None, invalid=(), risks=("drawdown",)):
    return Alternative(
        name=name,
        weights=w,
        evidence=[Citation(id=i, date="2022-10-03", source="news") for i in ev],
        invalid=list(invalid),
        rule="follow the news",
        gross=sum(map(abs, w.values())) if gross is None else gross,
        p5=p[0],
        p50=p[1],
        p95=p[2],
        risks=list(risks),
    )


class Scripted:
    """A brain answering each scm role with given reports (None: the role's rules answer)."""

    name = "scripted"

    def __init__(self, proposals, critique=None, fix=None, verdict=None, verify=None):
        self.proposals, self.critique, self.fix, self.verdict = list(proposals), critique, fix, verdict
        self.verify = verify
        self.asked = []

    def answer(self, q):
        role = q.agent.rsplit("scm-", 1)[1]
        self.asked.append(role)
        given = {
            "strategist": self.proposals.pop(0) if self.proposals else None,
            "critic": self.critique,
            "fix": self.fix,
            "moderator": self.verdict,
            "verify": self.verify,
        }[role]
        if given == "invalid":  # the model's answer invalid twice: the question's fallback, as LLMBrain gives it
            return Answer((q.fallback or q.rules)(), "fallback", 2)
        return Answer(given if given is not None else q.rules(), "llm", 1)


def _decide(brain, policies=None, tickers=("TSLA",), samples=1):
    proto = ScmProtocol(samples=samples, policies=policies or Policies())
    decision, ans, rec = proto.decide(brain, _task(tickers), _View(list(tickers)), tuple(tickers))
    return proto, decision, ans, rec


def test_an_unresolved_high_critique_or_a_policy_breach_never_gets_through():
    bad_policy = _alt("A", {"TSLA": 0.9})
    bad_cite = _alt("B", {"TSLA": 0.4}, ev=(), invalid=("mem-made-up",))
    criticised = _alt("C", {"TSLA": 0.3})
    critique = Critique(
        issues=[Issue(alternative="C", category="consistency", severity="high", issue="contradicts", by="critic")]
    )
    same = Proposal(alternatives=[bad_policy, bad_cite, criticised])
    # the revision changes nothing and the model moderator picks the policy breach
    brain = Scripted([same], critique, fix=same, verdict=Verdict(choice="A", rationale="go big"))
    proto, decision, ans, rec = _decide(brain, Policies(max_position=0.5))
    assert rec["held"] and decision.weights == {} and decision.actions == {"TSLA": "hold"}
    assert {a["name"]: a["status"] for a in rec["alternatives"]} == {
        "A": "discarded",
        "B": "discarded",
        "C": "discarded",
    }
    assert brain.asked == ["strategist", "critic", "fix"]  # no survivor: no moderator call
    assert any(e["action"] == "hold" for e in rec["log"]) and proto.summary()["scm_holds"] == 1
    # fixed: the breach is clipped, the citation replaced, C revised -> A survives, the breach cannot come back
    fixed = Proposal(
        alternatives=[
            _alt("A", {"TSLA": 0.5}),
            _alt("B", {"TSLA": 0.4}, ev=(), risks=()),
            _alt("C", {"TSLA": 0.3}, p=(-2.0, 0.1, 2.0)),
        ]
    )
    brain = Scripted([same], critique, fix=fixed, verdict=Verdict(choice="B", rationale="B"))
    proto, decision, ans, rec = _decide(brain, Policies(max_position=0.5))
    status = {a["name"]: a["status"] for a in rec["alternatives"]}
    assert status["B"] == "discarded"  # a trade still without any valid citation
    assert decision.weights["TSLA"] in (0.5, 0.3) and proto.summary()["scm_moderator_overrides"] == 1
    assert all(i["status"] == "fixed" for i in rec["critiques"] if i["alternative"] != "B" and i["severity"] != "low")


def test_a_critic_issue_is_fixed_only_when_its_recheck_passes_on_the_revision():
    """Revising an alternative is not fixing it: the verification question
    is answered on the revision (rules: re-checked in code; model: its
    answer), and only a pass fixes the issue."""
    a, b = _alt("A", {"TSLA": 0.5}), _alt("B", {"TSLA": 0.25})
    crit = Critique(
        issues=[
            Issue(
                alternative="A",
                category="risks",
                severity="high",
                issue="no liquidity risk",
                question="Is a liquidity risk stated?",
                by="critic",
            )
        ]
    )
    # revised, but the risk is now a placeholder: the rules re-check fails, A is discarded
    still = Proposal(alternatives=[_alt("A", {"TSLA": 0.45}, risks=("none",)), b])
    proto, decision, ans, rec = _decide(Scripted([Proposal(alternatives=[a, b])], crit, fix=still))
    issue = next(i for i in rec["critiques"] if i["by"] == "critic")
    assert issue["status"] == "unresolved" and issue["rechecked_by"] == "rules"
    assert "no usable risks" in issue["answer"] and rec["chosen"] == "B"
    assert proto.summary()["scm_verification_questions"] == 1 and proto.summary()["scm_verification_passed"] == 0
    # revised with a real risk: passes, A may be chosen
    good = Proposal(alternatives=[_alt("A", {"TSLA": 0.45}, risks=("thin liquidity after the close",)), b])
    proto, decision, ans, rec = _decide(Scripted([Proposal(alternatives=[a, b])], crit, fix=good))
    assert next(i for i in rec["critiques"] if i["by"] == "critic")["status"] == "fixed"
    # the model verifier says it does not pass: unresolved, whatever the revision
    no = [(False, "the evidence says nothing about liquidity", "model", [])]
    proto, decision, ans, rec = _decide(Scripted([Proposal(alternatives=[a, b])], crit, fix=good, verify=no))
    issue = next(i for i in rec["critiques"] if i["by"] == "critic")
    assert issue["status"] == "unresolved" and issue["rechecked_by"] == "model" and rec["chosen"] == "B"
    # not revised at all: unresolved, no verification asked
    brain = Scripted([Proposal(alternatives=[a, b])], crit, fix=Proposal(alternatives=[a, b]))
    proto, decision, ans, rec = _decide(brain)
    assert "verify" not in brain.asked and rec["chosen"] == "B"


def test_completeness_is_measured_on_what_was_said():
    """The schema lets a section be trivially present; the measure does not."""
    from fincon.agents.protocols.scm_checks import sections_said

    proto = ScmProtocol()
    day = proto.context(_task(), _View(["TSLA"]))
    full = _alt("A", {"TSLA": 0.5}, risks=("a gap down on weak deliveries",))
    assert all(sections_said(full, day).values())
    thin = full.model_copy(update={"rule": "buy", "risks": ["none"], "p5": 1.0, "p95": 1.0, "p50": 1.0, "gross": 0.9})
    said = sections_said(thin, day)
    assert said == {"evidence": True, "rule": False, "figures": False, "uncertainty": False, "risks": False}
    uncited = full.model_copy(update={"evidence": []})
    assert not sections_said(uncited, day)["evidence"]
    proto, decision, ans, rec = _decide(Scripted([Proposal(alternatives=[full, thin])]))
    s = proto.summary()
    assert s["scm_complete_share"] == 0.5 and s["scm_section_share"] == 0.6


def test_self_consistency_takes_the_majority_direction_then_the_median_size():
    """Samples prefer +0.6, +0.2 and -1.0: the median of all three (+0.2)
    would hide the dissent; the majority is long, sized at the median of the
    long samples (+0.4); agreement 2/3."""
    samples = [
        Proposal(alternatives=[_alt("A", {"TSLA": x}), _alt("B", {"TSLA": 0.0}, ev=())]) for x in (0.6, 0.2, -1.0)
    ]
    proto, decision, ans, rec = _decide(Scripted(samples), samples=3)
    assert rec["majority"] == {"TSLA": 1} and rec["agreement"] == pytest.approx(0.6667)
    assert proto._consensus == {"TSLA": pytest.approx(0.4)}
    # ranked by closeness to +0.4: +0.6 and +0.2 tie at 0.9, first proposed first
    assert [a["weights"]["TSLA"] for a in rec["alternatives"]] == [0.6, 0.2, 0.0]
    assert proto.summary()["scm_agreement"] == pytest.approx(0.6667) and not rec["stable"]


def test_every_log_record_has_a_utc_timestamp_and_its_calls_cache_keys():
    proto, decision, ans, rec = _decide(Scripted([]))
    assert rec["log"] and all(e["at"] == "2022-10-05T20:00:00Z" and e["keys"] == [] for e in rec["log"])


def test_the_moderator_may_discard_more_but_never_resurrect():
    ok = [_alt("A", {"TSLA": 0.5}), _alt("B", {"TSLA": 0.25})]
    brain = Scripted(
        [Proposal(alternatives=ok)],
        Critique(),
        verdict=Verdict(discard=[{"alternative": "A", "reason": "too large"}], choice="A", rationale="x"),
    )
    proto, decision, ans, rec = _decide(brain)
    assert decision.weights == {"TSLA": 0.25} and rec["chosen"] == "B"
    assert any("too large" in e["details"] for e in rec["log"] if e["action"] == "discarded")


@pytest.mark.parametrize("seed", range(40))
def test_random_slates_only_ever_yield_a_checked_alternative(seed):
    rng = np.random.default_rng(seed)
    tickers = ("TSLA", "MSFT") if seed % 2 else ("TSLA",)

    def rand_alt(name):
        w = {t: float(np.round(rng.uniform(-1, 1), 2)) * rng.integers(0, 2) for t in tickers}
        p = sorted(rng.normal(0, 3, 3)) if rng.random() < 0.7 else list(rng.normal(0, 3, 3))
        return _alt(
            name,
            w,
            ev=[f"mem-{tickers[0]}-1"] if rng.random() < 0.7 else [],
            invalid=["nope"] if rng.random() < 0.2 else [],
            p=p,
            gross=None if rng.random() < 0.8 else 2.0,
            risks=["r"] if rng.random() < 0.8 else [],
        )

    def slate():
        return Proposal(alternatives=[rand_alt(n) for n in "ABC"[: rng.integers(2, 4)]])

    issues = [
        Issue(
            alternative=n, category="risks", severity=str(rng.choice(["high", "medium", "low"])), issue="x", by="critic"
        )
        for n in "ABC"
        if rng.random() < 0.5
    ]
    pol = Policies(max_position=float(rng.choice([0.3, 0.6, 1.0])), max_gross=float(rng.choice([0.5, 1.0])))
    brain = Scripted(
        [slate(), slate(), slate()],
        Critique(issues=issues),
        fix=slate() if rng.random() < 0.5 else None,
        verdict=Verdict(choice=str(rng.choice(list("ABC") + ["none"])), rationale="pick"),
    )
    proto, decision, ans, rec = _decide(brain, pol, tickers, samples=3)
    if rec["held"]:
        assert decision.weights == {}
        return
    chosen = next(a for a in rec["alternatives"] if a["status"] == "chosen")
    alt = Alternative(**{k: v for k, v in chosen.items() if k in Alternative.model_fields})
    day = proto.context(_task(tickers), _View(list(tickers)))
    assert not [i for i in code_checks(alt, day) if i.severity == "high"]
    assert not [
        i
        for i in rec["critiques"]
        if i["alternative"] == alt.name and i["severity"] == "high" and i["status"] != "fixed"
    ]
    w = decision.weights
    assert (
        all(abs(x) <= pol.max_position + 1e-9 for x in w.values()) and sum(map(abs, w.values())) <= pol.max_gross + 1e-9
    )


def test_a_reuse_brain_gets_the_stored_report_back_without_a_call():
    proto, decision, ans, rec = _decide(Scripted([]))
    again, a2, r2 = proto.decide(Reuse(ans.report), _task(), _View(["TSLA"]), ("TSLA",))
    assert isinstance(ans.report, ScmReport) and a2.via == "reuse" and a2.calls == 0 and r2["reused"]
    assert again.weights == decision.weights and proto.summary()["scm_reused_days"] == 1


def test_registry_and_params():
    from fincon.agents.team import FinConParams

    proto = make_protocol("scm", FinConParams(protocol="scm", samples=5, policies={"max_gross": 0.5}))
    assert isinstance(proto, ScmProtocol) and proto.samples == 5 and proto.policies.max_gross == 0.5


# -- llm brain on a stub: record, replay byte for byte ---------------------------------


class NoCalls(ScmStub):
    def complete(self, messages, schema, params):
        raise AssertionError("a replay must not call the model")


LLM_ARGS = [
    "backtest",
    "--tickers",
    "TSLA",
    "--strategy",
    "fincon",
    "--brain",
    "llm",
    "--protocol",
    "scm",
    "--start",
    "2022-10-24",
    "--end",
    "2022-11-02",
    "--no-progress",
    "--no-benchmark",
    "--param",
    "fincon.transcripts=text",
    "--param",
    "fincon.embedder=hashing",
]


@pytest.mark.slow  # over 1 s on 2 cores: in make test, not in make test-fast
def test_an_llm_run_on_a_stub_replays_byte_for_byte(tmp_path, monkeypatch):
    import fincon.llm.settings as settings

    db = tmp_path / "llm.sqlite"
    monkeypatch.setattr(settings, "build_backend", lambda s: ScmStub())
    rec = ["--llm-cache", "read-write", "--llm-cache-path", str(db)]
    assert main(LLM_ARGS + rec + ["--out", str(tmp_path / "a")]) == 0
    monkeypatch.setattr(settings, "build_backend", lambda s: NoCalls())
    assert main(LLM_ARGS + ["--llm-cache", "replay", "--llm-cache-path", str(db), "--out", str(tmp_path / "b")]) == 0
    for name in ("decisions.jsonl", "metrics.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    days = _days(tmp_path / "a")
    steps = [s for d in days for s in d["record"]["manager"]["steps"]]
    assert {"strategist.s0", "strategist.s1", "strategist.s2", "critic", "fix", "moderator"} <= set(steps)
    s = json.loads((tmp_path / "a" / "summary.json").read_text())["strategy_summary"]
    assert s["scm_calls"] > 0 and s["scm_fallbacks"] == 0
    for d in days:  # every record stamped; the strategist's record names one cache key per sample
        log = d["record"]["manager"]["log"]
        assert all(e["at"].endswith("Z") and isinstance(e["keys"], list) for e in log)
        if not d["record"]["manager"].get("reused"):
            t0 = next(e for e in log if e["step"] == "T0" and e["action"] == "proposed")
            assert len(t0["keys"]) == 3 and all(len(k) == 64 for k in t0["keys"])
    assert s["scm_calibration_violations"] > 0 and s["scm_arithmetic_failures"] > 0  # the stub's faults are seen
    assert s["scm_stability"] < 1.0  # samples at different seeds disagree on some days
    for d in days:
        m = d["record"]["manager"]
        for a in m["alternatives"]:
            if a["status"] == "chosen":
                assert a["p5"] <= a["p50"] <= a["p95"] and abs(a["gross"] - sum(map(abs, a["weights"].values()))) < 0.01
    # the samples ran at a temperature above 0 with different seeds
    from fincon.llm.cache import CallCache

    seeds = {
        json.loads(r["params"])["seed"] if isinstance(r["params"], str) else r["params"]["seed"]
        for r in CallCache(db, "read-write").rows()
        if "scm-strategist" in r["agent"]
    }
    assert len(seeds) == 3


def test_a_critique_without_its_issues_key_is_no_answer():
    """Found in review: ``{}`` and ``{"Issues": [... high ...]}`` were valid critiques with no issue (the
    key defaulted to []), so a malformed Critic answer read as "no issue", no fallback counted."""
    from pydantic import ValidationError

    from fincon.agents.protocols.scm_schemas import CritiqueAnswer

    bad = {"alternative": "A", "category": "risks", "severity": "high", "issue": "x", "question": "y"}
    for answer in ({}, {"Issues": [bad]}, {"issues": [], "note": "none"}):
        with pytest.raises(ValidationError):
            CritiqueAnswer.model_validate(answer)
    assert CritiqueAnswer.model_validate({"issues": []}).issues == []


def test_the_protocol_tables_fallbacks_are_answers_not_days(tmp_path):
    """Found in review: the experiment's fallbacks column read team_fallbacks, one per protocol day: SCM
    with every Strategist sample malformed showed 3 where its 12 answers fell back (the card said 12)."""
    from fincon.workflow.experiment_results import _usage

    (tmp_path / "summary.json").write_text(
        json.dumps({"strategy_summary": {"team_days": 3, "team_fallbacks": 3, "llm_fallbacks": 12}})
    )
    assert _usage(tmp_path, "scm")["fallbacks"] == 12


def test_the_team_refuses_the_one_traders_protocol():
    """Found in review: --protocol single on the team decided from the news analyst's report alone (the
    other five discarded) and never read the alert's stance; it is finmem's protocol."""
    from pydantic import ValidationError

    from fincon.agents.finmem import FinMemParams
    from fincon.agents.team import FinConParams

    with pytest.raises(ValidationError, match="protocol single is finmem's one trader"):
        FinConParams(protocol="single")
    assert FinMemParams().protocol == "single"


def test_an_invalid_verifier_answer_fixes_nothing():
    """Found in review: the verifier's answer invalid twice fell back to the rules re-check in code, which
    cannot judge a critic's point of meaning: the high issue read "fixed" and the long the verifier would
    have blocked went through. Nothing is verified then: the issue stands unresolved, counted a fallback."""
    a, b = _alt("A", {"TSLA": 0.5}), _alt("B", {"TSLA": 0.0}, ev=())
    crit = Critique(
        issues=[Issue(alternative="A", category="evidence", severity="high", issue="the news is bearish",
                      question="Does any report support a long?", by="critic")]
    )  # fmt: skip
    fixed = Proposal(alternatives=[_alt("A", {"TSLA": 0.5}, risks=("a rebound story that fades",)), b])
    proto, decision, ans, rec = _decide(Scripted([Proposal(alternatives=[a, b])], crit, fix=fixed, verify="invalid"))
    issue = next(i for i in rec["critiques"] if i["by"] == "critic")
    assert issue["status"] == "unresolved" and issue["rechecked_by"] == "fallback" and rec["chosen"] == "B"
    assert "invalid twice" in issue["answer"] and decision.weights.get("TSLA", 0.0) == 0.0
    s = proto.summary()
    assert s["scm_verification_passed"] == 0 and s["scm_fallbacks"] == 1


def test_a_fallen_back_sample_does_not_vote():
    """Found in review: samples whose answers were invalid twice voted as copies of the rules strategist's
    answer and outvoted the model's one valid sample (majority short against the model's long), and a
    plurality (2 of 4) passed for the majority the docs name."""
    long_ = Proposal(alternatives=[_alt("A", {"TSLA": 0.6}), _alt("B", {"TSLA": 0.0}, ev=())])
    proto, decision, ans, rec = _decide(Scripted([long_, "invalid", "invalid"]), samples=3)
    assert rec["majority"] == {"TSLA": 1} and rec["agreement"] == 1.0
    assert proto._consensus == {"TSLA": pytest.approx(0.6)}
    s = proto.summary()  # measured on what the model said: its 2 alternatives, not the rules' copies
    assert s["scm_alternatives_proposed"] == 2 and s["scm_citation_share"] == 1.0 and s["scm_fallbacks"] == 2
    # every sample fell back: the rules answers vote (the day's decision is theirs)
    proto, decision, ans, rec = _decide(Scripted(["invalid", "invalid", "invalid"]), samples=3)
    rules = _decide(Scripted([None, None, None]), samples=3)[3]
    assert rec["majority"] == rules["majority"]
    # a plurality is no majority: flat
    four = [Proposal(alternatives=[_alt("A", {"TSLA": x}), _alt("B", {"TSLA": 0.0}, ev=())]) for x in (0.6, 0.2, -1.0)]
    four.append(Proposal(alternatives=[_alt("B", {"TSLA": 0.0}, ev=())]))
    proto, decision, ans, rec = _decide(Scripted(four), samples=4)
    assert rec["majority"] == {"TSLA": 0} and proto._consensus == {"TSLA": 0.0}


def test_a_portfolio_day_without_history_is_counted_under_scm():
    """Found in review: scm sizes through its own FinConManager, whose days in cash for want of history
    (under 3 returns) never reached scm's summary."""
    proto = ScmProtocol()
    assert "team_short_history_days" not in proto.summary()
    proto._sizer.weights(_View(["TSLA", "MSFT"], n=3), ("TSLA", "MSFT"), {"TSLA": "buy", "MSFT": "sell"})
    assert proto.summary()["team_short_history_days"] == 1


def test_a_fallbacks_quote_cut_by_the_scm_prompts_is_masked_as_a_clip():
    """Found in review (a masked scm run whose analysts fell back to rules): the scm prompts cut each
    insight at a count of characters (120 in the reports, 200 in the verifier's evidence), mid-word and
    with no "…"; the mask took the cut head of a fallback's quote of a corpus item for another sentence,
    and it reached the scm prompts word for word (295 prompt lines with a run of six words of the corpus).
    The cut is found under the mask; the unmasked prompts stay as they were (a recorded day replays)."""
    from fincon.agents.protocols.scm_checks import Day
    from fincon.agents.protocols.scm_prompts import REPORT_CHARS, prompt_values
    from fincon.llm.masking_terms import masker_for
    from fincon.memory.distill import clip_sentences

    item = ("Only 20% of surveyed organizations have reached full DevSecOps maturity, suggesting significant room "
            "for improvement in integrating security into the development process. It was run by an independent "
            "research firm over the summer.")  # fmt: skip
    cit = Citation(id="news-1", date="2020-09-30", source="news")
    text = f"{clip_sentences(item, 300)} -> reads bearish (-0.69)"  # as fincon.agents.brains.rules_analyst writes
    report = AnalystReport(role="news", ticker="MSFT", direction="bearish", confidence=0.1,
                           insights=[Insight(text=text, citations=[cit])])  # fmt: skip
    task = ManagerTask(day="2020-10-01", tickers=("MSFT",), reports={"MSFT": [report]}, weights={"news": 1.0})
    day = Day(task, Policies(), {cit.id: cit}, {}, {}, np.zeros((0, 1)), {"MSFT": 0.0}, labels={cit.id: "E1"})
    values = prompt_values(day, Policies())
    assert f"{text[:REPORT_CHARS]} [E1]" in values["reports"]  # unmasked: cut as before
    for items, shown in (("tone", "a quoted item"), ("topics", "topics: ")):
        m = masker_for(["MSFT"], items=items)
        m.said(report.model_dump_json(), "2020-10-01")  # as LLMBrain tells the mask of a fallback
        plain = masker_for(["MSFT"], items=items).text(item, "2020-10-01")  # the item masked, told nothing
        runs = [" ".join(w[i : i + 6]) for w in (item.split(), plain.split()) for i in range(len(w) - 5)]
        for key in ("reports", "evidence_texts"):
            out = m.text(values[key], "2020-10-01")
            assert shown in out and not any(r in out for r in runs), out
            assert out.endswith("[E1]") or key == "evidence_texts", out
