"""The beliefs in force for a run (learned ones, a training episode's carried reflections), and
learning from yesterday: the P&L of the last decision, the manager's reflection on it, the manager's
own procedural memory of decisions and outcomes, and the access reward for the memories a
profitable day relied on.

``remember`` is called at the end of a day with the decision; ``settle``
at the start of the next day, once the closes that price the decision are
visible (point in time: nothing here reads a price after the simulated day).
May touch: the analysts' memories (``reward``), the manager's episodic
memory (reflections) and procedural memory (decisions), the team's
counters; the model only through :func:`.reflection.reflect`.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fincon.agents.beliefs import RISK, Beliefs, Reflection, check_learned_for, check_window, read_params
from fincon.agents.brains import Answer
from fincon.agents.roles.base import RoleInputs
from fincon.agents.team.reflection import Outcome, reflect
from fincon.errors import ConfigError
from fincon.memory.procedural import MemoryEntry
from fincon.strategies.base import Decision, RunContext

log = logging.getLogger(__name__)

#: the memory source of the manager's settled decisions (its procedural memory)
DECISION = "decision"
#: reflections carried from one training episode to the next (the most recent)
CARRIED = 20


@dataclass
class _Previous:
    """What yesterday's decision needs to be settled today."""

    day: str
    weights: dict[str, float]
    closes: dict[str, float]
    relied: dict[str, list[str]]  # memory id -> agents ("role/ticker") whose memory holds it
    summary: str
    rationale: str = ""
    #: the manager's past-decision memories it was shown for this decision (rewarded on a profit)
    recalled: tuple[str, ...] = ()
    #: the book's value at the decision (before its orders): what the day after it is measured from
    value: float = 0.0


class Learning:
    """Mixin of :class:`~fincon.agents.team.strategy.FinConTeam`: needs
    ``_mems``, ``reflections``, ``written``, ``counts``, ``universe``,
    ``params`` and ``_prev`` on the team."""

    _prev: _Previous | None

    def _load_beliefs(self, ctx: RunContext) -> None:
        """Beliefs in force for the run: learned ones (``beliefs``) or the
        untrained defaults; in training, this episode's exploration noise on
        the rules weights. Learned reflections go into episodic memory, dated
        when they were written (all before a test window)."""

        p = self.params
        if (p.episode or p.carried_reflections) and not ctx.episode:
            # --param fincon.episode=1 skipped the lookahead check of beliefs learned on the run's own
            # window, and carried reflections written on later days entered from its first day
            key = "episode" if p.episode else "carried_reflections"
            raise ConfigError(
                f"fincon.{key} is set by fincon train for its own episodes; a backtest reads learned beliefs "
                "with --beliefs (checked against its window)"
            )
        self._fill = ctx.fill  # how yesterday's decision is settled (_settle)
        base = Beliefs.initial({r.name: r.weight for r in self.roles})
        learned, read = read_params(p.beliefs)
        self.beliefs_sha256 = hashlib.sha256(read).hexdigest() if read is not None else None  # for the manifest
        self.beliefs_warning: str | None = None
        self.beliefs_partial = None
        if learned is not None:
            partial = check_learned_for(learned, [r.name for r in self.roles], list(ctx.tickers))
            if partial and not p.episode:  # an episode reads the version its own training is at
                self.beliefs_partial = partial
                log.warning(partial)
        if learned is not None and ctx.start is not None and not p.episode:  # an episode reads its own window's
            self.beliefs_warning = check_window(learned, str(ctx.start), p.allow_overlap)
            if self.beliefs_warning:
                log.warning(self.beliefs_warning)
        if learned is not None:
            base = base.model_copy(
                update={
                    "version": learned.version,
                    "reflections": learned.reflections,
                    "perspectives": {**base.perspectives, **learned.perspectives},
                }
            )
        weights = base.weights()
        if p.explore > 0:
            rng = np.random.default_rng([p.explore_seed, 20240707])
            names = sorted(r.name for r in self.roles)
            z = rng.standard_normal(len(names))
            weights.update({n: round(weights[n] * float(np.exp(p.explore * x)), 6) for n, x in zip(names, z)})
        self.beliefs = base
        self.role_weights = {r.name: weights.get(r.name, r.weight) for r in self.roles}
        self.risk_exposure = min(1.0, weights.get(RISK, 0.5))
        start = pd.Timestamp(ctx.start or "1900-01-01")
        # _recall_earlier: as the model wrote them; a training's carried one is "[earlier episode, DAY] text",
        # which the mask read as an item's line when the text had a colon and then never found whole (review)
        self._earlier = [_as_written(r.text) for r in base.reflections if pd.Timestamp(r.day) < start]
        for r in base.reflections:
            if pd.Timestamp(r.day) < start:
                self.reflections.add(pd.Timestamp(r.day), "reflection", r.text, {"learned": True})
        self.written: list[Reflection] = []  # what reflections.json keeps: carried, then new
        if p.carried_reflections:
            # training: the previous episode's reflections, dated the day before this episode
            # starts so the manager reads them from its first decision, and carried on (capped)
            raw = json.loads(Path(p.carried_reflections).read_text(encoding="utf-8"))
            before = start - pd.Timedelta(days=1)
            for r in [Reflection(**x) for x in raw][-CARRIED:]:
                text = r.text if r.text.startswith("[earlier episode") else f"[earlier episode, {r.day}] {r.text}"
                self.reflections.add(before, "reflection", text, {"carried": True, "day": r.day})
                self.written.append(Reflection(day=r.day, text=text))
                self._earlier.append(_as_written(r.text))
        self._carried_count = len(self.written)

    def _recall_earlier(self, day: str | None) -> None:
        """Under --anonymize, the reflections a model wrote before this run (learned, carried from the last
        episode) are reworded in its prompts as its own answers are: a new episode's prompts showed the last
        one's whole, where that episode had shown them as key words (found in review 2026-12-02)."""
        mask = getattr(self.client, "masker", None)
        if mask is not None and self._earlier:
            mask.recalled(self._earlier, day)

    def _remember(self, view, day: str, decision: Decision, inputs: list[RoleInputs], answers: list[Answer]) -> None:
        held = {t: float(w) for t, w in view.portfolio.weights.items()}
        held.update({t: float(w) for t, w in decision.weights.items()})
        owners: dict[str, list[str]] = {}
        for inp in inputs:
            if inp.agent in self._mems:
                for it in inp.items:
                    owners.setdefault(it.id, []).append(inp.agent)
        relied = {i: owners[i] for i in decision.evidence if i in owners}
        closes = {t: view.price(t) for t in self.universe}
        acts = ", ".join(f"{t} {a}" for t, a in sorted(decision.actions.items()))
        recalled = tuple(getattr(self, "_recalled", ()))
        value = float(getattr(view.portfolio, "value", 0.0) or 0.0)
        self._prev = _Previous(day, held, closes, relied, acts, decision.rationale or "", recalled, value)

    def _settle(self, view, day: str, risk=None) -> dict[str, Any] | None:
        """Yesterday's P&L -> a reflection on a losing or CVaR-alert day; a
        profitable day rewards the memories relied on."""
        prev, self._prev = self._prev, None
        if prev is None:
            return None
        # with next-open fills, the book's own day: the old position held overnight and the new one from
        # the open (its target weights times the close-to-close return graded 9 of 59 days with the wrong
        # sign); with close fills the book held the targets from the close: their return, before costs
        now = float(getattr(view.portfolio, "value", 0.0) or 0.0)
        pnl = 0.0
        if getattr(self, "_fill", "close") == "next_open" and prev.value > 0 and np.isfinite(now):
            pnl = now / prev.value - 1.0
        else:
            for t, w in prev.weights.items():
                if w and np.isfinite(prev.closes.get(t, np.nan)) and prev.closes[t] > 0:
                    pnl += w * (view.price(t) / prev.closes[t] - 1.0)
        rewarded: list[str] = []
        if pnl > 0:
            by_agent: dict[str, list[str]] = {}
            for mid, agents in prev.relied.items():
                for a in agents:
                    by_agent.setdefault(a, []).append(mid)
            for agent, ids in sorted(by_agent.items()):
                self._mems[agent].reward(ids)
                rewarded += ids
            self.counts["rewarded"] += len(rewarded)
        gross = sum(abs(w) for w in prev.weights.values())
        alert = risk is not None and risk.alert
        outcome = Outcome(prev.day, day, prev.summary, prev.rationale, gross, pnl, risk.reason if alert else "")
        out = {"day": prev.day, "pnl": round(pnl, 6), "rewarded": sorted(rewarded)}
        decisions = getattr(self, "decisions", None)
        if decisions is not None:
            # the manager's procedural memory: the decision with its outcome, ranked like the
            # analysts' memories (A.13); recalled decisions behind a profitable day get the access bonus
            decisions.add(
                [
                    MemoryEntry(
                        id=f"decision-{prev.day}",
                        ticker="",
                        source=DECISION,
                        day=view.date,
                        text=outcome.summary(),
                        metadata={"pnl": round(pnl, 6), "decision_day": prev.day},
                    )
                ]
            )
            if pnl > 0 and prev.recalled:
                decisions.mark_critical(list(prev.recalled))
                out["rewarded_decisions"] = list(prev.recalled)
        # only losing or alert days become reflections (the paper's self-
        # reflection on an alert): they are what the manager must learn from,
        # and a reflection every day would change the manager's input daily
        # and cost it a model call every day
        daily = getattr(self.protocol, "reflects_daily", False)  # a single trader reflects on every day (FinMem)
        if self.params.reflections and (pnl < 0 or alert or daily):
            llm = self.params.brain == "llm"
            text, ans = reflect(self.brain, outcome, relied_kinds(prev.relied), agent=self.protocol.agent, llm=llm)
            if llm:
                self.counts["model_calls"] += ans.calls
                self.counts["fallbacks"] += ans.via == "fallback"
                self.counts["reflections_model"] = self.counts.get("reflections_model", 0) + (ans.via == "llm")
                self.counts["reflections_fallback"] = self.counts.get("reflections_fallback", 0) + (
                    ans.via == "fallback"
                )
                out["reflection_via"] = ans.via
                out["reflection_calls"] = ans.calls
                out["reflection_keys"] = [k[:16] for k in ans.keys]
            self.reflections.add(view.date, "reflection", text, {"pnl": round(pnl, 6), "decision_day": prev.day})
            self.written.append(Reflection(day=day, text=text))
            out["reflection"] = text
        return out


def risk_stance(risk) -> str:
    """The manager's risk stance for today (a prompt section; the rules
    manager cuts its exposure to the ``risk`` belief weight)."""
    if not risk.alert:
        return ""
    return (
        f"RISK ALERT ({risk.reason}). Be risk-averse today: cut or avoid exposure unless the evidence is "
        f"strong and consistent; prefer a smaller size."
    )


def relied_kinds(relied: dict[str, list[str]]) -> str:
    """The kinds of information a decision relied on ("10-q, news"), not the
    memory ids: the reflection is read by the manager on later days, and a
    1.5B manager copied ids it found there into its own answer as citations
    (re-asked on every day after the first loss on real MSFT)."""
    return ", ".join(sorted({owner.split("/")[0] for owners in relied.values() for owner in owners}))


def _as_written(text: str) -> str:
    """A reflection's text without the "[earlier episode, DAY] " a training's carry put before it."""
    return _EARLIER.sub("", text, count=1)


_EARLIER = re.compile(r"^\[earlier episode, [^\]\n]*\] ")
