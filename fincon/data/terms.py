"""The words that name a firm without its name: mined from a corpus.

A mask that hides a firm's names still lets its vocabulary through: a
streamer's "paid memberships", a software firm's "Azure", a drug maker's
"Stelara". :func:`distinctive_terms` finds them in the items themselves:
words and word pairs frequent in one ticker's items and rare in the other
tickers' items and, when given, in financial English at large (the
Loughran-McDonald dictionary's document shares, fincon.data.lexicon). The
mask (fincon.llm.masking) masks them; the leakage audit
(fincon.eval.leakage) reads them as a cue. One statistic for both, so the
audit measures what the mask claims to remove.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Mapping, Sequence

_TOKEN = re.compile(r"[a-z0-9]+")
#: words that carry no content (articles, prepositions, pronouns, auxiliaries)
FUNCTION = frozenset(
    """a an the and or of to in on for at by with from as is are was were be been has have had it its this that
    these those which who whom what when where why how not no than then so such into over under about after
    before between during up down out more most less least very can could would should will may might also
    our their his her they we you i any all each other some while both only just""".split()
)
#: words too common to name a firm (the function words plus finance's and fincon's own prompt words)
STOP = FUNCTION | frozenset(
    """company companies stock share shares price prices market markets revenue revenues growth quarter quarterly
    year years annual report reports reported increase increased decrease decreased percent billion million
    analyst analysts news item items today day days week month decision insight insights tone lexicon label
    text date bullish bearish neutral confidence inc corp ltd co llc plc""".split()
)


def tokens(text: str) -> list[str]:
    """Lower-case words and numbers of ``text``."""
    return _TOKEN.findall(text.lower())


def distinctive_terms(
    docs_by_ticker: Mapping[str, Sequence[str]],
    *,
    background: Mapping[str, float] | None = None,
    min_share: float = 0.05,
    ratio: float = 10.0,
    top: int = 40,
) -> dict[str, list[str]]:
    """Per ticker, words and word pairs in at least ``min_share`` of its
    documents and ``ratio`` times more frequent there (by document share)
    than in any other ticker's documents and in ``background`` (word ->
    document share of a general corpus; a pair takes its rarer word's);
    at most ``top``, the most distinctive first."""
    dfs: dict[str, Counter] = {}
    sizes: dict[str, int] = {}
    for t, docs in docs_by_ticker.items():
        c: Counter = Counter()
        for d in docs:
            toks = [w for w in tokens(d) if not w.isdigit()]
            grams = {w for w in toks if w not in STOP and len(w) > 2}
            grams |= {f"{a} {b}" for a, b in zip(toks, toks[1:]) if a not in STOP and b not in STOP and len(a) > 2}
            c.update(grams)
        dfs[t], sizes[t] = c, max(1, len(docs))
    bg = background or {}
    out: dict[str, list[str]] = {}
    for t, c in dfs.items():
        others = [u for u in dfs if u != t]
        floor = 0.5 / min((sizes[u] for u in others), default=1000)
        scored = []
        for term, n in c.items():
            share = n / sizes[t]
            if share < min_share:
                continue
            other = max((dfs[u][term] / sizes[u] for u in others), default=0.0)
            if not others:
                continue  # no other firm's items: a frequent word here is the corpus' style, not the firm's
            if bg:
                other = max(other, min(bg.get(w, 0.0) for w in term.split()))
            if share >= ratio * max(other, floor):
                scored.append((share / max(other, 1e-4), term))
        out[t] = [term for _, term in sorted(scored, key=lambda x: (-x[0], x[1]))[:top]]
    return out


_CAPITALISED = re.compile(r"(?<![\w-])([A-Z][A-Za-z]+(?:[-&][A-Z][A-Za-z]+)*)(?![\w])")


def firm_names(
    docs_by_ticker: Mapping[str, Sequence[str]],
    common: Mapping[str, float],
    *,
    min_share: float = 0.2,
    top: int = 5,
    generic: frozenset[str] = frozenset(),
) -> dict[str, list[str]]:
    """Per ticker, the capitalised words of its items that are no common word
    of financial English (``common``: word -> document share, below 0.001
    counts as rare) and appear in at least ``min_share`` of its items: the
    firm's own names as its corpus writes them ("Honeywell"), most frequent
    first; a word as frequent in another ticker's items, or in ``generic``
    (COVID, CEO), is none. Where a source gives no names, a masked run takes
    these."""
    out: dict[str, list[str]] = {}
    for t, docs in docs_by_ticker.items():
        c: Counter = Counter()
        for d in docs:
            c.update({w for w in _CAPITALISED.findall(d) if common.get(w.lower(), 0.0) < 0.001 and w not in generic})
        n = max(1, len(docs))
        others = [u for u in docs_by_ticker if u != t]
        share: dict[str, Counter[str]] = {u: Counter() for u in others}
        if others:  # a word as frequent in another firm's items (a pandemic, a regulator) is no name of this one
            for u in others:
                for d in docs_by_ticker[u]:
                    share[u].update(set(_CAPITALISED.findall(d)))
        out[t] = [
            w
            for w, k in c.most_common()
            if k / n >= min_share and all(share[u][w] / max(1, len(docs_by_ticker[u])) < k / n / 5 for u in others)
        ][:top]
    return out
