"""``scm`` prompt building: the four role templates (``scm.<role>.txt``
beside this module, ``[system]`` / ``[user]``) and the values they are
filled with.

Everything a model reads in the protocol is assembled here, from the day's
context only (point in time; no answer key exists for a trading day). No
model call, no check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

import numpy as np

from fincon.agents.policies import Policies
from fincon.agents.protocols.scm_checks import Day
from fincon.agents.roles.base import load_template

HERE = Path(__file__).parent
TEMPLATES = {role: HERE / f"scm.{role}.txt" for role in ("strategist", "critic", "fix", "verify", "moderator")}
#: characters of each analyst insight shown to the Strategist
REPORT_CHARS = 120


def render(role: str, values: Mapping[str, str]) -> list[dict[str, str]]:
    """The chat messages of ``role``'s template filled with ``values``."""
    system, user = load_template(str(TEMPLATES[role]))
    return [{"role": "system", "content": system.format(**values)}, {"role": "user", "content": user.format(**values)}]


def fmt_policies(p: Policies) -> str:
    return f"largest |weight| of one stock {p.max_position:.2f}, largest gross exposure {p.max_gross:.2f}" + (
        "; no new trade on a day without evidence" if p.require_evidence else ""
    )


def prompt_values(day: Day, policies: Policies) -> dict[str, str]:
    """The values every scm template is filled with: the analysts' reports (with
    short citation labels), the evidence ids with their dates, recent return
    quantiles, the position, the policies, reflections, stance and beliefs."""
    task, lab = day.task, day.labels
    lines = []
    for t in task.tickers:
        for r in task.reports.get(t, ()):
            if not r.insights:
                continue
            body = " ".join(
                f"{i.text[:REPORT_CHARS]} [{', '.join(lab.get(c.id, c.id) for c in i.citations)}]"
                for i in r.insights[: 1 if task.portfolio else 2]
            )
            lines.append(f"- {t} {r.role}: {r.direction} (confidence {r.confidence:.2f}). {body}")
    evidence = "; ".join(f"{lab.get(c.id, c.id)} = {c.source} {c.date}" for c in day.citations.values())
    rets = []
    for j, t in enumerate(task.tickers):
        r = day.returns[:, j] if len(day.returns) else np.zeros(1)
        rets.append(
            f"{t}: mean {100 * r.mean():+.2f}%, P5 {100 * np.quantile(r, 0.05):+.2f}%, "
            f"P95 {100 * np.quantile(r, 0.95):+.2f}%"
        )
    return {
        "date": task.day,
        "tickers": ", ".join(task.tickers),
        "policies": fmt_policies(policies),
        "position": ", ".join(f"{t} {day.current.get(t, 0.0):+.2f}" for t in task.tickers),
        "reports": "\n".join(lines) or "(no reports)",
        "evidence": evidence or "(none)",
        "returns": "\n".join(rets),
        "lookback": str(len(day.returns)),
        "reflections": "\n".join(f"- {r}" for r in task.reflections) or "(none yet)",
        "stance": task.stance or "(none)",
        "beliefs": task.beliefs or "(none yet)",
        "evidence_texts": evidence_texts(day),
    }


def evidence_texts(day: Day, chars: int = 200) -> str:
    """The retrieved evidence the verifier answers from: every id cited in
    today's reports, with its source, date and what the analysts said citing it."""
    said: dict[str, list[str]] = {}
    for t in day.tickers:
        for r in day.task.reports.get(t, ()):
            for i in r.insights:
                for c in i.citations:
                    said.setdefault(c.id, []).append(f"{t} {r.role}: {i.text[:chars]}")
    lab = day.labels
    return (
        "\n".join(
            f"- {lab.get(c.id, c.id)} = {c.source} {c.date}: " + " | ".join(dict.fromkeys(said.get(c.id, [])))
            for c in day.citations.values()
        )
        or "(none)"
    )
