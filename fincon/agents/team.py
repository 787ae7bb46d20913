"""``fincon``: the FinCon agent team as a Strategy; ``decide(view)`` is its day.

One day, in order:

1. refuse a day the event corpus does not cover; check the token budget;
2. settle yesterday: its P&L from today's closes; a loss becomes a
   reflection in the manager's episodic memory, a profit gives the memory
   ids the manager relied on the access bonus (``AnalystMemory.reward``, +5);
3. portfolios with ``candidates``: on the first day the stock-selection
   analyst picks the traded pool;
4. every analyst, for every traded ticker: ``AnalystMemory.step(t)`` (or the
   market view) -> inputs -> hash. An unchanged hash reuses the agent's
   previous report with no model call (counted: ledger event ``reuse``);
   inputs with nothing to read give an empty neutral report, no call;
   the rest go to the brain, concurrently up to the LLM concurrency;
5. the protocol (the manager) turns the reports, its reflections, the risk
   stance and the beliefs (empty for now) into a ``Decision``.

The ``Decision`` carries a per-day ``record`` (every report with its
citations, the manager's rationale and relied-on ids, calls made and
reused) that the engine writes into ``decisions.jsonl``.

Point in time: events come from ``EventStore.view_at`` (inside
``AnalystMemory.step``), prices from the ``MarketView``, reflections from
episodic memory up to today; memory decay runs on the simulated date.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from fincon.agents.beliefs import RISK, Beliefs, Reflection
from fincon.agents.brains import Answer, LLMBrain, ManagerTask, Reuse, RulesBrain, analyst_question
from fincon.agents.policies import Policies, enforce
from fincon.agents.protocols import make_protocol
from fincon.agents.reports import AnalystReport
from fincon.agents.roles import ANALYSTS, STOCK_SELECTION
from fincon.agents.roles.base import EventRole, RoleInputs, ToneBaseline
from fincon.errors import ConfigError
from fincon.strategies.base import Decision, RunContext, StopRun, Strategy

log = logging.getLogger(__name__)

EmbedderName = Literal["auto", "hashing", "minilm"]


class FinConParams(BaseModel):
    """``strategy_params.fincon`` (``--param fincon.KEY=VALUE``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    brain: Literal["llm", "rules"] = "llm"
    #: "sample" (the bundled synthetic corpus) or a directory in the event format
    events: str = "sample"
    #: analysts that report (default: all); drop one for an ablation, e.g. without news
    analysts: list[str] | None = None
    #: portfolio: candidate tickers the stock-selection analyst picks the pool from
    candidates: list[str] | None = None
    pool_size: int = Field(3, ge=1)
    #: auto = hashing for the rules brain (deterministic, no model), minilm for the llm brain
    embedder: EmbedderName = "auto"
    memory_k: int = Field(5, ge=1, le=5)
    lookback: int = Field(60, ge=10, description="days of history for indicators and the optimizer")
    selection_lookback: int = Field(126, ge=20, description="days of returns the stock selection clusters")
    #: whisper: calls are heard through Whisper (cached by audio hash); text: read the event text (tests)
    transcripts: Literal["whisper", "text"] = "whisper"
    #: where Whisper transcripts are cached by audio hash (default ~/.cache/fincon); the demo ships its own
    transcript_cache: str | None = None
    #: the decision step after the analysts (fincon/agents/protocols: fincon, ...)
    protocol: str = "fincon"
    #: debate: the event sources a debate reads (earnings calls; filings: ["10-K", "10-Q"])
    debate_sources: list[str] = Field(default_factory=lambda: ["earnings_call"])
    #: debate: a sentence-transformers model (directory or hub name) for the chunks' retrieval;
    #: None: the team's embedder (offline by default)
    retrieval_model: str | None = None
    #: scm: Strategist samples per day (self-consistency)
    samples: int = Field(3, ge=1, le=9)
    #: numeric critics on the analysts' claims about filings and calls before the protocol sees them
    critics: bool = False
    #: trading policies enforced in code after every protocol
    policies: Policies = Field(default_factory=Policies)
    reflections: int = Field(3, ge=0, le=10, description="recent reflections the manager reads")
    #: within-episode risk control: a CVaR alert makes the manager risk-averse for the day (off: the ablation)
    cvar: bool = True
    #: CVaR tail level of the alert (the paper: 1 %)
    cvar_alpha: float = Field(0.01, gt=0.0, lt=0.5)
    #: daily PnLs needed before an alert can fire
    cvar_min_obs: int = Field(2, ge=1)
    #: learned beliefs (and reflections) to start from: a beliefs.json or a `fincon train` run dir
    beliefs: str | None = None
    #: training only: log-normal noise on the rules weights of this episode (exploration), and its seed
    explore: float = Field(0.0, ge=0.0, le=2.0)
    explore_seed: int = 0
    #: training only (llm brain): the manager samples at this temperature with this seed, so episodes
    #: differ while the analysts stay at the run's sampling and hit the cache when their inputs repeat
    manager_temperature: float | None = Field(None, ge=0.0, le=2.0)
    manager_seed: int | None = None
    #: LLM settings for this strategy, over the run's llm section
    llm: dict[str, Any] = Field(default_factory=dict)

    @field_validator("analysts")
    @classmethod
    def _known(cls, v):
        if v is None:
            return v
        bad = [a for a in v if a not in ANALYSTS]
        if bad:
            raise ValueError(f"unknown analyst {bad[0]!r}; choose from {', '.join(ANALYSTS)}")
        if not v:
            raise ValueError("at least one analyst is needed")
        return list(dict.fromkeys(v))

    @field_validator("protocol")
    @classmethod
    def _protocol(cls, v):
        from fincon.agents.protocols import PROTOCOLS, protocol_names

        if v not in PROTOCOLS:
            raise ValueError(f"unknown protocol {v!r}; choose from {', '.join(protocol_names())}")
        return v

    @field_validator("candidates")
    @classmethod
    def _upper(cls, v):
        return None if v is None else [t.upper() for t in v]


@dataclass
class _Previous:
    """What yesterday's decision needs to be settled today."""

    day: str
    weights: dict[str, float]
    closes: dict[str, float]
    relied: dict[str, list[str]]  # memory id -> agents ("role/ticker") whose memory holds it
    summary: str


def load_events(spec: str, tickers):
    """The run's event store: the bundled corpus or a directory corpus."""
    from fincon.data.events.sources import build_store

    if spec == "sample":
        return build_store([{"type": "sample"}], tickers)
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ConfigError(f"strategy_params.fincon.events: {spec!r} is neither 'sample' nor an event directory")
    return build_store([{"type": "directory", "path": path}], tickers)


def coverage(store, tickers) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """Per ticker: first and last day on which one of its events became visible."""
    from fincon.data.events.model import visible_day

    out: dict[str, tuple[pd.Timestamp, pd.Timestamp]] = {}
    for e in store.all_events():
        if e.ticker in tickers:
            d = visible_day(e.published_at)
            lo, hi = out.get(e.ticker, (d, d))
            out[e.ticker] = (min(lo, d), max(hi, d))
    return out


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


class FinConTeam(Strategy):
    name = "fincon"
    Params = FinConParams

    def __init__(self, params: FinConParams | None = None, settings=None, client=None):
        self.params = params or FinConParams()
        p = self.params
        self.settings = settings
        self._client = client
        self._owns_client = client is None
        self.roles = [ANALYSTS[a] for a in (p.analysts or list(ANALYSTS))]
        self.warmup = max(p.lookback, p.selection_lookback if p.candidates else 0) + 1
        self.protocol = make_protocol(p.protocol, p)
        self.stopped: str | None = None

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
        self.events = load_events(p.events, self.universe)
        self.coverage = coverage(self.events, self.universe)
        for t in self.universe:
            if t not in self.coverage:
                raise ConfigError(
                    f"event corpus {p.events!r} has no events for {t}; fincon needs events for every ticker"
                )
        cfg = ctx.config or {}
        if cfg.get("start") and cfg.get("end"):
            self._check_window(pd.Timestamp(cfg["start"]), pd.Timestamp(cfg["end"]))
        from fincon.memory.store import MemoryStore

        self.memory = MemoryStore(Path(ctx.run_dir) / "memory", self._embedder())
        self.reflections = self.memory.episodic(self.protocol.agent)
        self._load_beliefs(ctx)
        from fincon.risk.cvar_alert import CvarAlert

        self.alerts = CvarAlert(p.cvar_alpha, p.cvar_min_obs) if p.cvar else None
        if hasattr(self.protocol, "bind"):
            self.protocol.bind(self)
        self.written: list[Reflection] = []
        if p.brain == "llm":
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
            from fincon.llm.ledger import UsageLedger

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

    def _load_beliefs(self, ctx: RunContext) -> None:
        """Beliefs in force for the run: learned ones (``beliefs``) or the
        untrained defaults; in training, this episode's exploration noise on
        the rules weights. Learned reflections go into episodic memory, dated
        when they were written (all before a test window)."""
        from fincon.agents.beliefs import as_params

        p = self.params
        base = Beliefs.initial({r.name: r.weight for r in self.roles})
        learned = as_params(p.beliefs)
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
        start = pd.Timestamp((ctx.config or {}).get("start") or "1900-01-01")
        for r in base.reflections:
            if pd.Timestamp(r.day) < start:
                self.reflections.add(pd.Timestamp(r.day), "reflection", r.text, {"learned": True})

    @property
    def client(self):
        if self._client is None:
            from fincon.llm.settings import LLMSettings, build_client

            self._client = build_client(self.settings or LLMSettings())
        return self._client

    def _embedder(self):
        from fincon.memory.embedders import HashingEmbedder, MiniLMEmbedder

        name = self.params.embedder
        if name == "auto":
            name = "hashing" if self.params.brain == "rules" else "minilm"
        return HashingEmbedder() if name == "hashing" else MiniLMEmbedder()

    def check_inputs(self, tickers, first: pd.Timestamp, last: pd.Timestamp) -> None:
        """What :meth:`start` would refuse, checked without writing anything:
        candidates among the tickers, an event corpus covering the window for
        every ticker, readable learned beliefs. Commands that create their own
        directory first (train, experiment) call it before they do."""
        from fincon.agents.beliefs import as_params

        p = self.params
        self.universe = tuple(tickers)
        missing = [t for t in (p.candidates or ()) if t not in self.universe]
        if missing:
            raise ConfigError(
                f"strategy_params.fincon.candidates: {missing[0]} is not among the run's tickers "
                f"({', '.join(self.universe)})"
            )
        self.coverage = coverage(load_events(p.events, self.universe), self.universe)
        for t in self.universe:
            if t not in self.coverage:
                raise ConfigError(
                    f"event corpus {p.events!r} has no events for {t}; fincon needs events for every ticker"
                )
        self._check_window(first, last)
        as_params(p.beliefs)

    def _check_window(self, first: pd.Timestamp, last: pd.Timestamp) -> None:
        for t in getattr(self, "pool", None) or self.universe:
            lo, hi = self.coverage[t]
            if first < lo or last > hi:
                raise ConfigError(
                    f"event corpus {self.params.events!r} covers {t} from {lo.date()} to {hi.date()}; "
                    f"the run asks for {first.date()}..{last.date()} (pick a window inside it or another --events)"
                )

    def finish(self, ctx: RunContext) -> Mapping[str, Any]:
        c = getattr(self, "counts", None)
        if c is None:
            return {}
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
            "team_cvar": self.params.cvar,
            "team_alerts": c["alerts"],
            "team_beliefs_version": self.beliefs.version,
            "team_weights": {k: round(v, 6) for k, v in sorted(self.role_weights.items())},
            **(self.critics.summary() if self.params.critics and getattr(self, "critics", None) else {}),
        }
        (Path(ctx.run_dir) / "reflections.json").write_text(
            json.dumps([r.model_dump() for r in self.written], indent=1) + "\n", encoding="utf-8"
        )
        if self.params.brain == "llm" and self._client is not None:
            self.ledger.write(ctx.run_dir)
            out.update(self.ledger.summary())
            if self.stopped:
                out["llm_stop_reason"] = self.stopped
            if self._owns_client:
                self._client.close()
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

    # -- the day ---------------------------------------------------------------
    def decide(self, view) -> Decision | None:
        day = str(view.date.date())
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
            from fincon.agents.critics import NumericCritics

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
        task = ManagerTask(
            day=day,
            tickers=self.pool,
            reports=reports,
            weights=self.role_weights,
            reflections=reflections,
            stance=stance,
            beliefs=self.beliefs.for_manager(),
            exposure=self.risk_exposure if stance else 1.0,
            position={t: round(float(view.portfolio.weights.get(t, 0.0)), 1) for t in self.pool},
        )
        decision, m_ans, m_rec = self._manage(task, view, day)
        decision, policy_notes = enforce(decision, self.params.policies, any(a.report.insights for a in answers))
        if policy_notes:
            m_rec = {**m_rec, "policy": policy_notes}
        made = sum(a.calls for a in answers) + m_ans.calls
        reused = sum(a.via == "reuse" for a in answers) + (m_ans.via == "reuse")
        self.counts["days"] += 1
        record["agents"] = [self._agent_record(i, a) for i, a in zip(inputs, answers)]
        record["manager"] = {
            "via": m_ans.via,
            "calls": m_ans.calls,
            "keys": [k[:16] for k in m_ans.keys],
            "reflections_read": len(reflections),
            **m_rec,
        }
        record["calls"] = {
            "made": made,
            "reused": reused,
            "skipped": sum(a.via == "empty" for a in answers),
            "fallbacks": sum(a.via == "fallback" for a in answers) + (m_ans.via == "fallback"),
        }
        if settled:
            record["settled"] = settled
        # today's closes: what the risk-control component attributes tomorrow's PnL with
        record["closes"] = {t: round(float(view.price(t)), 6) for t in self.universe}
        self._remember(view, day, decision, inputs, answers)
        return Decision(
            weights=decision.weights,
            rationale=decision.rationale,
            evidence=decision.evidence,
            actions=decision.actions,
            record=record,
        )

    def _check_budget(self, day: str) -> None:
        from fincon.llm.errors import BudgetExhausted

        try:
            self.client.check_budget()
        except BudgetExhausted as exc:
            self.stopped = f"{exc}; stopped before {day}, results saved up to the previous day"
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
            self._mems[key] = role.open(
                self.memory,
                self.events,
                ticker,
                self.params.memory_k,
                {"transcripts": self.params.transcripts, "cache_dir": self.params.transcript_cache},
            )
        return self._mems[key]

    def _gather(self, role, ticker: str, view) -> RoleInputs:
        if isinstance(role, EventRole):
            baseline = self._tones.setdefault(role.agent(ticker), ToneBaseline())
            inputs, _ = role.gather(
                self._memory(role, ticker),
                ticker,
                view.date,
                self.params.memory_k,
                beliefs=self.beliefs.for_agent(role.name),
                baseline=baseline,
            )
            return inputs
        return role.gather(view, ticker, self.params.lookback, beliefs=self.beliefs.for_agent(role.name))

    def _answer_all(self, inputs: list[RoleInputs], day: str) -> list[Answer]:
        from fincon.llm.concurrency import run_concurrently
        from fincon.llm.errors import LLMUnavailable

        out: list[Answer | None] = [None] * len(inputs)
        tasks, slots = [], []
        for n, inp in enumerate(inputs):
            digest = inp.digest()
            prev = self._last.get(inp.agent)
            if not inp.items:
                out[n] = Answer(AnalystReport(role=inp.role, ticker=inp.ticker), "empty")
            elif prev is not None and prev[0] == digest:
                out[n] = Answer(prev[1].report, "reuse")
                self.ledger.record_event("reuse", inp.agent, day, digest=digest[:16])
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
            self._last[inputs[n].agent] = (inputs[n].digest(), ans)
        for a in out:
            self.counts["model_calls"] += a.calls
            self.counts["reused"] += a.via == "reuse"
            self.counts["skipped"] += a.via == "empty"
            self.counts["fallbacks"] += a.via == "fallback"
        return out  # type: ignore[return-value]

    def _manage(self, task: ManagerTask, view, day: str):
        from fincon.llm.errors import LLMUnavailable

        agent = self.protocol.agent
        digest = _digest(
            {
                "reports": {t: [r.model_dump() for r in rs] for t, rs in task.reports.items()},
                "reflections": task.reflections,
                "stance": task.stance,
                "beliefs": task.beliefs,
                "position": task.position,
                "weights": dict(task.weights),
                "exposure": task.exposure,
                # what else the protocol's decision depends on (e.g. the debate: today's new calls)
                "protocol": self.protocol.digest(task, view) if hasattr(self.protocol, "digest") else None,
            }
        )
        prev = self._last.get(agent)
        if prev is not None and prev[0] == digest:
            self.ledger.record_event("reuse", agent, day, digest=digest[:16])
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
            "calls": ans.calls,
            "keys": [k[:16] for k in ans.keys],
            "direction": r.direction,
            "confidence": r.confidence,
            "insights": [i.model_dump() for i in r.insights],
            # what the agent read, enough for `fincon explain` to quote each cited item
            "inputs": [{"id": i.id, "date": i.date, "source": i.source, "text": i.text[:160]} for i in inp.items],
        }

    # -- learning from yesterday -------------------------------------------------
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
        self._prev = _Previous(day, held, closes, relied, acts)

    def _settle(self, view, day: str, risk=None) -> dict[str, Any] | None:
        """Yesterday's P&L -> a reflection on a losing or CVaR-alert day; a
        profitable day rewards the memories relied on."""
        prev, self._prev = self._prev, None
        if prev is None:
            return None
        pnl = 0.0
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
        verdict = "profitable" if pnl > 0 else "a loss" if pnl < 0 else "flat"
        gross = sum(abs(w) for w in prev.weights.values())
        text = (
            f"{prev.day}: {prev.summary or 'no trade'} (gross exposure {gross:.2f}); by {day} this was "
            f"{verdict} ({pnl:+.2%}). Relied on: {', '.join(sorted(prev.relied)) or 'no memory'}."
        )
        alert = risk is not None and risk.alert
        if alert:
            text += f" CVaR alert: {risk.reason}; be more careful with exposure."
        # only losing or alert days become reflections (the paper's self-
        # reflection on an alert): they are what the manager must learn from,
        # and a reflection every day would change the manager's input daily
        # and cost it a model call every day
        out = {"day": prev.day, "pnl": round(pnl, 6), "rewarded": sorted(rewarded)}
        if self.params.reflections and (pnl < 0 or alert):
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


def make_fincon_team(params: Mapping[str, Any], llm: Mapping[str, Any]) -> FinConTeam:
    """Registry entry: team params, LLM settings = the run's llm section
    overridden by ``params['llm']``. Nothing is loaded before the run starts."""
    from fincon.validation import format_validation_error

    try:
        p = FinConParams.model_validate(dict(params))
    except ValidationError as exc:
        raise ConfigError(format_validation_error("strategy_params.fincon", exc, FinConParams)) from None
    settings = None
    if p.brain == "llm":
        from fincon.llm.settings import LLMSettings

        try:
            # answers are short but structured: 320 tokens leave room for the
            # longest valid one (the layer's default cap is 200)
            # and a portfolio manager's prompt with a re-ask needs more than the
            # layer's 2048-token context (the bundled Qwen models take 32k)
            settings = LLMSettings.model_validate({"answer_max_tokens": 320, "n_ctx": 4096, **dict(llm), **p.llm})
        except ValidationError as exc:
            raise ConfigError(format_validation_error("strategy_params.fincon.llm", exc, LLMSettings)) from None
    return FinConTeam(p, settings)
