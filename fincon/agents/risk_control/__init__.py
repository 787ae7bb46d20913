"""The risk-control agent: CVRF's conceptual verbal reinforcement (FinCon
3.1.2, Algorithm 1), one belief update between two training episodes.

Three steps, each with the two brains of the team:

1. **summarise** each episode's sustained profitable and losing stretches
   into conceptual insights, one perspective each (``summarise.txt``);
2. **compare** the better and the worse episode's insights into the
   meta-prompt, why the better one did better (``compare.txt``);
3. **update** the beliefs from the meta-prompt with the learning rate
   ``1 - tau`` (``update.txt``): the more the two episodes agreed, the
   smaller the edit. Only the perspectives the meta-prompt names change (at
   most :data:`MAX_FOCUS`), so the update reaches only the agents of those
   perspectives.

The rules brain does the same in code: its "insights" are the stretches
with the views behind them, its meta-prompt is the per-source attribution
of the better episode, and its update moves the rules weights
(:func:`fincon.risk.cvrf.rules_step`). The weights move with the same
attribution and tau under the llm brain too (they drive its fallback).

Belief generation runs at temperature 0 (the paper, A.7.2). An invalid
model answer is re-asked once, then replaced by the rules step, counted as
a fallback in the ledger.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field, create_model

from fincon.agents.beliefs import RISK, Beliefs, touched
from fincon.agents.roles.base import load_template
from fincon.llm.errors import LLMInvalidAnswer
from fincon.llm.types import SamplingParams
from fincon.memory.distill import uncut, without_fragment
from fincon.risk.cvrf import RULES_LR, Trajectory, attribution, rules_step, stretches, text_edit_size

HERE = Path(__file__).parent


#: perspectives one belief update may edit: a focused step (the one or two
#: views that explain the better episode) that, like the paper's per-agent
#: propagation, reaches only those analysts. An edit of every perspective would
#: change every analyst's prompt, so the next episode re-asks them all (bench/train.py:
#: 3.33 live calls per day in such an episode against 1.00 when only the manager explores)
MAX_FOCUS = 2
#: how the update prompt shows a perspective without a belief text yet
NO_BELIEF = "(none yet)"
#: the longest insight, meta-prompt and belief text a model may write (schema caps); a
#: belief has room for two sentences: at 240 characters the 1.5B's second sentence, the one
#: that named the source, ran into the cap and was dropped as a fragment
TEXT_CAP, META_CAP, BELIEF_CAP = 240, 400, 360


def _models(perspectives: tuple[str, ...]):
    P = Literal[perspectives]  # type: ignore[valid-type]
    cfg = ConfigDict(extra="forbid")
    concept = create_model(
        "ConceptInsight", __config__=cfg, perspective=(P, ...), text=(str, Field(min_length=1, max_length=TEXT_CAP))
    )
    insights = create_model(
        "EpisodeInsights", __config__=cfg, insights=(list[concept], Field(min_length=1, max_length=6))
    )  # type: ignore[valid-type]
    meta = create_model(
        "MetaPrompt",
        __config__=cfg,
        text=(str, Field(min_length=1, max_length=META_CAP)),
        perspectives=(list[P], Field(min_length=1, max_length=min(MAX_FOCUS, len(perspectives)))),
    )  # type: ignore[valid-type]
    edit = create_model(
        "BeliefEdit", __config__=cfg, perspective=(P, ...), text=(str, Field(min_length=1, max_length=BELIEF_CAP))
    )
    # as many edits as the meta-prompt may name: six 300-char edits overran the
    # 400-token answer cap in a live 1.5B training (cut-off JSON twice, a fallback)
    edits = create_model(
        "BeliefEdits", __config__=cfg, updates=(list[edit], Field(max_length=min(MAX_FOCUS, len(perspectives))))
    )  # type: ignore[valid-type]
    return insights, meta, edits


@dataclass
class Episode:
    """A finished episode, with what the risk-control agent said about it."""

    number: int
    traj: Trajectory
    insights: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Update:
    """One CVRF step: what a training row of ``episodes.jsonl`` records."""

    better: int
    worse: int
    tau: float
    rate: float  # 1 - tau
    meta: str
    touched: list[str]
    edits: dict[str, dict[str, Any]]  # perspective -> before, after, size
    weights: dict[str, Any]
    beliefs: Beliefs
    via: str  # llm, rules or fallback
    calls: int = 0

    def reached(self) -> dict[str, list[str]]:
        """Exactly whose prompt the update changed, text and weight apart: a
        perspective's text is read by its analysts and by the manager (which
        reads every text); a weight is read by no prompt, only by the rules
        manager's weighting (and so by the llm brain's fallback)."""
        text = sorted(k for k, e in self.edits.items() if e["before"] != e["after"])
        weight = sorted(k for k, e in self.edits.items() if abs(e["weight_after"] - e["weight_before"]) > 1e-12)
        return {
            "text_changed": text,
            "weight_changed": weight,
            "prompts_changed": [f"{p} analysts" for p in text if p != RISK] + (["manager"] if text else []),
            "weights_changed_for": ["rules manager"] if weight else [],
        }

    def row(self) -> dict[str, Any]:
        return {
            "better": self.better,
            "worse": self.worse,
            "tau": round(self.tau, 6),
            "rate": round(self.rate, 6),
            "meta": self.meta,
            "touched": self.touched,
            **self.reached(),
            "edits": self.edits,
            "weights": self.weights,
            "beliefs_version": self.beliefs.version,
            "via": self.via,
            "calls": self.calls,
        }


def _attribution_line(attr: dict[str, float]) -> str:
    """What each source's views earned in the better episode, best first
    (computed from the episode's own trading: no answer key)."""
    ranked = sorted(attr.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{k} {v:+.2f}" for k, v in ranked) or "none"


def describe_stretches(ep: Episode, limit: int = 6) -> str:
    """The stretches of an episode as text: dates, PnL, actions, the views behind them."""
    t = ep.traj
    idx = {d: i for i, d in enumerate(t.dates)}
    lines = []
    for s in stretches(t)[:limit]:
        # the decisions that produced the stretch's PnL: the day before its first PnL day
        days = [d for d in t.dates if s.start <= d <= s.end]
        first = t.dates[max(0, idx.get(days[0], 0) - 1)] if days else s.start
        i = idx.get(first, 0)
        acts: dict[str, int] = {}
        for d in [first] + days[:-1]:
            for tk, a in t.actions[idx[d]].items():
                acts[f"{tk} {a}"] = acts.get(f"{tk} {a}", 0) + 1
        act = ", ".join(f"{k} x{v}" for k, v in sorted(acts.items(), key=lambda kv: (-kv[1], kv[0]))[:4])
        views = "; ".join(f"{role}: {v}" for role, per in sorted(t.views[i].items()) for v in list(per.values())[:1])
        lines.append(
            f"- {s.kind} {s.start}..{s.end} ({s.days} days, {s.pnl_pct:+.2f}%): {act or 'no trade'}. "
            f"Views at its start: {views[:600] or 'none'}"
        )
    return "\n".join(lines) or "- no sustained stretch (no 3 days in a row of one sign)"


class RiskControl:
    """One agent, two brains; ``client`` is None for the rules brain."""

    agent = "risk-control"

    def __init__(self, perspectives: tuple[str, ...], client=None, lr: float = RULES_LR, max_tokens: int = 400):
        self.perspectives = tuple(sorted(set(perspectives) | {RISK}))
        self.client = client
        self.lr = lr
        self.max_tokens = max_tokens
        self.models = _models(self.perspectives)

    # -- the model path --------------------------------------------------------
    def _ask(self, template: str, values: dict[str, Any], model, day: str):
        system, user = load_template(str(HERE / template))
        values = {"perspectives": ", ".join(self.perspectives), **values}
        msgs = [
            {"role": "system", "content": system.format(**values)},
            {"role": "user", "content": user.format(**values)},
        ]
        # temperature 0 for belief generation (the paper, A.7.2)
        params = SamplingParams(temperature=0.0, max_tokens=self.max_tokens, seed=0)
        return self.client.ask(msgs, model, agent=self.agent, day=day, params=params)

    def _quotes(self, texts: list, day: str) -> None:
        """Texts a masked prompt of ``day`` will show that the team wrote (its views: a rules insight
        quotes its items' first sentences) or a former answer did: their sentences are reworded there,
        as a run's own prompts reword what its analysts said (fincon.llm.masking.Masker.said)."""
        mask = getattr(self.client, "masker", None)
        if mask is not None:
            mask.said(json.dumps(texts), day)

    def summarise(self, ep: Episode) -> tuple[list[dict[str, str]], int]:
        """Conceptual insights of one episode (rules: the stretches themselves)."""
        if self.client is None:
            return self._rules_insights(ep), 0

        t = ep.traj
        tickers = sorted({k for a in t.actions for k in a})
        values = {
            "episode": ep.number,
            "tickers": ", ".join(tickers),
            "start": t.dates[0],
            "end": t.dates[-1],
            "objective": t.objective,
            "stretches": describe_stretches(ep),
        }
        # a view reads "bearish 0.46: <the insight's first 100 characters>"
        day = f"episode-{ep.number}"
        self._quotes([v.split(": ", 1)[-1] for views in t.views for per in views.values() for v in per.values()], day)
        try:
            res = self._ask("summarise.txt", values, self.models[0], day)
        except LLMInvalidAnswer as exc:
            self._fallback(day, exc)
            return self._rules_insights(ep), len(exc.keys)
        # a text that ran into the schema's length cap keeps its whole sentences (no cut text in a prompt)
        out = [{"perspective": i.perspective, "text": uncut(i.text, TEXT_CAP)} for i in res.value.insights]
        return out, res.usage.calls

    def update(self, beliefs: Beliefs, a: Episode, b: Episode, tau: float) -> Update:
        """The belief step after episodes ``a`` (earlier) and ``b`` (later)."""
        better, worse = (b, a) if b.traj.objective > a.traj.objective else (a, b)
        rate = max(0.0, 1.0 - tau)
        # a role that reported on no day of either episode (a corpus without analyst notes) earned and lost
        # nothing: centred with the rest it gained weight whenever they lost, and was listed as touched
        spoke = {role for day in (*better.traj.signals, *worse.traj.signals) for role in day}
        analysts = {k: v for k, v in beliefs.weights().items() if k != RISK and k in spoke}
        # the rules weights in force in the better episode (with its exploration) are what earned
        attr = attribution(better.traj, {**analysts, **better.traj.weights})
        step = rules_step(analysts, attr, tau, self.lr)
        weights = {"attribution_better": attr, **step.as_dict()}
        calls = 0
        via = "rules"
        texts: dict[str, str] = {}
        meta = self._rules_meta(better, worse, attr, rate)
        if self.client is not None and rate > 0:
            # the perspectives in the order of what they earned in the better episode
            # (its own trading, no answer key), in the prompt and the answer's enum: a 1.5B
            # model named the first two of an alphabetical list (10-k, 10-q) whatever the
            # attribution line said (tests/test_cvrf_live.py)
            # (a role that never reported is not offered: an edit of it would reach no analyst)
            offered = [p for p in self.perspectives if p in spoke or p == RISK]
            ranked = tuple(sorted(offered, key=lambda p: (p not in attr, -attr.get(p, 0.0), p)))
            via = "llm"
            day = f"episodes-{worse.number}-{better.number}"
            # the insights are the summaries' answers (a fallback's quote the views); read back on a resume
            self._quotes([better.insights, worse.insights], day)
            try:
                m = self._ask(
                    "compare.txt",
                    {
                        "better": better.number,
                        "worse": worse.number,
                        "better_objective": better.traj.objective,
                        "worse_objective": worse.traj.objective,
                        "tau": tau,
                        "better_insights": _bullets(better.insights),
                        "worse_insights": _bullets(worse.insights),
                        "attribution": _attribution_line(attr),
                        "perspectives": ", ".join(ranked),
                    },
                    _models(ranked)[1],
                    day,
                )
                calls += m.usage.calls
                meta = without_fragment(uncut(m.value.text, META_CAP))
                focus = list(dict.fromkeys(m.value.perspectives))
                # each with what its views earned: shown only the direction, the 1.5B wrote beliefs
                # about "the better episode" that never named the source they advise
                current = "\n".join(
                    f"- {k} (earned {attr.get(k, 0.0):+.2f}): {beliefs.perspectives[k].text or NO_BELIEF}"
                    for k in focus
                )
                # the edit may name only the perspectives the comparison named (its enum): given
                # all of them, the 1.5B edited 10-k and 10-q, the first two listed, after naming news
                e = self._ask(
                    "update.txt",
                    {"beliefs": current, "meta": meta, "rate": rate, "perspectives": ", ".join(focus)},
                    _models(tuple(focus))[2],
                    day,
                )
                calls += e.usage.calls
                texts = {
                    u.perspective: without_fragment(uncut(u.text, BELIEF_CAP))
                    for u in e.value.updates
                    # the placeholder copied back is no belief (the 1.5B did that once)
                    if u.perspective in focus and u.text.strip() not in ("", NO_BELIEF)
                }
            except LLMInvalidAnswer as exc:
                self._fallback(day, exc)
                calls += len(exc.keys)
                via = "fallback"
                texts = {}
        if via != "llm":
            texts = self._rules_texts(beliefs, step, attr) if rate > 0 else {}
        new = beliefs.with_updates(texts=texts, weights=step.after if rate > 0 else None)

        changed = touched(beliefs, new)
        edits = {
            k: {
                "before": beliefs.perspectives[k].text,
                "after": new.perspectives[k].text,
                "size": text_edit_size(beliefs.perspectives[k].text, new.perspectives[k].text),
                "weight_before": beliefs.perspectives[k].weight,
                "weight_after": new.perspectives[k].weight,
            }
            for k in changed
        }
        return Update(better.number, worse.number, tau, rate, meta, changed, edits, weights, new, via, calls)

    def _fallback(self, day: str, exc) -> None:
        self.client.ledger.record_fallback(
            self.agent,
            day,
            reason="invalid belief answer after one re-ask; rules step used",
            keys=exc.keys,
            detail={"errors": list(exc.errors)},
        )

    # -- the rules path --------------------------------------------------------
    @staticmethod
    def _rules_insights(ep: Episode) -> list[dict[str, str]]:
        return [{"perspective": "risk", "text": line[2:300]} for line in describe_stretches(ep).splitlines()]

    @staticmethod
    def _rules_meta(better: Episode, worse: Episode, attr: dict[str, float], rate: float) -> str:
        """The comparison in words. Two episodes with one objective tied (a live 0.5B team's two
        episodes both lost 1.46 %: "episode 1 beat episode 2" said otherwise), and a step of rate 0
        (every day's actions the same, tau 1) moves nothing: both said."""
        ranked = sorted(attr.items(), key=lambda kv: (-kv[1], kv[0]))
        parts = ", ".join(f"{k} {v:+.2f}" for k, v in ranked)
        first, second = sorted((better.number, worse.number))
        said = (
            f"Episodes {first} and {second} tied ({better.traj.objective:+.2f}% each); the step follows episode "
            f"{better.number}'s views."
            if better.traj.objective == worse.traj.objective
            else f"Episode {better.number} ({better.traj.objective:+.2f}%) beat episode {worse.number} "
            f"({worse.traj.objective:+.2f}%)."
        )
        still = " No step: tau 1.00, the same actions on every day." if rate <= 0 else ""
        return f"{said} Share of its view-weighted next-day PnL each source earned: {parts or 'none'}.{still}"

    @staticmethod
    def _rules_texts(beliefs: Beliefs, step, attr: dict[str, float]) -> dict[str, str]:
        """Texts for the :data:`MAX_FOCUS` perspectives whose weight moved most
        (every weight still moves): the same focused step as the model's, so
        a fallback does not rewrite every analyst's beliefs (in a live 1.5B
        training it did, and the next episode re-asked all six analysts)."""
        out = {}
        moved = sorted(step.after, key=lambda k: (-abs(step.after[k] - step.before[k]), k))[:MAX_FOCUS]
        for k in sorted(moved):
            after, before = step.after[k], step.before[k]
            if abs(after - before) < 1e-9:
                continue
            verb = "earned" if attr.get(k, 0.0) >= 0 else "lost"
            out[k] = (
                f"weight {after:.3f} (was {before:.3f}): this source's view {verb} "
                f"{abs(attr.get(k, 0.0)):.0%} of the better episode's view-weighted PnL."
            )
        return out


def _bullets(insights: list[dict[str, str]]) -> str:
    return "\n".join(f"- {i['perspective']}: {i['text']}" for i in insights) or "- (none)"
