"""What every role shares: its profile, the items it may cite, its prompt.

A role turns what it may see on day t (its procedural memory, the market
view) into :class:`RoleInputs`: a short list of citable :class:`Item` s plus
a few facts. Both brains answer from exactly these inputs, so the citation
check, the reuse hash and the point-in-time guarantee are defined once here:

* every item has an id, a date and a source; an answer may cite only them;
* :meth:`RoleInputs.digest` hashes everything a brain reads (not the date:
  an unchanged input on a new day is reused without a model call);
* items come from ``AnalystMemory.step(view.events)`` (events visible at t's close)
  and ``MarketView`` (rows up to t), never from anything later.

Prompts: one system prompt shared by every analyst (``analyst.system.txt``,
so a local model reuses its KV cache across analysts) and, per role, a
readable template beside its module (``news.txt`` ...) for the user message,
formatted with :meth:`RoleInputs.fields`.

Whole evidence within a budget: every item is distilled once, when it
enters the analyst's memory (:mod:`fincon.memory.distill`: whole sentences,
cached by content hash; the LLM summariser when ``distill="llm"``), and a
prompt carries whole distilled items, most relevant first (today's new
items, then the A.13 ranking), until the analyst's token budget
(``analyst_budget_tokens``) is spent -- never a text cut mid-sentence.

Prompts are short because every token costs time on a small local model:
items are shown under short labels (``[E1] Oct 4: ...``; the answer's labels
are mapped back to the real ids in code, see
:func:`fincon.agents.reports.short_labels`), dates without the year when it
is today's, and a section with nothing in it (no beliefs yet, no risk
stance) is left out rather than printed as "(none yet)".
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from fincon.data.events.store import EventView
from fincon.data.transcription import Transcriber
from fincon.memory.analyst import AnalystMemory, DayMemory
from fincon.memory.distill import approx_tokens
from fincon.memory.procedural import DEFAULT_DECAY
from fincon.memory.working import LexiconSummariser, LLMSummariser

HERE = Path(__file__).parent
#: an analyst's prompt carries whole distilled items up to this many estimated
#: tokens (about 5 news items or 3 filing sections): on 2 cores a 1.5B model
#: reads ~60 prompt tokens/s, so ~6 s of prompt per analyst call; raise it
#: (e.g. 2000) on a GPU endpoint
DEFAULT_BUDGET_TOKENS = 400
_HEADER = re.compile(
    r"^\[[^\[\]]*(?:\[[^\]]*\][^\]]*)?\]\s*"
)  # the summariser's "[news 2022-10-05 08:12 [synthetic]]" prefix


@dataclass(frozen=True)
class Profile:
    """Who the agent is: its role, what it is responsible for, what it aims at."""

    role: str
    responsibilities: str
    target: str

    def text(self) -> str:
        return f"You are the {self.role}. Responsibilities: {self.responsibilities} Target: {self.target}"

    def prompt(self) -> str:
        """The line a prompt opens with: the role and what it reads (the
        target, telling the manager a direction with citations, is the
        shared system prompt's)."""
        return f"You are the {self.role.removesuffix(' of an equity trading team')}. You {self.responsibilities}"


@dataclass(frozen=True)
class Item:
    """One citable input: a memory, or an indicator computed from prices.

    ``signal`` in [-1, 1] is what the rules brain reads (Loughran-McDonald
    tone for texts, a scaled indicator for numbers; None = informational);
    ``weight`` is its recency/importance weight in the rules brain.
    """

    id: str
    date: str
    source: str
    text: str
    signal: float | None = None
    weight: float = 1.0
    new: bool = False

    def line(self, label: str | None = None, today: str | None = None) -> str:
        """``[id] date source: text``; with a ``label`` the prompt's short
        form ``[E1] Oct 4: text`` (a role reads one source, named in its
        template), without the date when ``today`` is None."""
        if label is None:
            return f"[{self.id}] {self.date} {self.source}: {self.text}"
        when = f" {short_date(self.date, today)}" if today else ""
        return f"[{label}]{when}: {self.text}"

    def key(self) -> list[Any]:
        return [self.id, self.source, self.text, None if self.signal is None else round(self.signal, 4)]


@dataclass(frozen=True)
class RoleInputs:
    """Everything one agent reads on one day."""

    role: str
    agent: str
    ticker: str
    day: str
    items: tuple[Item, ...] = ()
    facts: tuple[str, ...] = ()
    stance: str = ""
    beliefs: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def digest(self, weighted: bool = False) -> str:
        """Hash of what a brain reads, without the date: the reuse key (the
        items as a set: the same memories in another rank order are reused).
        ``weighted``: with each item's weight, which the rules analyst reads
        (its decayed importance: without it, the first report of an unchanged
        item set was reused for 58 days and the decay never reached it)."""
        payload = {
            "role": self.role,
            "ticker": self.ticker,
            "items": sorted([*i.key(), round(i.weight, 6)] if weighted else i.key() for i in self.items),
            "facts": list(self.facts),
            "stance": self.stance,
            "beliefs": self.beliefs,
        }
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def by_id(self) -> dict[str, Item]:
        return {i.id: i for i in self.items}

    def fields(self, labels: dict[str, str] | None = None, dated: bool = True) -> dict[str, str]:
        """Template values. With ``labels`` (id -> label) items are shown
        under their labels; ``dated``: with each item's date. Empty optional
        sections are :data:`EMPTY` (their line is dropped by :func:`render`)."""
        if labels:
            items = "\n".join(i.line(labels[i.id], self.day if dated else None) for i in self.items)
        else:
            items = "\n".join(i.line() for i in self.items)
        return {
            "ticker": self.ticker,
            "date": short_date(self.day, None),
            "items": items or "(nothing)",
            "facts": "\n".join(f"- {f}" for f in self.facts) or EMPTY,
            "stance": self.stance or EMPTY,
            "beliefs": self.beliefs or EMPTY,
        }


#: the value of an empty optional section: :func:`render` drops its line
EMPTY = "\x00"


def short_date(day: str, today: str | None) -> str:
    """``2022-10-04`` as ``Oct 4`` (year left out when it is ``today``'s) or
    ``Oct 4 2022``: 3 tokens instead of 10 (the Qwen tokenizer spells every
    digit). Anything that is not an ISO date is returned unchanged."""
    try:
        d = pd.Timestamp(day)
    except (ValueError, TypeError):
        return day
    md = f"{d.strftime('%b')} {d.day}"
    return md if today is not None and str(today)[:4] == f"{d.year:04d}" else f"{md} {d.year}"


@lru_cache(maxsize=None)
def load_template(path: str) -> tuple[str, str]:
    """(system, user) parts of a ``[system]`` / ``[user]`` template file."""
    text = Path(path).read_text(encoding="utf-8")
    m = re.match(r"\s*\[system\]\s*\n(.*?)\n\[user\]\s*\n(.*)\Z", text, re.S)
    if not m:
        raise ValueError(f"{path}: a prompt template needs a [system] and a [user] part")
    return m.group(1).strip(), m.group(2).strip()


#: one system prompt for every analyst: with the schema the client appends,
#: every analyst call starts with the same tokens, so a local model keeps
#: them in its KV cache and only reads the role's own message
ANALYST_SYSTEM = HERE / "analyst.system.txt"


@lru_cache(maxsize=None)
def _read(path: str) -> str:
    return Path(path).read_text(encoding="utf-8").strip()


def drop_empty(text: str) -> str:
    """Leave out every empty section of a formatted prompt: a line holding
    :data:`EMPTY` (``Team beliefs: {beliefs}``) and, when the value stood on
    its own line, the heading just above it (``Risk stance of the team:``)."""
    lines = text.splitlines()
    return "\n".join(
        ln
        for n, ln in enumerate(lines)
        if EMPTY not in ln and not (ln.endswith(":") and n + 1 < len(lines) and lines[n + 1] == EMPTY)
    )


def render(template: Path, profile: Profile, values: dict[str, str]) -> list[dict[str, str]]:
    """Chat messages of an analyst: the shared system prompt, then the
    role's template (its profile, its items, its question), empty sections
    left out (:func:`drop_empty`)."""
    values = {"profile": profile.prompt(), **values}
    user = drop_empty(_read(str(template)).format(**values))
    return [{"role": "system", "content": _read(str(ANALYST_SYSTEM))}, {"role": "user", "content": user}]


def memory_text(text: str, tone: float | None) -> str:
    """A memory's words for a prompt: header dropped, the whole distilled
    body (never cut: the distillation already bounded it), tone appended."""
    body = _HEADER.sub("", text).split(" Tone: ")[0].strip()
    title, sep, rest = body.partition(". ")
    if sep and len(title) > 80:  # a filing's long title: id, date and source already say it
        body = rest.removeprefix("Overview ").strip()
    return body if tone is None else f"{body} (tone {tone:+.2f})"


class Role:
    """Base of every role: a name, a profile, a template, a ``gather``."""

    name: str = "role"
    profile: Profile
    template: Path
    #: weight of this role's view in the rules manager
    weight: float = 0.1
    #: event sources it reads (None: reads the market view, not events)
    sources: tuple[str, ...] | None = None

    def agent(self, ticker: str) -> str:
        return f"{self.name}/{ticker}"

    #: items shown with their dates (indicators are all of today: no)
    dated_items: bool = True

    def messages(self, inputs: RoleInputs, labels: dict[str, str] | None = None) -> list[dict[str, str]]:
        """The chat messages; ``labels`` (id -> short label) as made by
        :func:`fincon.agents.reports.short_labels` for the same inputs."""
        return render(self.template, self.profile, inputs.fields(labels, self.dated_items))


@dataclass
class ToneBaseline:
    """Running mean of the lexicon tone of everything one analyst has read so
    far (point in time: only entries already stored).

    Filings and analyst notes have a house style (risk sections and hedged
    language read negative under Loughran-McDonald), so an absolute tone makes
    the rules brain bearish on every filing. The rules signal of an item is
    its tone *relative* to this baseline: what is unusual for the source.
    """

    n: int = 0
    total: float = 0.0

    def add(self, tones) -> None:
        for t in tones:
            if t is not None:
                self.n += 1
                self.total += float(t)

    def relative(self, tone: float | None) -> float | None:
        if tone is None:
            return None
        base = self.total / self.n if self.n else 0.0
        return max(-1.0, min(1.0, float(tone) - base))


class EventRole(Role):
    """An analyst of published events (news, filings, notes, calls).

    Its inputs are today's new memories first (what became visible since the
    previous decision), then the top memories by the A.13 score, at most
    ``k`` in all. The summariser (deterministic lexicon summary, or Whisper
    for calls) runs inside ``AnalystMemory.step``.
    """

    def lexicon(self, events, options: dict[str, Any]):
        """The deterministic summariser (its distiller shared by the team)."""

        return LexiconSummariser(distiller=options.get("distiller"), resolve=events.audio_path)

    def summariser(self, events, options: dict[str, Any]):
        """Extractive distillation, or the LLM summariser when the team has
        ``distill="llm"`` (``options["completer"]``; the extractive summary
        is its counted fallback)."""
        lexicon = self.lexicon(events, options)
        if options.get("completer") is None:
            return lexicon

        return LLMSummariser(options["completer"], role=self.profile.role, fallback=lexicon)

    def open(self, memory_store, events, ticker: str, k: int, options: dict[str, Any]) -> AnalystMemory:
        return AnalystMemory(
            memory_store,
            events,
            self.name,
            ticker,
            profile=self.profile.role,
            summariser=self.summariser(events, options),
            sources=self.sources,
            k=k,
        )

    def gather(
        self,
        mem: AnalystMemory,
        ticker: str,
        events: EventView,
        k: int,
        stance: str = "",
        beliefs: str = "",
        baseline: ToneBaseline | None = None,
        budget: int = DEFAULT_BUDGET_TOKENS,
    ) -> tuple[RoleInputs, DayMemory]:
        dm = mem.step(events)
        baseline = baseline if baseline is not None else ToneBaseline()
        baseline.add(e.metadata.get("lm_tone") for e in dm.new_entries)
        items: list[Item] = []
        for e in sorted(dm.new_entries, key=lambda e: e.id)[-k:]:
            tone = e.metadata.get("lm_tone")
            # at its age: on a run's first day every past item is new, and a 154-day-old 10-Q weighed as
            # today's (the same day read differently by runs that started on other days)
            age = max(0, (pd.Timestamp(events.date).normalize() - pd.Timestamp(e.day).normalize()).days)
            items.append(
                Item(
                    e.id,
                    str(pd.Timestamp(e.day).date()),
                    e.source,
                    memory_text(e.text, tone),
                    baseline.relative(tone),
                    DEFAULT_DECAY[e.source].importance(age) / 100.0,
                    True,
                )
            )
        seen = {i.id for i in items}
        for m in dm.top:
            if len(items) >= k:
                break
            if m.id in seen:
                continue
            tone = m.metadata.get("lm_tone")
            items.append(
                Item(
                    m.id,
                    str(m.day.date()),
                    m.source,
                    memory_text(m.text, tone),
                    baseline.relative(tone),
                    m.importance_scaled,
                )
            )
        d = str(pd.Timestamp(events.date).date())
        # most relevant first (today's new items, then the A.13 ranking), whole
        # items while the budget lasts; the first always goes in whole
        items = within_budget(items, budget)
        return RoleInputs(self.name, self.agent(ticker), ticker, d, tuple(items), stance=stance, beliefs=beliefs), dm


def within_budget(items: Sequence[Item], budget: int) -> list[Item]:
    """The leading whole items whose estimated tokens fit ``budget``
    (the first item always: an analyst never reads nothing it was given)."""

    out: list[Item] = []
    used = 0
    for it in items:
        cost = approx_tokens(it.text) + 6  # label, date and separators
        if out and used + cost > budget:
            continue  # a shorter, less relevant item may still fit
        out.append(it)
        used += cost
    return out


def make_transcriber(options: dict[str, Any]) -> Callable[[Path], str]:
    """Whisper through the information layer; transcripts cached by audio hash."""
    return _Transcribe(options.get("whisper_backend", "auto"), options.get("cache_dir"))


class _Transcribe:
    """A transcriber that loads Whisper at its first call (an object, not a closure: a forward
    step pickles the team with it, and the model is loaded again, not pickled)."""

    def __init__(self, backend: str, cache_dir: Any):
        self.backend, self.cache_dir, self._loaded = backend, cache_dir, None

    def __call__(self, path: Path) -> str:
        if self._loaded is None:
            self._loaded = Transcriber(backend=self.backend, cache_dir=self.cache_dir)
        return self._loaded.transcribe(path).text

    def __getstate__(self) -> dict[str, Any]:
        return {**vars(self), "_loaded": None}
