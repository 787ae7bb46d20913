"""``fincon eval lookahead``: does the model remember the window?

Two probes, each asked of the model as it is (named) and, with
``--anonymize``, of the same model on masked text (fincon.llm.masking):

* **recall**: for N decision days sampled from the window, questions whose
  answers lie after the day and that no backtest prompt contains: did the
  close go up or down over the next 5 and the next 20 trading days, and in
  which of five buckets (the sampled days' own quintiles of the 20-day
  return) did the close 20 days later land. Scored against the real prices.
* **re-identification**: N items of the window, as an analyst reads them
  (date and text), drawn in turn from every firm of the corpus that has
  items there (the probed ticker and the others), and the model is asked
  which company (one of the bundled tickers and the dataset's) and which
  year they are about.

Each probe reports the accuracy, the chance rate it is tested against, a
Wilson 95 % interval, a one-sided binomial p-value (accuracy above chance),
and the calls and tokens it took. The chance rate is the best constant
answer, the best a model that knows nothing can do: for a direction the
share of the more frequent answer among the sampled days, for the buckets
one in five, for the company the share of the most common firm among the
sampled items, for the year the most common year's. A row whose best
constant answer is always right (one firm, one year) measures nothing and
says so; an answer invalid twice is no answer (counted, and left out of the
accuracy, the interval and the test: counted wrong, a model right on every
valid answer read "no recall"), and a row with more invalid answers than
valid ones is inconclusive. The verdict names the model's knowledge label
for the window (its cutoff, from fincon's table or ``--llm-knowledge-cutoff``).

The verdict is the recall rows': named, an item names its firm and carries
its date, so the named re-identification rows measure what the text gives
away (a model with no memory that reads scores them), a baseline for the
masked rows, which test the mask.

The masked pass masks the question and the item itself and leaves the
answer choices (the real tickers, the years, the bucket's five ranges) in
the clear: the model must recognise the firm from the text, not pick the one
pseudonym on the list, and masked alike the ranges could not be told apart.
Every call goes through the LLM client's cache: a probe replays.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Literal, Sequence

import numpy as np
import pandas as pd
from pydantic import BaseModel, Field

from fincon.errors import DataError
from fincon.eval.progress import bar
from fincon.llm import LLMInvalidAnswer, leakage, leakage_inputs
from fincon.llm.masking_terms import masker_for
from fincon.llm.types import Message

SYSTEM = (
    "You are a financial historian. Answer each question from what you know about markets and companies. "
    "Answer in the JSON format asked for; if you do not know, give your best guess."
)
HORIZONS = (5, 20)
BUCKETS = ("A", "B", "C", "D", "E")


class Direction(BaseModel):
    answer: Literal["up", "down"] = Field(description="up or down")


class Bucket(BaseModel):
    answer: Literal["A", "B", "C", "D", "E"] = Field(description="the letter of the range")


class Who(BaseModel):
    ticker: str = Field(description="the ticker of the company, one of the list")
    year: int = Field(description="the year the text was written")


@dataclass
class Question:
    kind: str  # up/down-5, up/down-20, bucket-20, company, year
    day: str  # the decision day (recall) or the item's date (re-identification)
    prompt: str
    gold: str
    answer: str | None = None
    sent: str | None = None  # the prompt as the model saw it (masked): what the leakage audit attacks
    choices: str = ""  # where the answer choices begin: they stay in the clear when masked (see _ask)


@dataclass
class ProbeResult:
    name: str
    mode: str  # named or masked
    n: int
    correct: int
    chance: float
    invalid: int = 0
    calls: int = 0
    tokens: int = 0
    questions: list[Question] = field(default_factory=list)

    @property
    def valid(self) -> int:  # an invalid answer is no answer: neither right nor wrong (module docstring)
        return self.n - self.invalid

    @property
    def accuracy(self) -> float:
        return self.correct / self.valid if self.valid else float("nan")

    def inconclusive(self) -> str | None:
        """Why this row measured nothing (None: it measured something)."""
        if self.n == 0:
            return "no question to ask"
        if self.chance >= 1.0:
            return "the best constant answer is always right (one firm, or one year, in the sample)"
        if self.invalid * 2 > self.n:
            return f"{self.invalid} of {self.n} answers invalid"
        return None

    def stats(self) -> dict[str, Any]:
        lo, hi, p = wilson_and_p(self.correct, self.valid, self.chance)
        return {
            "probe": self.name,
            "mode": self.mode,
            "n": self.n,
            "correct": self.correct,
            "accuracy": round(self.accuracy, 4) if self.valid else None,
            "chance": round(self.chance, 4),
            "wilson_95": [round(lo, 4), round(hi, 4)] if self.valid else [None, None],
            "p_value": p,
            "invalid": self.invalid,
            "calls": self.calls,
            "tokens": self.tokens,
            "inconclusive": self.inconclusive(),
        }


def wilson_and_p(k: int, n: int, chance: float) -> tuple[float, float, float]:
    """Wilson 95 % interval of k/n and the one-sided binomial p-value of k or
    more successes in n when the true rate is ``chance`` (scipy)."""
    from scipy.stats import binomtest

    if n == 0:
        return float("nan"), float("nan"), 1.0
    test = binomtest(k, n, min(max(chance, 1e-9), 1 - 1e-9), alternative="greater")
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return float(ci.low), float(ci.high), float(test.pvalue)


# -- the questions ------------------------------------------------------------------------------


def sample_days(closes: pd.Series, start: dt.date, end: dt.date, n: int, seed: int) -> list[pd.Timestamp]:
    """Up to ``n`` trading days of the window, each with 20 trading days of
    prices after it in the file (so every question has an answer)."""
    idx = closes.index
    last_ok = len(idx) - 1 - max(HORIZONS)
    days = [d for i, d in enumerate(idx) if start <= d.date() <= end and i <= last_ok]
    if not days:
        return []
    rng = np.random.default_rng([seed, 31])
    pick = rng.choice(len(days), size=min(n, len(days)), replace=False)
    return sorted(days[i] for i in pick)


def recall_questions(ticker: str, name: str, closes: pd.Series, days: Sequence[pd.Timestamp]) -> list[Question]:
    """Three questions a day: up or down over 5 and 20 trading days, and the bucket of the 20-day return."""
    pos = {d: i for i, d in enumerate(closes.index)}
    ahead = {h: [float(closes.iloc[pos[d] + h] / closes.iloc[pos[d]] - 1.0) for d in days] for h in HORIZONS}
    edges = np.quantile(ahead[20], [0.2, 0.4, 0.6, 0.8]) if days else np.zeros(4)
    ranges = [
        f"A: lower than {edges[0]:+.1%}",
        f"B: from {edges[0]:+.1%} to {edges[1]:+.1%}",
        f"C: from {edges[1]:+.1%} to {edges[2]:+.1%}",
        f"D: from {edges[2]:+.1%} to {edges[3]:+.1%}",
        f"E: higher than {edges[3]:+.1%}",
    ]
    out = []
    for k, d in enumerate(days):
        day = str(d.date())
        head = f"Stock: {ticker} ({name}). Date: {day}. The close that day was ${float(closes.loc[d]):.2f}."
        for h in HORIZONS:
            r = ahead[h][k]
            out.append(
                Question(
                    f"up/down-{h}",
                    day,
                    f"{head}\nOver the next {h} trading days after {day}, did the share price go up or down?",
                    "up" if r > 0 else "down",
                )
            )
        bucket = BUCKETS[int(np.searchsorted(edges, ahead[20][k], side="right"))]
        out.append(
            Question(
                "bucket-20",
                day,
                f"{head}\nWhere did the close land 20 trading days after {day}, as a change from that day's "
                "close? Answer the letter of the range:\n" + "\n".join(ranges),
                bucket,
                choices="Answer the letter of the range:",
            )
        )
    return out


def reid_questions(
    events: Sequence[Any], n: int, seed: int, tickers: Sequence[str], years: Sequence[int]
) -> list[Question]:
    """``n`` items as an analyst reads them, each asked which firm and which
    year: drawn in turn from each firm's items (shuffled, seeded), so no firm
    dominates the sample and naming one firm every time does not score."""
    by: dict[str, list[Any]] = {}
    for e in events:
        if e.text:
            by.setdefault(e.ticker, []).append(e)
    if not by:
        return []
    rng = np.random.default_rng([seed, 59])
    queues = {t: [items[int(i)] for i in rng.permutation(len(items))] for t, items in sorted(by.items())}
    picked: list[Any] = []
    while len(picked) < n and any(queues.values()):
        for t in sorted(queues):
            if queues[t] and len(picked) < n:
                picked.append(queues[t].pop())
    picked.sort(key=lambda e: (e.published_at, e.ticker, e.id))
    out = []
    for e in picked:
        day = e.published_at.date()
        text = " ".join(str(e.text).split())[:900]
        prompt = (
            # listed as the team lists an item ([E1] date: text), so a masked probe reads what the team reads
            f"A {e.source} item:\n[E1] {day.strftime('%b %d %Y')}: {text}\n\n"
            f"Which company is it about, and in which year was it written? The company is one of: "
            f"{', '.join(tickers)} (answer its ticker). The year is one of: {', '.join(map(str, years))}."
        )
        out.append(
            Question("company+year", str(day), prompt, f"{e.ticker}|{day.year}", choices="Which company is it about")
        )
    return out


# -- asking ---------------------------------------------------------------------------------------


def _ask(client, masker, q: Question, output: type[BaseModel], agent: str) -> tuple[BaseModel | None, Any]:
    prompt = masker.text(q.prompt, q.day) if masker is not None else q.prompt
    if masker is not None and q.choices:
        # the choices stay real: the model must recognise the firm, or the range (masked, the five ranges
        # read alike, "from -15-30% to -15-30%", and no memory could pick one)
        prompt = prompt[: prompt.rfind(q.choices)] + q.prompt[q.prompt.rfind(q.choices) :]
    q.sent = prompt
    msgs = [Message(role="system", content=SYSTEM), Message(role="user", content=prompt)]
    try:
        res = client.ask(msgs, output, agent=agent, day=q.day)
    except LLMInvalidAnswer:
        return None, None
    return res.value, res.usage


def _probe(
    name: str, mode: str, client, masker, questions: list[Question], output, chance: float, bar: Any = None
) -> ProbeResult:
    res = ProbeResult(name, mode, 0, 0, chance)
    before_calls = client.ledger.summary().get("llm_calls", 0)
    before_tokens = client.ledger.tokens_used
    for q in questions:
        value, _ = _ask(client, masker, q, output, f"probe-{name}-{mode}")
        if bar is not None:
            bar.update()
        res.n += 1
        if value is None:
            res.invalid += 1
            q.answer = None
            continue
        q.answer = value.answer if hasattr(value, "answer") else f"{value.ticker.strip().upper()}|{value.year}"
        res.correct += q.answer == q.gold
    res.calls = int(client.ledger.summary().get("llm_calls", 0)) - int(before_calls)
    res.tokens = int(client.ledger.tokens_used) - int(before_tokens)
    res.questions = questions
    return res


def _split(res: ProbeResult, part: str) -> ProbeResult:
    """The company or the year half of a re-identification probe, scored apart."""
    k = 0 if part == "company" else 1
    out = ProbeResult(f"reid-{part}", res.mode, res.n, 0, res.chance, res.invalid, res.calls, res.tokens)
    out.correct = sum(
        1 for q in res.questions if q.answer is not None and q.answer.split("|")[k] == q.gold.split("|")[k]
    )
    return out


def run(
    client,
    ticker: str,
    start: dt.date,
    end: dt.date,
    closes: pd.Series,
    events: Sequence[Any],
    *,
    name: str,
    candidates: Sequence[str],
    samples: int = 50,
    seed: int = 0,
    anonymize: bool = False,
    aliases: dict[str, Sequence[str]] | None = None,
    mask_items: str = "topics",
    knowledge: dict[str, Any] | None = None,
    run_leakage: dict[str, Any] | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    """Both probes, named (and masked with ``anonymize``; ``aliases``: more names to mask; ``mask_items``:
    an item as LLMSettings.mask_items); ``events``: the items of every firm the corpus has (the
    re-identification draws from each); ``knowledge``: the model's ``model_knowledge`` block for the
    window, carried into the result; ``run_leakage``: the leakage audit of a masked team run on the window
    (``--run``), which the masked verdict cannot clear when it is not blind; see the module docstring;
    ``progress``: a bar of the questions on stderr."""

    days = sample_days(closes, start, end, samples, seed)
    if not days:
        last = closes.index[-1].date() if len(closes) else None
        raise DataError(
            f"{ticker}: no day of {start}..{end} has {max(HORIZONS)} trading days of prices after it (the data ends "
            f"{last}); nothing to ask: choose a window that ends {max(HORIZONS)} sessions before the data does"
        )
    window_events = [e for e in events if start <= e.published_at.date() <= end]
    years = sorted({d.year for d in closes.index})
    cands = sorted({*candidates, ticker})
    modes: list[tuple[str, Any]] = [("named", None)]
    if anonymize:
        # every firm whose items the re-identification draws is masked, not only the probed one
        mask = masker_for(sorted({ticker, *(e.ticker for e in window_events if e.text)}), aliases, items=mask_items)
        mask.start_prices[ticker] = float(closes.loc[closes.index[closes.index.date >= start][0]])
        modes.append(("masked", mask))
    rows: list[dict[str, Any]] = []
    detail: dict[str, list[dict[str, Any]]] = {}
    audit: dict[str, Any] | None = None
    asked = len(recall_questions(ticker, name, closes, days)) + len(
        reid_questions(window_events, samples, seed, cands, years)
    )
    asked *= len(modes)
    with bar(asked, f"lookahead {ticker}", progress) as b:
        for mode, mask in modes:
            recall = recall_questions(ticker, name, closes, days)
            for kind in ("up/down-5", "up/down-20", "bucket-20"):
                qs = [q for q in recall if q.kind == kind]
                if kind.startswith("up/down"):
                    ups = sum(q.gold == "up" for q in qs)
                    chance = max(ups, len(qs) - ups) / len(qs) if qs else 0.5
                    r = _probe(f"recall {kind}", mode, client, mask, qs, Direction, chance, b)
                else:
                    r = _probe(f"recall {kind}", mode, client, mask, qs, Bucket, 1 / len(BUCKETS), b)
                rows.append(r.stats())
                detail[f"{mode} {r.name}"] = [q.__dict__ for q in qs]
            reid = reid_questions(window_events, samples, seed, cands, years)
            r = _probe("reid", mode, client, mask, reid, Who, 0.0, b)
            # the year's chance rate is the best constant answer (a model that always says the most
            # common year of the sample, say from a bias to recent years, scores that much)
            for part, chance in (("company", _best_constant(reid, 0)), ("year", _best_constant(reid, 1))):
                half = _split(r, part)
                half.chance = chance
                half.calls, half.tokens = (r.calls, r.tokens) if part == "company" else (0, 0)
                rows.append(half.stats())
            detail[f"{mode} reid"] = [q.__dict__ for q in reid]
            if mode == "masked":
                audit = _audit_probes(recall + reid, ticker, window_events, closes)
    return {
        "ticker": ticker,
        "window": {"start": str(start), "end": str(end)},
        "samples": samples,
        "seed": seed,
        "days": [str(d.date()) for d in days],
        "candidates": cands,
        "years": years,
        "model_knowledge": knowledge or {},
        "rows": rows,
        "leakage": audit,
        "run_leakage": run_leakage,
        "verdict": verdict(rows, audit, run_leakage),
        "questions": detail,
    }


def _audit_probes(questions: Sequence[Question], ticker: str, events: Sequence[Any], closes: pd.Series) -> dict:
    """The leakage audit (fincon.llm.leakage) of the probe's own masked prompts:
    an item or a price in them may give firm and day away where the model's
    answers do not show it."""

    prompts = [
        leakage.Prompt("probe", f"probe-{q.kind}", q.day, str(i), q.sent or "", (q.gold.split("|")[0],))
        if q.kind == "company+year"
        else leakage.Prompt("probe", f"probe-{q.kind}", q.day, str(i), q.sent or "", (ticker,))
        for i, q in enumerate(questions)
    ]
    res = leakage.audit(prompts, leakage_inputs.knowledge_of(events, {ticker: closes}))
    return {**leakage.summary(res), "verdict": res["verdict"]}


def _best_constant(questions: Sequence[Question], part: int) -> float:
    """The share of the most common gold answer (``part`` 0: the company, 1: the year): what a model that
    knows nothing scores by giving that answer every time."""
    gold = [q.gold.split("|")[part] for q in questions]
    return max(gold.count(g) for g in set(gold)) / len(gold) if gold else 0.0


def verdict(
    rows: Sequence[dict[str, Any]], audit: dict[str, Any] | None = None, run_audit: dict[str, Any] | None = None
) -> str:
    """One line: does the named model recall the window (or re-identify its
    items), and does the mask remove it? Rows that measured nothing are left
    out; when none measured anything the line says inconclusive."""
    # named, an item carries its firm and its date as written: naming them is reading, not memory, so the
    # named re-identification rows are a baseline of what the text gives away and never the verdict
    recall = [r for r in rows if r["mode"] == "named" and r["probe"].startswith("recall")]
    named = [r for r in recall if not r.get("inconclusive")]
    if not named:
        why = sorted({r["inconclusive"] for r in recall if r.get("inconclusive")})
        return "inconclusive: no recall probe measured anything (" + "; ".join(why) + ")"
    flagged = [r for r in named if r["p_value"] < 0.01]
    if flagged:
        worst = min(flagged, key=lambda r: r["p_value"])
        line = (
            f"the model recalls this window ({worst['probe']}: {worst['accuracy']:.0%} against a chance rate of "
            f"{worst['chance']:.0%}, p = {worst['p_value']:.2g}): its LLM results here are not evidence of skill"
        )
    else:
        widest = max(named, key=lambda r: r["wilson_95"][1] - r["wilson_95"][0])
        ci = f"{widest['wilson_95'][0]:.0%}..{widest['wilson_95'][1]:.0%}"
        left = f", {widest['invalid']} invalid answers left out" if widest["invalid"] else ""
        line = (f"no recall detected at {widest['n'] - widest['invalid']} samples{left}: the widest interval is "
                f"{ci} ({widest['probe']})")  # fmt: skip
    left_out = [r["probe"] for r in recall if r.get("inconclusive")]
    if left_out:
        line += f" ({', '.join(left_out)} inconclusive)"
    masked_rows = [r for r in rows if r["mode"] == "masked"]
    masked = [r for r in masked_rows if not r.get("inconclusive")]
    if masked_rows and not masked:
        line += "; masked: inconclusive"
    elif masked:
        left = [r for r in masked if r["p_value"] < 0.01]
        if left:
            line += f"; masked: still above chance ({', '.join(r['probe'] for r in left)})"
        elif audit is not None and audit.get("result") == "not blind":
            # the model's answers show nothing, but its prompts give firm and day away: no clearance
            line += (
                f"; masked: no recall above chance in the answers, but the masked prompts are not blind "
                f"({_given(audit)} give away firm and day: fincon eval leakage)"
            )
        elif audit is not None and audit.get("result") == "inconclusive":
            line += (
                f"; masked: no recall above chance in the answers, but too few masked prompts to show they are blind "
                f"({_given(audit)} give away firm and day: more --samples)"
            )
        else:
            line += "; masked: no recall above chance, and the leakage audit finds the masked prompts blind"
    if run_audit is not None and run_audit.get("result") == "not blind":
        line += (
            f"; the team run audited is not blind ({_given(run_audit)} give away firm and day): its masked "
            "figures are not evidence of skill"
        )
    elif run_audit is not None and run_audit.get("result") == "inconclusive":
        line += (f"; the team run audited is inconclusive ({_given(run_audit)} give away firm and day, too few "
                 "prompts to show it blind): audit a longer run before its masked figures count")  # fmt: skip
    elif run_audit is not None:
        line += f"; the team run audited: {run_audit.get('result')}"
    return line


def _given(audit: dict[str, Any]) -> str:
    """An audit's give-aways as a verdict names them: of its prompts, and of its days when it counted them."""
    days = f" on {audit['days_firm_and_day']} of {audit['days']} days" if audit.get("days") is not None else ""
    return f"{audit['firm_and_day']} of {audit['prompts']} prompts{days}"


def report(res: dict[str, Any]) -> str:
    head = (
        f"lookahead probes: {res['ticker']} {res['window']['start']}..{res['window']['end']}, "
        f"{len(res['days'])} decision days, seed {res['seed']}"
    )
    know = res.get("model_knowledge") or {}
    if know:
        cutoff = f"cutoff {know.get('cutoff')} ({know.get('source')})" if know.get("cutoff") else "cutoff unknown"
        head += f"\nmodel {know.get('model')}: {cutoff}; the window is {know.get('label')}"
    cols = f"{'probe':<22}{'mode':<8}{'n':>5}{'acc':>7}{'chance':>8}{'Wilson 95%':>15}{'p':>10}{'invalid':>9}{'calls':>7}{'tokens':>9}"
    lines = [head, cols, "-" * len(cols)]
    for r in res["rows"]:
        (lo, hi), scored = r["wilson_95"], r["n"] > r["invalid"]
        acc, ci = (f"{r['accuracy']:.1%}", f"{lo:.0%}..{hi:.0%}") if scored else ("n/a", "n/a")
        lines.append(
            f"{r['probe']:<22}{r['mode']:<8}{r['n']:>5}{acc:>7}{r['chance']:>8.1%}"
            f"{ci:>15}{r['p_value']:>10.2g}{r['invalid']:>9}{r['calls']:>7}{r['tokens']:>9,}"
            + (f"  inconclusive: {r['inconclusive']}" if r.get("inconclusive") else "")
        )
    if res.get("leakage"):
        lines.append(f"\nmasked probe prompts, leakage audit: {res['leakage']['verdict']}")
    if res.get("run_leakage"):
        lines.append(f"team run, leakage audit: {res['run_leakage']['result']}")
    lines.append(f"\nverdict: {res['verdict']}")
    return "\n".join(lines)
