"""The report card: what a reviewer of an LLM-trading result checks, point by point.

Three checklists, each row with what fincon measured, a verdict (``pass``,
``fail``, ``not measured``) and the number behind it:

* the six points "The Alpha Illusion" (arXiv 2605.16895) asks of an LLM
  trading result: temporal integrity (the window against the model's
  cutoff), frictions (costs applied), counterfactual robustness (placebo
  runs), calibration (do the analysts' stated confidences match how often
  they are right), numerical execution (the numeric critics), multi-agent
  disaggregation (what each analyst's calls are worth);
* fincon's own: model decided (the rules stood in for few of its answers);
* FINSABER's honesty checklist: point in time, next-open fills, costs,
  volume caps, the LLM's spend as a cost, long horizons, broad universes.

A failed row is shown in red on the HTML page, not in a footnote. The card
reads only what a directory holds (a run, an experiment or a rolling
evaluation); calibration and the hit rates come from the team's
``decisions.jsonl`` (each analyst's call against the next close).

Each point is one function of the directory's :class:`Evidence` returning its verdict and the
number behind it, listed in :data:`CHECKS`; a verdict follows from its numbers (a placebo a team
with no edge "passes" is a fail; analysts no better than a coin, or their own bias, are "none
informative")."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Callable

from pydantic import ValidationError

from fincon.data.calendar import infer_calendar
from fincon.llm import leakage_report, leakage_verdict
from fincon.llm.knowledge import AUDITED, USER_SOURCE
from fincon.llm.settings import LLMSettings
from fincon.proportions import wilson
from fincon.report.evidence import (
    FAIL,
    MIN_COST_BP,
    NONE,
    PASS,
    Evidence,
    Verdict,
    evidence,
    on_its_side,
    run_part,
    under_cost,
)
from fincon.report.fallbacks import rules_stood_in
from fincon.report.selection import selection
from fincon.workflow.forward_anchor import settles_the_window
from fincon.workflow.journal import REPLAY, journal_hint

#: a window shorter than this many trading days (two years at 252 a year) is "one short window"
LONG_DAYS = 500
#: a participation cap above this share of the day's volume is no volume cap
MAX_PARTICIPATION = 0.1
#: fewer distinct tickers than this over a rolling evaluation's windows is not a broad universe
BROAD_TICKERS = 10


def temporal_integrity(ev: Evidence) -> Verdict:
    """The window against the model's cutoff: a run inside its training data may be remembered. It passes
    after the cutoff, or masked with prompts the leakage audit finds blind (fincon.llm.leakage), or as a live
    journal whose every decision was committed before its session's open (whatever the cutoff). A run whose
    decisions read data from after them, or beliefs a model wrote that may know the window, fails it."""
    if look := ev.lookahead:
        return FAIL, f"its decisions read data from after them: {look}"
    why = ""
    if ev.sealed is not None:
        settled, why = settles_the_window(ev.sealed["simulated"], ev.sealed.get("anchor"))
        if settled:
            return PASS, why
    elif ev.root.name == REPLAY and journal_hint(ev.root.parent):
        why = f"a forward journal's replay: `fincon forward score {ev.root.parent}` grades what its seals prove"
    know = ev.knowledge
    label = know.get("label")
    audit = know.get("audit") or {}
    result = audit.get("result")
    k, n, kd, nd = (audit.get(x) for x in ("firm_and_day", "prompts", "days_firm_and_day", "days"))
    on_days, again = (f" on {kd} of {nd} days" if nd is not None else ""), ""
    if result == "blind" and n:  # read again: an audit that counted its prompts as independent said blind early
        result = (
            leakage_verdict.outcome_of(k or 0, n, audit.get("threshold", 0.1), kd or 0, nd) if nd else "inconclusive"
        )
        again = "" if nd else f"; audited before the bound counted days: fincon eval leakage {ev.run or ev.root}"
    said = (
        f"; masked, the leakage audit: {result} ({k} of {n} prompts{on_days} give away firm and day, threshold "
        f"{audit.get('threshold', 0.1):.0%}{again})"
        if result in AUDITED
        else ("; prompts named, not audited" if result == "not audited" else "")
    )
    if (t := audit.get("together")) and any(x["k"] for x in t.values()):  # beside the verdict, not in it
        said += (
            "; its call log read together (whoever holds it, not a model reading one prompt) names firm and "
            f"window in stretches of {leakage_report.stretches(t)}"
        )
    claimed = ", given by the user: fincon does not know this model's" if know.get("source") == USER_SOURCE else ""
    cutoff = f" (cutoff {know.get('cutoff')}{claimed})" if know.get("cutoff") else ""
    said += f"; {why}" if why else ""
    if (wrote := know.get("beliefs") or {}) and wrote.get("label") != "after-cutoff":  # who wrote what it reads
        return FAIL, f"its --beliefs were written by {wrote.get('model')}, which may know the window ({wrote.get('label')}, cutoff {wrote.get('cutoff')}); {label}{cutoff}{said}"  # fmt: skip
    if label in ("after-cutoff", "no-model") or result == "blind":
        return PASS, f"{label}{cutoff}{said}"
    if label in ("in-training-data", "straddles-cutoff"):
        few = " (too few days of prompts to show the mask holds)" if result == "inconclusive" and not again else ""
        return FAIL, f"{label}: the window is inside the model's training data (cutoff {know.get('cutoff')}){said}{few}"
    return NONE, "no model-knowledge label (cutoff unknown, or a run from before the labels)" + said


def frictions(ev: Evidence) -> Verdict:
    """Were costs applied, at least MIN_COST_BP a side? On an order of 100 shares at $100 (a rate of 1e-7
    passed as "costs applied") and on the run's own orders (a per-share commission's $1 minimum is 1 bp of
    $10,000 and a quarter of a bp of the $330,000 a third of a $1M book trades)."""
    if under_cost(ev.cost_bp):
        return FAIL, "run without costs (no commission, no slippage)" if not ev.cost_bp else _too_cheap(ev)
    said = "; ".join(
        f"{kind} {m.model}" + "".join(f", {k} {v}" for k, v in m.model_dump().items() if k != "model")
        for kind, m in (("commission", ev.broker.commission), ("slippage", ev.broker.slippage))
    ) + (f"; borrow {ev.broker.borrow:g} a year on shorts" if ev.broker.borrow else "")
    short, days = ev.shorts if not ev.broker.borrow else (0, 0)
    paid = _paid_too_little(ev) or (short and f"but shorts held on {short} of {days} days paid nothing to borrow "
                                    "their shares (--borrow 0.003: a large cap easy to borrow)")  # fmt: skip
    return (FAIL, f"costs applied ({said}), {paid}") if paid else (PASS, "costs applied: " + said)


def _paid_too_little(ev: Evidence) -> str:
    """What the run's own orders paid, when under MIN_COST_BP a side ("" when not, or no orders)."""
    if ev.paid is None or not (bp := under_cost(ev.paid[0])):
        return ""
    _, paid, traded = ev.paid
    return (
        f"but the run's orders paid {bp} bp a side (${paid:,.2f} on ${traded:,.0f} traded): under "
        f"{MIN_COST_BP:g} bp, less than a broker and the spread take (--slippage-model bps --slippage 5)"
    )


def counterfactual_robustness(ev: Evidence) -> Verdict:
    """Does the team's edge depend on what it reads? A pass needs an edge over buy-and-hold on the real
    corpus that no placebo keeps: a placebo run that does as well or better (its own median or the
    median of the paired gaps), or still beats buy-and-hold on its own market, or that the experiment
    flags (decisions unchanged with the tone reversed), shows the edge came from elsewhere."""
    placebo = ev.results.get("placebo") or {}
    if not placebo:
        return FAIL, "no placebo run (fincon experiment --placebo shuffle-news,flip-tone,price-twin)"
    parts = [
        f"{k}: consistency {_pct(p.get('prediction_consistency'))}, profit gap {_pp(p.get('profit_gap_pct'))}, "
        f"over buy-and-hold on it {_pp(p.get('excess_pct'))}"
        for k, p in placebo.items()
    ]
    edge = next((p["real_excess_pct"] for p in placebo.values() if _finite(p.get("real_excess_pct"))), None)
    n = next((p["windows"] for p in placebo.values() if p.get("windows")), 0) if ev.rolling is not None else 0
    per = f" (the median over {n} windows: the summary's mean excess is another figure)" if n else ""
    if edge is None:
        return NONE, "; ".join(parts) + " (no excess over buy-and-hold recorded: rerun the experiment to measure it)"
    if edge <= 0:
        return FAIL, (
            f"no edge to lose: the team is {_pp(edge)}{per} against buy-and-hold on the real corpus, so no placebo "
            "can show its result depends on the information; " + "; ".join(parts)
        )
    survived = [
        k
        for k, p in placebo.items()
        if not _finite(p.get("excess_pct"))
        or p["excess_pct"] >= 0
        or _num(p.get("cr_pct_median")) >= _num(p.get("real_cr_pct"))
        or _num(p.get("profit_gap_pct")) <= 0  # paired: a rolling median of each series hid it (found in review)
    ]
    if survived:
        return FAIL, (
            f"the edge ({_pp(edge)}{per} over buy-and-hold) survives {', '.join(survived)}: the placebo run does as well, "
            "or still beats buy-and-hold; " + "; ".join(parts)
        )
    flagged = [f"{k}: {'; '.join(p['flags'])}" for k, p in placebo.items() if p.get("flags")]
    if flagged:  # the experiment's own reading of its placebo: the edge does not come from the information
        return FAIL, f"an edge of {_pp(edge)}{per} over buy-and-hold, but {'; '.join(flagged)}; " + "; ".join(parts)
    return PASS, f"an edge of {_pp(edge)}{per} over buy-and-hold that no placebo keeps; " + "; ".join(parts)


def calibration_point(ev: Evidence) -> Verdict:
    """Do the analysts' stated confidences match how often they are right, better than the drift?
    A pass needs the Brier score under a coin's 0.25 and under the base rate's (always saying the
    share of rises), each by more than its noise (one-sided 95 % bounds, clustered by day and by judgement:
    a report read again scores its one call on each day)."""
    cal = ev.calibration
    if not cal:
        return NONE, "no team records with analysts' confidences"
    buckets = ", ".join(f"{b} {v['hit_rate']:.0%} ({_n(v)})" for b, v in cal["by_confidence"].items())
    upper, over = cal["brier_upper_95"], cal["over_base_upper_95"]
    bound = (
        f"95 % upper bound {on_its_side(upper, lambda x: x < 0.25, 3)}, by day and judgement"
        if upper is not None
        else "one day: no bound"
    )
    excess = (
        f", the Brier's excess over it at most {on_its_side(over, lambda x: x < 0, 3, '+')}" if over is not None else ""
    )
    return PASS if upper is not None and over is not None and upper < 0.25 and over < 0 else FAIL, (
        f"Brier {cal['brier']:.3f} ({bound}) over {cal['calls']} analyst calls on {cal['days']} days (0.25: a "
        f"coin); the base rate (up after {cal['base_rate']:.0%} of the calls) scores {cal['brier_base']:.3f}"
        f"{excess}; hit rate of the {cal['directional']} bullish or bearish ones by confidence {buckets}"
        + (f"; the last decision day of {n} run(s) not scored: no close after it in the run's files"
           if (n := cal.get("last_unscored")) else "")
    )  # fmt: skip


def numerical_execution(ev: Evidence) -> Verdict:
    """Did numeric critics check the analysts' figures (fincon.agents.critics.review's counts)? A
    pass needs claims checked and none left unverified (a critic's model answer invalid twice: the
    figure went on as the analyst stated it)."""
    summaries = [run_part(t, "strategy_summary") or {} for t in ev.team_runs]  # a rolling evaluation's: each window's
    if not any(k.startswith("critic") for s in summaries for k in s):
        return NONE, "numeric critics off (--critics on)"
    keys = ("claims", "corrected", "dropped", "unverified")
    n = {k: sum(int(s.get(f"critic_{k}") or 0) for s in summaries) for k in keys}
    said = (
        f"{n['claims']} figures checked: {n['corrected']} corrected, {n['dropped']} dropped, "
        f"{n['unverified']} not verified"
    )
    if not n["claims"]:
        return NONE, "numeric critics on, but no figure of the filings' or calls' analysts to check"
    if n["unverified"]:
        return FAIL, f"{said} (a critic's answer invalid twice: those figures went on as stated)"
    return PASS, said


def _n(v: dict) -> str:
    """A count of calls, with the judgements they are where a report read again repeats one ("n=27, 3
    judgements"): the calls alone read as that many independent ones."""
    m = min(v.get("judgements") or v["n"], v["n"])
    return f"n={v['n']}" + (f", {m} judgement{'s' if m > 1 else ''}" if m < v["n"] else "")


def _percent(x: float, places: int) -> str:
    """A share as a percent to ``places`` decimals (whole percents printed an interval's lower end of
    50.1 % as chance's "50%" beside "informative")."""
    return f"{x * 100:.{places}f}"


def disaggregation(ev: Evidence) -> Verdict:
    """What is each analyst's call worth? A pass needs at least one analyst
    whose hit rate is above chance by a Wilson interval that excludes it, at
    95 % over all analysts together (Bonferroni: each at 1 - 0.05/k); chance
    is a coin's 50 % or, if higher, what the analyst's own mix of bullish and
    bearish calls scores on those days, on each ticker apart (bullish every day of a rise is no call).
    The interval's n is the analyst's judgements: a report read again unchanged
    repeats one, scored on each day it is read (its hit rate stays by day)."""

    cal = ev.calibration
    per = (cal or {}).get("by_analyst") or {}
    if not per:
        return NONE, "no analyst records to attribute"
    level = 1.0 - 0.05 / len(per)
    rows, informative, repeated = [], [], False
    for kind, v in per.items():
        # the interval counts judgements: a report read again unchanged repeats one (a filing's, for a quarter:
        # InvestorBench MSFT's 10-q, n=64 days for 4 calls made); an analyst judging afresh each day keeps n
        m = min(v.get("judgements") or v["n"], v["n"])
        lo, hi = wilson(v["hits"] / v["n"] * m, m, level)
        chance = max(0.5, v["chance"])  # its own bias on those days: all-bullish in a rise scores its share
        repeated |= m < v["n"]
        k = next((k for k in range(6) if (float(_percent(lo, k)) > float(_percent(chance, k))) == (lo > chance)), 6)
        rows.append(
            f"{kind} {_percent(v['hit_rate'], k)}% [{_percent(lo, k)}%, {_percent(hi, k)}%] by chance {_percent(chance, k)}% ({_n(v)})"
        )
        if lo > chance:
            informative.append(kind)
    how = f"hit rate by analyst, Wilson {level:.1%} intervals (Bonferroni over {len(per)}): " + ", ".join(rows)
    if repeated:
        how += "; an interval counts an analyst's judgements, not the days a report read again repeats one on"
    if informative:
        return PASS, f"informative: {', '.join(informative)}; {how}"
    return FAIL, f"reported, none informative (every interval includes chance); {how}"


def model_decided(ev: Evidence) -> Verdict:
    """Are the figures the model's? (:func:`rules_stood_in` over the run's, or a rolling evaluation's
    windows', usage.)"""
    verdict = rules_stood_in((ev.run,) if ev.run is not None else ev.windows)
    if verdict is not None:
        return verdict
    if ev.knowledge.get("label") in (None, "no-model"):
        return PASS, "no model: nothing the rules could stand in for"
    return NONE, "no llm_usage.csv beside the run: the model's answers cannot be counted"


def point_in_time(ev: Evidence) -> Verdict:
    if look := ev.lookahead:
        return FAIL, look
    return PASS, "enforced by the engine and tested by perturbing the future (tests/test_point_in_time.py)"


def _closes_only(ev: Evidence) -> str:
    """What a run on a dataset of close prices (InvestorBench's) needs for the next open or a volume cap,
    which ``--fill next-open`` or ``--participation`` cannot give it; "" for other data."""
    return (
        "its dataset has close prices only: a dataset of OHLCV prices, or --source yfinance" if ev.closes_only else ""
    )


def next_open_fills(ev: Evidence) -> Verdict:
    if ev.broker.fill == "next_open":
        return PASS, "fill next_open"
    return FAIL, f"fill at the decision's own close ({_closes_only(ev) or '--fill next-open'})"


def _too_cheap(ev: Evidence) -> str:
    return (
        f"costs of {under_cost(ev.cost_bp)} bp a side (100 shares at $100): under {MIN_COST_BP:g} bp, less than a "
        "broker and the spread take (--slippage-model bps --slippage 5)"
    )


def costs(ev: Evidence) -> Verdict:
    """At least MIN_COST_BP a side, on the 100 shares at $100 and on the run's own orders (as frictions);
    a per-share commission (FINSABER's) with its minimum and its maximum named, and failed without
    either (its words then contradict its numbers)."""
    if under_cost(ev.cost_bp):
        return FAIL, _too_cheap(ev) if ev.cost_bp else "none"
    c = ev.broker.commission
    paid = _paid_too_little(ev)
    if c.model != "per-share":  # "percent costs" named a zero commission too
        rate = f"commission {100 * c.rate:g} %" if c.model == "percent" else f"{c.model} commission"  # a 0 said 0
        said = f"{rate}, {f'{ev.broker.slippage.model} slippage' if ev.slippage_bp else 'no slippage'}"
        return (FAIL, f"{said}, {paid}") if paid else (PASS, said)
    terms = [f"at least ${c.minimum:,.2f}" if c.minimum > 0 else "",
             f"at most {100 * c.maximum:.3g} % of the value" if c.maximum > 0 else ""]  # fmt: skip
    if all(terms):
        said = f"per-share commission ${c.per_share:g} a share, {terms[0]}, {terms[1]}"
        return (FAIL, f"{said}, {paid}") if paid else (PASS, said)
    missing = " and ".join(f"without a {w}" for w, t in zip(("minimum", "maximum"), terms) if not t)
    return FAIL, (
        f"per-share commission ${c.per_share:g} a share {missing} (FINSABER's asks both: --commission-model "
        "per-share keeps IB's $1.00 and 1 %)"
    )


def volume_caps(ev: Evidence) -> Verdict:
    """An order fills at most a share of the day's volume that a desk could take without moving
    the price: at most MAX_PARTICIPATION (a cap of the whole day's volume caps nothing real)."""
    cap = ev.broker.participation
    if not cap:
        return FAIL, f"no participation cap ({_closes_only(ev) or '--participation 0.025'})"
    if cap > MAX_PARTICIPATION:
        return FAIL, f"participation {cap}: above {MAX_PARTICIPATION:g} of the day's volume (--participation 0.025)"
    return PASS, f"participation {cap}"


def llm_cost(ev: Evidence) -> Verdict:
    """The model's spend taken from the cash (``--charge-llm``), at a price: a model the price table
    does not price is charged $0, which is no cost (the run's charged total, or for a rolling
    evaluation its price table)."""
    if ev.knowledge.get("label") in (None, "no-model"):
        return PASS, "no model: nothing to charge"
    if ev.broker.charge_llm:
        charged = (ev.metrics.get("costs") or {}).get("llm_charged_usd")
        try:  # the run's model and price table as the run read them
            llm = LLMSettings.model_validate(ev.config.get("llm") or {})
        except ValidationError:
            llm = LLMSettings()
        row = llm.price_key
        if not charged if _finite(charged) else row not in llm.prices:
            return FAIL, (
                f"model spend charged at $0.00: no price for the model {row} (--llm-prices FILE, USD per "
                "million tokens)"
            )
        return PASS, "model spend charged to the account" + (f": ${charged:,.4f}" if _finite(charged) else "")
    return FAIL, "model spend not charged (--charge-llm)"


def long_horizons(ev: Evidence) -> Verdict:
    """One window of LONG_DAYS sessions, or rolling test windows covering as many (two 3-month windows
    are no long horizon), counted as a run's n_days: the closes of the windows' team runs (equity.csv; weekdays
    counted holidays, their decisions missed each last day); a 24/7 calendar needs as many years (a coin: 725)."""
    days, per_year = int(ev.metrics.get("n_days") or 0), int(ev.metrics.get("days_per_year") or 252)
    said, fix = f"one window of {days} trading days", "(fincon experiment --rolling 1y)"
    if ev.rolling is not None:
        if not (covered := sorted({d for run in ev.windows for d in ev.record(run).equity.index})):  # overlaps once
            return NONE, "no window's team run to count its sessions in"
        days, per_year = len(covered), infer_calendar(covered).days_per_year
        n = len({(w["test_start"], w["test_end"]) for w in ev.results.get("windows") or []})
        said = f"rolling evaluation: {n} test windows covering {days} sessions from {covered[0]:%Y-%m-%d} to "
        said += f"{covered[-1]:%Y-%m-%d}"
        fix = "(a longer --rolling span)"
    if days >= (need := math.ceil(LONG_DAYS * per_year / 252)):
        return PASS, said
    year = "" if need == LONG_DAYS else f" (two years of a market open {per_year} days a year)"
    return FAIL, f"{said}, under {need}{year} {fix}"


def broad_universes(ev: Evidence) -> Verdict:
    """Tickers chosen by a rule (not a list), and many: its windows together trade at least BROAD_TICKERS
    distinct tickers, from a pool that keeps firms that left (FINSABER's survivorship: a rule over
    today's firms picks winners)."""
    if ev.rolling is not None:
        universes = ev.results.get("universes") or []
        rules = [u for u in universes if ":" in u or u == "all"]
        if not rules:
            return FAIL, f"universes {', '.join(universes)}: hand-picked lists (--universe RULE)"
        rows = [w for w in ev.results.get("windows") or [] if w.get("universe") in rules]
        distinct = {t for w in rows for t in str(w.get("tickers") or "").split()}
        said = (
            f"universes {', '.join(universes)}: the rules' windows trade {len(distinct)} distinct tickers over "
            f"{len({(w.get('universe'), w.get('test_start')) for w in rows})} windows"
        )
        if len(distinct) < BROAD_TICKERS:
            return FAIL, f"{said}, under {BROAD_TICKERS} (a rule that picks more, over more candidates)"
        pool = ev.results.get("pool")
        if not pool:
            return NONE, (
                f"{said}; the pool they were picked from is not recorded (a rolling evaluation from before "
                "2026-11-30: run it again)"
            )
        n, last, ended = pool["candidates"], pool["last_day"], len(pool["ended"])
        if ended:
            return PASS, (
                f"{said}, picked from {n} candidates of which {ended} left before the data's last day ({last}) after "
                "a window could pick them: firms that left are in the pool (a pick never left inside its window)"
            )
        return FAIL, (
            f"{said}, picked from {n} candidates that all trade to the data's last day ({last}): a pool of "
            "survivors, so a rule picks among firms that lasted (a dataset that keeps the firms that left)"
        )
    tickers = ev.config.get("tickers") or []
    return FAIL, f"{len(tickers)} hand-picked ticker(s): {', '.join(tickers)} (--rolling with --universe RULE)"


SIX_POINT, FINCON, FINSABER = "six-point protocol", "fincon's checks", "FINSABER checklist"
#: the card's rows in order: (checklist, point, check); a new check is one function and one line here
CHECKS: list[tuple[str, str, Callable[[Evidence], Verdict]]] = [
    (SIX_POINT, "temporal integrity", temporal_integrity),
    (SIX_POINT, "frictions", frictions),
    (SIX_POINT, "counterfactual robustness", counterfactual_robustness),
    (SIX_POINT, "calibration", calibration_point),
    (SIX_POINT, "numerical execution", numerical_execution),
    (SIX_POINT, "multi-agent disaggregation", disaggregation),
    (FINCON, "model decided", model_decided),
    (FINCON, "selection", selection),
    (FINSABER, "point in time", point_in_time),
    (FINSABER, "next-open fills", next_open_fills),
    (FINSABER, "costs", costs),
    (FINSABER, "volume caps", volume_caps),
    (FINSABER, "LLM cost as cost", llm_cost),
    (FINSABER, "long horizons", long_horizons),
    (FINSABER, "broad universes", broad_universes),
]


def run_card(root: Path, sealed: dict[str, Any] | None = None, ledger: Path | None = None) -> dict[str, Any]:
    """The card of the run, experiment or rolling directory ``root`` (``sealed``, ``ledger``: see
    :class:`Evidence`)."""
    ev = evidence(root, sealed, ledger)
    rows = []
    for group, point, check in CHECKS:
        verdict, measured = check(ev)
        rows.append({"checklist": group, "point": point, "verdict": verdict, "measured": measured})
    return {
        "directory": str(ev.root),
        "run": str(ev.run) if ev.run else None,
        "graded": ev.graded,  # one strategy of a multi-strategy run, or a team variant not full: which
        "rows": rows,
        "passed": sum(r["verdict"] == PASS for r in rows),
        "failed": sum(r["verdict"] == FAIL for r in rows),
        "not_measured": sum(r["verdict"] == NONE for r in rows),
        "calibration": ev.calibration,
    }


def _pct(x: Any) -> str:
    return f"{x:.0%}" if _finite(x) else "n/a"


def _pp(x: Any) -> str:
    return f"{x:+.2f} pp" if _finite(x) else "n/a"


def _num(x: Any) -> float:
    return float(x) if _finite(x) else float("nan")


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
