"""The leakage audit's replaying adversary (:mod:`fincon.llm.leakage`): a reader of the corpus who runs
fincon's own pipeline over every firm and session, tabulates what an analyst's masked prompt would list,
and looks a prompt up in the table.

It needs the analysts' own choices, so it lives beside them: which of a session's items an analyst of one
source reads (those visible since the session before, the newest ``memory_k`` by id, whole within its
token budget), the lexicon's summary of each, the mask of each firm's names and mined terms, and the
data analyst's indicators. The mask gives each item as its topic and tone word, and a session's lines in
order are one firm-session's alone far more often than each line is (found in review 2026-12-02: 557 of
InvestorBench's 755 firm-sessions with news, where the audit's line-by-line lookup placed 2 of 39 masked
news prompts); the indicators' regimes place a price prompt too. A model that read the corpus needs no
such table to remember it; the table is how the audit counts what the prompt still says.
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections import OrderedDict, defaultdict
from typing import Any, Mapping, Sequence

import numpy as np

from fincon.agents.roles.base import DEFAULT_BUDGET_TOKENS, Item, memory_text, within_budget
from fincon.agents.roles.data_analysis import ROLE as DATA_ANALYST
from fincon.data.calendar import infer_calendar
from fincon.data.events.model import visible_day
from fincon.llm import leakage
from fincon.llm.leakage import ROLE_SOURCE, SESSIONS
from fincon.llm.leakage_inputs import Guess, Knowledge, Prompt, RunInfo
from fincon.llm.masking_rules import ITEM_LINE
from fincon.llm.masking_terms import masker_for, mined_terms
from fincon.memory.working import LexiconSummariser

Table = dict[tuple[str, ...], list[tuple[str, dt.date]]]
_BUILT: OrderedDict[tuple, Table] = OrderedDict()


class Replayed:
    """``Replayed(runs, k)(prompt)``: the firm and day a prompt's lines give away when they are what one
    firm's analyst would have listed on one session (cue ``replayed``). Tables are built on first use, one
    per corpus window and setting the runs used."""

    def __init__(self, runs: Sequence[RunInfo], k: Knowledge):
        self.k, self.runs = k, {str(r.path): r for r in runs}
        self._knows: int | None = None  # what the tables are of: the corpus and the prices (see _table)

    def __call__(self, p: Prompt) -> Guess:
        run = self.runs.get(p.run)
        if run is None or p.day in ("-", ""):
            return Guess()
        if p.kind in ROLE_SOURCE:
            table = self.items(run, ROLE_SOURCE[p.kind])
            lines = item_lines(p.text)
            found = next((table[lines[:m]] for m in range(len(lines), 0, -1) if lines[:m] in table), [])
        elif p.kind == DATA_ANALYST.name:
            found = self.prices(run).get(price_lines(p.text), [])
        else:
            return Guess()
        return self._placed(found)

    def items(self, run: RunInfo, source: str) -> Table:
        """What an analyst of ``source`` in ``run`` would list first, per firm and session (its settings)."""
        params: Mapping[str, Any] = run.params or {}
        k = int(params.get("memory_k", 5))
        budget = int(params.get("analyst_budget_tokens", DEFAULT_BUDGET_TOKENS))
        return self._table(
            ("items", run.start, source, k, budget, run.mask_items),
            lambda: items_table(self.k, run.start, source, k, budget, run.mask_items),
        )

    def prices(self, run: RunInfo) -> Table:
        """The data analyst's masked indicator lines in ``run``, per firm and session."""
        lookback = int((run.params or {}).get("lookback", 60))
        return self._table(("prices", lookback, run.mask_items), lambda: prices_table(self.k, lookback, run.mask_items))

    def _table(self, key: tuple, build) -> Table:
        """A table, built once per process for one corpus, prices and setting (a pure function of them, 3-15
        CPU-s: every masked run of a test session audits the sample anew)."""
        if self._knows is None:
            events = tuple((e.id, e.ticker, e.source, e.published_at, hash(e.text)) for e in self.k.events)
            closes = tuple((t, len(c), float(c.sum())) for t, c in sorted(self.k.closes.items()))
            self._knows = hash((events, closes, tuple(sorted(self.k.corpus_of.items()))))
        key = (self._knows, *key)
        if key not in _BUILT:
            _BUILT[key] = build()
            while len(_BUILT) > 16:
                _BUILT.popitem(last=False)
        return _BUILT[key]

    def _placed(self, found: Sequence[tuple[str, dt.date]]) -> Guess:
        """One firm's sessions within 2 x ``SESSIONS`` of each other: the firm and the middle one (exactly
        when it is the only one)."""
        if not found or len({f for f, _ in found}) > 1:
            return Guess()
        days = sorted(d for _, d in found)
        if leakage.sessions_apart(days[0], days[-1], self.k.closes[found[0][0]].index) > 2 * SESSIONS:
            return Guess()
        return Guess(found[0][0], "replayed", days[len(days) // 2], len(days) == 1, "replayed")


def item_lines(text: str) -> tuple[str, ...]:
    """A prompt's item lines without their labels ("this week: topics: product (tone positive)")."""
    return tuple(m.group(0).split("] ", 1)[1] for line in text.splitlines() if (m := ITEM_LINE.match(line)))


def price_lines(text: str) -> tuple[str, ...]:
    """A data analyst's indicator lines ("[E1]: 20-day momentum: flat against its usual range")."""
    return tuple(line for line in text.splitlines() if line.startswith("[E") and "]: " in line)


def items_table(
    k: Knowledge, start: dt.date, source: str, memory_k: int, budget: int, mask_items: str = "topics"
) -> Table:
    """Per firm and session: the masked lines of the items of ``source`` an analyst would list first (those
    visible since the session before, the newest ``memory_k`` by id, whole within ``budget``), each firm
    masked with its own names and the terms mined before ``start`` (the run's first day)."""
    summariser = LexiconSummariser()
    firms: dict[str, list[Any]] = defaultdict(list)
    for e in k.events:
        if e.source == source and e.ticker in k.closes:
            firms[e.ticker].append(e)
    out: Table = defaultdict(list)
    corpora: dict[str | None, list[str]] = defaultdict(list)
    for firm in firms:
        corpora[k.corpus_of.get(firm)].append(firm)
    mined = {spec: mined_terms(spec, tuple(sorted(fs)), start) for spec, fs in corpora.items()}  # once a corpus
    for firm, events in sorted(firms.items()):
        names, vocabulary = mined[k.corpus_of.get(firm)]
        mask = masker_for((firm,), names, vocabulary=vocabulary, items=mask_items)
        sessions = [d.date() for d in k.closes[firm].index]
        new: dict[dt.date, list[tuple[str, dt.date, Any]]] = defaultdict(list)
        for e in events:
            seen = visible_day(e.published_at).date()
            i = bisect.bisect_left(sessions, seen)
            if i < len(sessions):
                new[sessions[i]].append((e.id, seen, e))
        for day, got in new.items():
            listed = []
            for _, seen, e in sorted(got, key=lambda x: x[0])[-memory_k:]:
                text, meta = summariser.summary(e)
                listed.append(Item(e.id, str(seen), source, memory_text(text, meta["lm_tone"]), None, 1.0, True))
            block = "\n".join(it.line(f"E{j}", str(day)) for j, it in enumerate(within_budget(listed, budget), 1))
            out[item_lines(mask.text(block, str(day)))].append((firm, day))
    return dict(out)


def prices_table(k: Knowledge, lookback: int, mask_items: str = "topics") -> Table:
    """Per firm of the corpus and session: the data analyst's masked indicator lines (each distinct block
    masked once: a firm's regimes repeat for days)."""
    mask = masker_for((), {}, items=mask_items)
    out: Table = defaultdict(list)
    masked: dict[str, tuple[str, ...]] = {}
    for firm in sorted({e.ticker for e in k.events} & set(k.closes)):
        closes = k.closes[firm].to_numpy(dtype=float)
        year = infer_calendar(k.closes[firm].index).days_per_year  # a coin's 365
        for i, day in enumerate(k.closes[firm].index):
            c = closes[max(0, i - lookback) : i + 1]
            c = c[np.isfinite(c)]
            if len(c) < 6:
                continue
            d = str(day.date())
            items, _ = DATA_ANALYST.indicators(c, d, lookback + 1, days_per_year=year)
            block = "\n".join(it.line(f"E{j}") for j, it in enumerate(items, 1))
            if block not in masked:
                masked[block] = price_lines(mask.text(block, d))
            out[masked[block]].append((firm, day.date()))
    return dict(out)
