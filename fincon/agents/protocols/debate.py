"""The ``debate`` protocol (FinDebate): on an earnings-call day, five
specialists read the call through retrieval, write one report, and one round
of *safe* debate refines it; on other days the FinCon manager decides.

An **earnings-call day** for a ticker is a day on which one of its
``earnings_call`` events became visible (published after the previous
trading day's decision time, at or before today's). That day:

1. **Transcript.** The call is read as the earnings-call analyst reads it:
   through Whisper via the information layer (cached by audio hash), or the
   event text with ``transcripts="text"`` (tests) or when it has no audio.
2. **Structure-aware chunks** (:func:`chunk_transcript`): the transcript is
   split by section (prepared remarks / Q&A: a header line, or the
   operator's cue "we will now take your questions") and by speaker turn
   (``Name:`` / ``Name -- Title:`` at a line start). A turn is one chunk,
   never cut, unless it is longer than :data:`MAX_CHUNK_CHARS`; then it is
   split at paragraph, then sentence boundaries (the paper's recursive
   order), each part keeping its speaker and section. A transcript with no
   speaker cues (what Whisper hears, the bundled scripts) has sentences as
   its only structure: one chunk per sentence. Chunks go into a chromadb
   collection of their own (:data:`COLLECTION`) in the team's store, with
   the team's embedder.
3. **Five specialists** (earnings, market, sentiment, valuation, risk)
   each retrieve their top :data:`TOP_K` chunks of that call with their own
   query and give a view (direction, confidence, horizon of 1, 5 or 20
   trading days, cited chunk ids). A **synthesis** writes the one report.
4. **Safe debate, one round.** Trust adds supporting evidence (it has no
   direction to give), Skeptic reads the specialists' evidence (the chunks
   they cited, each with who cited it, and the report's call, not its
   prose) and adds risks, a hedge and a lowered confidence, Leader writes
   the final report. If the Leader's direction
   differs from the report's, the original report stands (counted: flips
   prevented). A neutral report has no recommendation to refine: no debate
   (the paper's Algorithm 1, line 2).
5. **Decision.** One ticker: bullish = buy, bearish = sell, neutral =
   hold, sized by the conviction (the final confidence). The call stands
   over its horizon: for that many decisions (the call day first) the ticker
   follows it, then the FinCon manager decides again (a new call replaces
   it). Portfolio: the FinCon manager answers as usual, then each debated
   (or still standing) ticker's direction replaces the manager's, and the
   optimizer sizes the book.

Every role has a deterministic rules answer (Loughran-McDonald tone of its
retrieved chunks; Trust = keep; Skeptic = cut confidence by the risk-word
share; Leader = combine), so ``--brain rules`` runs in seconds. A ``Reuse``
brain (the team's inputs hashed like the previous day's) answers with the
stored final outcome, no call.

Where things are: this module finds the call days, indexes and retrieves
chunks (the only debate module touching the chromadb store), schedules the
debates and turns them into the day's decision (standing calls, sizing, the
portfolio merge, the counts); :mod:`.debate_round` runs one debate of one
event, stage by stage (every question of a debate is asked there);
:mod:`.debate_chunks` cuts transcripts, :mod:`.debate_schemas` holds the
models, :mod:`.debate_prompts` builds every message a model reads,
:mod:`.debate_rules` the deterministic roles.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Sequence

import pandas as pd

from fincon import memory
from fincon.agents.brains import Answer, ManagerTask, Reuse
from fincon.agents.protocols.debate_chunks import MAX_CHUNK_CHARS, Chunk, chunk_transcript
from fincon.agents.protocols.debate_round import DebateRound
from fincon.agents.protocols.debate_schemas import (
    SPECIALISTS,
    Debate,
    DebateReport,
    LeaderAnswer,
    Outcome,
    View,
)
from fincon.agents.protocols.fincon import FinConManager
from fincon.agents.reports import ManagerReport
from fincon.agents.roles.base import make_transcriber
from fincon.data.events.model import visible_day
from fincon.errors import DataError
from fincon.memory.collections import open_collection
from fincon.strategies.base import Decision

__all__ = [
    "SPECIALISTS",
    "DebateProtocol",
    "LeaderAnswer",
    "Outcome",
    "chunk_transcript",
    "Chunk",
    "MAX_CHUNK_CHARS",
    "View",
    "DebateReport",
    "Debate",
]

COLLECTION = "fincon-debate-chunks"
TOP_K = 3


# -- the protocol ------------------------------------------------------------------


@dataclass
class Counts:
    debate_days: int = 0
    debates: int = 0
    flips_prevented: int = 0
    neutral_skipped: int = 0
    fallback_days: int = 0
    reused_days: int = 0
    calls: int = 0
    fallbacks: int = 0
    chunks: int = 0
    held_days: int = 0
    events: list[str] = field(default_factory=list)


class DebateProtocol:
    name = "debate"
    agent = "manager"

    def __init__(
        self,
        lookback: int = 60,
        transcripts: str = "whisper",
        transcript_cache: str | None = None,
        top_k: int = TOP_K,
        sources: Sequence[str] = ("earnings_call",),
        retrieval_model: str | None = None,
    ):
        """``sources``: the event sources a debate reads (earnings calls; the
        filings evaluation: ``10-K``, ``10-Q``). ``retrieval_model``: the
        sentence-transformers model (a local directory, or a hub name such as a
        finance-tuned model, downloaded only when the user allows it) that
        embeds the chunks; None: the team's embedder (offline by default)."""
        self.fincon = FinConManager(lookback=lookback)
        self.sources = tuple(sources)
        self.retrieval_model = retrieval_model
        #: ticker -> [final report, decisions left]: a debated call stands over its horizon
        self.standing: dict[str, list] = {}
        self.transcripts = transcripts
        self.transcript_cache = transcript_cache
        self.top_k = top_k
        self.counts = Counts()
        self.memory = self.events = None
        self._col = None
        self._transcriber = None

    @classmethod
    def from_params(cls, params) -> "DebateProtocol":
        return cls(
            lookback=params.lookback,
            transcripts=params.transcripts,
            transcript_cache=params.transcript_cache,
            sources=tuple(getattr(params, "debate_sources", None) or ("earnings_call",)),
            retrieval_model=getattr(params, "retrieval_model", None),
        )

    # the FinCon manager's sampling is the protocol's (training sets it on the protocol)
    @property
    def sampling(self):
        return self.fincon.sampling

    @sampling.setter
    def sampling(self, value):
        self.fincon.sampling = value

    def bind(self, team) -> None:
        self.memory, self.events = team.memory, team.events
        embedder, name = team.memory.embedder, COLLECTION
        if self.retrieval_model:
            # any sentence-transformers model; its own collection (another vector space)
            embedder = memory.MiniLMEmbedder(self.retrieval_model)
            embedder.model()  # load now: a bad name fails before the first day, not on a call day
            name = f"{COLLECTION}-{re.sub(r'[^A-Za-z0-9_-]+', '-', self.retrieval_model.strip('/')).strip('-')[-40:]}"
        self._col = open_collection(team.memory.client, name, embedder)

    def digest(self, task, view) -> list[str]:
        """What besides the reports this protocol's decision depends on (the
        team adds it to its reuse hash): the ids of today's new calls, so a
        call day is never answered with yesterday's stored decision."""
        return sorted(e.id for t in task.tickers for e in self.new_calls(t, view)) + sorted(
            f"{t}:{r.event_id}:{left}" for t, (r, left) in self.standing.items() if t in task.tickers
        )

    # -- reading the call ------------------------------------------------------------
    def new_calls(self, ticker: str, view) -> list:
        """Calls of ``ticker`` that became visible after the previous trading
        day's decision time (the first day of data: today's calendar day)."""
        dates = view.dates(2)
        since = dates[0] if len(dates) > 1 else view.date - pd.Timedelta(days=1)
        return view.events.events(ticker, sources=list(self.sources), since=since)

    def transcript(self, event) -> str:
        audio = self.events.audio_path(event) if event.audio else None
        if self.transcripts == "text" or audio is None:
            if not event.text and audio is not None:  # an empty call, read without a word
                raise DataError(f"{event.id} has audio and no text, and the debate reads calls as text "
                                "(transcripts=text): give the call's text, or --param fincon.transcripts=whisper")  # fmt: skip
            return event.text or ""
        if self._transcriber is None:
            self._transcriber = make_transcriber({"cache_dir": self.transcript_cache})
        return self._transcriber(audio)

    def index(self, event) -> list[Chunk]:
        day = str(visible_day(event.published_at).date())
        chunks = chunk_transcript(self.transcript(event), event.id, event.ticker, day)
        have = set(self._col.get(ids=[c.id for c in chunks], include=[])["ids"]) if chunks else set()
        new = [c for c in chunks if c.id not in have]
        if new:
            self._col.add(
                ids=[c.id for c in new], documents=[c.text for c in new], metadatas=[c.metadata() for c in new]
            )
        return chunks

    def retrieve(self, chunks: Sequence[Chunk], query: str) -> list[Chunk]:
        """Top chunks of this call for ``query`` from the chromadb collection.

        chromadb ranks every chunk of the call (a call has tens of chunks);
        the top k are taken here with ties broken by the chunk's order in
        the call: a query many chunks match equally (the hashing embedder
        often gives equal distances) must not pick among them at random, or
        a replayed run would ask other questions than the recorded one."""
        if not chunks:
            return []
        res = self._col.query(
            query_texts=[query], n_results=len(chunks), where={"event_id": chunks[0].event_id}, include=["distances"]
        )
        order = {c.id: n for n, c in enumerate(chunks)}
        by_id = {c.id: c for c in chunks}
        got = sorted(
            ((i, d) for i, d in zip(res["ids"][0], res["distances"][0]) if i in by_id),
            key=lambda x: (round(float(x[1]), 6), order[x[0]]),
        )
        return [by_id[i] for i, _ in got[: self.top_k]]

    # -- one debate ------------------------------------------------------------------
    def debate(self, brain, event, day: str) -> tuple[Debate, int, int, list[str]]:
        """Specialists -> report -> Trust, Skeptic, Leader -> safe final report
        on ``event`` (:class:`.debate_round.DebateRound`), over its chunks in
        this protocol's collection. Returns the debate, model calls, fallbacks
        and cache keys."""
        return DebateRound(brain, event, day, self.index(event), self.retrieve, self.sampling).run()

    # -- the day ---------------------------------------------------------------------
    def decide(
        self, brain, task: ManagerTask, view, universe: tuple[str, ...]
    ) -> tuple[Decision, Answer, dict[str, Any]]:
        if isinstance(brain, Reuse):
            self.counts.reused_days += 1
            stored = brain.report
            if isinstance(stored, Outcome):
                decision, _, rec = self.fincon.decide(Reuse(stored.manager), task, view, universe)
                return decision, Answer(stored, "reuse"), {**rec, "debate": [d.model_dump() for d in stored.debates]}
            return self.fincon.decide(brain, task, view, universe)

        calls = [e for t in task.tickers for e in self.new_calls(t, view)]
        # a debated call stands over its horizon: the ticker follows it for that many decisions
        held = {t: r for t, (r, left) in self.standing.items() if t in task.tickers and left > 0}
        if not calls and not held:
            self.counts.fallback_days += 1
            return self.fincon.decide(brain, task, view, universe)

        debates, n_calls, n_fallbacks, keys = [], 0, 0, []
        for event in calls:  # several calls of one ticker on one day: the latest decides
            d, c, f, k = self.debate(brain, event, task.day)
            debates.append(d)
            n_calls, n_fallbacks, keys = n_calls + c, n_fallbacks + f, keys + k
        fresh = {d.ticker: d.final for d in debates}
        for t, r in fresh.items():  # today's call counts as the first of its horizon's decisions
            self.standing[t] = [r, r.horizon - 1] if r.direction != "neutral" else [r, 0]
        for t in held:
            if t not in fresh:
                self.standing[t][1] -= 1
        held = {t: r for t, r in held.items() if t not in fresh}
        final = {**held, **fresh}
        action = {t: {"bullish": "buy", "bearish": "sell", "neutral": "hold"}[r.direction] for t, r in final.items()}
        relied = list(dict.fromkeys(i for r in final.values() for i in r.cited_ids()))[:5]
        note = "; ".join(
            [
                f"{t}: debated {r.event_id} -> {r.direction} {r.confidence:.2f}, {r.horizon}-day horizon"
                for t, r in fresh.items()
            ]
            + [
                f"{t}: holding the call on {r.event_id} ({r.direction} {r.confidence:.2f}, "
                f"{self.standing[t][1]} of {r.horizon} days left)"
                for t, r in held.items()
            ]
        )
        if not task.portfolio:
            t = task.tickers[0]
            r = final[t]
            # the position size follows the conviction: the final confidence; a CVaR alert cuts it for the
            # day as it cuts the manager's (the manager is not asked on a debated day: it went uncut)
            size = round(min(1.0, max(0.0, r.confidence)) * task.exposure, 4) if r.direction != "neutral" else 0.0
            if task.exposure < 1.0:
                note += f"; risk alert: exposure cut to {task.exposure:.0%}"
            mr = ManagerReport(
                actions={t: action[t]}, size=size, rationale=f"{note}. {r.summary}"[:600], relied_on=relied
            )
        else:
            base = brain.answer(self.fincon.question(task))
            n_calls, n_fallbacks, keys = (
                n_calls + base.calls,
                n_fallbacks + (base.via == "fallback"),
                keys + list(base.keys),
            )
            m: ManagerReport = base.report
            mr = m.model_copy(
                update={
                    "actions": {**m.actions, **action},
                    "rationale": f"{note}; others as the manager: {m.rationale}"[:600],
                    "relied_on": list(dict.fromkeys(relied + list(m.relied_on)))[:5],
                }
            )
        self.counts.held_days += bool(held) and not fresh
        decision, _, rec = self.fincon.decide(Reuse(mr), task, view, universe)
        c = self.counts
        c.debate_days += bool(fresh)
        c.debates += sum(d.debated for d in debates)
        c.neutral_skipped += sum(not d.debated for d in debates)
        c.flips_prevented += sum(d.flip_prevented for d in debates)
        c.calls += n_calls
        c.fallbacks += n_fallbacks
        c.chunks += sum(d.chunks for d in debates)
        c.events += [d.event_id for d in debates]
        via = getattr(brain, "name", "rules")
        via = "fallback" if n_fallbacks else ("llm" if via == "llm" else "rules")
        ans = Answer(Outcome(manager=mr, debates=debates), via, n_calls, tuple(keys))
        return decision, ans, {**rec, "debate": [d.model_dump() for d in debates]}

    def summary(self) -> dict[str, Any]:
        c = self.counts
        return {
            "debate_days": c.debate_days,
            "debate_debates": c.debates,
            "debate_flips_prevented": c.flips_prevented,
            "debate_neutral_skipped": c.neutral_skipped,
            "debate_fallback_days": c.fallback_days,
            "debate_reused_days": c.reused_days,
            "debate_calls": c.calls,
            "debate_fallbacks": c.fallbacks,
            "debate_chunks": c.chunks,
            "debate_held_days": c.held_days,
            "debate_events": list(c.events),
            # the days it left to the FinCon manager: what that manager counted (hold band, 1/N days, cash)
            **{k: v for k, v in self.fincon.summary().items() if v},
        }
