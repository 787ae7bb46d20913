"""Distillation: an item's whole sentences that matter, within a token budget.

Every event is distilled once, when it enters an analyst's memory (the
working-memory step), so that a prompt can carry *whole* distilled items
instead of texts cut mid-sentence. The default is extractive and runs in
code: the body is split into sentences, each is scored (figures, finance
terms, Loughran-McDonald sentiment words, the lead sentence), and the best
sentences that fit the item's budget are kept in their original order. The
LLM summariser (:class:`fincon.memory.working.LLMSummariser`) replaces it
when configured.

Results are cached by the SHA-256 of (body, budget): the same filing read
by two analysts, or by every episode of a training, is distilled once. The
cache lives on the :class:`Distiller` instance (one per team run), not in a
module global.

Token counts are estimates (:func:`approx_tokens`: a word or punctuation
mark is a token, every digit after the first of a number one more, as the
Qwen tokenizer spells digits); budgets are stated in these units.
"""

from __future__ import annotations

import hashlib
import re

from fincon.data.lexicon import LoughranMcDonald

_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")
_TOKEN = re.compile(r"\d+|\w+|[^\w\s]")
_FIGURE = re.compile(r"\d|%|\$")
#: words that tell a trader something about the business (beyond sentiment)
FINANCE_TERMS = frozenset(
    "revenue revenues sales earnings eps profit profits margin margins guidance outlook forecast growth demand "
    "orders backlog cash debt dividend buyback repurchase acquisition merger lawsuit recall upgrade downgrade "
    "target estimate estimates beat miss missed raised cut lowered quarter annual income loss losses cloud "
    "customers subscribers price prices shipments layoffs investigation fda approval contract".split()
)

#: per-item budgets by source (estimated tokens): a news item says one thing,
#: a filing section or an earnings call several
ITEM_BUDGET = {"news": 60, "analyst_note": 80, "10-K": 140, "10-Q": 140, "earnings_call": 160}


def approx_tokens(text: str) -> int:
    """Estimated prompt tokens of ``text`` (see the module docstring)."""
    n = 0
    for tok in _TOKEN.findall(text):
        n += len(tok) if tok.isdigit() else 1
    return n


def sentences(text: str) -> list[str]:
    """Whole sentences of ``text``, whitespace collapsed."""
    flat = " ".join(text.split())
    return [s.strip() for s in _SENT.split(flat) if s.strip()]


class Distiller:
    """Extractive distillation with a per-run cache (see the module docstring)."""

    def __init__(self, lexicon: LoughranMcDonald | None = None):
        self.lm = lexicon or LoughranMcDonald()
        self._cache: dict[str, str] = {}
        self.hits = 0

    def _score(self, n: int, sent: str) -> float:
        words = [w.lower() for w in re.findall(r"[A-Za-z]+", sent)]
        if len(words) < 4:  # a heading or a fragment
            return -1.0
        sc = self.lm.score(sent)
        sentiment = sum(sc.counts.get(c, 0) for c in ("Positive", "Negative"))
        terms = sum(w in FINANCE_TERMS for w in words)
        figures = min(3, len(_FIGURE.findall(sent)))
        return 1.5 * (n == 0) + 1.0 * sentiment + 0.8 * terms + 0.5 * figures + 0.3 * (n == 1)

    def distill(self, text: str, budget: int) -> str:
        """The best whole sentences of ``text`` within ``budget`` estimated
        tokens, in their original order. A text within budget is returned
        whole; if no sentence fits, the best-scored one is returned whole
        (never a cut sentence)."""
        key = hashlib.sha256(f"{budget}\x00{text}".encode()).hexdigest()
        if key in self._cache:
            self.hits += 1
            return self._cache[key]
        sents = sentences(text)
        if approx_tokens(" ".join(sents)) <= budget:
            out = " ".join(sents)
        else:
            ranked = sorted(range(len(sents)), key=lambda i: (-self._score(i, sents[i]), i))
            keep: list[int] = []
            used = 0
            for i in ranked:
                cost = approx_tokens(sents[i])
                if used + cost <= budget:
                    keep.append(i)
                    used += cost
            if not keep and ranked:
                keep = [ranked[0]]
            out = " ".join(sents[i] for i in sorted(keep))
        self._cache[key] = out
        return out


def whole_sentences(text: str) -> str:
    """``text`` without a trailing fragment: a model's answer capped by a
    schema length stops mid-sentence ("shares rose 1.8% due to a "); keep
    its whole sentences, or, when it has none, its leading whole clauses
    marked with an ellipsis. Text that ends a sentence is returned as is
    (whitespace collapsed)."""
    flat = " ".join(text.split())
    if not flat or re.search(r"[.!?…][\"')\]]*$", flat):
        return flat
    ends = [m.end() for m in re.finditer(r"[.!?][\"')\]]*(?=\s)", flat)]
    if ends:
        return flat[: ends[-1]]
    cut = max(flat.rfind("; "), flat.rfind(", "))
    if cut <= 0:
        cut = flat.rfind(" ")
    return (flat[:cut] if cut > 0 else flat).rstrip(",; ") + "…"


def without_fragment(text: str) -> str:
    """``text`` without a trailing unfinished sentence when it has finished
    ones before it ("Read the 10-Q for trends. Focus on areas where and" ->
    "Read the 10-Q for trends."); a text with no sentence end is kept."""
    flat = " ".join(text.split())
    if not flat or re.search(r"[.!?…][\"')\]]*$", flat):
        return flat
    ends = [m.end() for m in re.finditer(r"[.!?][\"')\]]*(?=\s)", flat)]
    return flat[: ends[-1]] if ends else flat


def uncut(text: str, cap: int) -> str:
    """A model's ``text`` whose schema allows at most ``cap`` characters:
    one that ran into the cap stopped mid-sentence and keeps its whole
    sentences (:func:`whole_sentences`); a shorter one is the model's own
    ending and is kept as written."""
    return whole_sentences(text) if len(text) >= cap - 1 else text


def clip_sentences(text: str, max_chars: int) -> str:
    """The leading whole sentences of ``text`` within ``max_chars``; when even
    the first sentence is longer, the longest sentence-initial run of whole
    clauses (cut at ``;`` or ``,``) marked with an ellipsis, never a cut word.
    Used where a schema caps a length (an insight's 400 characters)."""
    out = ""
    for s in sentences(text):
        cand = f"{out} {s}".strip()
        if len(cand) > max_chars:
            break
        out = cand
    if out:
        return out
    head = " ".join(text.split())[: max(0, max_chars - 1)]
    cut = max(head.rfind("; "), head.rfind(", "))
    if cut <= 0:
        cut = head.rfind(" ")
    return (head[:cut] if cut > 0 else head).rstrip(",; ") + "…"
