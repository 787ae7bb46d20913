"""The names a masked run hides and where they come from (fincon's table, the dataset's own,
``--alias``, the corpus mined before the window), the masker built from them, the paraphraser that
rewords each masked item, and the mapping a run writes (``masking.json``)."""

from __future__ import annotations

import datetime as dt
import json
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

from pydantic import BaseModel, Field

from fincon import data
from fincon.data.aliases import NAMES, PEOPLE, VOCABULARY
from fincon.data.terms import distinctive_terms, firm_names
from fincon.llm import masking_rules as rules
from fincon.llm.errors import LLMInvalidAnswer
from fincon.llm.masking import Masker
from fincon.llm.types import Message


def masker_for(
    tickers: Sequence[str],
    extra: Mapping[str, Sequence[str]] | None = None,
    *,
    vocabulary: Mapping[str, Sequence[str]] | None = None,
    secret: str = "fincon",
    items: str = "topics",
) -> Masker:
    """The mask of a run on ``tickers``: the bundled alias and vocabulary tables plus ``extra``
    names (a dataset's, the user's ``--alias``) and ``vocabulary`` (terms mined from the corpus)."""

    names = {t: tuple(dict.fromkeys((*NAMES.get(t, ()), *((extra or {}).get(t, ()))))) for t in tickers}
    people = {t: PEOPLE.get(t, ()) for t in tickers}
    # a term is masked as written, in lower case, capitalised, in title case and in capitals: the bundled
    # table's were masked as written only ("productivity and business processes" left "Productivity and
    # Business Processes", one of MSFT's three segments, in a masked prompt)
    given = {t: (*VOCABULARY.get(t, ()), *(vocabulary or {}).get(t, ())) for t in tickers}
    vocab = {t: tuple(dict.fromkeys(v for w in given[t] for v in cases(w))) for t in tickers}
    return Masker(tuple(tickers), names, people, vocab, secret=secret, items=items)


#: words title case leaves in lower case inside a name ("Productivity and Business Processes")
_SMALL = frozenset({"a", "an", "and", "as", "at", "by", "for", "in", "of", "on", "or", "the", "to", "with"})


def cases(term: str) -> tuple[str, ...]:
    """``term`` as it may be written: as given, lower case, capitalised, title case, capitals."""
    words = term.split(" ")
    title = " ".join(w if i and w.lower() in _SMALL else w[:1].upper() + w[1:] for i, w in enumerate(words))
    return tuple(dict.fromkeys((term, term.lower(), term.capitalize(), title, term.upper())))


def user_names(aliases: Mapping[str, Sequence[str]] | None = None) -> dict[str, tuple[str, ...]]:
    """Names to mask beyond the bundled table: the user's ``--alias TICKER=NAME``."""
    out: dict[str, tuple[str, ...]] = {}
    for t, ns in (aliases or {}).items():
        out[t.upper()] = (*out.get(t.upper(), ()), *ns)
    return out


#: a frozen corpus folder's names and terms, mined when it was frozen from the whole source corpus
#: (a forward journal's: fincon.workflow.forward_plan), where the folder holds the journal's firms only
TERMS = "masking-terms.json"


@lru_cache(maxsize=8)
def mined_terms(corpus: str | None, tickers: tuple[str, ...], before: dt.date | None) -> tuple[dict, dict]:
    """The names and the vocabulary of each ticker mined from the items of the
    event corpus ``corpus`` (every firm in it: the others' items tell a firm's
    words from the corpus' style) published before ``before`` (the window's
    first day: what the mask hides on day t never depends on an item after t):
    fincon.data.terms.firm_names and distinctive_terms (frequent in the
    ticker's items, rare in the other tickers' and in financial English).
    Mined once per process for one corpus, tickers and day."""

    if corpus is None:
        return {}, {}
    frozen = Path(corpus).expanduser() / TERMS if corpus != "sample" else None
    if frozen is not None and frozen.is_file():  # mined at the journal's first session, before it
        got = json.loads(frozen.read_text(encoding="utf-8"))
        return {t: got["names"].get(t, []) for t in tickers}, {t: got["vocabulary"].get(t, []) for t in tickers}
    # every firm of the corpus: the sample's list, or a folder's every record (its files need not be
    # named by ticker: a single events.jsonl.gz is a corpus too)
    events = data.open_events(corpus, data.corpus_tickers(corpus) if corpus == "sample" else ())
    docs: dict[str, list[str]] = {}
    for e in events.all_events():
        if e.text and (before is None or e.published_at.date() < before):
            docs.setdefault(e.ticker, []).append(e.text)
    if not docs:
        return {}, {}
    common = rules.common()
    names = firm_names(docs, common, generic=rules.KEEP | rules.FINANCE_ABBREVIATIONS) if common else {}
    vocab = distinctive_terms(docs, background=common)
    given = _dataset_names(corpus)  # the names the source gives (a dataset's dataset.json)
    return {t: [*given.get(t, []), *names.get(t, [])] for t in tickers}, {t: vocab.get(t, []) for t in tickers}


def _dataset_names(corpus: str) -> dict[str, list[str]]:
    """``names`` of the dataset whose events folder ``corpus`` is (empty for the sample or a bare folder)."""
    manifest = Path(corpus).expanduser().parent / "dataset.json"
    try:
        names = json.loads(manifest.read_text(encoding="utf-8")).get("names") or {}
    except (OSError, ValueError, AttributeError):
        return {}
    return {str(t): [str(n) for n in v] for t, v in names.items() if isinstance(v, list)}


PARAPHRASE_SYSTEM = (
    "You rewrite a masked news or filing item in your own words for a trader who must not learn which firm or "
    "day it is about. Keep what happened and its tone; use at most 60 words and no sentence of the original; "
    "keep placeholders such as Company A, [name], [term], [n] and [amount] as they are; add no name, place, "
    "figure or date. Answer JSON only."
)


class Rewrite(BaseModel):
    text: str = Field(min_length=1, max_length=600)


class Paraphraser:
    """Another model's rewriting of each masked item (``--llm-paraphrase-model``):
    one cached call an item, in the run's cache and ledger (agent ``paraphrase``),
    so a masked run with paraphrases replays byte for byte. It sees the item
    already masked; an answer that is no rewriting (invalid twice, or the text
    back) leaves the item to its topics, counted in ``fallbacks``."""

    def __init__(self, client, model: str):
        self.client = client
        self.model = model
        self.calls = 0
        self.fallbacks = 0

    def __call__(self, text: str, day: str | None) -> str | None:
        self.calls += 1
        msgs = [Message(role="system", content=PARAPHRASE_SYSTEM), Message(role="user", content=text)]
        try:
            got = self.client.ask(msgs, Rewrite, agent=rules.PARAPHRASE_AGENT, day=day).value.text.strip()
        except LLMInvalidAnswer:
            got = ""
        if not got or got == text.strip():
            self.fallbacks += 1
            self.client.ledger.record_fallback(
                rules.PARAPHRASE_AGENT, day, reason="no rewriting: the item's topics instead"
            )
            return None
        return got


def write_manifest(client, run_dir) -> None:
    """``masking.json`` in ``run_dir`` when ``client`` masked what it sent (who
    is who behind the pseudonyms the model saw): every strategy that calls a
    model writes it through here when it finishes."""
    if client is not None and client.masker is not None:
        (Path(run_dir) / "masking.json").write_text(
            json.dumps(client.masker.manifest(), indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        if client.masker.rewriter is not None:  # the paraphrasing model's client is the mask's to close
            client.masker.rewriter.client.close()
