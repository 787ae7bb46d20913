"""The report's LLM usage section: calls, tokens and cost per agent, and the
audit of re-asks, fallbacks and failures, from each team run's records.

Reads only the runs handed in; returns HTML text.
"""

from __future__ import annotations

from collections import Counter

from fincon.report.load import ReportData, Run
from fincon.report.parts import esc, table

VIA = ("llm", "rules", "reuse", "fallback", "empty")
USAGE = ("calls", "prompt_tokens", "completion_tokens", "total_tokens", "cost_usd", "reasks", "fallbacks", "failures")


def _usage_by_agent(run: Run) -> tuple[list[str], dict[str, dict[str, float]]]:
    agents: dict[str, dict[str, float]] = {}

    def row(name: str) -> dict[str, float]:
        return agents.setdefault(name, {k: 0.0 for k in (*USAGE, *VIA)})

    for u in run.usage:
        a = row(str(u.get("agent", "?")))
        for k in USAGE:
            try:
                a[k] += float(u.get(k) or 0)
            except ValueError:
                pass
    for d in run.decisions:
        rec = d.get("record")
        if not isinstance(rec, dict):
            continue
        parts = list(rec.get("agents") or [])
        for key in ("selection", "manager"):
            if isinstance(rec.get(key), dict) and rec[key].get("via"):
                parts.append({"agent": rec[key].get("agent", key), "via": rec[key]["via"]})
        for p in parts:
            if isinstance(p, dict) and p.get("via") in VIA:
                row(str(p.get("agent", "?")))[p["via"]] += 1
    names = sorted(agents, key=lambda n: (n == "manager", n))
    return names, agents


def section_llm(data: ReportData) -> str:
    blocks = []
    for r in data.runs:
        if not r.usage and not r.team:
            continue
        names, agents = _usage_by_agent(r)
        if not names:
            continue
        head = ["agent"]
        if r.usage:
            head += ["model calls", "prompt tokens", "completion tokens", "cost $", "re-asks", "fallbacks", "failures"]
        head += ["reports: model", "rules", "reused", "fallback", "empty"]

        def cells(a: dict[str, float]) -> list[str]:
            out = []
            if r.usage:
                out += [f"{int(a[k]):,d}" for k in ("calls", "prompt_tokens", "completion_tokens")]
                out += [f"{a['cost_usd']:.4f}"] + [f"{int(a[k]):,d}" for k in ("reasks", "fallbacks", "failures")]
            return out + [f"{int(a[k]):,d}" for k in VIA]

        total = {k: sum(agents[n][k] for n in names) for k in (*USAGE, *VIA)}
        rows = [[n, *cells(agents[n])] for n in names] + [["total", *cells(total)]]
        s = r.summary.get("strategy_summary") or {}
        days = sum(1 for d in r.decisions if isinstance(d.get("record"), dict))
        made = sum(
            int(((d.get("record") or {}).get("calls") or {}).get("made", 0) or 0)
            for d in r.decisions
            if isinstance(d.get("record"), dict)
        )
        line = [f"{days} decision day(s)"]
        if r.team:
            line.append(f"{made} model call(s) made by the team" + (f" ({made / days:.2f} a day)" if days else ""))
            if r.runtime:  # a replay's calls are all the cache's: "made" read as if asked
                live, hits = (sum(int(float(x.get(k) or 0)) for x in r.runtime) for k in ("live_calls", "cache_hits"))
                line.append(f"{live} asked live, {hits} answered from the call cache")
        if s.get("team_brain"):
            line.append(f"brain {s['team_brain']}")
        if s.get("llm_structured_mode"):
            line.append(f"structured output {s['llm_structured_mode']}")
        if r.usage:
            line.append(f"{int(total['total_tokens']):,d} tokens, ${total['cost_usd']:.4f}")
        else:
            line.append("no llm_usage.csv: no model was asked")
        block = [
            f"<h3>{esc(r.label)}</h3>",
            f'<p class="note">{esc("; ".join(line))}</p>',
            table(head, rows, row_classes=[""] * len(names) + ["total"]),
        ]
        if r.audit:
            audit_rows = []
            for e in r.audit:
                detail = e.get("reason") or e.get("error") or "; ".join(map(str, e.get("errors") or [])) or ""
                detail = " ".join(str(detail).split())
                audit_rows.append(
                    [
                        e.get("day", ""),
                        e.get("agent", ""),
                        e.get("event", ""),
                        detail[:400] + ("..." if len(detail) > 400 else ""),
                    ]
                )
            kinds = Counter(str(e.get("event", "")) for e in r.audit)  # 254 reuses read "(re-asks, fallbacks, ...)"
            said = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items(), key=lambda x: (-x[1], x[0])))
            block.append(
                f"<details><summary>llm_audit.jsonl: {len(r.audit)} event(s) ({esc(said)})</summary>"
                f"{table(['day', 'agent', 'event', 'detail'], audit_rows, text_cols=[3])}</details>"
            )
        blocks.append("\n".join(block))
    if not blocks:
        return ""
    return "\n".join(
        [
            '<section id="llm"><h2>LLM usage</h2>',
            '<p class="note">Per agent: model calls, tokens and cost from <code>llm_usage.csv</code> '
            "(cost priced as if every call were live; 0 for local models), re-asks, fallbacks and failures "
            "of invalid answers; then, from <code>decisions.jsonl</code>, how many of its daily reports "
            "came from the model, from the rules brain, were reused because the inputs had not changed "
            "(no call), fell back to the rules brain after an invalid answer, or had nothing to read.</p>",
            *blocks,
            "</section>",
        ]
    )
