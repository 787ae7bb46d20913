"""Masked prompts (``--anonymize``): what lets a model recognise the firm and the period is removed.

A model trained after the backtest window may remember what happened in it
(fincon.llm.knowledge). Telling it to forget does not work (Lopez-Lira, Tang
& Zhu); removing what it would recognise does, to the degree the
re-identification probe measures (Engelberg, Manela et al., "entity
neutering"; Glasserman & Lin). Every prompt passes through
:class:`fincon.llm.client.LLMClient`, so the mask sits there, once, over
every text that reaches a model: items, distilled insights, reports,
reflections, beliefs, memories, indicator summaries and the answer schema.

What is replaced, deterministically:

* the run's tickers, the firms' names and aliases (fincon.data.aliases, a
  dataset's own names, ``--alias TICKER=NAME``) and the people named for
  them: one pseudonym per firm for the whole run ("Company A", in ticker
  order) and per person ("Person A1");
* absolute dates (ISO, with or without a time; "October 5, 2022", "5 Oct
  2022", "Oct. 5"): a day offset from the decision day ("3 days before the
  decision day"); a month with its year ("October 2022") and a bare year
  are removed ("[month]", "[year]");
* dollar figures: from a million up, their order of magnitude ("hundreds of
  millions of dollars"); below, a price rebased to 100 at the window's start
  for the firm named last before it ("price index 97.3"), or "[price]".

Answers map back: a pseudonym in the model's raw answer becomes the ticker
(or the person) before it is validated, so the run's decisions name real
tickers. The mapping is written into the run directory (``masking.json``).
Masked text is memoised by content; the call cache is keyed by the masked
prompt, so a replay stays byte-identical.

Not masked (the limits a reader should know): percentages and ratios (they
are relative), bare numbers without a dollar sign, industry words and
products not in the alias table, and anything a paraphrase would catch.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
import string
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from fincon.llm.types import Message

_MONTHS = {
    m.lower(): i
    for i, names in enumerate(
        [
            ("January", "Jan"),
            ("February", "Feb"),
            ("March", "Mar"),
            ("April", "Apr"),
            ("May",),
            ("June", "Jun"),
            ("July", "Jul"),
            ("August", "Aug"),
            ("September", "Sep", "Sept"),
            ("October", "Oct"),
            ("November", "Nov"),
            ("December", "Dec"),
        ],
        start=1,
    )
    for m in names
}
_MONTH = r"(?:" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")\.?"
#: Every pattern below opens with a lookahead for the characters it can start
#: with: the same matches, but the regex engine rejects most positions on one
#: character instead of trying the whole pattern there (masking's cost halves:
#: bench/masking.py). A month name's first two letters:
_OPENS = "(?=[" + "".join(sorted({m[0] for m in _MONTHS})) + "][" + "".join(sorted({m[1] for m in _MONTHS})) + "])"
_DIGIT = re.compile(r"\d")
_TIME = r"(?:[T ]\d{2}:\d{2}(?::\d{2})?(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
_ISO = re.compile(r"(?=[12])(?<![\d-])((?:19|20)\d{2})-(\d{2})-(\d{2})" + _TIME + r"(?![\d])")
_MDY = re.compile(rf"{_OPENS}\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?(?:,\s*|\s+)((?:19|20)\d{{2}})\b", re.I)
_DMY = re.compile(rf"(?=\d)\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({_MONTH})(?:,\s*|\s+)((?:19|20)\d{{2}})\b", re.I)
_MY = re.compile(rf"{_OPENS}\b({_MONTH})\s+((?:19|20)\d{{2}})\b", re.I)
_MD = re.compile(rf"{_OPENS}\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?!:\d)", re.I)
_MY_MD = re.compile(rf"{_OPENS}\b({_MONTH})\s+(?:((?:19|20)\d{{2}})\b|(\d{{1,2}})(?:st|nd|rd|th)?\b(?!:\d))", re.I)
_SHORT_YEAR = re.compile(r"(?=')(?<![\w'])'(\d{2})(?![\w'])")
#: a date written as YYYYMMDD (inside an item's id): masked reversibly, T-3D, so a cited id maps back
_COMPACT = re.compile(r"(?=[12])(?<!\d)((?:19|20)\d{2})(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?!\d)")
_COMPACT_BACK = re.compile(r"T([+-]\d{1,5})D")
_YEAR = re.compile(r"(?=[Ff'12])(?<![\w$.-])(?:FY|fiscal\s+)?'?((?:19|20)\d{2})(?:\s?([QH][1-4]))?(?![\w-])")
_QUARTER_YEAR = re.compile(r"(?=[QH])\b([QH][1-4])\s?((?:19|20)\d{2})\b")
_DOLLARS = re.compile(
    r"(?=[U$])(?:US)?\$\s?(\d[\d,]*(?:\.\d+)?)\s*(trillion|billion|million|thousand|tn|bn|mn|[kKmMbBtT])?(?![\w])"
)
_SCALE = {"trillion": 1e12, "tn": 1e12, "t": 1e12, "billion": 1e9, "bn": 1e9, "b": 1e9, "million": 1e6, "mn": 1e6,
          "m": 1e6, "thousand": 1e3, "k": 1e3}  # fmt: skip
_MAGNITUDE = ["millions", "tens of millions", "hundreds of millions", "billions", "tens of billions",
              "hundreds of billions", "trillions"]  # fmt: skip


def _compact(m: re.Match, day: dt.date) -> str:
    try:
        return f"T{(dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))) - day).days:+d}D"
    except ValueError:
        return m.group(0)


def _month_day(month_name: str, day_of_month: str, day: dt.date, offset) -> str:
    """ "Oct 4" with no year: the latest such date not a week past the decision
    day (items are dated before it; a December item read in January is last year's)."""
    month, d = _MONTHS[month_name.lower().rstrip(".")], int(day_of_month)
    year = day.year
    try:
        if dt.date(year, month, d) > day + dt.timedelta(days=7):
            year -= 1
    except ValueError:
        return "[date]"
    return offset(year, month, d)


def _days(n: int) -> str:
    if n == 0:
        return "the decision day"
    return f"{abs(n)} day{'s' if abs(n) != 1 else ''} {'before' if n < 0 else 'after'} the decision day"


@dataclass
class Masker:
    """The run's mask: its entities, their pseudonyms and the window's start prices.

    ``names``: ticker -> names and aliases; ``people``: ticker -> people;
    ``start_prices``: ticker -> close on the window's first day (set by the
    strategy once it sees that day)."""

    tickers: Sequence[str]
    names: Mapping[str, Sequence[str]] = field(default_factory=dict)
    people: Mapping[str, Sequence[str]] = field(default_factory=dict)
    start_prices: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        letters = [a for a in string.ascii_uppercase] + [a + b for a in "AB" for b in string.ascii_uppercase]
        self.pseudonym = {t: f"Company {letters[i]}" for i, t in enumerate(sorted(self.tickers))}
        self.person: dict[str, str] = {}
        for t in sorted(self.tickers):
            for k, name in enumerate(self.people.get(t, ()), 1):
                self.person.setdefault(name, f"Person {self.pseudonym[t].split()[1]}{k}")
        # whole words; a ticker as written (with $ or an exchange prefix), a name as written or in capitals
        firm: dict[str, str] = {}
        for t in self.tickers:
            firm[t] = t
            for n in self.names.get(t, ()):
                firm[n] = t
                firm[n.upper()] = t
        self._firm = firm
        words = sorted({*firm, *self.person}, key=len, reverse=True)
        self._entity = (
            re.compile(
                "(?=[" + "".join(re.escape(c) for c in sorted({w[0] for w in words} | {"N", "$"})) + "])"
                r"(?<![\w&])(?:(?:NASDAQ|NYSE|Nasdaq)\s*:\s*|\$)?("
                + "|".join(re.escape(w) for w in words)
                + r")(?![\w&])"
            )
            if words
            else None
        )
        self._back = {v: k for k, v in self.pseudonym.items()} | {v: k for k, v in self.person.items()}
        self._back_re = (
            re.compile("|".join(re.escape(p) for p in sorted(self._back, key=len, reverse=True)) + r"(?![\w])")
            if self._back
            else None
        )
        self._memo: dict[tuple[str, str | None], str] = {}

    # -- masking ------------------------------------------------------------------------
    def text(self, s: str, day: str | None = None) -> str:
        """``s`` masked for a prompt of decision day ``day`` (YYYY-MM-DD)."""
        key = (s, day)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._mask(s, dt.date.fromisoformat(day[:10]) if day else None)
            if len(self._memo) < 200_000:
                self._memo[key] = hit
        return hit

    def _mask(self, s: str, day: dt.date | None) -> str:
        s = self._prices(s)
        s = self._dates(s, day)
        if self._entity is not None:
            s = self._entity.sub(self._entity_name, s)
        return s

    def _entity_name(self, m: re.Match) -> str:
        word = m.group(1)
        if word in self.person:
            return self.person[word]
        return self.pseudonym[self._firm[word]]

    def _prices(self, s: str) -> str:
        if "$" not in s:
            return s
        marks = []  # (position, ticker) of every firm named, to rebase a price to the last one before it
        if self._entity is not None:
            marks = [(m.start(), self._firm[m.group(1)]) for m in self._entity.finditer(s) if m.group(1) in self._firm]

        def one(m: re.Match) -> str:
            try:
                value = float(m.group(1).replace(",", "")) * _SCALE.get((m.group(2) or "").lower(), 1.0)
            except ValueError:
                return "[amount]"
            if value >= 1e6:
                k = min(len(_MAGNITUDE) - 1, int(math.floor(math.log10(value))) - 6)
                return f"{_MAGNITUDE[k]} of dollars"
            before = [t for pos, t in marks if pos < m.start()]
            t = before[-1] if before else (self.tickers[0] if len(self.tickers) == 1 else None)
            ref = self.start_prices.get(t) if t else None
            if ref:
                return f"price index {100.0 * value / ref:.1f}"
            return "[price]"

        return _DOLLARS.sub(one, s)

    def _dates(self, s: str, day: dt.date | None) -> str:
        if not _DIGIT.search(s):  # every date pattern needs a digit
            return s

        def offset(y: int, mo: int, d: int) -> str:
            try:
                date = dt.date(y, mo, d)
            except ValueError:
                return "[date]"
            return _days((date - day).days) if day else "[date]"

        s = _ISO.sub(lambda m: offset(int(m.group(1)), int(m.group(2)), int(m.group(3))), s)
        if day is not None:
            s = _COMPACT.sub(lambda m: _compact(m, day), s)
        s = _MDY.sub(lambda m: offset(int(m.group(3)), _MONTHS[m.group(1).lower().rstrip(".")], int(m.group(2))), s)
        s = _DMY.sub(lambda m: offset(int(m.group(3)), _MONTHS[m.group(2).lower().rstrip(".")], int(m.group(1))), s)
        if day is None:
            s = _MY.sub("[month]", s)
        else:  # _MY then _MD in one pass (the same result: neither can match inside or across the other)
            s = _MY_MD.sub(lambda m: "[month]" if m.group(2) else _month_day(m.group(1), m.group(3), day, offset), s)
        s = _QUARTER_YEAR.sub(lambda m: f"{m.group(1)} [year]", s)
        s = _SHORT_YEAR.sub("[year]", s)
        return _YEAR.sub(lambda m: "[year]" + (f" {m.group(2)}" if m.group(2) else ""), s)

    def messages(self, msgs: Sequence[Message], day: str | None) -> tuple[Message, ...]:
        return tuple(Message(role=m.role, content=self.text(m.content, day)) for m in msgs)

    def schema(self, schema: dict) -> dict:
        """The answer schema with the run's tickers as pseudonyms (a portfolio's keys)."""
        return json.loads(self.text(json.dumps(schema, sort_keys=True)))

    # -- answers ------------------------------------------------------------------------
    def unmask(self, answer: str, day: str | None = None) -> str:
        """A raw answer with each pseudonym back as its ticker (or person), and
        each masked id date (T-3D) back as the date it stands for on ``day``."""
        if day is not None:
            d0 = dt.date.fromisoformat(day[:10])
            answer = _COMPACT_BACK.sub(lambda m: (d0 + dt.timedelta(days=int(m.group(1)))).strftime("%Y%m%d"), answer)
        if self._back_re is None:
            return answer
        return self._back_re.sub(lambda m: self._back[m.group(0)], answer)

    def manifest(self) -> dict[str, Any]:
        """``masking.json``: who is who, and what the mask replaced."""
        return {
            "pseudonyms": dict(sorted(self.pseudonym.items())),
            "people": dict(sorted(self.person.items())),
            "names": {t: list(self.names.get(t, ())) for t in sorted(self.tickers)},
            "start_prices": {t: round(v, 6) for t, v in sorted(self.start_prices.items())},
            "rules": [
                "tickers, firm names and aliases -> one pseudonym per firm",
                "people named for a firm -> one pseudonym per person",
                "dates -> day offsets from the decision day; month-year and bare years removed",
                "dollar figures from $1M -> order of magnitude; smaller ones -> price index (100 at the window start)",
            ],
        }


def masker_for(tickers: Sequence[str], extra: Mapping[str, Sequence[str]] | None = None) -> Masker:
    """The mask of a run on ``tickers``: the bundled alias table plus ``extra``
    names (a dataset's, the user's ``--alias``)."""
    from fincon.data.aliases import NAMES, PEOPLE

    names = {t: (*NAMES.get(t, ()), *((extra or {}).get(t, ()))) for t in tickers}
    people = {t: PEOPLE.get(t, ()) for t in tickers}
    return Masker(tuple(tickers), names, people)


def user_names(aliases: Mapping[str, Sequence[str]] | None = None) -> dict[str, tuple[str, ...]]:
    """Names to mask beyond the bundled table: the user's ``--alias TICKER=NAME``."""
    out: dict[str, tuple[str, ...]] = {}
    for t, ns in (aliases or {}).items():
        out[t.upper()] = (*out.get(t.upper(), ()), *ns)
    return out


def attach(client, settings, tickers: Sequence[str]) -> None:
    """Give ``client`` the run's mask when ``settings`` ask for one
    (``anonymize``) and it has none yet: how every strategy that calls a
    model masks its prompts."""
    if settings is not None and settings.anonymize and client.masker is None:
        client.masker = masker_for(tickers, user_names(settings.aliases))


def write_manifest(client, run_dir) -> None:
    """``masking.json`` in ``run_dir`` when ``client`` masked what it sent (who
    is who behind the pseudonyms the model saw): every strategy that calls a
    model writes it through here when it finishes."""
    from pathlib import Path

    if client is not None and client.masker is not None:
        (Path(run_dir) / "masking.json").write_text(
            json.dumps(client.masker.manifest(), indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
