"""The report card: what a reviewer of an LLM-trading result checks, point by point.

Two checklists, each row with what fincon measured, a verdict (``pass``,
``fail``, ``not measured``) and the number behind it:

* the six points "The Alpha Illusion" (arXiv 2605.16895) asks of an LLM
  trading result: temporal integrity (the window against the model's
  cutoff), frictions (costs applied), counterfactual robustness (placebo
  runs), calibration (do the analysts' stated confidences match how often
  they are right), numerical execution (the numeric critics), multi-agent
  disaggregation (what each analyst's calls are worth);
* FINSABER's honesty checklist: point in time, next-open fills, costs,
  volume caps, the LLM's spend as a cost, long horizons, broad universes.

A run made without costs, on one short window or without a placebo fails
those rows, shown in red on the HTML page, not in a footnote. The card reads
only what a directory holds (a backtest run, an experiment or a rolling
evaluation); it computes calibration and the per-analyst hit rates from the
team's ``decisions.jsonl`` (each analyst's direction and confidence against
the next close the record holds).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import yaml

from fincon.errors import DataError

PASS, FAIL, NONE = "pass", "fail", "not measured"
#: a window shorter than this many trading days is "one short window"
LONG_DAYS = 500


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _team_run(root: Path) -> Path | None:
    """The directory whose decisions.jsonl holds team records (the run, its fincon sub-run, an experiment's full median)."""
    for cand in (root, root / "fincon"):
        if (cand / "decisions.jsonl").is_file() and '"record"' in (cand / "decisions.jsonl").read_text()[:20000]:
            return cand
    res = _json(root / "results.json")
    if isinstance(res, dict) and isinstance(res.get("median"), dict) and "full" in res["median"]:
        return root / res["median"]["full"]["run_dir"]
    return None


def _strategy_run(root: Path) -> Path | None:
    """A run directory with metrics.json and config.yaml: the team's if any, else the first."""
    team = _team_run(root)
    if team is not None and (team / "metrics.json").is_file():
        return team
    for cand in [root, *sorted(p for p in root.iterdir() if p.is_dir())] if root.is_dir() else []:
        m = _json(cand / "metrics.json")
        if isinstance(m, dict) and "cr_pct" in m and (cand / "config.yaml").is_file():
            return cand
    return None


def calibration(decisions: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Each analyst's direction and confidence against the next close's move:
    hit rate by confidence bucket, the Brier score of P(up) = 0.5 +/- conf/2,
    and per analyst kind the hit rate and the count of directional calls."""
    rows = []
    for d, nxt in zip(decisions, decisions[1:]):
        rec, rec2 = d.get("record") or {}, nxt.get("record") or {}
        c0, c1 = rec.get("closes") or {}, rec2.get("closes") or {}
        for a in rec.get("agents") or []:
            t = str(a.get("agent", "")).split("/")[-1]
            if t not in c0 or t not in c1 or a.get("direction") not in ("bullish", "bearish", "neutral"):
                continue
            up = 1.0 if c1[t] > c0[t] else 0.0
            conf = float(a.get("confidence") or 0.0)
            p = (
                0.5 + conf / 2
                if a["direction"] == "bullish"
                else 0.5 - conf / 2
                if a["direction"] == "bearish"
                else 0.5
            )
            rows.append((str(a["agent"]).split("/")[0], a["direction"], conf, p, up))
    if not rows:
        return None
    brier = sum((p - y) ** 2 for *_, p, y in rows) / len(rows)
    directional = [r for r in rows if r[1] != "neutral"]
    buckets = {}
    for lo in (0.0, 0.5, 0.7, 0.9):
        hi = {0.0: 0.5, 0.5: 0.7, 0.7: 0.9, 0.9: 1.01}[lo]
        sel = [r for r in directional if lo <= r[2] < hi]
        if sel:
            hits = sum((r[1] == "bullish") == (r[4] == 1.0) for r in sel)
            buckets[f"{lo:.1f}-{min(hi, 1.0):.1f}"] = {"n": len(sel), "hit_rate": round(hits / len(sel), 4)}
    per = {}
    for kind in sorted({r[0] for r in directional}):
        sel = [r for r in directional if r[0] == kind]
        per[kind] = {
            "n": len(sel),
            "hit_rate": round(sum((r[1] == "bullish") == (r[4] == 1.0) for r in sel) / len(sel), 4),
        }
    return {
        "calls": len(rows),
        "directional": len(directional),
        "brier": round(brier, 4),
        "by_confidence": buckets,
        "by_analyst": per,
    }


def _rolling_knowledge(results: dict[str, Any]) -> dict[str, Any]:
    """The team's windows against its model's cutoff in a rolling evaluation:
    its summary rows count each label ("in-training-data 5/6, no-model 1/6");
    the card takes the worst one any window has."""
    seen = {
        part.split()[0]
        for row in results.get("summary") or []
        if str(row.get("strategy", "")).startswith("fincon") and row.get("model_knowledge")
        for part in str(row["model_knowledge"]).split(", ")
    }
    for label in ("in-training-data", "straddles-cutoff", "cutoff-unknown", "after-cutoff", "no-model"):
        if label in seen:
            return {"label": label}
    return {}


def card(root: Path) -> dict[str, Any]:
    """The card of the run, experiment or rolling directory ``root``."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"{root} is not a directory; give a run, experiment or rolling directory")
    rolling = _json(root / "rolling.json")
    results = _json(root / "results.json") or {}
    run = _strategy_run(root) if rolling is None else None
    if rolling is None and run is None:
        raise DataError(f"{root} holds no run fincon wrote (no metrics.json with its config.yaml)")
    metrics = (_json(run / "metrics.json") or {}) if run else {}
    try:
        config = yaml.safe_load((run / "config.yaml").read_text()) if run else (rolling or {}).get("config", {})
    except (OSError, yaml.YAMLError):
        config = {}
    config = config or {}
    broker = config.get("broker") or {}
    team = _team_run(root) if rolling is None else None
    decisions = (
        [json.loads(x) for x in (team / "decisions.jsonl").read_text().splitlines() if x.strip()] if team else []
    )
    rows: list[dict[str, Any]] = []

    def add(group: str, point: str, verdict: str, measured: str) -> None:
        rows.append({"checklist": group, "point": point, "verdict": verdict, "measured": measured})

    a6 = "six-point protocol"
    know = metrics.get("model_knowledge") or (results.get("model_knowledge") or {}).get("test") or {}
    if rolling is not None and not know:
        know = _rolling_knowledge(results)
    label = know.get("label")
    if label in ("after-cutoff", "no-model"):
        add(
            a6,
            "temporal integrity",
            PASS,
            f"{label}" + (f" (cutoff {know.get('cutoff')})" if know.get("cutoff") else ""),
        )
    elif label in ("in-training-data", "straddles-cutoff"):
        add(
            a6,
            "temporal integrity",
            FAIL,
            f"{label}: the window is inside the model's training data (cutoff {know.get('cutoff')})",
        )
    else:
        add(
            a6, "temporal integrity", NONE, "no model-knowledge label (cutoff unknown, or a run from before the labels)"
        )
    costly = bool(broker.get("commission") or broker.get("slippage") or broker.get("commission_model") == "per-share")
    add(a6, "frictions", PASS if costly else FAIL,
        "costs applied: " + ", ".join(f"{k} {broker[k]}" for k in ("commission_model", "commission", "slippage_model", "slippage") if k in broker)
        if costly else "run without costs (no commission, no slippage)")  # fmt: skip
    placebo = results.get("placebo") or {}
    if placebo:
        flagged = [k for k, p in placebo.items() if p.get("flags")]
        add(a6, "counterfactual robustness", FAIL if flagged else PASS,
            "; ".join(f"{k}: consistency {p['prediction_consistency']:.0%}, profit gap {p['profit_gap_pct']:+.2f} pp" for k, p in placebo.items())
            + (f" (flagged: {', '.join(flagged)})" if flagged else ""))  # fmt: skip
    else:
        add(
            a6,
            "counterfactual robustness",
            FAIL,
            "no placebo run (fincon experiment --placebo shuffle-news,flip-tone,price-twin)",
        )
    cal = calibration(decisions)
    if cal:
        add(a6, "calibration", PASS if cal["brier"] < 0.25 else FAIL,
            f"Brier {cal['brier']:.3f} over {cal['calls']} analyst calls (0.25: a coin); hit rate of the "
            f"{cal['directional']} bullish or bearish ones by confidence "
            + ", ".join(f"{b} {v['hit_rate']:.0%} (n={v['n']})" for b, v in cal["by_confidence"].items()))  # fmt: skip
    else:
        add(a6, "calibration", NONE, "no team records with analysts' confidences")
    summary = (_json(team / "summary.json") or {}).get("strategy_summary", {}) if team else {}
    critic = {k: v for k, v in summary.items() if k.startswith("critic")}
    add(a6, "numerical execution", PASS if critic else NONE,
        ", ".join(f"{k} {v}" for k, v in sorted(critic.items())) if critic else "numeric critics off (--critics on)")  # fmt: skip
    if cal and cal["by_analyst"]:
        add(a6, "multi-agent disaggregation", PASS,
            "hit rate by analyst: " + ", ".join(f"{k} {v['hit_rate']:.0%} (n={v['n']})" for k, v in cal["by_analyst"].items()))  # fmt: skip
    else:
        add(a6, "multi-agent disaggregation", NONE, "no analyst records to attribute")

    fs = "FINSABER checklist"
    look = metrics.get("data_lookahead")
    add(
        fs,
        "point in time",
        FAIL if look else PASS,
        look or "enforced by the engine and tested by perturbing the future (tests/test_point_in_time.py)",
    )
    fill = broker.get("fill", "close")
    add(fs, "next-open fills", PASS if fill == "next_open" else FAIL,
        "fill next_open" if fill == "next_open" else "fill at the decision's own close (--fill next-open)")  # fmt: skip
    per_share = broker.get("commission_model") == "per-share"
    add(fs, "costs", PASS if per_share or costly else FAIL,
        "per-share commission with a minimum and a maximum" if per_share else ("percent costs" if costly else "none"))  # fmt: skip
    add(fs, "volume caps", PASS if broker.get("participation") else FAIL,
        f"participation {broker['participation']}" if broker.get("participation") else "no participation cap (--participation 0.025)")  # fmt: skip
    llm = label not in (None, "no-model")
    charged = bool(broker.get("charge_llm"))
    add(fs, "LLM cost as cost", PASS if (charged or not llm) else FAIL,
        "model spend charged to the account" if charged else ("no model: nothing to charge" if not llm else "model spend not charged (--charge-llm)"))  # fmt: skip
    days = int(metrics.get("n_days") or 0)
    if rolling is not None:
        windows = len(results.get("windows") or [])
        add(
            fs,
            "long horizons",
            PASS,
            f"rolling evaluation: {windows} window rows over {', '.join(results.get('span') or [])}",
        )
        universes = results.get("universes") or []
        add(
            fs,
            "broad universes",
            PASS if any(":" in u or u == "all" for u in universes) else FAIL,
            f"universes {', '.join(universes)}",
        )
    else:
        add(
            fs,
            "long horizons",
            PASS if days >= LONG_DAYS else FAIL,
            f"one window of {days} trading days" + ("" if days >= LONG_DAYS else " (fincon experiment --rolling 1y)"),
        )
        tickers = config.get("tickers") or []
        add(
            fs,
            "broad universes",
            FAIL,
            f"{len(tickers)} hand-picked ticker(s): {', '.join(tickers)} (--rolling with --universe RULE)",
        )
    return {
        "directory": str(root),
        "run": str(run) if run else None,
        "rows": rows,
        "passed": sum(r["verdict"] == PASS for r in rows),
        "failed": sum(r["verdict"] == FAIL for r in rows),
        "not_measured": sum(r["verdict"] == NONE for r in rows),
        "calibration": cal,
    }


def format_card(c: dict[str, Any]) -> str:
    lines = [
        f"report card: {c['directory']}  ({c['passed']} pass, {c['failed']} fail, {c['not_measured']} not measured)"
    ]
    group = None
    for r in c["rows"]:
        if r["checklist"] != group:
            group = r["checklist"]
            lines.append(f"\n{group}")
        lines.append(f"  {r['point']:<28} {r['verdict'].upper():<13} {r['measured']}")
    return "\n".join(lines)


def section_card(c: dict[str, Any], more: list[dict[str, Any]] | None = None) -> str:
    """The card (and ``more`` cards, one table each) as one HTML section (a failed row in red)."""
    from html import escape as esc

    colour = {PASS: "#1a7f37", FAIL: "#cf222e", NONE: "#6e7781"}

    def table(x: dict[str, Any]) -> str:
        body = "".join(
            f"<tr><td>{esc(r['checklist'])}</td><td>{esc(r['point'])}</td>"
            f'<td style="color:{colour[r["verdict"]]};font-weight:bold">{esc(r["verdict"])}</td>'
            f"<td>{esc(r['measured'])}</td></tr>"
            for r in x["rows"]
        )
        return (
            f"<h3>{esc(Path(x['directory']).name)}: {x['passed']} pass, {x['failed']} fail, "
            f"{x['not_measured']} not measured</h3>"
            "<table><thead><tr><th>checklist</th><th>point</th><th>verdict</th><th>measured</th></tr></thead>"
            f"<tbody>{body}</tbody></table>"
        )

    return (
        '<section id="card"><h2>Report card</h2><p class="note">What a reviewer checks of an LLM-trading result: '
        "the six-point protocol and FINSABER's checklist; a failed point is red, not a footnote.</p>"
        + "".join(table(x) for x in [c, *(more or [])])
        + "</section>"
    )


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x)
