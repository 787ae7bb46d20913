"""A day of the agent team as text: what it saw, said and did, with the
evidence each claim cites.

The input is one line of a run's ``decisions.jsonl`` whose ``record`` the
team wrote (:mod:`fincon.agents.team.strategy`: each analyst's inputs, direction and
insights with their citations, the manager's decision and the evidence it
relied on, the model calls, the settlement of the previous day, the risk
alert). ``fincon explain`` prints it and the HTML report shows it when a day
is clicked, so it lives here, beside the team that writes the record, and
reads nothing but the record (no model, memory store or event corpus).
"""

from __future__ import annotations

import textwrap
from typing import Any

WIDTH = 100


def _quote(ev: dict[str, Any] | None, cid: str) -> str:
    if ev is None:
        return f"[{cid}] (not among the agent's inputs)"
    words = " ".join(str(ev.get("text", "")).split())
    if len(words) > 70:
        words = words[:67].rstrip() + "..."
    return f"[{cid}] {ev.get('source', '?')} {ev.get('date', '?')}: {words}"


def _relied(cid: str, read: dict[str, dict[str, Any]]) -> list[str]:
    """The lines of one item the manager relied on: the item, or, when agents read different items under
    the id, each with the agent that read it (the last agent's was shown for all: JNJ's "flat" as the
    reason of an MSFT buy, on 26 of 41 days of a portfolio, found in review)."""
    items = {(str(x.get("source")), str(x.get("date")), str(x.get("text"))): x for x in read.values()}
    if len(items) <= 1:
        return ["    " + _quote(next(iter(read.values()), None), cid)]
    head = f"    [{cid}] the id of {len(items)} different items (it names no ticker); each as its agent read it:"
    return [head] + [f"      {agent}: " + _quote(x, cid) for agent, x in sorted(read.items())]


def _wrap(text: str, indent: str) -> str:
    rest = " " * len(indent)
    return textwrap.fill(" ".join(str(text).split()), WIDTH, initial_indent=indent, subsequent_indent=rest)


#: what the settled P&L is, by the run's fill (fincon.agents.team.learning): at close fills the positions'
#: move close to close; at next-open fills the book's own value, after what the day's fills cost
SETTLED = {"close": "the positions' move, before costs", "next_open": "the book's value, after costs"}


def format_day(entry: dict[str, Any], fill: str | None = None) -> str:
    """The day as text; ``fill``: the run's fill mode (``broker.fill``), which says what its settled P&L is."""
    rec = entry["record"]
    out = [
        f"{entry['date']}  brain={rec.get('brain')}  protocol={rec.get('protocol')}  "
        f"pool={', '.join(rec.get('pool', []))}"
    ]
    #: id -> agent -> the item that agent read under the id (a portfolio's indicator ids name no ticker:
    #: MSFT's "momentum up" and JNJ's "momentum flat" are both ind-momentum-20d)
    evidence: dict[str, dict[str, dict[str, Any]]] = {}
    sel = rec.get("selection")
    if sel:
        out.append(f"\nstock selection: {sel.get('direction', '')}")
        for ins in sel.get("insights", []):
            out.append(_wrap(ins.get("text", ""), "  - "))
    out.append("\nWHAT THE TEAM SAW AND SAID")
    for a in rec.get("agents", []):
        inputs = {x["id"]: x for x in a.get("inputs", []) if isinstance(x, dict)}
        for cid, item in inputs.items():
            evidence.setdefault(cid, {})[str(a.get("agent"))] = item
        via = a.get("via")
        calls = a.get("calls", 0)
        how = {
            "reuse": "reused yesterday's report"
            + (
                ", the rules brain's (the model's answer was invalid twice; inputs unchanged, no call)"
                if a.get("of") == "fallback"
                else " (inputs unchanged, no call)"
            ),
            "empty": "nothing to read",
            "fallback": f"model answer invalid twice, rules brain used ({calls} calls)",
            "llm": f"model, {calls} call{'s' if calls != 1 else ''}",
            "rules": "rules brain",
        }.get(via, via)
        out.append(f"\n{a['agent']}: {a.get('direction')} ({a.get('confidence', 0):.2f})  [{how}]")
        if inputs:
            out.append(f"  read {len(inputs)} item(s): {', '.join(inputs)}")
        for ins in a.get("insights", []):
            out.append(_wrap(ins.get("text", ""), "  - "))
            for c in ins.get("citations", []):
                out.append("      " + _quote(inputs.get(c["id"]), c["id"]))
    m = rec.get("manager", {})
    out.append("\nWHAT THE TEAM DID")
    acts = entry.get("actions") or m.get("actions") or {}
    weights = entry.get("weights")
    out.append(
        f"actions: {', '.join(f'{t} {a}' for t, a in sorted(acts.items())) or 'none'}"
        + (f"  size {m['size']:.2f}" if isinstance(m.get("size"), (int, float)) and len(acts) == 1 else "")
    )
    if weights:
        out.append("target weights: " + ", ".join(f"{t} {w:+.3f}" for t, w in sorted(weights.items())))
    elif weights is not None:
        out.append("target weights: none (positions kept)")
    pos = entry.get("position")
    if isinstance(pos, dict) and pos:
        # the decision (buy / sell / hold) apart from the book it leaves (long / short / flat, size)
        out.append(
            "position it leaves: "
            + ", ".join(
                f"{t} {p['side']}" + (f" {p['size']:.2f}" if p.get("side") != "flat" else "")
                for t, p in sorted(pos.items())
                if isinstance(p, dict)
            )
        )
    steps = m.get("steps")
    if isinstance(steps, dict) and steps:  # a protocol of several questions (scm): which one fell back, not the day
        fell = [k for k, v in sorted(steps.items()) if v == "fallback"]
        how = "steps " + " | ".join(f"{k}: {v}" for k, v in sorted(steps.items())) + ";"
        if fell:
            how = f"{how} model answer invalid twice, rules used for {', '.join(fell)};"
    else:
        how = "model answer invalid twice, rules brain used;" if m.get("via") == "fallback" else f"{m.get('via')},"
    for d in m.get("debate") or []:  # the call chunks a debate cited: as its roles quoted them
        for part in (d.get("final"), d.get("report"), *(d.get("views") or [])):
            for ins in (part or {}).get("insights", []) if isinstance(part, dict) else []:
                for c in ins.get("citations", []):
                    evidence.setdefault(c["id"], {}).setdefault("debate", {**c, "text": ins.get("text", "")})
    out.append(f"manager ({how} {m.get('calls', 0)} call(s), {m.get('reflections_read', 0)} reflection(s) read):")
    out.append(_wrap(m.get("rationale") or entry.get("rationale", ""), "  "))
    relied = m.get("relied_on") or entry.get("evidence") or []
    if relied:
        basis = rec.get("evidence_basis")
        out.append(f"  relied on ({basis}):" if basis else "  relied on:")
        for cid in relied:
            out += _relied(cid, evidence.get(cid, {}))
    for key in ("stance", "beliefs"):
        if m.get(key):
            out.append(_wrap(f"{key}: {m[key]}", "  "))
    calls = rec.get("calls", {})
    if calls:
        out.append(
            f"\nmodel calls: {calls.get('made', 0)} made, {calls.get('reused', 0)} reports reused, "
            f"{calls.get('skipped', 0)} agents had nothing to read, {calls.get('fallbacks', 0)} fallbacks"
        )
    st = rec.get("settled")
    if st:
        out.append(
            f"settled {st['day']}: P&L {st['pnl']:+.2%}"
            + (f" ({SETTLED[fill]})" if fill in SETTLED else "")
            + (f"; rewarded {len(st.get('rewarded', []))} memories (+5)" if st.get("rewarded") else "")
        )
    if st and st.get("reflection"):
        out.append(_wrap(f"reflection written: {st['reflection']}", "  "))
    alert = rec.get("risk")
    if alert:
        rho = alert.get("rho")
        level = f" (CVaR of the PnL so far {rho:.3f}%)" if isinstance(rho, (int, float)) else ""
        out.append(f"risk: {'ALERT ' + alert.get('reason', '') if alert.get('alert') else 'no alert'}{level}")
        if alert.get("stance"):
            out.append(_wrap(f"stance given to the manager: {alert['stance']}", "  "))
    return "\n".join(out)
