"""Masked prompts (``--anonymize``): what lets a model recognise the firm and the period is removed.

A model trained after the backtest window may remember what happened in it
(fincon.llm.knowledge). Telling it to forget does not work (Lopez-Lira, Tang
& Zhu); removing what it would recognise does, to the degree an adversary
that knows the corpus cannot put the firm and the day back
(``fincon eval leakage``, fincon.eval.leakage, is the acceptance test).
Every prompt passes through :class:`fincon.llm.client.LLMClient`, so the
mask sits there, once, over every text that reaches a model: items,
distilled insights, reports, reflections, beliefs, memories, indicator
summaries and the answer schema.

What is replaced, deterministically:

* the run's tickers, the firms' names and aliases (fincon.data.aliases, a
  dataset's own names, ``--alias TICKER=NAME``) and the people named for
  them: one pseudonym per firm for the whole run ("Company A", in ticker
  order) and per person ("Person A1");
* the firm's vocabulary: products, brands, shows, subsidiaries and business
  words (the bundled table, and the terms mined from the corpus the run
  reads that are frequent in one firm's items and rare in financial
  English, fincon.data.terms.distinctive_terms): "[term]";
* every other proper name: a capitalised word that is no common word of
  financial English (the Loughran-McDonald dictionary's document counts)
  and none of fincon's own prompt words (rivals, partners, places,
  products): "[name]";
* dates: never an exact offset; coarse recency from the decision day ("the
  decision day", "this week", "this month", "this quarter", "this year",
  "over a year ago"); a month with its year and a bare year are removed
  ("[month]", "[year]"); a date inside an item's id becomes an opaque token
  (mapped back in answers, so a citation still names the real item);
* numbers: every dollar amount is "[amount]", except the stock's own price
  written by fincon (rebased to a secret base per run: "price index ...",
  the base in ``masking.json``, never in a prompt); percentages are bucketed
  ("+3-7%"); other numbers of two digits or more are "[n]" (fincon's own
  labels, "20-day" spans, values between -1 and 1 and the weights of the
  position a prompt states are kept); a rules insight's reading is its word
  alone ("-> reads bearish", no score);
* items: a listed item of the corpus, at any length, is given as its topic (the
  first it touches of a fixed list of 43, ``rules.TOPICS``: "topics:
  growth") beside its tone as a word ("(tone positive)"); its own words,
  even sorted and even only the common ones, name it to a reader of the
  corpus (fincon.llm.leakage.bag_guess), and so did its tone to two
  decimals beside its topic;
* no agent's words are quoted into another's prompt: a sentence of six
  words or more that a model answered (or a rules fallback, quoting items)
  is, wherever a later prompt would repeat it, replaced by its content
  words in alphabetical order ("key words: cloud, demand, growth").

Answers map back: a pseudonym in the model's raw answer becomes the ticker
(or the person) and an id's date token its date before the answer is
validated, so the run's decisions name real tickers and items. The mapping
is written into the run directory (``masking.json``). Masked text is
memoised by content; the call cache is keyed by the masked prompt, so a
replay stays byte-identical.

What still leaks (a reader should know): an item's topic and its tone word
(an adversary that applies this mask and the public lexicon to every item
of the corpus names an item in 0-2 % of a masked run's prompts on
InvestorBench, a day's lines together 0-1 %); the industry, through the
topics (a firm, never a day: the audit's cue "topics' industry"); and,
with a paraphrase, what the paraphrase keeps (``fincon eval leakage``
measures what its adversaries can recover; it does not ask a model).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import string
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from fincon.llm import masking_rules as rules
from fincon.llm.masking_quotes import Quotes, unquote
from fincon.llm.types import Message


@dataclass
class Masker:
    """The run's mask: its entities, their pseudonyms, its secret price base.

    ``names``: ticker -> names and aliases; ``people``: ticker -> people;
    ``vocabulary``: ticker -> products and business words; ``start_prices``:
    ticker -> close on the window's first day (set by the strategy once it
    sees that day); ``secret``: the seed of the price base and the date tokens."""

    tickers: Sequence[str]
    names: Mapping[str, Sequence[str]] = field(default_factory=dict)
    people: Mapping[str, Sequence[str]] = field(default_factory=dict)
    vocabulary: Mapping[str, Sequence[str]] = field(default_factory=dict)
    start_prices: dict[str, float] = field(default_factory=dict)
    secret: str = "fincon"
    #: an item of the corpus as its "topics" and tone, or its "tone" alone (LLMSettings.mask_items)
    items: str = "topics"
    #: an item's rewriting instead of its topics (rules.topics) (another model's paraphrase: :class:`Paraphraser`)
    rewriter: Any = None

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
        terms = {w for t in self.tickers for w in self.vocabulary.get(t, ()) if w not in firm}
        self._terms = terms
        words = sorted({*firm, *self.person, *terms}, key=len, reverse=True)
        self._entity = (
            re.compile(
                "(?=[" + "".join(re.escape(c) for c in sorted({w[0] for w in words} | {"N", "$"})) + "])"
                rf"(?<![\w&])(?:(?:NASDAQ|NYSE|Nasdaq){rules.SP}*:{rules.SP}*|\$)?("
                + "|".join(re.escape(w) for w in words)
                + r")(?![\w&])"
            )
            if words
            else None
        )
        h = hashlib.sha256(f"{self.secret}:price".encode()).digest()
        #: the secret price base: the window's first close reads as this index (50..200), never 100
        self.base = round(50.0 + 150.0 * int.from_bytes(h[:4], "big") / 2**32, 4)
        self._tokens: dict[str, str] = {}  # date token -> YYYYMMDD
        self._back = {v: k for k, v in self.pseudonym.items()} | {v: k for k, v in self.person.items()}
        self._back_re = (
            re.compile("|".join(re.escape(p) for p in sorted(self._back, key=len, reverse=True)) + r"(?![\w])")
            if self._back
            else None
        )
        self._memo: dict[tuple[str, str | None], str] = {}
        # memos of the line-by-line pass (see _line): a line, a segment's date template, a segment with its
        # dates masked -> the rest masked
        self._lines: dict[tuple[str, dt.date | None], str] = {}
        self._reads_day: dict[str, bool] = {}  # a line -> whether a date in it reads the day
        self._templates: dict[str, tuple[str, list]] = {}  # a segment -> its dates as markers (see _dated)
        self._words_masked: dict[str, str] = {}
        self._schemas: dict[str, str] = {}  # an answer schema (a few per run) -> it masked
        self._quotes = Quotes()  # the sentences a model answered -> their rewording
        self._words: dict[str, str] = {}  # a capitalised word -> itself or "[name]" (decided once)

    # -- what it learns as a run goes on -------------------------------------------------
    def learned(self) -> dict[str, Any]:
        """What the mask learned from the run so far and masks by: the closes its price index is
        based on, the date tokens it wrote (an answer's token maps back to its date) and the
        sentences a model answered (reworded when a later prompt quotes them). A forward step
        carries it to the next (fincon.agents.team.resumable), so that every step masks as the
        whole run would; the rest of its state follows from its settings or is a memo."""
        return {"start_prices": dict(self.start_prices), "tokens": dict(self._tokens), **self._quotes.learned()}

    def take_up(self, learned: Mapping[str, Any]) -> None:
        """Go on from :meth:`learned` (in its order: a sentence is reworded before any it contains)."""
        self.start_prices.clear()
        self.start_prices.update(learned["start_prices"])
        self._tokens = dict(learned["tokens"])
        self._quotes.take_up(learned)
        self._memo.clear()

    # -- masking ------------------------------------------------------------------------
    def text(self, s: str, day: str | None = None) -> str:
        """``s`` masked for a prompt of decision day ``day`` (YYYY-MM-DD)."""
        key = (s, day)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._mask(s, _decision_day(day))
            if len(self._memo) < 200_000:
                self._memo[key] = hit
        if not self._quotes.quoted:
            return hit
        return unquote(hit, self._quotes.on(day, lambda said: self._mask(said, _decision_day(day))))

    def _mask(self, s: str, day: dt.date | None) -> str:
        s = self._prices(s)  # the whole text: a price is rebased to the last firm named before it
        if "\n" not in s:
            return self._line(s, day)
        return "\n".join([self._line(line, day) for line in s.split("\n")])

    def _line(self, line: str, day: dt.date | None) -> str:
        """One line masked. An item's line ("[E3] Nov 1: text") is masked as its
        label and date, then its text: the same text under a new label or recency
        on a later day is then a memo hit (no rule reads across ": ", so the
        result is the same as the whole line's). Not split where ": " could be
        read across: inside a bracket, or after an exchange ("NASDAQ: MSFT")."""
        # keyed by its day only if a date in it reads against the day (not known before its first day)
        reads_day = self.rewriter is not None or self._reads_day.get(line, True)
        key = (line, day if reads_day else None)
        hit = self._lines.get(key)
        if hit is None:
            cut = line.find(": ") + 2
            if (
                cut > 1
                and line.rfind("[", 0, cut) <= line.rfind("]", 0, cut)
                and not rules.EXCHANGE.search(line)
                and not line[:cut].endswith(rules.POSITION_LEADS)  # the position is read after its lead
            ):
                (a, read_a), (b, read_b) = self._segment(line[:cut], day), self._segment(line[cut:], day)
                hit, reads_day = a + b, read_a or read_b
            else:
                hit, reads_day = self._segment(line, day)
            if "[" in hit:
                hit = rules.ITEM_LINE.sub(lambda m: self._item_line(m, day), hit)
            if len(self._lines) < 200_000:
                if day is not None:  # with no day every date is "[date]": whether one reads the day is not seen
                    self._reads_day[line] = reads_day
                # a line none of whose dates reads the day masks the same with no day: one entry serves both
                self._lines[(line, day if reads_day else None)] = hit
        return hit

    def _segment(self, s: str, day: dt.date | None) -> tuple[str, bool]:
        """Part of a line with its dates, names and numbers masked, and whether a
        date in it read the day; the names and numbers memoised by the text its
        dates leave (the same on most days)."""
        dated, reads_day = self._dated(s, day) if day is not None else (self._dates(s, None), True)
        hit = self._words_masked.get(dated)
        if hit is None:
            hit = self._words_in(dated)
            if len(self._words_masked) < 200_000:
                self._words_masked[dated] = hit
        return hit, reads_day

    def _words_in(self, s: str) -> str:
        """Text with its prices and dates masked: its names and numbers."""
        if self._entity is not None:
            s = self._entity.sub(self._entity_name, s)
        kept: list[str] = []  # ids, labels and fincon's price indices: masked already, kept whole

        def hold(m: re.Match) -> str:  # a private-use character, not a number: the number rule would mask "12"
            kept.append(m.group(0))
            return f"\x00{chr(rules.HOLD + len(kept) - 1)}\x00"

        s = rules.HELD.sub(hold, rules.calendar(s))  # an "[event]" held as the ids are
        s = self._proper(rules.numbers(s))
        return rules.HELD_BACK.sub(lambda m: kept[ord(m.group(1)) - rules.HOLD], s) if kept else s

    def _item_line(self, m: re.Match, day: dt.date | None) -> str:
        """A listed item of the corpus: another model's paraphrase of it
        (masked again: a paraphrase may put a name back) or, without one or
        when it fails, its topics (rules.topics); its tone as a word either way
        (rules.tone_word). A short line under a bare label, fincon's own
        indicator, is kept (rules.ITEM_WORDS)."""
        text = m.group(2)
        if m.group(1).endswith("]: ") and len(text.split()) < rules.ITEM_WORDS:  # two decimals named items
            text = rules.LEVEL.sub("[level]", text) if self.items == "tone" else text  # risk levels: a firm's
            return f"{m.group(1)}{text}{rules.tone_word(m.group(3))}"
        if self.rewriter is not None:
            new = self.rewriter(text, str(day) if day else None)
            if new:
                again = self._mask(new, day)
                return f"{m.group(1)}{again}{rules.tone_word(m.group(3))}"
        gist = rules.topics(text) if self.items == "topics" else "an item"
        return f"{m.group(1)}{gist}{rules.tone_word(m.group(3))}"

    def _entity_name(self, m: re.Match) -> str:
        word = m.group(1)
        if word in self.person:
            return self.person[word]
        if word in self._terms:
            return "[term]"
        return self.pseudonym[self._firm[word]]

    def _prices(self, s: str) -> str:
        if "$" not in s:
            return s
        marks = []  # (position, ticker) of every firm named, to rebase a price to the last one before it
        if self._entity is not None:
            marks = [(m.start(), self._firm[m.group(1)]) for m in self._entity.finditer(s) if m.group(1) in self._firm]

        def one(m: re.Match) -> str:
            if m.group(2) or not rules.PRICE_WORDS.search(s[max(0, m.start() - 40) : m.start()]):
                return "[amount]"  # not the stock's price: its size would tell the firm (or the price's base)
            try:
                value = float(m.group(1).replace(",", ""))
            except ValueError:
                return "[amount]"
            before = [t for pos, t in marks if pos < m.start()]
            t = before[-1] if before else (self.tickers[0] if len(self.tickers) == 1 else None)
            ref = self.start_prices.get(t) if t else None
            return f"price index {self.base * value / ref:.1f}" if ref else "[amount]"

        return rules.DOLLARS.sub(one, s)

    def _proper(self, s: str) -> str:
        """Every capitalised word that is no common word of financial English, no
        generic acronym, no word of fincon's own prompts and no pseudonym: "[name]"."""
        if not rules.common():
            return s
        seen = self._words

        def one(m: re.Match) -> str:
            w = m.group(1)
            got = seen.get(w)
            if got is None:
                got = seen[w] = rules.proper_word(w[:-2]) + "'s" if w.endswith("'s") else rules.proper_word(w)
            return got

        return rules.PROPER.sub(one, s)

    def _dates(self, s: str, day: dt.date | None) -> str:
        """Dates as recency from ``day`` (no exact offset), years and months as
        placeholders; with no day, every date "[date]"."""
        if day is None:
            return self._date_pass(s, lambda y, mo, d: "[date]", None)
        return self._date_pass(
            s, lambda y, mo, d: rules.offset(y, mo, d, day), lambda name, dom: rules.month_day(name, dom, day)
        )

    def _dated(self, s: str, day: dt.date) -> tuple[str, bool]:
        """``_dates(s, day)``, from a template of ``s`` made once for every day:
        each date that reads against the day stands as a marker, filled in per
        day. The same text as ``_dates``: a marker is one lower-case word, as
        every recency phrase is a few, and no date rule reads a letter of either."""
        template = self._templates.get(s)
        if template is None:
            if rules.MARK_OPEN in s.lower():  # text that could pass for a marker: the direct pass
                return self._dates(s, day), True
            template = self._templates[s] = self._template(s)
        text, marks = template
        if not marks:
            return text, False

        def fill(m: re.Match) -> str:
            mark = marks[rules.mark_index(m.group(1))]
            if isinstance(mark, dt.date):
                return rules.recency((mark - day).days)
            return rules.month_day(mark[0], mark[1], day)

        return rules.MARK.sub(fill, text), True

    def _template(self, s: str) -> tuple[str, list]:
        marks: list = []  # a date (an exact date's offset) or (month name, day of month) (a date with no year)

        def mark(value) -> str:
            marks.append(value)
            return rules.mark(len(marks) - 1)

        def offset(y: int, mo: int, d: int) -> str:
            try:
                return mark(dt.date(y, mo, d))
            except ValueError:
                return "[date]"

        return self._date_pass(s, offset, lambda name, dom: mark((name, dom))), marks

    def _date_pass(self, s: str, offset, month_day) -> str:
        """The date rules in their order. ``offset(y, mo, d)``: an exact date's
        text; ``month_day(name, dom)``: a month and day's (None: no decision day,
        a month and year is "[month]" and a month and day is kept)."""
        if not rules.DIGIT.search(s):  # every date pattern needs a digit
            return s
        # a pattern is skipped where what it must contain is absent: the same result, fewer passes
        years = "19" in s or "20" in s  # every pattern with a four-digit year
        if years:
            s = rules.ISO.sub(lambda m: offset(int(m.group(1)), int(m.group(2)), int(m.group(3))), s)
            s = rules.YMD.sub(lambda m: rules.year_first(m, offset), s)
            s = rules.NUMERIC_DATE.sub(lambda m: rules.numeric_date(m, offset), s)
            s = rules.COMPACT.sub(self._date_token, s)
            s = rules.MDY.sub(
                lambda m: offset(int(m.group(3)), rules.MONTHS[m.group(1).lower().rstrip(".")], int(m.group(2))), s
            )
            s = rules.DMY.sub(
                lambda m: offset(
                    int(m.group(4)), rules.MONTHS[(m.group(2) or m.group(3)).lower().rstrip(".")], int(m.group(1))
                ),
                s,
            )
        if month_day is None:
            s = rules.MY.sub("[month]", s) if years else s
        else:  # rules.MY then _MD in one pass (the same result: neither can match inside or across the other)
            s = rules.MY_MD.sub(
                lambda m: "[month]" if m.group(2) or m.group(4) else month_day(m.group(1), m.group(3)), s
            )
        if years:
            s = rules.QUARTER_YEAR.sub(lambda m: f"{m.group(1)} [year]", s)
        s = rules.FISCAL_SHORT.sub(rules.fiscal, s)
        if "'" in s:
            s = rules.SHORT_YEAR.sub("[year]", s)
        if not years:
            return s
        s = rules.YEAR_RANGE.sub(lambda m: f"{'FY ' if m.group(1) else ''}[year]{m.group(3)}[year]", s)
        return rules.YEAR.sub(lambda m: "[year]" + (f" {m.group(2)}" if m.group(2) else ""), s)

    def _date_token(self, m: re.Match) -> str:
        """YYYYMMDD in an id as an opaque token of the run (no order, no offset)."""
        date = m.group(0)
        token = "D" + hashlib.sha256(f"{self.secret}:{date}".encode()).hexdigest()[:6]
        self._tokens[token] = date
        return token

    def messages(self, msgs: Sequence[Message], day: str | None) -> tuple[Message, ...]:
        return tuple(Message(role=m.role, content=self.text(m.content, day)) for m in msgs)

    def schema(self, schema: dict) -> dict:
        """The answer schema with the run's tickers as pseudonyms (a portfolio's keys, and their titles:
        pydantic titles a field after its alias, "Msft", which the entity rule in capitals missed)."""
        s = json.dumps(schema, sort_keys=True)
        hit = self._schemas.get(s)
        if hit is None:
            hit = self._entity.sub(self._entity_name, s) if self._entity is not None else s
            titled = {t.title(): self.pseudonym[t] for t in self.tickers if t.title() != t}
            hit = self._schemas[s] = re.sub(
                r'"title": "([^"]*)"', lambda m: f'"title": "{titled.get(m.group(1), m.group(1))}"', hit
            )
        return json.loads(hit)  # a new object on every call: the caller may change it

    # -- answers ------------------------------------------------------------------------
    def unmask(self, answer: str, day: str | None = None) -> str:
        """A raw answer with each pseudonym back as its ticker (or person), and
        each id's date token back as its date; the answer's sentences are kept
        so that a later prompt rewords them: as the model wrote them and as a
        prompt shows them, masked again on ``day`` (a sentence the mask changes,
        with a number, a percentage or a name, was never found there and reached
        the manager's prompt whole: found in review 2026-12-02); one with a date,
        as each later day masks it (fincon.llm.masking_quotes)."""
        self._remember(answer)
        answer = rules.TOKEN_BACK.sub(lambda m: self._tokens.get(m.group(0), m.group(0)), answer)
        if self._back_re is not None:
            answer = self._back_re.sub(lambda m: self._back[m.group(0)], answer)
        self._remember(answer, lambda x: self.text(x, day), day=day)
        return answer

    def recalled(self, texts: Sequence[str], day: str | None = None) -> None:
        """Texts a model wrote that a prompt of this run will show (an answer once unmasked; a training's
        carried reflections, learned beliefs' reflections): their sentences, masked as of ``day``, are
        reworded there as any answer's are (carried whole into a new episode's prompts, found in review)."""
        self._remember(json.dumps(list(texts)), lambda x: self.text(x, day), day=day)

    def said(self, answer: str, day: str | None = None) -> None:
        """An answer (JSON) no model gave but a later prompt shows, such as a rules fallback's insight
        quoting its items' first sentences: its sentences, masked, are shown there as their topics, as
        items are (their key words, a model's answer's rewording, named an item from the week before
        to the corpus adversary in 11 of 28 manager prompts of a masked InvestorBench MSFT run)."""
        gist = rules.topics if self.items == "topics" else (lambda _: "a quoted item")  # as an item is shown
        self._remember(answer, lambda x: self.text(x, day), gist, day)

    def _remember(
        self,
        answer: str,
        form: Callable[[str], str] | None = None,
        shown: Callable[[str], str] | None = None,
        day: str | None = None,
    ) -> None:
        def dated(said: str) -> str | None:  # a sentence with a date the day reads: masked as of ``day``,
            # without the rewording of what was said (the sentence itself was just kept: reworded twice)
            return self._mask(said, _decision_day(day)) if self._template(said)[1] else None

        self._quotes.remember(answer, form, shown or rules.reword, dated)  # rules read at the call

    def manifest(self) -> dict[str, Any]:
        """``masking.json``: who is who, and what the mask replaced."""
        return {
            "pseudonyms": dict(sorted(self.pseudonym.items())),
            "people": dict(sorted(self.person.items())),
            "names": {t: list(self.names.get(t, ())) for t in sorted(self.tickers)},
            "vocabulary": {t: list(self.vocabulary.get(t, ())) for t in sorted(self.tickers)},
            "start_prices": {t: round(v, 6) for t, v in sorted(self.start_prices.items())},
            "price_base": self.base,
            "items": self.items,
            "paraphrase": (
                {
                    "model": self.rewriter.model,
                    "calls": self.rewriter.calls,
                    "fallbacks": self.rewriter.fallbacks,
                }  # fmt: skip
                if self.rewriter is not None
                else None
            ),
            "rules": [
                "tickers, firm names and aliases -> one pseudonym per firm",
                "people named for a firm -> one pseudonym per person",
                "the firm's products, brands and business words (bundled table, mined terms) -> [term]",
                "any other proper name (no common word of financial English) -> [name]"
                + ("" if rules.common() else " (off: the Loughran-McDonald dictionary is not installed)"),
                "dates -> coarse recency from the decision day, never an offset; month-year and bare years removed",
                "a date in an id -> an opaque token of the run",
                "dollar amounts -> [amount]; the stock's own price -> price index on a secret base (price_base)",
                "percentages -> buckets (0-1, 1-3, 3-7, 7-15, 15-30, 30-60, 60-100, over 100); other numbers of two "
                "digits or more -> [n]",
                "a sentence a model answered, repeated in a later prompt -> its content words in alphabetical order",
            ],
        }


def _decision_day(day: str | None) -> dt.date | None:
    """A prompt's decision day; None for a call that has none (the belief update between episodes is
    asked on "episode-2"): every date of its prompt is then "[date]"."""
    try:
        return dt.date.fromisoformat(day[:10]) if day else None
    except ValueError:
        return None
