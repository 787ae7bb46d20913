"""The leakage audit (:mod:`fincon.llm.leakage`) as the table ``fincon eval leakage`` prints."""

from __future__ import annotations

from typing import Any, Mapping


def report(res: Mapping[str, Any]) -> str:
    """The audit as a table: per agent, the shares of prompts that give away firm, day and both."""
    head = (
        f"leakage audit: {res.get('directory', '')} ({'masked' if res.get('masked') else 'named'}; "
        f"{res['overall']['prompts']} prompts"
        + (
            f", distinct texts of {res['sent']} sent"
            if res.get("sent", res["overall"]["prompts"]) > res["overall"]["prompts"]
            else ""
        )
        + ")"
    )
    cols = f"{'agent':<18}{'prompts':>8}{'firm':>8}{'day =':>8}{'day ±5':>8}{'both':>8}  {'both, Wilson 95 %':<18}"
    lines = [head, cols, "-" * len(cols)]

    def pct(x: Mapping[str, Any]) -> str:
        return f"{x['share']:.0%}" if x["share"] is not None else "n/a"

    for name, b in [*res["by_agent"].items(), ("all", res["overall"])]:
        w = b["firm_and_day"]["wilson_95"]
        ci = f"{w[0]:.0%}-{w[1]:.0%}" if w else "n/a"
        lines.append(
            f"{name:<18}{b['prompts']:>8}{pct(b['firm']):>8}{pct(b['day_exact']):>8}"
            f"{pct(b['day_within_5_sessions']):>8}{pct(b['firm_and_day']):>8}  {ci:<18}"
        )
    d = res["overall"]["firm_and_day_days"]  # the bound blind needs too: a day's prompts give it away together
    ci = f"{d['wilson_95'][0]:.0%}-{d['wilson_95'][1]:.0%}" if d["wilson_95"] else "n/a"
    lines.append(f"{'all, by day':<18}{str(d['n']) + ' d':>8}{'':>24}{pct(d):>8}  {ci:<18}")
    lines.append(f"\nverdict: {res['verdict']}")
    if res.get("together"):
        lines.append(together(res["together"]))
    return "\n".join(lines)


def together(t: Mapping[str, Any]) -> str:
    """The log reader's line (fincon.agents.replayed_sessions): stretches of sessions read together."""
    said = stretches(t["lengths"])
    most = max(t["windows"].values())
    return (
        f"read together (the run's call log, not one prompt; beside the verdict, not in it): stretches of "
        f"consecutive sessions whose firm and window alone fit best, among up to {most:,} windows: {said}"
    )


def stretches(lengths: Mapping[str, Mapping[str, int]]) -> str:
    """Per stretch length, how many of the run's stretches name firm and window ("1 session: 2 of 27, ...")."""
    ordered = sorted(lengths.items(), key=lambda nx: int(nx[0]))  # a run's metrics.json keeps them as text, sorted
    return ", ".join(f"{n} session{'s' * (n != '1')}: {x['k']} of {x['n']}" for n, x in ordered if x["n"])
