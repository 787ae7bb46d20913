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
   direction to give), Skeptic adds risks, a hedge and a lowered
   confidence, Leader writes the final report. If the Leader's direction
   differs from the report's, the original report stands (counted: flips
   prevented). A neutral report has no recommendation to refine: no debate
   (the paper's Algorithm 1, line 2).
5. **Decision.** One ticker: bullish = buy, bearish = sell, neutral =
   hold, size 1 at confidence >= FULL_SIZE, else 0.5. Portfolio: the FinCon
   manager answers as usual, then each debated ticker's direction replaces
   the manager's, and the optimizer sizes the book.

Every role has a deterministic rules answer (Loughran-McDonald tone of its
retrieved chunks; Trust = keep; Skeptic = cut confidence by the risk-word
share; Leader = combine), so ``--brain rules`` runs in seconds. A ``Reuse``
brain (the team's inputs hashed like the previous day's) answers with the
stored final outcome, no call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from fincon.agents.brains import FULL_SIZE, NEUTRAL_BAND, Answer, ManagerTask, Question, Reuse
from fincon.agents.protocols.fincon import FinConManager
from fincon.agents.reports import Citation, Insight, InsightAnswer, ManagerReport, short_labels
from fincon.agents.roles.base import load_template
from fincon.strategies.base import Decision

HERE = Path(__file__).parent
COLLECTION = "fincon-debate-chunks"
#: a speaker turn longer than this is split at paragraph, then sentence boundaries
MAX_CHUNK_CHARS = 1200
#: a sentence shorter than this is merged with the next (unlabelled transcripts)
MIN_SENTENCE_CHARS = 40
TOP_K = 3
HORIZONS = (1, 5, 20)
#: the rules Skeptic cuts confidence by RISK_SCALE x the risk-word share, at most MAX_CUT
RISK_SCALE = 4.0
MAX_CUT = 0.5
CHUNK_CHARS_IN_PROMPT = 300

Direction = Literal["bullish", "bearish", "neutral"]
Horizon = Literal[1, 5, 20]


# -- chunking ----------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a call: a whole speaker turn (or a part of a
    too-long one, or a sentence of an unlabelled transcript)."""

    id: str
    event_id: str
    ticker: str
    day: str  # the day the call became visible
    section: str  # "prepared" or "qa"
    speaker: str
    turn: int
    part: int
    text: str

    def metadata(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "ticker": self.ticker,
            "day": self.day,
            "section": self.section,
            "speaker": self.speaker,
            "turn": self.turn,
            "part": self.part,
        }


_SECTION = re.compile(
    r"^\s*(?:#+\s*)?(?P<name>prepared remarks|presentation|management discussion|opening remarks|"
    r"questions?[- ]and[- ]answers?(?: session)?|q\s*&\s*a(?: session)?)\s*:?\s*$",
    re.I,
)
_SPEAKER = re.compile(
    r"^\s*(?P<speaker>(?:[A-Z][\w.'&]*)(?:\s+[A-Z][\w.'&]*){0,3})"
    r"(?:\s*(?:--|\u2014|\u2013|,)\s*(?P<title>[^:\n]{1,80}))?\s*:\s+(?P<text>\S.*)$"
)
_QA_CUE = re.compile(
    r"take (?:your |our first )?questions?|open (?:up )?the (?:line|floor)|question-and-answer session|"
    r"first question",
    re.I,
)
_SENT = re.compile(r"(?<=[.!?])\s+")
_NOISE = re.compile(r"synthetic sample", re.I)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s.strip()]


def _split_long(text: str, limit: int) -> list[str]:
    """Paragraphs first, then sentences, then words: pieces of at most ``limit`` chars."""
    if len(text) <= limit:
        return [text]
    out: list[str] = []
    for para in [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]:
        if len(para) <= limit:
            units = [para]
        else:
            units = []
            for s in _sentences(para):
                while len(s) > limit:  # a sentence longer than a chunk: cut at a word boundary
                    cut = s.rfind(" ", 0, limit)
                    cut = cut if cut > 0 else limit
                    units.append(s[:cut].strip())
                    s = s[cut:].strip()
                if s:
                    units.append(s)
        buf = ""
        for u in units:
            if buf and len(buf) + 1 + len(u) > limit:
                out.append(buf)
                buf = u
            else:
                buf = f"{buf} {u}".strip()
        if buf:
            out.append(buf)
    return out


def chunk_transcript(
    text: str, event_id: str, ticker: str = "", day: str = "", max_chars: int = MAX_CHUNK_CHARS
) -> list[Chunk]:
    """Structure-aware chunks of a call transcript (see the module doc)."""
    section = "prepared"
    turns: list[tuple[str, str, list[str]]] = []  # (section, speaker, lines)
    unlabelled: list[tuple[str, str]] = []  # (section, line) before any speaker cue
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or _NOISE.search(line) and len(line) < 120 and line.isupper():
            continue
        m = _SECTION.match(line)
        if m:
            section = "qa" if re.match(r"q|questions?", m.group("name"), re.I) else "prepared"
            continue
        s = _SPEAKER.match(line)
        if s:
            speaker = s.group("speaker") + (f" ({s.group('title').strip()})" if s.group("title") else "")
            turns.append((section, speaker, [s.group("text")]))
        elif turns:
            turns[-1][2].append(line)
        else:
            unlabelled.append((section, line))
        if s and speaker.lower().startswith("operator") and _QA_CUE.search(s.group("text")):
            section = "qa"

    chunks: list[Chunk] = []

    def add(sec: str, speaker: str, turn: int, parts: Sequence[str]) -> None:
        for j, p in enumerate(parts):
            chunks.append(Chunk(f"{event_id}#c{len(chunks) + 1}", event_id, ticker, day, sec, speaker, turn, j, p))

    if not turns:
        # no speaker cues: sentences are the only structure; the operator's cue ends the prepared remarks
        sents: list[tuple[str, str]] = []
        for sec, line in unlabelled:
            for s in _sentences(line):
                if _NOISE.search(s):
                    continue
                sents.append((section_of(sents, sec), s))
        merged: list[tuple[str, str]] = []
        for sec, s in sents:
            if merged and len(merged[-1][1]) < MIN_SENTENCE_CHARS and merged[-1][0] == sec:
                merged[-1] = (sec, f"{merged[-1][1]} {s}")
            else:
                merged.append((sec, s))
        for n, (sec, s) in enumerate(merged):
            add(sec, "unknown", n, _split_long(s, max_chars))
        return chunks
    n = 0
    if unlabelled:  # text before the first speaker cue: a turn of its own
        add(unlabelled[0][0], "unknown", n, _split_long("\n".join(l for _, l in unlabelled), max_chars))
        n += 1
    for sec, speaker, lines in turns:
        add(sec, speaker, n, _split_long("\n".join(lines), max_chars))
        n += 1
    return chunks


def section_of(previous: list[tuple[str, str]], current: str) -> str:
    """Unlabelled text: the sentence after the cue to questions starts the Q&A."""
    if current == "qa" or (previous and (previous[-1][0] == "qa" or _QA_CUE.search(previous[-1][1]))):
        return "qa"
    return current


# -- specialists -----------------------------------------------------------------


@dataclass(frozen=True)
class Specialist:
    name: str
    focus: str
    query: str


SPECIALISTS: tuple[Specialist, ...] = (
    Specialist(
        "earnings",
        "revenue quality, profitability and the sustainability of earnings",
        "revenue earnings operating margin profitability results quarter billion percent beat miss",
    ),
    Specialist(
        "market",
        "the likely market reaction over the next day, week and month",
        "outlook guidance next quarter expect growth demand environment looking ahead",
    ),
    Specialist(
        "sentiment",
        "management's tone, confidence and credibility",
        "management confident strong pleased record cautious weak disappointing results tone",
    ),
    Specialist(
        "valuation",
        "whether growth and margins justify the valuation",
        "growth margin cash flow pricing valuation capital expenditures competitive position",
    ),
    Specialist(
        "risk",
        "risks, headwinds and uncertainty, and how much to size a position",
        "risk challenge headwinds uncertainty difficult delays decline litigation pressure concerns",
    ),
)


class View(BaseModel):
    """One specialist's view, or the synthesised report (``role`` = "report")."""

    model_config = ConfigDict(extra="forbid")

    role: str
    direction: Direction = "neutral"
    confidence: float = Field(0.0, ge=0.0, le=1.0)
    horizon: Horizon = 5
    insights: list[Insight] = Field(default_factory=list)

    def cited_ids(self) -> list[str]:
        return list(dict.fromkeys(c.id for i in self.insights for c in i.citations))


class DebateReport(BaseModel):
    """The report on one call, before or after the debate."""

    model_config = ConfigDict(extra="forbid")

    ticker: str
    event_id: str
    day: str
    direction: Direction
    confidence: float = Field(ge=0.0, le=1.0)
    horizon: Horizon
    insights: list[Insight] = Field(default_factory=list)
    risks: list[Insight] = Field(default_factory=list)
    hedge: str = ""
    summary: str = ""

    def cited_ids(self) -> list[str]:
        return list(dict.fromkeys(c.id for i in [*self.insights, *self.risks] for c in i.citations))


class Debate(BaseModel):
    """Everything one debate day did for one ticker (kept for reuse and the record)."""

    model_config = ConfigDict(extra="forbid")

    ticker: str
    event_id: str
    chunks: int
    views: list[View]
    report: DebateReport
    final: DebateReport
    #: the Leader's own direction, before the safety check
    leader_direction: Direction
    flip_prevented: bool = False
    debated: bool = True
    via: dict[str, str] = Field(default_factory=dict)


class Outcome(BaseModel):
    """The protocol's answer on a debate day: the decision report and the debates."""

    model_config = ConfigDict(extra="forbid")

    manager: ManagerReport
    debates: list[Debate]


# -- what the model fills --------------------------------------------------------------


class ViewAnswer(BaseModel):
    direction: Direction
    confidence: float = Field(ge=0.0, le=1.0)
    horizon: Horizon
    insights: list[InsightAnswer] = Field(min_length=1, max_length=2)

    def cited(self):
        return (c for i in self.insights for c in i.cites)

    def relabeled(self, back):
        return self.model_copy(
            update={
                "insights": [
                    i.model_copy(update={"cites": list(dict.fromkeys(back.get(c, c) for c in i.cites))})
                    for i in self.insights
                ]
            }
        )


class TrustAnswer(BaseModel):
    """Supporting evidence only: Trust has no direction to give."""

    evidence: list[InsightAnswer] = Field(min_length=1, max_length=2)

    def cited(self):
        return (c for i in self.evidence for c in i.cites)

    def relabeled(self, back):
        return self.model_copy(
            update={
                "evidence": [
                    i.model_copy(update={"cites": list(dict.fromkeys(back.get(c, c) for c in i.cites))})
                    for i in self.evidence
                ]
            }
        )


class SkepticAnswer(BaseModel):
    risks: list[InsightAnswer] = Field(min_length=1, max_length=2)
    hedge: str = Field(min_length=1, max_length=120)
    confidence: float = Field(ge=0.0, le=1.0)

    def cited(self):
        return (c for i in self.risks for c in i.cites)

    def relabeled(self, back):
        return self.model_copy(
            update={
                "risks": [
                    i.model_copy(update={"cites": list(dict.fromkeys(back.get(c, c) for c in i.cites))})
                    for i in self.risks
                ]
            }
        )


class LeaderAnswer(BaseModel):
    direction: Direction
    confidence: float = Field(ge=0.0, le=1.0)
    summary: str = Field(min_length=1, max_length=200)

    def cited(self):
        return iter(())

    def relabeled(self, back):
        return self


# -- the rules ------------------------------------------------------------------


def _lm():
    from fincon.data.lexicon import LoughranMcDonald

    global _LM
    if _LM is None:
        _LM = LoughranMcDonald()
    return _LM


_LM = None


def _label(x: float) -> Direction:
    return "bullish" if x > NEUTRAL_BAND else "bearish" if x < -NEUTRAL_BAND else "neutral"


def _sign(d: str) -> float:
    return {"bullish": 1.0, "bearish": -1.0, "neutral": 0.0}[d]


def _cite(c: Chunk) -> Citation:
    return Citation(id=c.id, date=c.day, source="earnings_call")


def tone(chunks: Sequence[Chunk]) -> float:
    return _lm().score(" ".join(c.text for c in chunks)).tone


def risk_share(chunks: Sequence[Chunk]) -> float:
    """Share of the words that are Negative, Uncertainty or Litigious."""
    sc = _lm().score(" ".join(c.text for c in chunks))
    risky = sum(sc.counts.get(k, 0) for k in ("Negative", "Uncertainty", "Litigious"))
    return risky / max(sc.words, 1)


def rules_view(spec: Specialist, chunks: Sequence[Chunk]) -> View:
    """LM tone of the specialist's retrieved chunks; the risk specialist
    lowers it by the risk-word share (it reads risks, not just tone)."""
    t = tone(chunks)
    if spec.name == "risk":
        t -= risk_share(chunks)
    d = _label(t)
    conf = 0.0 if d == "neutral" else round(min(1.0, abs(t)), 4)
    insights = [
        Insight(text=f"{c.text[:300]} -> reads {_label(tone([c]))} ({tone([c]):+.2f})", citations=[_cite(c)])
        for c in chunks[:2]
    ]
    return View(role=spec.name, direction=d, confidence=conf, horizon=5, insights=insights)


def rules_report(views: Sequence[View], ticker: str, event_id: str, day: str) -> DebateReport:
    """Equal-weight mean of the specialists' signed confidences. Horizon: 20
    days when every specialist with a view agrees, 5 on a majority, 1 when split."""
    score = sum(_sign(v.direction) * v.confidence for v in views) / max(len(views), 1)
    d = _label(score)
    sides = [_sign(v.direction) for v in views if v.direction != "neutral"]
    agree = sum(1 for s in sides if s == _sign(d)) if d != "neutral" else 0
    horizon = 20 if sides and agree == len(sides) else 5 if agree * 2 > len(sides) else 1
    backing = [v for v in views if v.direction == d] if d != "neutral" else list(views)
    insights, seen = [], set()
    for v in sorted(backing, key=lambda v: (-v.confidence, v.role)):
        for i in v.insights[:1]:
            if i.citations and i.citations[0].id not in seen:
                seen.add(i.citations[0].id)
                insights.append(Insight(text=f"{v.role}: {i.text}"[:400], citations=i.citations))
    summary = ", ".join(f"{v.role} {v.direction} {v.confidence:.2f}" for v in views)
    return DebateReport(
        ticker=ticker,
        event_id=event_id,
        day=day,
        direction=d,
        confidence=0.0 if d == "neutral" else round(min(1.0, abs(score)), 4),
        horizon=horizon,
        insights=insights[:4],
        summary=f"specialists: {summary} -> {d} ({score:+.2f})"[:400],
    )


def rules_trust(report: DebateReport, chunks: Sequence[Chunk]) -> list[Insight]:
    """Keep the report; add the retrieved chunk that most supports its direction, if any."""
    cited = set(report.cited_ids())
    s = _sign(report.direction)
    best = sorted((c for c in chunks if c.id not in cited and s * tone([c]) > 0), key=lambda c: (-s * tone([c]), c.id))
    return [Insight(text=f"supports: {c.text[:300]}", citations=[_cite(c)]) for c in best[:1]]


def rules_skeptic(report: DebateReport, chunks: Sequence[Chunk]) -> tuple[list[Insight], str, float]:
    """The chunks with the highest risk-word share as risks; confidence cut by
    RISK_SCALE x the risk-word share of everything retrieved (at most MAX_CUT)."""
    share = risk_share(chunks)
    cut = min(MAX_CUT, RISK_SCALE * share)
    risky = sorted((c for c in chunks if risk_share([c]) > 0), key=lambda c: (-risk_share([c]), c.id))[:2]
    risks = [Insight(text=f"risk: {c.text[:300]}", citations=[_cite(c)]) for c in risky]
    hedge = f"risk words are {share:.1%} of the evidence: size down by {cut:.0%}" if cut else "no hedge needed"
    return risks, hedge, round(report.confidence * (1.0 - cut), 4)


def combine(
    report: DebateReport,
    evidence: list[Insight],
    risks: list[Insight],
    hedge: str,
    direction: str,
    confidence: float,
    summary: str,
) -> DebateReport:
    """The final report: the report's insights plus Trust's new evidence.
    Evidence that repeats an insight already there (same text; a small model
    often hands the report's own insights back as "support") is left out."""
    seen = {i.text.strip().lower() for i in report.insights}
    fresh = []
    for e in evidence:
        key = e.text.strip().lower()
        if key not in seen:
            seen.add(key)
            fresh.append(e)
    return report.model_copy(
        update={
            "direction": direction,
            "confidence": confidence,
            "insights": (report.insights + fresh)[:5],
            "risks": risks[:3],
            "hedge": hedge[:200],
            "summary": summary[:400],
        }
    )


# -- prompts ---------------------------------------------------------------------


def _template(name: str) -> tuple[str, str]:
    return load_template(str(HERE / f"debate_{name}.txt"))


def _chunk_lines(chunks: Sequence[Chunk], labels: dict[str, str]) -> str:
    return "\n".join(
        f"[{labels.get(c.id, c.id)}] ({'Q&A' if c.section == 'qa' else 'prepared remarks'}"
        f"{'' if c.speaker == 'unknown' else ', ' + c.speaker}): {c.text[:CHUNK_CHARS_IN_PROMPT]}"
        for c in chunks
    )


def _insight_lines(insights: Sequence[Insight], labels: dict[str, str]) -> str:
    return (
        "\n".join(f"- {i.text[:200]} [{', '.join(labels.get(c.id, c.id) for c in i.citations)}]" for i in insights)
        or "- (none)"
    )


def _report_text(r: DebateReport, labels: dict[str, str]) -> str:
    return (
        f"Direction: {r.direction} (confidence {r.confidence:.2f}), horizon {r.horizon} trading days.\n"
        f"Evidence:\n{_insight_lines(r.insights, labels)}"
    )


def _messages(name: str, **values: str) -> list[dict[str, str]]:
    system, user = _template(name)
    return [{"role": "system", "content": system.format(**values)}, {"role": "user", "content": user.format(**values)}]


def _insights(answers: Sequence[InsightAnswer], by_id: dict[str, Chunk]) -> list[Insight]:
    return [Insight(text=a.text, citations=[_cite(by_id[c]) for c in a.cites if c in by_id]) for a in answers]


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
    events: list[str] = field(default_factory=list)


class DebateProtocol:
    name = "debate"
    agent = "manager"

    def __init__(
        self, lookback: int = 60, transcripts: str = "whisper", transcript_cache: str | None = None, top_k: int = TOP_K
    ):
        self.fincon = FinConManager(lookback=lookback)
        self.transcripts = transcripts
        self.transcript_cache = transcript_cache
        self.top_k = top_k
        self.counts = Counts()
        self.memory = self.events = None
        self._col = None
        self._transcriber = None

    @classmethod
    def from_params(cls, params) -> "DebateProtocol":
        return cls(lookback=params.lookback, transcripts=params.transcripts, transcript_cache=params.transcript_cache)

    # the FinCon manager's sampling is the protocol's (training sets it on the protocol)
    @property
    def sampling(self):
        return self.fincon.sampling

    @sampling.setter
    def sampling(self, value):
        self.fincon.sampling = value

    def bind(self, team) -> None:
        from fincon.memory.collections import open_collection

        self.memory, self.events = team.memory, team.events
        self._col = open_collection(team.memory.client, COLLECTION, team.memory.embedder)

    def digest(self, task, view) -> list[str]:
        """What besides the reports this protocol's decision depends on (the
        team adds it to its reuse hash): the ids of today's new calls, so a
        call day is never answered with yesterday's stored decision."""
        return sorted(e.id for t in task.tickers for e in self.new_calls(t, view))

    # -- reading the call ------------------------------------------------------------
    def new_calls(self, ticker: str, view) -> list:
        """Calls of ``ticker`` that became visible after the previous trading
        day's decision time (the first day of data: today's calendar day)."""
        dates = view.dates(2)
        since = dates[0] if len(dates) > 1 else view.date - pd.Timedelta(days=1)
        return self.events.view_at(view.date).events(ticker, sources=["earnings_call"], since=since)

    def transcript(self, event) -> str:
        audio = self.events.audio_path(event) if event.audio else None
        if self.transcripts == "text" or audio is None:
            return event.text or ""
        if self._transcriber is None:
            from fincon.agents.roles.base import make_transcriber

            self._transcriber = make_transcriber({"cache_dir": self.transcript_cache})
        return self._transcriber(audio)

    def index(self, event) -> list[Chunk]:
        from fincon.data.events.model import visible_day

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
        """Specialists -> report -> Trust, Skeptic, Leader -> safe final report.
        Returns the debate, model calls, fallbacks and cache keys."""
        chunks = self.index(event)
        by_id = {c.id: c for c in chunks}
        labels = short_labels(c.id for c in chunks)  # id -> label
        back = {v: k for k, v in labels.items()}
        allowed = frozenset(by_id)
        ticker = event.ticker
        calls = fallbacks = 0
        keys: list[str] = []
        via: dict[str, str] = {}

        def ask(role: str, messages, model, to_report, rules):
            nonlocal calls, fallbacks
            q = Question(
                agent=f"debate-{role}/{ticker}",
                day=day,
                messages=messages,
                model=model,
                allowed=allowed,
                to_report=to_report,
                rules=rules,
                params=self.sampling,
                labels=back,
            )
            a = brain.answer(q)
            calls += a.calls
            fallbacks += a.via == "fallback"
            keys.extend(a.keys)
            via[role] = a.via
            return a.report

        views, retrieved = [], {}
        for spec in SPECIALISTS:
            got = self.retrieve(chunks, spec.query)
            retrieved[spec.name] = got
            views.append(
                ask(
                    spec.name,
                    lambda spec=spec, got=got: _messages(
                        "specialist",
                        role=spec.name,
                        focus=spec.focus,
                        ticker=ticker,
                        date=day,
                        chunks=_chunk_lines(got, labels),
                    ),
                    ViewAnswer,
                    lambda a, spec=spec: View(
                        role=spec.name,
                        direction=a.direction,
                        confidence=a.confidence,
                        horizon=a.horizon,
                        insights=_insights(a.insights, by_id),
                    ),
                    lambda spec=spec, got=got: rules_view(spec, got),
                )
            )
        seen = list(dict.fromkeys(c.id for s in SPECIALISTS for c in retrieved[s.name]))
        read = [by_id[i] for i in seen]

        def view_lines():
            return "\n".join(
                f"- {v.role}: {v.direction} (confidence {v.confidence:.2f}, horizon {v.horizon}). "
                + " ".join(
                    f"{i.text[:150]} [{', '.join(labels.get(c.id, c.id) for c in i.citations)}]" for i in v.insights
                )
                for v in views
            )

        report: DebateReport = ask(
            "synthesis",
            lambda: _messages(
                "synthesis", ticker=ticker, date=day, views=view_lines(), chunks=_chunk_lines(read, labels)
            ),
            ViewAnswer,
            lambda a: DebateReport(
                ticker=ticker,
                event_id=event.id,
                day=day,
                direction=a.direction,
                confidence=a.confidence,
                horizon=a.horizon,
                insights=_insights(a.insights, by_id),
                summary="synthesis of the five specialists",
            ),
            lambda: rules_report(views, ticker, event.id, day),
        )

        if report.direction == "neutral":  # nothing to refine: the report stands, no debate
            return (
                Debate(
                    ticker=ticker,
                    event_id=event.id,
                    chunks=len(chunks),
                    views=views,
                    report=report,
                    final=report,
                    leader_direction=report.direction,
                    debated=False,
                    via=via,
                ),
                calls,
                fallbacks,
                keys,
            )

        evidence: list[Insight] = ask(
            "trust",
            lambda: _messages(
                "trust", ticker=ticker, date=day, report=_report_text(report, labels), chunks=_chunk_lines(read, labels)
            ),
            TrustAnswer,
            lambda a: _insights(a.evidence, by_id),
            lambda: rules_trust(report, read),
        )
        risks, hedge, conf = ask(
            "skeptic",
            lambda: _messages(
                "skeptic",
                ticker=ticker,
                date=day,
                report=_report_text(report, labels),
                chunks=_chunk_lines(read, labels),
            ),
            SkepticAnswer,
            lambda a: (_insights(a.risks, by_id), a.hedge, a.confidence),
            lambda: rules_skeptic(report, read),
        )
        lead: LeaderAnswer = ask(
            "leader",
            lambda: _messages(
                "leader",
                ticker=ticker,
                date=day,
                report=_report_text(report, labels),
                evidence=_insight_lines(evidence, labels),
                risks=_insight_lines(risks, labels),
                hedge=hedge,
                confidence=f"{conf:.2f}",
            ),
            LeaderAnswer,
            lambda a: a,
            lambda: LeaderAnswer(
                direction=report.direction,
                confidence=conf,
                summary=f"{report.direction} on the call, {len(evidence)} added evidence, {len(risks)} risks; {hedge}"[
                    :200
                ],
            ),
        )
        flipped = lead.direction != report.direction
        final = (
            report
            if flipped
            else combine(report, evidence, risks, hedge, lead.direction, lead.confidence, lead.summary)
        )
        return (
            Debate(
                ticker=ticker,
                event_id=event.id,
                chunks=len(chunks),
                views=views,
                report=report,
                final=final,
                leader_direction=lead.direction,
                flip_prevented=flipped,
                via=via,
            ),
            calls,
            fallbacks,
            keys,
        )

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
        if not calls:
            self.counts.fallback_days += 1
            return self.fincon.decide(brain, task, view, universe)

        debates, n_calls, n_fallbacks, keys = [], 0, 0, []
        for event in calls:  # several calls of one ticker on one day: the latest decides
            d, c, f, k = self.debate(brain, event, task.day)
            debates.append(d)
            n_calls, n_fallbacks, keys = n_calls + c, n_fallbacks + f, keys + k
        final = {d.ticker: d.final for d in debates}
        action = {t: {"bullish": "buy", "bearish": "sell", "neutral": "hold"}[r.direction] for t, r in final.items()}
        relied = list(dict.fromkeys(i for r in final.values() for i in r.cited_ids()))[:5]
        note = "; ".join(
            f"{t}: debated call {r.event_id} -> {r.direction} {r.confidence:.2f}, {r.horizon}-day horizon"
            for t, r in final.items()
        )
        if not task.portfolio:
            t = task.tickers[0]
            r = final[t]
            mr = ManagerReport(
                actions={t: action[t]},
                size=1.0 if r.confidence >= FULL_SIZE else 0.5,
                rationale=f"{note}. {r.summary}"[:600],
                relied_on=relied,
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
        decision, _, rec = self.fincon.decide(Reuse(mr), task, view, universe)
        c = self.counts
        c.debate_days += 1
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
            "debate_events": list(c.events),
        }
