"""``single``: one agent's view is the decision (``--strategy finmem``).

The FinCon paper's single-agent comparison (FinMem): the same sources and
model as the team, one agent. The trader role
(:mod:`fincon.agents.roles.trader`) reads every source and its own
reflections and answers bullish, bearish or neutral with a confidence; this
protocol turns that view into the day's decision with no further model call
(no manager, no optimizer's views): bullish is long the whole book, bearish
short. A portfolio splits the book equally over the tickers with a
bullish or bearish view. What a FinMem agent writes as "buy / sell / hold" is here the
trader's direction: the one call of the day decides. A view on the side
already held keeps the position as it is (no re-sizing trade every day), and
neutral keeps it too: FinMem's hold.

The trader reflects every day (``reflects_daily``: the team writes a
reflection on every settled decision, not only on losses) and reads its
recent reflections in its prompt (``analyst_context``), FinMem's daily
self-reflection.
"""

from __future__ import annotations

from typing import Any

from fincon.agents.brains import Answer, ManagerTask
from fincon.agents.reports import ManagerReport
from fincon.strategies.base import Decision

ACTION = {"bullish": "buy", "bearish": "sell", "neutral": "hold"}
SIDE = {"buy": 1.0, "sell": -1.0}
#: reflections the trader reads in its prompt (the most recent)
READ_REFLECTIONS = 3


class SingleAgent:
    agent = "trader"
    sampling = None
    reflects_daily = True

    def __init__(self, lookback: int = 20):
        self.lookback = lookback

    def analyst_context(self, team, view) -> str:
        """The trader's recent reflections, for its prompt (none yet: 'none')."""
        refl = team.reflections.recent(view.date, READ_REFLECTIONS, ["reflection"])
        return " | ".join(e.text for e in refl) or "none yet"

    def decide(self, brain, task: ManagerTask, view, universe: tuple[str, ...]) -> tuple[Decision, Answer, dict]:
        views = {t: rs[0] for t, rs in task.reports.items() if rs}
        actions = {t: ACTION[r.direction] for t, r in views.items()}
        held = {t: task.held(t) for t in actions}
        # the side already held: keep the position (no re-sizing trade on every same-side day)
        actions = {t: "hold" if SIDE.get(a, 0.0) * held[t] > 0 else a for t, a in actions.items()}
        relied = [c for r in views.values() for c in r.cited_ids()]
        rationale = "; ".join(f"{t}: the trader is {r.direction} ({r.confidence:.2f})" for t, r in views.items())
        report = ManagerReport(actions=actions, size=1.0, rationale=rationale[:600], relied_on=relied)
        if not task.portfolio:
            t = task.tickers[0]
            decision = Decision.from_action(t, actions.get(t, "hold"), 1.0, rationale=rationale, evidence=tuple(relied))
            flat = {u: 0.0 for u in universe if u != t}
            if flat:
                decision = Decision({**decision.weights, **flat}, rationale, tuple(relied), decision.actions)
        else:
            sides = {t: SIDE.get(ACTION[views[t].direction], 0.0) for t in views}
            live = [t for t, s in sides.items() if s != 0.0]
            w = {t: sides[t] / len(live) for t in live}
            if all(actions[t] == "hold" for t in actions):
                w = {}  # every view on the side already held, or neutral: keep the book as it is
            else:  # neutral views keep their position; tickers outside the pool are flat
                w.update({u: 0.0 for u in universe if u not in views})
            decision = Decision(weights=w, rationale=rationale, evidence=tuple(relied), actions=actions)
        return decision, Answer(report, "single"), report.model_dump()

    def summary(self) -> dict[str, Any]:
        return {}
