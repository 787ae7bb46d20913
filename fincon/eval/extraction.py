"""``fincon eval extraction --dataset DIR ...``: the data-extraction critic
on real filings (issue 21, item 3).

The set: the 10-Q and 10-K summaries of imported datasets (``fincon data
import investorbench ...``). Every money amount and percentage a filing
states (:func:`~fincon.agents.critics.claims.figures_in`; at most
``per_filing`` per filing, in order) is **restated by an analyst**: the
model writes one sentence about that figure from the filing (the rules
analyst copies the filing's sentence around it). Then, in code, **half of
the restatements are perturbed** (chosen by a hash of the filing id and the
figure's index, so the set is reproducible), one of four ways:

* ``scale``: billion <-> million, or a percentage x 10;
* ``sign``: the figure negated;
* ``period``: replaced by another figure of the same unit stated in the same
  filing (another period's or another item's figure; when the filing has
  none, ``scale``);
* ``unit``: $ billion <-> %.

The critic, given the filing, must flag the perturbed restatements:
``flagged`` = the extraction critic corrected or dropped the restated figure.
Precision = perturbed among flagged, recall = flagged among perturbed,
per perturbation kind; a critic answer invalid twice is "could not verify"
(counted, not flagged). A restatement that lost its figure is left out,
counted. The perturbation is never shown to anyone; the critic sees only
the filing and the (possibly perturbed) restated figure.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel, Field

from fincon.agents.brains import LLMBrain, Question, RulesBrain
from fincon.agents.critics.claims import Figure, claims_in, figures_in, format_value
from fincon.agents.critics.critics import critique
from fincon.agents.roles.base import load_template
from fincon.data.inputs import open_events
from fincon.eval.progress import each

TEMPLATE = Path(__file__).resolve().parents[1] / "agents" / "critics" / "restate.txt"
KINDS = ("scale", "sign", "period", "unit")
SOURCES = ("10-K", "10-Q")
PER_FILING = 8
CONTEXT = 160


class RestateAnswer(BaseModel):
    sentence: str = Field(min_length=1, max_length=240)

    def cited(self):
        return iter(())


@dataclass
class Case:
    filing: str
    index: int
    original: str  # the figure as the filing prints it
    restated: str  # the analyst's sentence
    shown: str  # what the critic checks (perturbed or not)
    kind: str  # "" (clean) or one of KINDS
    at: int = 0  # where the restated figure starts in ``shown``
    flagged: bool = False
    unverified: bool = False
    status: str = ""
    calls: int = 0


def _context(text: str, f: Figure) -> str:
    """The filing's sentence (or line) around the figure."""
    start = max(text.rfind("\n", 0, f.span[0]), text.rfind(". ", 0, f.span[0]))
    end_candidates = [i for i in (text.find("\n", f.span[1]), text.find(". ", f.span[1])) if i >= 0]
    end = min(end_candidates) if end_candidates else len(text)
    s = text[start + 1 : end + 1].strip(" .\n*")
    s = re.sub(r"^\d+\.\s*", "", s).replace("**", "")
    return s[: CONTEXT * 2]


def restate_question(filing_id: str, text: str, f: Figure) -> Question:
    system, user = load_template(str(TEMPLATE))
    ctx = _context(text, f)
    return Question(
        agent="restate-analyst",
        day="",
        model=RestateAnswer,
        allowed=frozenset(),
        messages=lambda: [
            {"role": "system", "content": system},
            {"role": "user", "content": user.format(document=" ".join(text.split()), figure=f.text, context=ctx)},
        ],
        to_report=lambda a: a.sentence,
        rules=lambda: ctx,
    )


def _find(sentence: str, f: Figure) -> Figure | None:
    return next((g for g in figures_in(sentence) if g.unit == f.unit and abs(abs(g.value) - abs(f.value)) < 1e-9), None)


def perturb(kind: str, g: Figure, others: Sequence[Figure]) -> tuple[str, str]:
    """The new text of figure ``g`` under ``kind`` (and the kind applied)."""
    dec = g.decimals
    if kind == "period":
        alt = next((o for o in others if o.unit == g.unit and abs(o.value - g.value) > 1e-9), None)
        if alt is not None:
            return format_value(alt.value, alt.unit, alt.decimals), "period"
        kind = "scale"
    if kind == "scale":
        if g.unit == "bn":
            t = format_value(g.value, "bn", dec)
            return (t.replace("billion", "million") if "billion" in t else t), "scale"
        return format_value(g.value * 10, "%", dec), "scale"
    if kind == "sign":
        v = -g.value if g.value else -1.0
        t = format_value(abs(v), g.unit, dec)
        return ("-" + t if v < 0 else t), "sign"
    return (format_value(g.value, "%", dec) if g.unit == "bn" else format_value(g.value, "bn", dec)), "unit"


def _pick(filing: str, index: int) -> str:
    h = zlib.crc32(f"{filing}#{index}".encode())
    return "" if h % 2 == 0 else KINDS[(h // 2) % len(KINDS)]


def build_cases(
    filings: Sequence[tuple[str, str]], brain: Any, per_filing: int = PER_FILING, progress: bool = False
) -> tuple[list[Case], Counter]:
    usage: Counter = Counter()
    cases: list[Case] = []
    for fid, text in each(filings, "restating", progress, unit="filing"):
        figs = figures_in(text)
        for k, f in enumerate(figs[:per_filing]):
            ans = brain.answer(restate_question(fid, text, f))
            usage["calls"] += ans.calls
            usage["restate_fallbacks"] += ans.via == "fallback"
            sentence = str(ans.report)
            g = _find(sentence, f)
            if g is None:
                usage["lost_figure"] += 1
                continue
            kind = _pick(fid, k)
            shown, applied = sentence, ""
            if kind:
                new, applied = perturb(kind, g, [o for o in figs if o is not f])
                shown = sentence[: g.span[0]] + new + sentence[g.span[1] :]
            cases.append(Case(fid, k, f.text, sentence, shown, applied, at=g.span[0]))
    return cases, usage


def check(cases: Sequence[Case], filings: dict[str, str], brain: Any, progress: bool = False) -> Counter:
    usage: Counter = Counter()
    for c in each(cases, "checking", progress, unit="figure"):
        src = filings[c.filing]
        claims = claims_in(c.shown, [src])
        if not claims:
            c.status = "no claim"
            continue
        # the restated figure (the one perturbed, or left clean), by its position
        claim = next((x for x in claims if x.figure is not None and x.figure.span[0] == c.at), None)
        if claim is None:
            c.status = "no claim"
            continue
        rv = critique(claim, brain, ("extraction",), agent="extraction-critic")
        c.calls = rv.calls
        c.status = rv.status
        c.flagged = rv.status in ("corrected", "dropped")
        c.unverified = rv.status == "unverified"
        usage["calls"] += rv.calls
        usage["fallbacks"] += rv.fallbacks
    return usage


def scores(cases: Sequence[Case]) -> dict[str, Any]:
    lost = sum(c.status == "no claim" for c in cases)
    cases = [c for c in cases if c.status != "no claim"]  # the critic had no figure to check: left out, counted
    tp = sum(c.flagged and bool(c.kind) for c in cases)
    fp = sum(c.flagged and not c.kind for c in cases)
    fn = sum(not c.flagged and bool(c.kind) for c in cases)
    out: dict[str, Any] = {
        "cases": len(cases),
        "perturbed": sum(bool(c.kind) for c in cases),
        "clean": sum(not c.kind for c in cases),
        "flagged": tp + fp,
        "true_positives": tp,
        "false_positives": fp,
        "precision": round(tp / (tp + fp), 4) if tp + fp else None,
        "recall": round(tp / (tp + fn), 4) if tp + fn else None,
        "unverified": sum(c.unverified for c in cases),
        "not_a_claim": lost,
        "recall_by_kind": {},
    }
    for k in KINDS:
        sel = [c for c in cases if c.kind == k]
        out["recall_by_kind"][k] = (sum(c.flagged for c in sel), len(sel))
    return out


def load_filings(datasets: Sequence[str | Path]) -> list[tuple[str, str]]:
    out = []
    for ds in datasets:
        ds = Path(ds)
        tickers = tuple(sorted(p.name.split(".")[0] for p in (ds / "events").glob("*.jsonl*")))
        store = open_events(str(ds / "events"), tickers)
        out += [
            (e.id, e.text or "")
            for e in sorted(store.all_events(), key=lambda e: (e.ticker, e.published_at, e.id))
            if e.source in SOURCES and e.text
        ]
    return out


def run(
    datasets: Sequence[str | Path],
    brain_name: str = "rules",
    client: Any = None,
    per_filing: int = PER_FILING,
    progress: bool = False,
) -> dict[str, Any]:
    if brain_name == "llm":
        brain: Any = LLMBrain(client)
    else:
        brain = RulesBrain()
    filings = load_filings(datasets)
    cases, u1 = build_cases(filings, brain, per_filing, progress)
    u2 = check(cases, dict(filings), brain, progress)
    usage = {
        "restate_calls": u1.get("calls", 0),
        "restate_fallbacks": u1.get("restate_fallbacks", 0),
        "lost_figure": u1.get("lost_figure", 0),
        "critic_calls": u2.get("calls", 0),
        "critic_fallbacks": u2.get("fallbacks", 0),
    }
    return {
        "brain": brain_name,
        "filings": len(filings),
        "per_filing": per_filing,
        "scores": scores(cases),
        "usage": usage,
        "cases": cases,
    }


def report(res: dict[str, Any]) -> str:
    s, u = res["scores"], res["usage"]

    def pct(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    by = ", ".join(f"{k} {a}/{b}" for k, (a, b) in s["recall_by_kind"].items())
    return "\n".join(
        [
            f"extraction critic on real filings, brain {res['brain']}: {res['filings']} 10-Q/10-K, up to "
            f"{res['per_filing']} figures each restated by the analyst; {s['cases']} restatements, {s['perturbed']} "
            f"perturbed in code, {s['clean']} clean",
            f"precision {pct(s['precision'])} ({s['true_positives']}/{s['flagged']} flagged were perturbed), recall "
            f"{pct(s['recall'])} ({s['true_positives']}/{s['perturbed']}); recall by kind: {by}",
            f"could not verify {s['unverified']}; left out (the restated figure not read as a claim) {s['not_a_claim']}; calls: restatement {u['restate_calls']} (fallbacks "
            f"{u['restate_fallbacks']}, figure lost {u['lost_figure']}), critic {u['critic_calls']} (invalid "
            f"{u['critic_fallbacks']})",
        ]
    )
