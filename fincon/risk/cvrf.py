"""Over-episode risk control, the numbers of CVRF (FinCon 3.1.2, Algorithm 1).

Everything here is pure arithmetic on two finished training episodes, as
their runs recorded them (``Trajectory.of`` a run read through
fincon.engine.record: its decisions, equity curve, metrics, summary):

* the objective of an episode (the paper's Eq. 2 with discount 1: the sum of
  daily log returns, i.e. ``cr_pct``);
* the sustained profitable and losing stretches of an episode (runs of at
  least ``min_len`` days whose daily PnL keeps one sign);
* tau, the share of days on which both episodes took the same action (the
  learning rate of the textual gradient step: the more the episodes agree,
  the smaller the edit, so the step size is ``1 - tau``);
* the attribution of an episode's trading to its sources: for each analyst
  role, the PnL its share of the manager's weighted view would have earned,
  ``A_r = sum_t sum_i w_r s_{r,i,t} R_{i,t+1}`` normalised by the total
  absolute contribution (``s`` is the role's signed confidence on ticker
  ``i`` on day ``t``, ``R`` the ticker's next-day return). It uses only the
  decisions' days and the next day's closes of the same episode;
* the rules brain's belief step: each role weight moves by
  ``exp((1 - tau) * lr * g_r)`` where ``g`` is the better episode's
  attribution centred on its mean, then the analyst weights are rescaled to
  their previous total (a weight is a share of the view, so no source can
  run away by inflation).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

#: default learning rate of the rules brain's weight step (scaled by 1 - tau)
RULES_LR = 4.0
#: a stretch is "sustained" from this many consecutive same-sign PnL days
MIN_STRETCH = 3


@dataclass
class Trajectory:
    """One episode, as the risk-control component sees it."""

    dates: list[str]
    actions: list[dict[str, str]]  # per decision day: ticker -> buy/sell/hold
    pnl: pd.Series  # daily simple return of the portfolio, % (index: date)
    objective: float
    signals: list[dict[str, dict[str, float]]]  # per decision day: role -> ticker -> signed confidence
    closes: list[dict[str, float]]  # per decision day: ticker -> close
    views: list[dict[str, dict[str, str]]] = field(default_factory=list)  # role -> ticker -> first insight
    weights: dict[str, float] = field(default_factory=dict)  # rules weights in force (with exploration)

    @classmethod
    def of(
        cls,
        entries: list[dict[str, Any]],
        eq: pd.Series,
        metrics: Mapping[str, Any],
        summary: Mapping[str, Any],
    ) -> "Trajectory":
        """An episode from its run (fincon.engine.record.RunRecord): its decisions, equity curve,
        metrics and the team's own summary."""
        pnl = 100.0 * eq.pct_change().dropna()
        pnl.index = pnl.index.strftime("%Y-%m-%d")
        dates, actions, signals, closes, views = [], [], [], [], []
        for e in entries:
            rec = e.get("record") or {}
            dates.append(e["date"])
            actions.append(dict(e.get("actions") or {}))
            sig: dict[str, dict[str, float]] = {}
            view: dict[str, dict[str, str]] = {}
            for a in rec.get("agents", []):
                role, _, ticker = a["agent"].partition("/")
                d = a.get("direction")
                s = float(a.get("confidence") or 0.0) * (1 if d == "bullish" else -1 if d == "bearish" else 0)
                if a.get("insights"):
                    sig.setdefault(role, {})[ticker] = s
                    view.setdefault(role, {})[ticker] = (
                        f"{d} {a.get('confidence', 0):.2f}: {a['insights'][0].get('text', '')[:100]}"
                    )
            signals.append(sig)
            views.append(view)
            closes.append({t: float(v) for t, v in (rec.get("closes") or {}).items()})
        return cls(
            dates,
            actions,
            pnl,
            float(metrics.get("cr_pct", 0.0)),
            signals,
            closes,
            views,
            {k: float(v) for k, v in (summary.get("team_weights") or {}).items()},
        )


def objective(traj: Trajectory) -> float:
    return traj.objective


def overlap(a: Trajectory, b: Trajectory) -> float:
    """tau: share of the decision days on which both episodes took the same
    action on every traded ticker (a missing action reads hold). Two episodes
    of one window decide on the same days; when they do not, one is damaged
    (a cut decisions file gave tau over the days left)."""
    if sorted(a.dates) != sorted(b.dates):
        only = sorted(set(a.dates) ^ set(b.dates))
        raise ValueError(
            f"the episodes decided on different days ({len(a.dates)} and {len(b.dates)}; "
            f"{len(only)} in one only, first {only[0] if only else 'a day given twice'})"
        )
    bd = dict(zip(b.dates, b.actions))
    same = n = 0
    for d, act in zip(a.dates, a.actions):
        if d not in bd:
            continue
        other = bd[d]
        n += 1
        keys = set(act) | set(other)
        same += all(act.get(k, "hold") == other.get(k, "hold") for k in keys)
    return same / n if n else 1.0


@dataclass(frozen=True)
class Stretch:
    kind: str  # "profitable" or "losing"
    start: str
    end: str
    days: int
    pnl_pct: float  # compounded return over the stretch, %


def stretches(traj: Trajectory, min_len: int = MIN_STRETCH, top: int = 3) -> list[Stretch]:
    """The ``top`` largest sustained profitable and losing stretches."""
    runs: list[Stretch] = []
    sign = 0
    start = 0
    vals = traj.pnl.to_numpy()
    days = list(traj.pnl.index)

    def close(i_end: int) -> None:
        if sign and i_end - start >= min_len:
            r = float(np.prod(1 + vals[start:i_end] / 100.0) - 1.0) * 100.0
            runs.append(
                Stretch(
                    "profitable" if sign > 0 else "losing", days[start], days[i_end - 1], i_end - start, round(r, 4)
                )
            )

    for i, v in enumerate(vals):
        s = 1 if v > 0 else -1 if v < 0 else 0
        if s != sign:
            close(i)
            sign, start = s, i
    close(len(vals))
    prof = sorted((s for s in runs if s.kind == "profitable"), key=lambda s: (-s.pnl_pct, s.start))[:top]
    loss = sorted((s for s in runs if s.kind == "losing"), key=lambda s: (s.pnl_pct, s.start))[:top]
    return sorted(prof + loss, key=lambda s: s.start)


def attribution(traj: Trajectory, weights: Mapping[str, float] | None = None) -> dict[str, float]:
    """Per role: the share of the episode's view-weighted next-day PnL it
    earned (sums of signed terms, normalised so sum |A_r| <= 1)."""
    w = dict(weights if weights is not None else traj.weights)
    raw: dict[str, float] = {}
    total = 0.0
    for t in range(len(traj.dates) - 1):
        now, nxt = traj.closes[t], traj.closes[t + 1]
        for role, per in traj.signals[t].items():
            wr = float(w.get(role, 0.0))
            for tk, s in per.items():
                if tk in now and tk in nxt and now[tk] > 0:
                    r = nxt[tk] / now[tk] - 1.0
                    term = wr * s * r
                    raw[role] = raw.get(role, 0.0) + term
                    total += abs(term)
    return {k: (v / total if total > 0 else 0.0) for k, v in sorted(raw.items())}


@dataclass(frozen=True)
class WeightStep:
    before: dict[str, float]
    after: dict[str, float]
    gradient: dict[str, float]
    step: float  # (1 - tau) * lr
    size: float  # L1 distance of the weight shares

    def as_dict(self) -> dict:
        return {
            "before": self.before,
            "after": self.after,
            "gradient": self.gradient,
            "step": round(self.step, 6),
            "size": round(self.size, 6),
        }


def rules_step(
    weights: Mapping[str, float], better: Mapping[str, float], tau: float, lr: float = RULES_LR
) -> WeightStep:
    """Move the analyst weights toward the sources that earned in the better
    episode; ``weights`` are the analyst roles' weights (not the risk one)."""
    names = sorted(weights)
    g = np.array([float(better.get(n, 0.0)) for n in names])
    if len(g):
        g = g - g.mean()
    step = (1.0 - float(tau)) * lr
    w = np.array([float(weights[n]) for n in names])
    total = w.sum()
    new = w * np.exp(step * g)
    if new.sum() > 0 and total > 0:
        new = new * (total / new.sum())
    before = {n: round(float(x), 6) for n, x in zip(names, w)}
    after = {n: round(float(x), 6) for n, x in zip(names, new)}
    share = lambda v: v / v.sum() if v.sum() > 0 else v  # noqa: E731
    size = float(np.abs(share(new) - share(w)).sum()) if len(w) else 0.0
    return WeightStep(before, after, {n: round(float(x), 6) for n, x in zip(names, g)}, step, size)


def text_edit_size(before: str, after: str) -> float:
    """1 - difflib's similarity ratio of two belief texts (0 = unchanged)."""

    if before == after:
        return 0.0
    return round(1.0 - difflib.SequenceMatcher(None, before, after).ratio(), 6)


def finite(x: float) -> float:
    return x if math.isfinite(x) else 0.0
