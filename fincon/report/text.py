"""The results of an experiment and of a rolling evaluation as the terminal shows them (their HTML
twins: report.studies and report.rolling; the tables both lay out: fincon.workflow.tables)."""

from __future__ import annotations

from typing import Any

from fincon.workflow.tables import (
    PLACEBO_RUN,
    experiment,
    experiment_rows,
    identical_flags,
    median_optimizer_flags,
    placebo,
    placebo_flags,
    placebo_notes,
    rolling_flags,
    rolling_summary,
    significance,
    significance_flags,
    text_table,
)
from fincon.workflow.trials import said_beside


def format_rolling(res: dict[str, Any]) -> str:
    """Per universe and strategy: the medians over windows and the comparison with buy-and-hold."""
    head = (
        f"rolling {res['window']} windows stepped by {res['step']} in {res['span'][0]}..{res['span'][1]} "
        f"({res['brain']} brain, {res['episodes']} training episode(s))"
    )
    lines = [head, *text_table(*rolling_summary(res["summary"]))]
    lines += [f"FLAG: {f}" for f in rolling_flags(res["summary"], res.get("windows") or ())]
    lines.append(
        "beats B&H: share of windows with a CR above buy-and-hold's on the same window and tickers; "
        "p: two-sided Wilcoxon signed-rank test of per-window CRs paired with buy-and-hold's"
    )
    if res.get("placebo"):
        lines += ["", "placebo runs of the full team, medians over windows (each window: its median repeat):"]
        lines += [*text_table(*placebo(res)), *(f"FLAG: {f}" for f in placebo_flags(res))]
    if any("psr" in s for s in res["summary"]):
        lines += ["", format_significance(res)]
    if any(s.get("model_knowledge") and not s["model_knowledge"].startswith("no-model") for s in res["summary"]):
        lines.append(
            "model knowledge: windows by their label against the model's training-data cutoff; a window the "
            "model may remember (in-training-data, straddles-cutoff) is no evidence of skill"
        )
    return "\n".join(lines)


def format_significance(res: dict[str, Any], over: str = "the windows' daily returns", notes: str = "") -> str:
    """The statistics of each strategy over its daily returns (fincon.workflow.rolling_stats;
    an experiment's: fincon.workflow.experiment_stats)."""
    lines = [f"significance over {over} (docs/experiments.md):", *text_table(*significance(res["summary"]))]
    lines += [f"FLAG: {f}" for f in significance_flags(res["summary"])]
    lines.append(
        f"CI: stationary block bootstrap, {res['bootstrap_reps']:,} replications; DSR deflated by the distinct series compared, its "
        "variance over the same series (one-window trials in the ledger: `fincon ledger`); SPA: Hansen's, "
        "each row alone against buy-and-hold and the best non-LLM baseline (not corrected for the rows tested: StepM is); StepM: Romano-Wolf at 5 %; PBO: CSCV over the "
        "strategies, ± its sd on pure noise of the same shape (noise gives 0.5); p Holm / BH: the Wilcoxon p-values adjusted across universes"
        if not notes
        else notes
    )
    return "\n".join(lines)


def format_results(res: dict[str, Any], family=None) -> str:
    """One table: the median run of each ablation and each baseline."""
    head = (
        f"{', '.join(res['tickers'])}  train {res['train']['start']} .. {res['train']['end']}, "
        f"test {res['test']['start']} .. {res['test']['end']}  "
        f"({res['brain']} brain, {res['repeats']} repeats x {res['episodes']} episodes)"
    )
    knows = res.get("model_knowledge") or {}
    if any(b.get("label") != "no-model" for b in knows.values()):
        cut = next((b.get("cutoff") for b in knows.values() if b.get("cutoff")), None)
        head += (
            "\nmodel knowledge (the team's LLM rows): "
            + ", ".join(f"{w} window {b['label']}" for w, b in knows.items())
            + (f" (model {next(iter(knows.values())).get('model') or 'default'}, cutoff {cut})" if cut else "")
        )
    lines = [head, *text_table(*experiment(res))]
    measures = []
    for row in experiment_rows(res):
        own = row.get("protocol_measures") or {}
        if own and not row.get("baseline"):
            measures.append(
                f"{row['run']}: "
                + ", ".join(f"{k} {val}" for k, val in own.items() if isinstance(val, (int, float, str)))
            )
    lines.append(
        "* best baseline by Sharpe on the test window; p: two-sided Wilcoxon signed-rank test of the "
        "median run's daily log returns against it; calls/day: model calls (cache hits included); "
        "differs %: test days whose target weights differ from the plain fincon team's"
    )
    lines += [f"FLAG: {f}" for f in [*median_optimizer_flags(res), *identical_flags(res)]]
    if measures:
        lines += ["", "protocol measures (median runs):"] + [f"  {x}" for x in measures]
    if res.get("placebo"):
        lines += ["", f"placebo runs of the full team ({PLACEBO_RUN}):"]
        lines += [*text_table(*placebo(res)), *(f"FLAG: {f}" for f in placebo_flags(res))]
        lines += [f"note: {n}" for n in placebo_notes(res)]
    sig = res.get("significance")
    if sig:
        configs = sig.get("configurations", sig["trials"])
        held = ledger_said(family)
        notes = (
            f"CI: stationary block bootstrap, {sig['bootstrap_reps']:,} replications; DSR deflated by the "
            f"{sig['trials']} distinct return series among the {configs} configurations run here, its variance "
            f"over the same series ({held}); SPA: Hansen's, each row alone against buy-and-hold and the best non-LLM baseline (not corrected for the rows tested: StepM is); StepM: "
            f"Romano-Wolf at 5 %; PBO: CSCV over every configuration run ({sig['pbo']['splits']} splits), ± its sd "
            "on pure noise of the same shape (noise gives 0.5); "
            "p Holm / BH: the variants' Wilcoxon p-values against the best baseline adjusted across variants"
        )
        lines += ["", format_significance(sig, f"the test window's {sig['days']} daily returns", notes)]
    return "\n".join(lines)


def format_card(c: dict[str, Any]) -> str:
    lines = [
        f"report card: {c['directory']}{' (of ' + c['graded'] + ')' if c.get('graded') else ''}  "
        f"({c['passed']} pass, {c['failed']} fail, {c['not_measured']} not measured)"
    ]
    group = None
    for r in c["rows"]:
        if r["checklist"] != group:
            group = r["checklist"]
            lines.append(f"\n{group}")
        lines.append(f"  {r['point']:<28} {r['verdict'].upper():<13} {r['measured']}")
    return "\n".join(lines)


def ledger_said(family) -> str:
    """What the trial ledger holds of an experiment's family (a :class:`fincon.workflow.trials.Family`;
    None: no ledger), the other tickers tried over the same days with it."""
    if family is None:
        return "no trial ledger (--ledger off)"
    return (
        f"the trial ledger holds {family.trials} distinct trial{'s' * (family.trials != 1)} "
        f"({len(family.controls)} control{'s' * (len(family.controls) != 1)} apart) "
        f"in the family {family.name} on this machine"
        + (f", and over the same days on other tickers {said_beside(family.beside)}" if family.beside else "")
        + ": `fincon ledger`"
    )
