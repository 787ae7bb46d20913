"""The team's calls: analysts concurrently, then the manager, each reused
when its inputs' hash is unchanged since its last call.

A reuse costs no model call and is counted (ledger event ``reuse``); an
analyst with nothing to read gets an empty neutral report without a call;
an unreachable model stops the run (``StopRun``) with the days so far saved.
May touch: the brain, the ledger, the team's counters and last-answer cache.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from fincon.agents.brains import Answer, ManagerTask, Reuse, RulesBrain, analyst_question
from fincon.agents.reports import AnalystReport
from fincon.agents.roles.base import RoleInputs
from fincon.llm.concurrency import run_concurrently
from fincon.llm.errors import LLMUnavailable
from fincon.strategies.base import StopRun


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def _of(answer: Answer) -> dict[str, str]:
    """What a reuse event and the reused answer (its record) add when the report read again was the rules'
    (a fallback): the card counts the days it stands in (fincon.report.card.rules_stood_in), explain names
    it; nothing otherwise, so a run without fallbacks writes what it always did."""
    return {"of": "fallback"} if answer.via == "fallback" else {}


class Calls:
    """Mixin of :class:`~fincon.agents.team.strategy.FinConTeam`: needs
    ``brain``, ``ledger``, ``roles``, ``protocol``, ``universe``,
    ``concurrency``, ``counts`` and ``_last`` on the team."""

    def _answer_all(self, inputs: list[RoleInputs], day: str) -> list[Answer]:
        out: list[Answer | None] = [None] * len(inputs)
        tasks, slots = [], []
        weighted = isinstance(self.brain, RulesBrain)  # the rules analyst reads the items' weights
        for n, inp in enumerate(inputs):
            digest = inp.digest(weighted)
            prev = self._last.get(inp.agent)
            if not inp.items:
                out[n] = Answer(AnalystReport(role=inp.role, ticker=inp.ticker), "empty")
            elif prev is not None and prev[0] == digest:
                out[n] = Answer(prev[1].report, "reuse", **_of(prev[1]))
                self.ledger.record_event("reuse", inp.agent, day, digest=digest[:16], **_of(prev[1]))
            else:
                role = next(r for r in self.roles if r.name == inp.role)
                tasks.append(lambda role=role, inp=inp: self.brain.answer(analyst_question(role, inp)))
                slots.append(n)
        try:
            got = run_concurrently(tasks, self.concurrency) if tasks else []
        except LLMUnavailable as exc:
            self.stopped = f"LLM unavailable on {day}: {exc}"
            self.ledger.record_event("unavailable_stop", self.protocol.agent, day, reason=str(exc))
            raise StopRun(self.stopped) from None
        for n, ans in zip(slots, got):
            out[n] = ans
            self._last[inputs[n].agent] = (inputs[n].digest(weighted), ans)
        for a in out:
            self.counts["model_calls"] += a.calls
            self.counts["reused"] += a.via == "reuse"
            self.counts["skipped"] += a.via == "empty"
            self.counts["fallbacks"] += a.via == "fallback"
        return out  # type: ignore[return-value]

    def _manage(self, task: ManagerTask, view, day: str):
        agent = self.protocol.agent
        digest = _digest(
            {
                "reports": {t: [r.model_dump() for r in rs] for t, rs in task.reports.items()},
                "reflections": task.reflections,
                "decisions": task.decisions,
                "stance": task.stance,
                "beliefs": task.beliefs,
                "position": {t: task.held(t) for t in task.position},
                "weights": dict(task.weights),
                "exposure": task.exposure,
                # what else the protocol's decision depends on (e.g. the debate: today's new calls)
                "protocol": self.protocol.digest(task, view) if hasattr(self.protocol, "digest") else None,
            }
        )
        prev = self._last.get(agent)
        if prev is not None and prev[0] == digest:
            self.ledger.record_event("reuse", agent, day, digest=digest[:16], **_of(prev[1]))
            self.counts["reused"] += 1

            return self.protocol.decide(Reuse(prev[1].report), task, view, self.universe)
        try:
            decision, ans, rec = self.protocol.decide(self.brain, task, view, self.universe)
        except LLMUnavailable as exc:
            self.stopped = f"LLM unavailable on {day}: {exc}"
            raise StopRun(self.stopped) from None
        self._last[agent] = (digest, ans)
        self.counts["model_calls"] += ans.calls
        self.counts["fallbacks"] += ans.via == "fallback"
        return decision, ans, rec

    @staticmethod
    def _agent_record(inp: RoleInputs, ans: Answer) -> dict[str, Any]:
        r = ans.report
        return {
            "agent": inp.agent,
            "via": ans.via,
            **({"of": ans.of} if ans.of else {}),
            "calls": ans.calls,
            "keys": [k[:16] for k in ans.keys],
            "direction": r.direction,
            "confidence": r.confidence,
            "insights": [i.model_dump() for i in r.insights],
            # what the agent read, enough for `fincon explain` to quote each cited item
            "inputs": [{"id": i.id, "date": i.date, "source": i.source, "text": i.text[:160]} for i in inp.items],
        }
