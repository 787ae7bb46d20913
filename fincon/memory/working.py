"""Working memory: the per-day step that turns raw events into memory entries.

Each decision day the analyst takes the events that became visible since the
previous decision day, condenses them through a :class:`Summariser` and
stores the results in its procedural memory, stamped with the decision day.
Two summarisers are provided:

* :class:`LexiconSummariser`: deterministic, no model (the default): title +
  the body's best whole sentences within the source's budget
  (:mod:`fincon.memory.distill`, extractive) + Loughran–McDonald tone of the
  whole body.
* :class:`LLMSummariser`: prompts any object with ``complete(prompt) -> str``
  (the :class:`TextCompleter` protocol) with ``prompts/summarise_event.txt``.
  It does not depend on fincon.llm internals; :class:`AskCompleter` adapts
  any client with the LLM layer's public ``ask(messages, model, agent=,
  day=)`` method. A failed call falls back to the lexicon
  summary for that event; fallbacks are counted and logged.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

import pandas as pd
from pydantic import BaseModel, Field

from fincon.data.events.model import MARKET_TZ, Event, visible_day
from fincon.data.lexicon import LoughranMcDonald, tone_label
from fincon.errors import DataError
from fincon.memory.distill import ITEM_BUDGET, Distiller
from fincon.memory.procedural import MemoryEntry

log = logging.getLogger(__name__)
PROMPT = Path(__file__).with_name("prompts") / "summarise_event.txt"
_SENT = re.compile(r"(?<=[.!?])\s+")


@runtime_checkable
class Summariser(Protocol):
    def summarise(self, ticker: str, day: pd.Timestamp, events: Sequence[Event]) -> list[MemoryEntry]: ...


@runtime_checkable
class TextCompleter(Protocol):
    """The one thing the working memory needs from an LLM client. ``day``
    (simulated, YYYY-MM-DD) is passed for usage ledgers and caches."""

    def complete(self, prompt: str, day: str | None = None) -> str: ...


class SummaryAnswer(BaseModel):
    """Schema of the summary an ``ask``-style client returns."""

    summary: str = Field(min_length=1, max_length=1200)


class AskCompleter:
    """Adapts a client with ``ask(messages, output_model, agent=, day=)``
    returning an object with ``.value`` (the fincon LLM layer's public
    interface) to :class:`TextCompleter`, without importing that layer."""

    def __init__(self, client: Any, agent: str = "analyst", fatal: tuple[type[BaseException], ...] = ()):
        self.client = client
        self.agent = agent
        #: what ends the run instead of falling back (the LLM layer's unavailable, replay miss, budget)
        self.fatal = fatal

    def complete(self, prompt: str, day: str | None = None) -> str:
        messages = [{"role": "user", "content": prompt}]
        return self.client.ask(messages, SummaryAnswer, agent=self.agent, day=day).value.summary

    def fell_back(self, day: str | None, reason: str) -> None:
        """A summary the lexicon's stands in for, counted in the client's ledger as every agent's fallback."""
        ledger = getattr(self.client, "ledger", None)
        if ledger is not None:
            ledger.record_fallback(self.agent, day, reason)


def _body(
    event: Event,
    transcribe: Callable[[Path], str] | None,
    resolve: Callable[[Event], Path | None] | None,
    prefer_audio: bool = False,
    strict: bool = True,
) -> str:
    """The event's words: its text, or (no text, or ``prefer_audio``) the
    transcript of its audio through ``transcribe``."""
    if event.text and not (prefer_audio and event.audio and transcribe is not None):
        return event.text
    if event.audio and transcribe is not None:
        path = resolve(event) if resolve else Path(event.audio)
        return transcribe(path)
    if event.audio and strict:  # read as an empty call, without a word (found in review: CR 9.710 against 10.998)
        raise DataError(
            f"{event.id} has audio and no text, and its calls are read as text (transcripts=text): give the "
            "call's text in the corpus, or hear it (--param fincon.transcripts=whisper)"
        )
    return ""


class LexiconSummariser:
    """Deterministic summary: title, the distilled body (whole sentences
    within the source's budget) and the LM tone of the whole body."""

    def __init__(
        self,
        lexicon: LoughranMcDonald | None = None,
        distiller: Distiller | None = None,
        transcribe: Callable[[Path], str] | None = None,
        resolve: Callable[[Event], Path | None] | None = None,
        prefer_audio: bool = False,
        budgets: dict[str, int] | None = None,
        strict: bool = True,
    ):
        """``transcribe`` (e.g. ``lambda p: Transcriber().transcribe(p).text``)
        and ``resolve`` (e.g. ``EventStore.audio_path``) let audio-only calls
        be read; ``prefer_audio`` uses the audio even when a transcript exists
        (so the earnings-call analyst really listens through Whisper).
        ``distiller`` (shared by a team's analysts: one cache) and
        ``budgets`` (estimated tokens per source) shape the distilled body. ``strict`` refuses a call it
        can only hear (audio, no text, no ``transcribe``); off (``fincon data show``), it reads as its title."""
        self.lm = lexicon or LoughranMcDonald()
        self.distiller = distiller or Distiller(self.lm)
        self.budgets = {**ITEM_BUDGET, **(budgets or {})}
        self.transcribe = transcribe
        self.resolve = resolve
        self.prefer_audio, self.strict = prefer_audio, strict

    def summary(self, event: Event) -> tuple[str, dict]:
        body = _body(event, self.transcribe, self.resolve, self.prefer_audio, getattr(self, "strict", True))
        lines = [ln for ln in body.splitlines() if ln.strip() and not ln.startswith("SYNTHETIC SAMPLE")]
        title = event.metadata.get("title") or (lines[0] if lines else event.id)
        rest = " ".join(ln for ln in lines if ln != title)
        rest = " ".join(x for x in _SENT.split(rest) if "synthetic sample" not in x.lower())
        lead = self.distiller.distill(rest, self.budgets.get(event.source, 100)).strip()
        sc = self.lm.score(body)
        date = pd.Timestamp(event.published_at).tz_convert(MARKET_TZ).strftime("%Y-%m-%d %H:%M")
        syn = " [synthetic]" if event.synthetic else ""
        text = f"[{event.source} {date}{syn}] {title}. {lead} Tone: {tone_label(sc.tone)} (LM {sc.tone:+.2f}, uncertainty {sc.uncertainty:.1%})."
        return text, {
            "lm_tone": round(sc.tone, 4),
            "lm_uncertainty": round(sc.uncertainty, 4),
            "lm_litigious": round(sc.litigious, 4),
            "synthetic": event.synthetic,
        }

    def summarise(self, ticker: str, day: pd.Timestamp, events: Sequence[Event]) -> list[MemoryEntry]:
        out = []
        for e in events:
            text, meta = self.summary(e)
            out.append(_entry(e, ticker, day, text, meta))
        return out


def _entry(e: Event, ticker: str, day: pd.Timestamp, text: str, meta: dict) -> MemoryEntry:
    """The memory entry of event ``e`` seen on ``day``, with its summary ``text``."""
    return MemoryEntry(id=f"mem-{e.id}", ticker=ticker, source=e.source, day=_mem_day(e, day), text=text,
                       event_ids=(e.id,), metadata=meta)  # fmt: skip


def _mem_day(e: Event, day: pd.Timestamp) -> pd.Timestamp:
    """Memory timestamp: the day the event became visible (never after ``day``)."""
    return min(visible_day(e.published_at), pd.Timestamp(day).normalize())


class LLMSummariser:
    """One LLM call per event through any :class:`TextCompleter`."""

    def __init__(
        self,
        completer: TextCompleter,
        role: str = "analyst",
        max_chars: int = 6000,
        fallback: LexiconSummariser | None = None,
        template: str | None = None,
    ):
        self.completer = completer
        self.role = role
        self.max_chars = max_chars
        self.fallback = fallback or LexiconSummariser()
        self.template = template or PROMPT.read_text(encoding="utf-8")
        self.fallbacks = 0

    def summarise(self, ticker: str, day: pd.Timestamp, events: Sequence[Event]) -> list[MemoryEntry]:
        out = []
        for e in events:
            base_text, meta = self.fallback.summary(e)
            body = _body(
                e,
                self.fallback.transcribe,
                self.fallback.resolve,
                self.fallback.prefer_audio,
                getattr(self.fallback, "strict", True),
            )[: self.max_chars]
            prompt = self.template.format(
                role=self.role,
                ticker=ticker,
                date=pd.Timestamp(day).date(),
                source=e.source,
                published_at=e.published_at.isoformat(),
                text=body,
            )
            date = str(pd.Timestamp(day).date())
            try:
                text = self.completer.complete(prompt, day=date).strip()
                if not text:
                    raise ValueError("empty completion")
                meta = {**meta, "summariser": "llm"}
                if e.synthetic:
                    text = f"[synthetic] {text}"
            except getattr(self.completer, "fatal", ()):  # a server down, a replay miss: the run stops, said
                raise
            except Exception as exc:  # noqa: BLE001 - any other LLM failure falls back, counted
                self.fallbacks += 1
                log.warning(
                    "LLM summary of %s failed (%s); using the lexicon summary (%d fallbacks so far)",
                    e.id,
                    exc,
                    self.fallbacks,
                )
                if (record := getattr(self.completer, "fell_back", None)) is not None:
                    record(date, f"summary of {e.id}: {exc}")
                text, meta = base_text, {**meta, "summariser": "lexicon-fallback"}
            out.append(_entry(e, ticker, day, text, meta))
        return out


class WorkingMemory:
    """Per-day step: new events since the last decision day -> procedural memory."""

    def __init__(self, summariser: Summariser, memory: Any, sources: Sequence[str] | None = None):
        self.summariser = summariser
        self.memory = memory
        self.sources = tuple(sources) if sources else None
        self._last: pd.Timestamp | None = None

    def step(self, view, ticker: str) -> list[MemoryEntry]:
        """``view`` is an :class:`~fincon.data.events.store.EventView` for today.
        Days must not go backwards (memory cannot be un-seen)."""
        if self._last is not None and view.date < self._last:
            raise ValueError(f"working memory is at {self._last.date()}; cannot step back to {view.date.date()}")
        events = view.events(ticker, sources=self.sources, since=self._last)
        entries = self.summariser.summarise(ticker, view.date, events)
        self.memory.add(entries)
        self._last = view.date
        return entries
