"""Trading policies from the run config, enforced in code after every
protocol (a prompt may state them; only this module guarantees them).

``strategy_params.fincon.policies``:

* ``max_position``: largest |weight| of one asset (fraction of the book);
* ``max_gross``: largest sum of |weights|;
* ``require_evidence``: no new trade on a day when no analyst had anything
  to read (the positions are kept).

The defaults bind nothing the FinCon manager does not already respect
(|w| <= 1, gross <= 1, trading allowed without fresh evidence).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from fincon.strategies.base import Decision


class Policies(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    max_position: float = Field(1.0, gt=0.0, le=1.0)
    max_gross: float = Field(1.0, gt=0.0, le=1.0)
    require_evidence: bool = False


def enforce(decision: Decision, policies: Policies, has_evidence: bool) -> tuple[Decision, list[str]]:
    """The decision within the policies, and what was changed (empty: nothing)."""
    notes: list[str] = []
    if policies.require_evidence and not has_evidence and decision.weights:
        notes.append("no evidence today: positions kept (require_evidence)")
        return Decision(
            weights={},
            rationale=decision.rationale,
            evidence=decision.evidence,
            actions={t: "hold" for t in decision.actions},
        ), notes
    w = dict(decision.weights)
    for t, x in w.items():
        if abs(x) > policies.max_position + 1e-12:
            notes.append(f"{t} {x:+.3f} clipped to the max position {policies.max_position:.2f}")
            w[t] = policies.max_position if x > 0 else -policies.max_position
    gross = sum(abs(x) for x in w.values())
    if gross > policies.max_gross + 1e-12:
        notes.append(f"gross exposure {gross:.3f} scaled to the max {policies.max_gross:.2f}")
        w = {t: x * policies.max_gross / gross for t, x in w.items()}
    if not notes:
        return decision, notes
    return Decision(
        weights=w, rationale=decision.rationale, evidence=decision.evidence, actions=decision.actions
    ), notes
