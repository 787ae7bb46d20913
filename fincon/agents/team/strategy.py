"""``fincon``: the FinCon agent team as a Strategy; ``decide(view)`` is its day.

One day, in order:

1. refuse a day the event corpus does not cover; check the token budget;
2. settle yesterday (:mod:`.learning`): its P&L from today's closes; a loss
   becomes a reflection in the manager's episodic memory, a profit gives the
   memory ids the manager relied on the access bonus (``AnalystMemory.reward``, +5);
3. portfolios with ``candidates``: on the first day the stock-selection
   analyst picks the traded pool;
4. every analyst, for every traded ticker: ``AnalystMemory.step(view.events)`` (or the
   market view) -> inputs -> the brain (:mod:`.calls`: reuse on an unchanged
   hash, concurrent calls up to the LLM concurrency);
5. the protocol (the manager) turns the reports, its reflections, the CVaR
   risk stance and the learned investment beliefs (``Beliefs.for_manager``)
   into a ``Decision``; trading policies are enforced in code after it.

The ``Decision`` carries a per-day ``record`` (every report, its citations,
the manager's rationale, calls made and reused) written to ``decisions.jsonl``.
Between forward sessions the team is saved and taken up by :mod:`.resumable`.

Point in time: events and prices both come from the ``MarketView``
(``view.events`` is the corpus cut at the day's decision time), reflections from
episodic memory up to today; memory decay runs on the simulated date.
May touch: everything the team owns (memory store, brain, beliefs); never
the broker (the engine applies the ``Decision``).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from fincon import memory
from fincon.agents.beliefs import as_params, check_learned_for
from fincon.agents.brains import LLMBrain, ManagerTask, RulesBrain
from fincon.agents.critics import NumericCritics
from fincon.agents.policies import enforce
from fincon.agents.protocols import make_protocol
from fincon.agents.reports import CONTRADICTION, LANGUAGE, AnalystReport
from fincon.agents.roles import ANALYSTS, ROLES, STOCK_SELECTION
from fincon.agents.roles.base import EventRole, RoleInputs, ToneBaseline
from fincon.agents.team.calls import Answer, Calls
from fincon.agents.team.corpus import corpus_coverage, coverage, declared_coverage, refuse_audio_only, uncovered
from fincon.agents.team.learning import Learning, _Previous, risk_stance
from fincon.agents.team.params import FinConParams
from fincon.agents.team.resumable import Resumable
from fincon.errors import ConfigError
from fincon.llm.errors import BudgetExhausted, CacheMiss, LLMUnavailable
from fincon.llm.ledger import UsageLedger
from fincon.llm.settings import LLMSettings, attach, build_client, detach
from fincon.memory.distill import Distiller
from fincon.memory.store import MemoryStore
from fincon.memory.vectors import VectorCache
from fincon.memory.working import AskCompleter
from fincon.risk.cvar_alert import CvarAlert
from fincon.strategies.base import Decision, RunContext, StopRun, Strategy

log = logging.getLogger(__name__)
#: simulated days the memory store holds its writes back (chromadb pays per call; flushed at the end too)
MEMORY_FLUSH_DAYS = 21


class FinConTeam(Calls, Learning, Resumable, Strategy):
    name = "fincon"
    Params = FinConParams
    reads_events = True

    def __init__(self, params: FinConParams | None = None, settings=None, client=None):
        self.params = params or FinConParams()
        p = self.params
        self.settings = settings
        self._client = client
        self._owns_client = client is None
        self.roles = [ROLES[a] for a in (p.analysts or list(ANALYSTS))]
        self.warmup = max(p.lookback, p.selection_lookback if p.candidates else 0) + 1
        self.protocol = make_protocol(p.protocol, p)
        self.stopped: str | None = None
        self.ctx: RunContext | None = None

    # -- run lifecycle ---------------------------------------------------------
    def start(self, ctx: RunContext) -> None:
        p = self.params
        self.universe = tuple(ctx.tickers)
        if p.candidates is not None:
            missing = [t for t in p.candidates if t not in self.universe]
            if missing:
                raise ConfigError(
                    f"strategy_params.fincon.candidates: {missing[0]} is not among the run's tickers "
                    f"({', '.join(self.universe)})"
                )
        if ctx.events is None:
            raise ConfigError("the agent team reads news: run it with an event corpus (fincon.data.inputs)")
        self.events = ctx.events  # for coverage and audio paths; a day's events come from view.events
        self.coverage = {**coverage(self.events, self.universe), **declared_coverage(p.events)}
        for t in self.universe:
            if t not in self.coverage:
                raise uncovered(p.events, [t], self.universe)
        # the run's cost models: each day the rules manager asks for more evidence to pay a trade
        self.ctx = ctx
        if ctx.start is not None and ctx.end is not None:
            self._check_window(pd.Timestamp(ctx.start), pd.Timestamp(ctx.end))

        self.memory = MemoryStore(Path(ctx.run_dir) / "memory", self._embedder(), write_behind=True)

        self.distiller = Distiller()  # one cache of distilled items for all the team's analysts
        if p.distill == "llm" and p.brain != "llm":
            raise ConfigError("strategy_params.fincon.distill: llm needs the llm brain (the rules brain has no model)")
        self.reflections = self.memory.episodic(self.protocol.agent)
        # the manager's procedural memory: its settled decisions with their outcomes (learning.py)
        self.decisions = self.memory.procedural(self.protocol.agent, "decisions") if p.decision_memory_k else None
        self._recalled: tuple[str, ...] = ()
        self._load_beliefs(ctx)

        self.alerts = CvarAlert(p.cvar_alpha, p.cvar_min_obs) if p.cvar else None
        if hasattr(self.protocol, "bind"):
            self.protocol.bind(self)
        if p.brain == "llm":
            attach(self.client, self.settings, self.universe, p.events, ctx.start)
            self._recall_earlier(None if ctx.start is None else str(ctx.start))  # a model's earlier words, masked
            self.brain: Any = LLMBrain(self.client)
            if p.manager_temperature is not None or p.manager_seed is not None:
                base = self.client.params
                self.protocol.sampling = base.model_copy(
                    update={
                        k: v
                        for k, v in {"temperature": p.manager_temperature, "seed": p.manager_seed}.items()
                        if v is not None
                    }
                )
            self.ledger = self.client.ledger
            self.concurrency = self.settings.concurrency if self.settings else 1
        else:
            self.brain = RulesBrain()
            self.ledger = UsageLedger()
            self.concurrency = 1
        self.pool: tuple[str, ...] | None = None if p.candidates else self.universe
        self.selection: AnalystReport | None = None
        self._mems: dict[str, Any] = {}
        self._tones: dict[str, ToneBaseline] = {}
        self._last: dict[str, tuple[str, Answer]] = {}
        self._prev: _Previous | None = None
        self.counts = {
            "days": 0,
            "model_calls": 0,
            "reused": 0,
            "skipped": 0,
            "fallbacks": 0,
            "rewarded": 0,
            "alerts": 0,
        }

    @property
    def client(self):
        if self._client is None:
            self._client = build_client(self.settings or LLMSettings())
        return self._client

    def _embedder(self):
        name = self.params.embedder
        if name == "auto":
            name = "hashing" if self.params.brain == "rules" else "minilm"
        if name == "hashing":
            return memory.HashingEmbedder()
        embedder = memory.MiniLMEmbedder()
        cache = self.client.cache if self.params.brain == "llm" else None
        if cache is not None and cache.local_file is not None:
            # the vectors go into the LLM cache file: a replay reads them and loads no model
            embedder.vectors = VectorCache(cache.local_file, embedder.identity(), writes=cache.writes)
        return embedder

    def check_inputs(self, tickers, first: pd.Timestamp, last: pd.Timestamp) -> None:
        """What :meth:`start` would refuse, checked without writing anything:
        candidates among the tickers, an event corpus covering the window for
        every ticker, readable learned beliefs. Commands that create their own
        directory first (train, experiment) call it before they do."""

        p = self.params
        self.universe = tuple(tickers)
        missing = [t for t in (p.candidates or ()) if t not in self.universe]
        if missing:
            raise ConfigError(
                f"strategy_params.fincon.candidates: {missing[0]} is not among the run's tickers "
                f"({', '.join(self.universe)})"
            )
        self.coverage = corpus_coverage(p.events, self.universe)
        for t in self.universe:
            if t not in self.coverage:
                raise uncovered(p.events, [t], self.universe)
        if p.transcripts == "text":  # a call only heard: an empty call, or a stop on its day
            refuse_audio_only(p.events, self.universe)
        self._check_window(first, last)
        if (learned := as_params(p.beliefs)) is not None:  # of this team and these tickers, before any file
            check_learned_for(learned, [ROLES[a].name for a in (p.analysts or list(ANALYSTS))], list(tickers))

    def _check_window(self, first: pd.Timestamp, last: pd.Timestamp) -> None:
        for t in getattr(self, "pool", None) or self.universe:
            lo, hi = self.coverage[t]
            if first < lo or last > hi:
                raise ConfigError(
                    f"event corpus {self.params.events!r} covers {t} from {lo.date()} to {hi.date()}; "
                    f"the run asks for {first.date()}..{last.date()} (pick a window inside it, e.g. "
                    f"{_overlap(first, last, lo, hi)}, or another --events)"
                )

    def finish(self, ctx: RunContext) -> Mapping[str, Any]:
        c = getattr(self, "counts", None)
        if c is None:
            return {}
        self.memory.flush()  # what write-behind held (the run directory is only complete with it)
        out: dict[str, Any] = {
            "team_brain": self.params.brain,
            "team_protocol": self.params.protocol,
            "team_days": c["days"],
            "team_model_calls": c["model_calls"],
            "team_reused": c["reused"],
            "team_skipped": c["skipped"],
            "team_fallbacks": c["fallbacks"],
            "team_rewarded_ids": c["rewarded"],
            "team_calls_per_day": round(c["model_calls"] / c["days"], 3) if c["days"] else 0.0,
            "team_pool": list(self.pool or ()),
            **(self.protocol.summary() if hasattr(self.protocol, "summary") else {}),
            # the manager's self-reflections: written by the model, or its template (rules brain / fallback)
            "team_reflections_written": len(self.written) - self._carried_count,
            **(
                {
                    "team_reflections_model": c.get("reflections_model", 0),
                    "team_reflections_fallback": c.get("reflections_fallback", 0),
                }
                if self.params.brain == "llm"
                else {}
            ),
            "team_decision_memories": len(self.decisions) if self.decisions is not None else 0,
            "team_cvar": self.params.cvar,
            "team_alerts": c["alerts"],
            "team_beliefs_version": self.beliefs.version,
            **({"team_beliefs_overlap": self.beliefs_warning} if getattr(self, "beliefs_warning", None) else {}),
            **({"team_beliefs_sha256": sha} if (sha := getattr(self, "beliefs_sha256", None)) else {}),
            **({"team_beliefs_partial": part} if (part := getattr(self, "beliefs_partial", None)) else {}),
            "team_weights": {k: round(v, 6) for k, v in sorted(self.role_weights.items())},
            **(self.critics.summary() if self.params.critics and getattr(self, "critics", None) else {}),
        }
        self.memory.close()  # after the last read of it (the decision memories' count)
        (Path(ctx.run_dir) / "reflections.json").write_text(
            json.dumps([r.model_dump() for r in self.written], indent=1) + "\n", encoding="utf-8"
        )
        if self.params.brain == "llm" and self._client is not None:
            out.update(detach(self._client, ctx.run_dir, self.stopped, close=self._owns_client))
            out.update(reask_counts(self.ledger.events()))
            if self._owns_client:
                self._client = None
        return out

    def spent_usd(self) -> float:
        ledger = getattr(self, "ledger", None)
        return float(ledger.summary()["llm_cost_usd"]) if ledger is not None else 0.0

    def progress(self) -> Mapping[str, Any]:
        c = getattr(self, "counts", None)
        if not c or not c["days"]:
            return {}
        out: dict[str, Any] = {"calls/day": f"{c['model_calls'] / c['days']:.1f}", "reused": c["reused"]}
        if self.params.brain == "llm":
            out["tokens"] = f"{self.ledger.tokens_used:,}"
        return out

    def llm_settings(self):
        """The model the team calls (None on the rules brain)."""
        return self.settings if self.params.brain == "llm" else None

    def unit_costs(self, view) -> dict[str, float]:
        """Each pool ticker's cost of trading one unit of the book today, from
        the run's cost models and today's bar (what a trade decided now pays)."""
        if self.ctx is None or self.ctx.costs is None:
            return {}
        return {
            t: self.ctx.unit_cost(
                view.price(t), float(view.history(t, "high", 1)[-1]), float(view.history(t, "low", 1)[-1])
            )
            for t in self.pool
        }

    # -- the day ---------------------------------------------------------------
    def decide(self, view) -> Decision | None:
        day = str(view.date.date())
        mask = self._client.masker if self._client is not None else None
        if mask is not None and not mask.start_prices:  # price levels are shown as an index, 100 today
            mask.start_prices.update({t: float(view.price(t)) for t in self.universe})
        self._check_window(view.date, view.date)
        if self.params.brain == "llm":
            self._check_budget(day)
        risk = self.alerts.update(view.portfolio.value) if self.alerts is not None else None
        settled = self._settle(view, day, risk)
        record: dict[str, Any] = {"brain": self.params.brain, "protocol": self.params.protocol}
        stance = ""
        if risk is not None:
            stance = risk_stance(risk)
            self.counts["alerts"] += risk.alert
            record["risk"] = {**risk.as_dict(), "stance": stance}
        if self.pool is None:
            self._select(view, day)
            record["selection"] = self.selection.model_dump()
        record["pool"] = list(self.pool)

        inputs = [self._gather(role, t, view) for t in self.pool for role in self.roles]
        answers = self._answer_all(inputs, day)
        if self.params.critics:  # numeric critics on the filing and call analysts' claims (agents/critics)
            if getattr(self, "critics", None) is None or self.critics.brain is not self.brain:
                self.critics = NumericCritics.for_team(self)
            answers, record["critics"] = self.critics.review(inputs, answers, day)
        reports: dict[str, list[AnalystReport]] = {t: [] for t in self.pool}
        for inp, ans in zip(inputs, answers):
            reports[inp.ticker].append(ans.report)

        reflections = (
            tuple(e.text for e in self.reflections.recent(view.date, self.params.reflections, ["reflection"]))
            if self.params.reflections
            else ()
        )
        recalled = self._recall(reports, view.date)
        self._recalled = tuple(m.id for m in recalled)
        task = ManagerTask(
            day=day,
            tickers=self.pool,
            reports=reports,
            weights=self.role_weights,
            reflections=reflections,
            decisions=tuple(m.text for m in recalled),
            stance=stance,
            beliefs=self.beliefs.for_manager(),
            exposure=self.risk_exposure if stance else 1.0,
            hold_band=self.params.hold_band,
            unit_cost=self.unit_costs(view),
            position={t: float(view.portfolio.weights.get(t, 0.0)) for t in self.pool},
        )
        decision, m_ans, m_rec = self._manage(task, view, day)
        decision, policy_notes = enforce(decision, self.params.policies, any(a.report.insights for a in answers))
        if policy_notes:
            m_rec = {**m_rec, "policy": policy_notes}
        reflected = settled or {}
        made = sum(a.calls for a in answers) + m_ans.calls + reflected.get("reflection_calls", 0)
        reused = sum(a.via == "reuse" for a in answers) + (m_ans.via == "reuse")
        self.counts["days"] += 1
        if self.counts["days"] % MEMORY_FLUSH_DAYS == 0:
            self.memory.flush()
        record["agents"] = [self._agent_record(i, a) for i, a in zip(inputs, answers)]
        record["manager"] = {
            "via": m_ans.via,
            "calls": m_ans.calls,
            "keys": [k[:16] for k in m_ans.keys],
            "reflections_read": len(reflections),
            "decisions_recalled": list(self._recalled),
            **m_rec,
        }
        record["calls"] = {
            "made": made,
            "reused": reused,
            "skipped": sum(a.via == "empty" for a in answers),
            "fallbacks": sum(a.via == "fallback" for a in answers)
            + (m_ans.via == "fallback")
            + (reflected.get("reflection_via") == "fallback"),
        }
        if settled:
            record["settled"] = settled
        # today's closes: what the risk-control component attributes tomorrow's PnL with
        record["closes"] = {t: round(float(view.price(t)), 6) for t in self.universe}
        self._remember(view, day, decision, inputs, answers)  # learning rewards what the manager cited
        evidence, basis = self._evidence(decision, reports, view)
        if basis:
            record["evidence_basis"] = basis
        return Decision(
            weights=decision.weights,
            rationale=decision.rationale,
            evidence=evidence,
            actions=decision.actions,
            record=record,
        )

    def _evidence(self, decision: Decision, reports: Mapping[str, list[AnalystReport]], view) -> tuple[tuple, str]:
        """What the day rests on, for decisions.jsonl and explain: the ids the
        manager cited; on a day that keeps or opens a position but cites
        nothing, the items of the reports on the side of the book it leaves
        (every report it weighed when none is on that side), said so in
        ``basis``. Learning is untouched: it rewards the manager's own citations."""
        if decision.evidence:
            return tuple(decision.evidence), ""
        held = view.portfolio.weights if view.portfolio is not None else {}
        ids: list[str] = []
        for t in sorted(reports):
            w = float(decision.weights.get(t, held.get(t, 0.0)))
            if abs(w) < 1e-9:
                continue
            side = "bullish" if w > 0 else "bearish"
            weighed = [r for r in reports[t] if r.insights]
            on_side = [r for r in weighed if r.direction == side] or weighed
            on_side.sort(key=lambda r: (-self.role_weights.get(r.role, 0.0) * r.confidence, r.role))
            ids += list(dict.fromkeys(c for r in on_side for c in r.cited_ids()[:2]))[:5]  # each ticker its own
        ids = list(dict.fromkeys(ids))
        if not ids:
            return (), ""
        return tuple(ids), "the manager cited nothing: the items of the reports on the side of the position it keeps"

    def _recall(self, reports: Mapping[str, list[AnalystReport]], date) -> list:
        """The manager's past decisions most relevant to today's reports
        (query: each report's direction and insights), ranked as the
        analysts' memories are; empty before the first settled decision."""
        if self.decisions is None or not len(self.decisions):
            return []
        query = " ".join(
            f"{t} {r.role} {r.direction}. " + " ".join(i.text for i in r.insights)
            for t, rs in sorted(reports.items())
            for r in rs
        )
        return self.decisions.retrieve(query, date, k=self.params.decision_memory_k)

    def _check_budget(self, day: str) -> None:
        try:
            self.client.check_budget()
        except BudgetExhausted as exc:
            self.stopped = f"{exc}; stopped before {day}, results kept to its close, undecided"
            self.ledger.record_event("budget_stop", self.protocol.agent, day, reason=str(exc))
            raise StopRun(self.stopped) from None

    def _select(self, view, day: str) -> None:
        cands = tuple(self.params.candidates)
        rets = view.returns(self.params.selection_lookback)[list(cands)]
        pool, report = STOCK_SELECTION.select(rets, self.params.pool_size, day)
        self.pool, self.selection = tuple(pool), report
        self._check_window(view.date, view.date)

    def _memory(self, role: EventRole, ticker: str):
        key = role.agent(ticker)
        if key not in self._mems:
            completer = None
            if self.params.distill == "llm":
                # a server down or a replay miss ends the day as an analyst's call would (no lexicon stand-in)
                completer = AskCompleter(self.client, f"{key}/distill", (LLMUnavailable, CacheMiss, BudgetExhausted))
            self._mems[key] = role.open(
                self.memory,
                self.events,
                ticker,
                self.params.memory_k,
                {
                    "transcripts": self.params.transcripts,
                    "cache_dir": self.params.transcript_cache,
                    "distiller": self.distiller,
                    "completer": completer,
                },
            )
        return self._mems[key]

    def _context(self, role, view) -> str:
        """What an agent reads besides its items: its beliefs, or what the
        protocol gives it (a single trader: its own recent reflections)."""
        own = getattr(self.protocol, "analyst_context", None)
        return own(self, view) if own is not None else self.beliefs.for_agent(role.name)

    def _gather(self, role, ticker: str, view) -> RoleInputs:
        if isinstance(role, EventRole):
            baseline = self._tones.setdefault(role.agent(ticker), ToneBaseline())
            try:  # the items are distilled by the model with distill: llm
                inputs, _ = role.gather(self._memory(role, ticker), ticker, view.events, self.params.memory_k,
                                        beliefs=self._context(role, view), baseline=baseline,
                                        budget=self.params.analyst_budget_tokens)  # fmt: skip
            except (LLMUnavailable, BudgetExhausted) as exc:
                day = f"{view.date:%Y-%m-%d}"
                self.stopped = (f"LLM unavailable on {day}: {exc}" if isinstance(exc, LLMUnavailable) else
                                f"{exc}; stopped on {day}, results kept to its close, undecided")  # fmt: skip
                raise StopRun(self.stopped) from None
            return inputs
        return role.gather(view, ticker, self.params.lookback, beliefs=self._context(role, view))


def reask_counts(events) -> dict[str, int]:
    """How often an answer contradicted itself (buy/sell with size 0) or left
    the prompt's language: re-asked once, and when the second answer failed
    too, resolved by the stated rule (the rules brain's answer, a counted
    fallback)."""

    out = {}
    for marker in (CONTRADICTION, LANGUAGE):
        out[f"team_reasks_{marker}"] = sum(
            e["event"] == "reask" and f"{marker}:" in str(e.get("error", "")) for e in events
        )
        out[f"team_resolved_{marker}"] = sum(
            e["event"] == "failure" and f"{marker}:" in str(e.get("errors", "")) for e in events
        )
    return out


def _overlap(first: pd.Timestamp, last: pd.Timestamp, lo: pd.Timestamp, hi: pd.Timestamp) -> str:
    """The part of the run's window the corpus covers, or the corpus' span when they do not meet."""
    a, b = max(first, lo), min(last, hi)
    return f"{a.date()}..{b.date()}" if a <= b else f"{lo.date()}..{hi.date()}"
