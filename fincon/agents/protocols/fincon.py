"""The FinCon manager: consolidates the analysts' reports into a decision.

Inputs (a :class:`~fincon.agents.brains.ManagerTask`): every analyst's
report per traded ticker, the manager's recent reflections (episodic
memory, written the day after each decision once its P&L is known), the
risk stance of the day (a CVaR alert, :mod:`fincon.risk.cvar_alert`) and the
investment beliefs learned by CVRF training (``Beliefs.for_manager``).

* One ticker: buy (long), sell (short) or hold (keep the position) with a
  size in [0, 1].
* Portfolio: a direction per asset, then weights from the sign-constrained
  mean-variance optimizer (:func:`fincon.risk.optimizer.mean_variance_weights`,
  FinCon's signed form) on mu and Sigma estimated from the visible history
  exactly as the ``markowitz`` baseline does (:func:`estimate_moments`).
  The manager's direction is the view: mu keeps its historical magnitude
  (floored at a tenth of the daily volatility) but takes the direction's
  sign, so a "buy" on a stock that fell last quarter still gets weight
  instead of being silently zeroed by a negative sample mean.

The decision keeps the rationale and the memory ids relied on; the team
rewards those ids (+5 importance) when the decision turns out profitable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import numpy as np

from fincon.agents.brains import Answer, ManagerTask, Question, consensus, hold_band_check, rules_manager
from fincon.agents.reports import ManagerReport, portfolio_answer_model, short_labels, ticker_answer_model
from fincon.agents.roles.base import EMPTY, drop_empty, load_template
from fincon.data.calendar import infer_calendar
from fincon.memory.distill import clip_sentences
from fincon.risk.optimizer import MeanVarianceProblem
from fincon.strategies.base import Decision
from fincon.strategies.markowitz import estimate_moments

TEMPLATE = Path(__file__).with_name("fincon.txt")
#: the paper form's risk aversion (annual units): a full-confidence view on a stock with 30 %
#: annual volatility alone asks for a weight of 1 / (2 x 3 x 0.3) = 0.56
PAPER_RISK_AVERSION = 3.0
REPORT_CHARS = 150

SINGLE_TASK = (
    "Decide today's action on the one stock: buy (hold a long position), sell (hold a short position) "
    "or hold (keep the current position), and a size between 0 and 1: the fraction of the portfolio in "
    "the position, always positive (sell with size 0.5 is a short of half the portfolio). If you would "
    "not trade, answer hold."
)
PORTFOLIO_TASK = (
    "Decide a direction for each stock: buy (long), sell (short) or hold (no position), and a size "
    "between 0 and 1: the share of the portfolio to invest. An optimizer then splits it across the "
    "stocks from their risk."
)


#: the order reports are shown in: what changes least often first, so a local
#: model's saved prompt state covers most of the next day's prompt
#: (:mod:`fincon.llm.backends.local`); roles not listed keep their order after these
REPORT_ORDER = ("10-k", "10-q", "analyst-notes", "earnings-call", "news", "data-analysis")


def ordered_reports(task: ManagerTask) -> list[tuple[str, Any]]:
    """(ticker, report) in prompt order: per ticker, stable sources first."""
    rank = {r: n for n, r in enumerate(REPORT_ORDER)}
    return [
        (t, r) for t in task.tickers for r in sorted(task.reports.get(t, ()), key=lambda r: rank.get(r.role, len(rank)))
    ]


def shown(task: ManagerTask, report) -> list[Any]:
    """The insights of a report the manager reads: two for one stock, the
    leading one per stock in a portfolio (a longer prompt per ticker)."""
    return report.insights[: 1 if task.portfolio else 2]


def shown_ids(task: ManagerTask) -> list[str]:
    """The evidence ids the manager's prompt shows, in prompt order."""
    return list(dict.fromkeys(c.id for _, r in ordered_reports(task) for i in shown(task, r) for c in i.citations))


def manager_labels(task: ManagerTask) -> dict[str, str]:
    """Real evidence id -> short label (E1, E2 ... in prompt order)."""
    return short_labels(shown_ids(task))


def format_reports(task: ManagerTask, labels: Mapping[str, str] | None = None) -> str:
    labels = labels or {}
    lines = []
    for t, r in ordered_reports(task):
        if not r.insights:
            lines.append(f"- {t} {r.role}: nothing to read today")
            continue
        head = f"- {t} {r.role}: {r.direction} (confidence {r.confidence:.2f})."
        body = " ".join(
            f"{clip_sentences(i.text, REPORT_CHARS)} [{', '.join(labels.get(c.id, c.id) for c in i.citations)}]"
            for i in shown(task, r)
        )
        lines.append(f"{head} {body}")
    return "\n".join(lines) or "(no reports)"


def manager_messages(task: ManagerTask, labels: Mapping[str, str] | None = None) -> list[dict[str, str]]:
    """The manager's chat messages; evidence shown under ``labels`` (real id
    -> label, :func:`manager_labels`). Empty sections (no reflections yet,
    no risk stance, no beliefs) are left out, as in the analysts' prompts."""
    system, user = load_template(str(TEMPLATE))
    position = ", ".join(f"{t} {task.held(t):+.2f}" for t in task.tickers)
    question = (
        f"What do you do with {task.tickers[0]} today?"
        if not task.portfolio
        else f"Give a direction for each of {', '.join(task.tickers)}."
    )
    values = {
        "task": PORTFOLIO_TASK if task.portfolio else SINGLE_TASK,
        "date": task.day,
        "position": position,
        "reports": format_reports(task, labels),
        "reflections": "\n".join(f"- {r}" for r in task.reflections) or EMPTY,
        "decisions": "\n".join(f"- {d}" for d in task.decisions) or EMPTY,
        "stance": task.stance or EMPTY,
        "beliefs": task.beliefs or EMPTY,
        "question": question,
    }
    return [
        {"role": "system", "content": system.format(**values)},
        {"role": "user", "content": drop_empty(user.format(**values))},
    ]


class FinConManager:
    name = "fincon"
    agent = "manager"
    #: portfolio days with a direction but under 3 days of returns (the book held cash), and the paper
    #: form's directions set to weight 0 because the analysts' view pointed the other way (class-level
    #: zeros: a forward journal's manager pickled before these counts reads them too)
    short_history = paper_zeroed = 0

    def __init__(
        self,
        lookback: int = 60,
        mu_shrinkage: float = 0.5,
        risk_aversion: float = 1.0,
        portfolio_form: str = "direction",
    ):
        #: the manager's own sampling (training: a temperature and a seed per episode), None = the client's
        self.sampling = None
        self.lookback = lookback
        self.mu_shrinkage = mu_shrinkage
        self.risk_aversion = risk_aversion
        #: "direction": mu's historical size with the manager's sign, weights scaled to gross 1;
        #: "paper": mu from the analysts' directions and confidences, the optimizer's weights as they are
        self.portfolio_form = portfolio_form
        #: model reversals the hold band turned into a hold (counted in the summary)
        self.band_kept = 0
        #: "direction" portfolio days, and those on which every asset the manager traded sat at its bound
        #: before the scaling to gross 1: weights 1/N by sign, the optimizer's trade-off bound away
        self.mv_days = self.mv_at_bounds = 0

    @classmethod
    def from_params(cls, params: Any) -> "FinConManager":
        return cls(lookback=params.lookback, portfolio_form=getattr(params, "portfolio_form", "direction"))

    def question(self, task: ManagerTask) -> Question:
        labels = manager_labels(task)
        if task.portfolio:
            model = portfolio_answer_model(task.tickers)

            def to_report(a) -> ManagerReport:
                return ManagerReport(actions=a.directions(), size=a.size, rationale=a.rationale, relied_on=a.relied_on)
        else:
            model = ticker_answer_model([labels.get(i, i) for i in shown_ids(task)])

            def to_report(a) -> ManagerReport:
                return ManagerReport(
                    actions={task.tickers[0]: a.action}, size=a.size, rationale=a.rationale, relied_on=a.relied_on
                )

        return Question(
            agent=self.agent,
            day=task.day,
            messages=lambda: manager_messages(task, labels),
            model=model,
            allowed=frozenset(task.cited()),
            to_report=to_report,
            rules=lambda: rules_manager(task),
            params=self.sampling,
            labels={v: k for k, v in labels.items()},
        )

    def _returns(self, view, tickers: tuple[str, ...]) -> np.ndarray | None:
        """The last ``lookback`` days of simple returns (rows with a gap
        dropped); None when fewer than 3 remain (too few for the moments)."""
        closes = view.closes(self.lookback + 1)[list(tickers)].to_numpy(dtype=float)
        rets = closes[1:] / closes[:-1] - 1.0
        rets = rets[np.all(np.isfinite(rets), axis=1)]
        return rets if len(rets) >= 3 else None

    def _idle(self, rets: np.ndarray | None, directions: list[str]) -> bool:
        """True on a day the book holds cash: every direction a hold, or too little history for the
        moments (counted: the summary says how many days a chosen direction went uninvested)."""
        if all(d == "hold" for d in directions):
            return True
        self.short_history += rets is None
        return rets is None

    def weights(self, view, tickers: tuple[str, ...], actions: Mapping[str, str]) -> dict[str, float]:
        """Signed mean-variance weights for the manager's directions."""
        rets = self._returns(view, tickers)
        directions = [actions[t] for t in tickers]
        if self._idle(rets, directions):
            return {t: 0.0 for t in tickers}
        mu, sigma = estimate_moments(rets, self.mu_shrinkage)
        floor = 0.1 * np.sqrt(np.clip(np.diag(sigma), 0.0, None))
        sign = np.array([{"buy": 1.0, "sell": -1.0, "hold": 0.0}[d] for d in directions])
        mu_view = sign * np.maximum(np.abs(mu), floor)
        problem = MeanVarianceProblem(sigma, form="signed", risk_aversion=self.risk_aversion)
        w = problem.solve(mu_view, directions)
        held = np.abs(np.asarray(problem.last_solution, dtype=float))[sign != 0]
        self.mv_days += 1
        self.mv_at_bounds += bool(len(held) > 1 and np.all(held >= 1.0 - 1e-9))
        return {t: float(x) for t, x in zip(tickers, w)}

    def paper_weights(self, view, task: ManagerTask, actions: Mapping[str, str]) -> dict[str, float]:
        """The paper's portfolio form: each stock's expected annual return is
        its analysts' consolidated view (directions x confidences, the rules
        manager's role weights, in [-1, 1]) times its annual volatility (a
        full-confidence view is a Sharpe ratio of 1); with the annualised
        covariance and risk aversion :data:`PAPER_RISK_AVERSION`, the signed
        optimizer (bounds from the manager's directions) returns the weights,
        used as they come out. Only a book that would borrow (gross above 1)
        is scaled down to 1: a budget, not a re-normalisation."""

        tickers = task.tickers
        rets = self._returns(view, tickers)
        directions = [actions[t] for t in tickers]
        if self._idle(rets, directions):
            return {t: 0.0 for t in tickers}
        _, sigma = estimate_moments(rets, self.mu_shrinkage)
        sigma = sigma * infer_calendar(view.closes(self.lookback + 1).index).days_per_year  # a coin's: 365
        vol = np.sqrt(np.clip(np.diag(sigma), 0.0, None))
        view_score = np.array([consensus(task, t)[0] for t in tickers])
        problem = MeanVarianceProblem(sigma, form="signed", risk_aversion=PAPER_RISK_AVERSION)
        problem.solve(view_score * vol, directions)
        w = np.asarray(problem.last_solution, dtype=float)
        # an int: numpy's bools summed are an np.int64, which summary.json's writer refuses (review 2026-12-02)
        self.paper_zeroed += sum(d != "hold" and bool(abs(x) < 1e-9) for d, x in zip(directions, w))
        gross = float(np.abs(w).sum())
        if gross > 1.0:
            w = w / gross
        return {t: float(x) for t, x in zip(tickers, w)}

    def decide(
        self, brain, task: ManagerTask, view, universe: tuple[str, ...]
    ) -> tuple[Decision, Answer, dict[str, Any]]:
        """The day's decision; ``universe`` is every ticker of the run (those
        outside the traded pool are kept flat)."""
        ans = brain.answer(self.question(task))
        mr: ManagerReport = ans.report
        mr, band = hold_band_check(task, mr)
        if band:
            self.band_kept += 1
        relied = tuple(mr.relied_on)
        if not task.portfolio:
            t = task.tickers[0]
            decision = Decision.from_action(t, mr.actions[t], mr.size, rationale=mr.rationale, evidence=relied)
            flat = {u: 0.0 for u in universe if u != t}
            if flat:
                decision = Decision(
                    weights={**decision.weights, **flat},
                    rationale=decision.rationale,
                    evidence=decision.evidence,
                    actions=decision.actions,
                )
        else:
            if self.portfolio_form == "paper":
                w = self.paper_weights(view, task, mr.actions)
            else:
                w = self.weights(view, task.tickers, mr.actions)
            if mr.size < 1.0:  # the size the manager chose (rules: its risk-averse stance): the rest in cash
                w = {t: x * mr.size for t, x in w.items()}
            w.update({u: 0.0 for u in universe if u not in w})
            decision = Decision(weights=w, rationale=mr.rationale, evidence=relied, actions=dict(mr.actions))
        return decision, ans, {**mr.model_dump(), **({"hold_band": band} if band else {})}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"team_hold_band_kept": self.band_kept}
        if self.mv_days:  # a portfolio in the "direction" form: how often its mean-variance weights were 1/N
            out.update(team_mv_days=self.mv_days, team_mv_at_bounds=self.mv_at_bounds)
        if self.short_history:
            out["team_short_history_days"] = self.short_history
        if self.portfolio_form == "paper" and self.paper_zeroed:
            out["team_paper_zeroed"] = self.paper_zeroed
        return out
