"""The leakage audit's inputs (fincon.llm.leakage): what a run sent (each call's prompt, read back
from its call cache) and what the adversaries know (the corpus's items and the prices, indexed)."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import hashlib
import json
import math
import sqlite3
from collections import Counter, OrderedDict, defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd
import yaml

from fincon import data as fincon_data
from fincon.data.aliases import NAMES, PEOPLE, VOCABULARY
from fincon.data.events.model import visible_day
from fincon.data.inputs import corpus_tickers, open_events, open_inputs
from fincon.data.terms import distinctive_terms, tokens
from fincon.errors import DataError
from fincon.llm.leakage_seal import same_corpus
from fincon.llm.masking_rules import PARAPHRASE_AGENT, topics
from fincon.ownership import sqlite_read_only

SHINGLE = 5
#: an item shingle shared by more items than this carries no identity (boilerplate)
RARE_DF = 3
#: a line's bag of words names an item at least this close to it (cosine of TF-IDF bags) ...
BAG_SIMILARITY = 0.3
#: ... and this many times closer than to any item of another story
BAG_MARGIN = 1.5
#: the odds against the next firm at which a masked prompt's topics name a firm by its industry
INDUSTRY_ODDS = 10.0

# -- what the run sent ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """One call of a run: who asked, for which day, and the text the model saw."""

    run: str  # the run's directory, as the audit was given it: two trainings' ep-01 are two runs
    agent: str
    day: str  # YYYY-MM-DD, or "-" for a call made outside a trading day
    key: str
    text: str
    tickers: tuple[str, ...]  # the firms the prompt is about (the truth)
    #: the run's window: what a call between trading days reviews (a belief update, asked on "episode-2")
    window: tuple[dt.date, dt.date] | None = None

    @property
    def span(self) -> tuple[dt.date, dt.date] | None:
        """The days it is about (the truth): its decision day, the window for a belief update, or None."""
        if self.day in ("-", ""):
            return None
        try:
            d = dt.date.fromisoformat(self.day[:10])
        except ValueError:
            return self.window
        return (d, d)

    @property
    def kind(self) -> str:
        return self.agent.split("/")[0]


@dataclass
class RunInfo:
    """What the audit reads of one strategy's run directory."""

    path: Path
    strategy: str
    tickers: tuple[str, ...]
    start: dt.date
    end: dt.date
    masked: bool
    cache: Path
    data: Any  # the run config's data section
    events: str  # the corpus the run read (its spec)
    params: Mapping[str, Any] = field(default_factory=dict)  # the strategy's (memory_k, lookback, ...)
    mask_items: str = "topics"  # LLMSettings.mask_items (a run from before it: topics)


def runs_in(root: Path) -> list[Path]:
    """``root`` and the run directories under it that list their model calls (``llm_calls.csv``)."""
    root = Path(root)
    if not root.is_dir():
        raise DataError(f"{root} is not a directory; give a run directory written by fincon backtest")
    # at any depth: a training's episodes (episodes/ep-01), an experiment's trainings and tests
    return sorted(p.parent for p in root.rglob("llm_calls.csv"))


def read_run(path: Path, cache: Path | None = None) -> RunInfo:
    """The run's config (tickers, window, corpus, mask) and where its prompts are cached."""

    try:
        cfg = yaml.safe_load((path / "config.yaml").read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"{path}/config.yaml: cannot read ({exc}); is this a fincon run directory?") from None
    return run_info(path, cfg, cache)


def run_info(path: Path, cfg: Mapping[str, Any], cache: Path | None = None) -> RunInfo:
    """:class:`RunInfo` of the run in ``path`` whose config (as its config.yaml holds it) is ``cfg``."""
    strategies = cfg.get("strategies") or []
    strategy = strategies[0] if len(strategies) == 1 else path.name
    params = (cfg.get("strategy_params") or {}).get(strategy) or {}
    llm = {**(cfg.get("llm") or {}), **(params.get("llm") or {})}
    where = Path(cache or llm.get("cache_path") or "runs/.cache/llm.sqlite").expanduser()
    if not where.is_absolute() and not where.is_file():
        for base in (path, *path.parents):  # a relative cache path: from where the run was started
            if (base / where).is_file():
                where = base / where
                break
    return RunInfo(
        path=path,
        strategy=strategy,
        tickers=tuple(cfg.get("tickers") or ()),
        start=dt.date.fromisoformat(str(cfg.get("start"))),
        end=dt.date.fromisoformat(str(cfg.get("end"))),
        masked=bool(llm.get("anonymize")),
        cache=where,
        data=cfg.get("data") or {},
        events=str(params.get("events") or "sample"),
        params=params,
        mask_items=str(llm.get("mask_items") or _masked_as(path) or "topics"),
    )


def _masked_as(path: Path) -> str | None:
    """What a masked item showed, as the run's masking.json says (a run before it said: None)."""
    try:
        return json.loads((path / "masking.json").read_text(encoding="utf-8")).get("items")
    except (OSError, ValueError, AttributeError):
        return None


def prompts_of(run: RunInfo) -> list[Prompt]:
    """Every prompt the run sent to the model under test, read back from its call cache by the keys in
    ``llm_calls.csv``: not the paraphrase model's (another model, LLMSettings refuses the same; counted as
    every prompt of it read as given away, a paraphrase run could never read blind, found in review)."""
    with open(run.path / "llm_calls.csv", newline="", encoding="utf-8") as fh:
        calls = [c for c in csv.DictReader(fh) if c["agent"] != PARAPHRASE_AGENT]
    if not calls:
        return []
    if not run.cache.is_file():
        raise DataError(
            f"{run.path}: its call cache {run.cache} is not there, so its prompts cannot be read; "
            "give it with --llm-cache-path"
        )
    conn = sqlite_read_only(run.cache)
    try:
        texts: dict[str, str] = {}
        keys = sorted({c["key"] for c in calls})
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            q = f"SELECT key, messages FROM calls WHERE key IN ({','.join('?' for _ in part)})"
            for k, m in conn.execute(q, part):
                texts[k] = "\n".join(x.get("content", "") for x in json.loads(m))
    except sqlite3.Error as exc:
        raise DataError(f"{run.cache}: not an LLM call cache ({exc})") from None
    finally:
        conn.close()
    missing = [c for c in calls if c["key"] not in texts]
    if missing:
        raise DataError(
            f"{run.path}: {len(missing)} of its {len(calls)} calls are not in {run.cache} "
            f"(first: {missing[0]['agent']} on {missing[0]['day']}); give the cache the run used with --llm-cache-path"
        )
    out = []
    for c in calls:
        own = c["agent"].rsplit("/", 1)[1] if "/" in c["agent"] else None
        tickers = (own,) if own in run.tickers else run.tickers
        out.append(
            Prompt(str(run.path), c["agent"], c["day"], c["key"], texts[c["key"]], tickers, (run.start, run.end))
        )
    return out


# -- what the adversaries know ----------------------------------------------------------------------


@dataclass
class Item:
    ticker: str
    day: dt.date
    shingles: frozenset[int]
    source: str = ""  # "news", "10-K", ...: an analyst of one source reads only its items
    #: the first day at whose decision time it is visible (an evening's item: the next day), the day a
    #: masked line's recency counts from; None: ``day``
    seen: dt.date | None = None

    @property
    def visible(self) -> dt.date:
        return self.day if self.seen is None else self.seen


@dataclass
class Guess:
    """What an adversary found of a prompt: the firm and the decision day, each with the cue that gave it."""

    firm: str | None = None
    firm_cue: str | None = None
    day: dt.date | None = None
    exact: bool = False
    day_cue: str | None = None

    def take(self, other: "Guess") -> None:
        """Fill what this guess lacks from ``other`` (an earlier cue wins)."""
        if self.firm is None and other.firm is not None:
            self.firm, self.firm_cue = other.firm, other.firm_cue
        if other.day is not None and (self.day is None or (other.exact and not self.exact)):
            self.day, self.exact, self.day_cue = other.day, other.exact, other.day_cue


@dataclass
class Knowledge:
    """The corpus, its prices and each firm's terms, indexed for the adversaries."""

    items: list[Item]
    index: dict[int, list[int]]  # rare shingle -> items
    closes: dict[str, pd.Series]
    sessions: pd.DatetimeIndex
    terms: dict[str, dict[str, float]]  # ticker -> term -> weight
    returns: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)  # "-2.33" -> (ticker, day, k)
    daily: dict[str, list[str]] = field(default_factory=dict)  # ticker -> its daily returns as "-2.33" by day index
    bags: "Bags | None" = None  # every item as a bag of words and as the mask gives it, parallel to ``items``
    events: list[Any] = field(default_factory=list)  # the items as the corpus holds them (the replay reads them)
    corpus_of: dict[str, str] = field(default_factory=dict)  # ticker -> the corpus (its spec) that holds it


class Bags:
    """Every item of the corpus as a TF-IDF bag of its words (scikit-learn's vectorizer: sublinear term
    counts, smoothed inverse document frequency, rows of unit length), so that a line given as a bag of
    words (the mask's gist until 2026-11-29: an item's content words in alphabetical order) can be
    matched to the items whose words it holds, whatever their order; and as the mask gives it now (its
    topics, fincon.llm.masking_rules.topics), for a line in that form to be looked up."""

    def __init__(self, texts: Sequence[str]):
        self.texts = list(texts)  # each index built on its first use: a masked run's prompts need only one
        self._firms: tuple[dict[str, Counter], Counter] | None = None  # per topic, the firms of its items

    @cached_property
    def fitted(self):
        """The vectorizer and the items' bags (None when no item holds a word of two letters: figures only)."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        vectorizer = TfidfVectorizer(token_pattern=r"[A-Za-z][A-Za-z'-]+", sublinear_tf=True)
        try:
            return vectorizer, vectorizer.fit_transform(self.texts)
        except ValueError:
            return vectorizer, None

    @cached_property
    def topics(self) -> dict[str, list[tuple[int, float]]]:
        """The mask's topics of every item it would reduce, with the item's lexicon tone (the adversary
        knows the mask's rules and the public lexicon)."""
        lexicon = fincon_data.LoughranMcDonald()
        out: dict[str, list[tuple[int, float]]] = defaultdict(list)
        for i, text in enumerate(self.texts):  # every item of the corpus, at any length (rules.ITEM_WORDS)
            out[topics(text)].append((i, lexicon.score(text).tone))
        return dict(out)

    def alike(self, line: str, tone: str) -> list[int]:
        """The items the mask gives as ``line`` ("topics: growth") with ``tone`` as a prompt shows it
        (" (tone +0.50)", " (tone positive)", or "": any tone)."""
        shown = tone[len(" (tone ") : -1]
        return [i for i, t in self.topics.get(line, []) if not shown or _as_shown(t, shown) == shown]

    def named(self, lines: Sequence[tuple[str, str]], items: Sequence[Item]) -> list[int | None]:
        """Per (line, its tone as the prompt gives it: " (tone +0.50)", " (tone positive)" or ""), the
        item it names, or None. A line in the mask's own form ("topics: growth") names the item when
        every item the mask gives so, with that tone, is of one story (the adversary applies the mask's
        rules to the corpus); any other line, the item closest to its bag of words (cosine), at least
        :data:`BAG_SIMILARITY` close and :data:`BAG_MARGIN` times closer than any other story's."""
        out: list[int | None] = []
        for line, tone in lines:
            if line.startswith("topics: "):
                same = self.alike(line, tone)
                out.append(same[0] if same and all(_story(items[j], items[same[0]]) for j in same) else None)
                continue
            vectorizer, matrix = self.fitted
            if matrix is None:
                out.append(None)
                continue
            row = (vectorizer.transform([line]) @ matrix.T).toarray()[0]
            order = np.argsort(-row, kind="stable")[:50]
            other = next((row[j] for j in order[1:] if not _story(items[j], items[order[0]])), 0.0)
            out.append(int(order[0]) if row[order[0]] >= max(BAG_SIMILARITY, BAG_MARGIN * other) else None)
        return out

    def industry(self, lines: Sequence[str], items: Sequence[Item]) -> str | None:
        """The firm a prompt's masked lines ("topics: healthcare") point to by their topics alone, what
        kind of news each firm's items are: naive Bayes over each firm's share of every topic (a uniform
        prior, one smoothing count), when its odds against the next firm are :data:`INDUSTRY_ODDS` or more.
        Topics date nothing: a firm, never a day."""
        if self._firms is None:
            per = {t: Counter(items[i].ticker for i, _ in v) for t, v in self.topics.items()}
            self._firms = per, sum(per.values(), Counter())
        per, totals = self._firms
        if not lines or len(totals) < 2:
            return None
        score = {
            f: sum(math.log((per.get(x, {}).get(f, 0) + 1) / (n + len(per))) for x in lines) for f, n in totals.items()
        }
        (best, a), (_, b) = sorted(score.items(), key=lambda x: (-x[1], x[0]))[:2]
        return best if a - b >= math.log(INDUSTRY_ODDS) else None

    def fitting(
        self, lines: Sequence[tuple[str, str, int, int]], items: Sequence[Item], source: str | None = None
    ) -> set[tuple[str, dt.date]]:
        """The (firm, decision day) pairs every line fits, each line in the mask's form with its tone as
        shown and the fewest and most days before the decision day its item became visible: an item of the
        corpus (of ``source``, when the prompt's role reads one) with that topic and tone, visible so long
        before (a masked line's recency counts from the day its item became visible)."""
        out: set[tuple[str, dt.date]] | None = None
        for line, tone, lo, hi in sorted(lines, key=lambda x: x[3] - x[2]):
            same = [i for i in self.alike(line, tone) if source is None or items[i].source == source]
            fits = {(items[i].ticker, items[i].visible + dt.timedelta(days=o)) for i in same for o in range(lo, hi + 1)}
            out = fits if out is None else out & fits
            if not out:
                break
        return out or set()


def _as_shown(tone: float, like: str) -> str:
    """``tone`` written as a prompt wrote ``like``: a word (the mask's) or two decimals."""
    return fincon_data.tone_label(tone) if like[-1].isalpha() else f"{tone:+.2f}"


def _story(a: Item, b: Item) -> bool:
    """Two items of one story: one firm's, at most a week apart (a story is reprinted)."""
    return a.ticker == b.ticker and abs((a.day - b.day).days) <= 7


def shingles(toks: Sequence[str], k: int = SHINGLE) -> set[int]:
    """Hashes of the ``k``-word runs of ``toks`` (stable across processes)."""
    return {
        int.from_bytes(hashlib.blake2b(" ".join(toks[i : i + k]).encode(), digest_size=8).digest(), "little")
        for i in range(len(toks) - k + 1)
    }


def build_knowledge(runs: Sequence[RunInfo], against: Sequence[Path] = ()) -> Knowledge:
    """Everything the adversaries know for ``runs``: the corpus they read (every
    firm in it), the datasets ``against`` (more firms to tell apart), the prices
    of every ticker there, and each firm's terms."""

    corpora: list[tuple[str, tuple[str, ...], Any]] = []  # (events spec, tickers, price source)
    seen: set[str] = set()
    hashes: dict[str, str | None] = {}  # a corpus -> its folder's hash (once, however many runs read it)
    for r in runs:
        inputs = open_inputs(r.data.get("source", "sample"), r.data.get("dir"), r.data.get("cache_dir"))
        spec = r.events
        tickers = corpus_tickers(spec)
        same_corpus(r.path, spec, hashes)
        if spec not in seen:
            seen.add(spec)
            corpora.append((spec, tickers, inputs.source))
    for d in against:
        if not Path(d).is_dir():  # open_inputs would name --data, a flag the user did not type
            raise DataError(f"--against {d}: not a directory; give a dataset folder fincon data import wrote")
        ds = open_inputs("csv", d)
        if ds.dataset is None or not ds.dataset.has_events:
            raise DataError(f"--against {d}: not a dataset with events (fincon data import ...)")
        spec = str(ds.dataset.events_dir.absolute())
        if spec not in seen:
            seen.add(spec)
            corpora.append((spec, tuple(ds.dataset.manifest.tickers), ds.source))
    events: dict[tuple, Any] = {}  # an item two corpora hold (a journal's frozen items, the sample) once:
    closes: dict[str, pd.Series] = {}  # held twice, every list of them was two firm-sessions' and the replay
    corpus_of: dict[str, str] = {}  # placed none (a journal's folder audited 0 of 51 where its team's 1 of 19)
    for spec, tickers, source in corpora:
        for e in open_events(spec, tickers).all_events():
            events.setdefault((e.ticker, e.source, e.id, e.published_at, e.text), e)  # ids an importer numbers
        corpus_of.update({t: spec for t in tickers if t not in corpus_of})
        for t in tickers:
            if t in closes:
                continue
            try:
                bars = source.load(t, pd.Timestamp("1990-01-01"), pd.Timestamp("2100-01-01"))
            except Exception:  # a ticker of the corpus without prices: the price adversary skips it
                continue
            frame = bars.set_index(pd.to_datetime(bars["Date"])) if "Date" in bars.columns else bars
            col = "Adj Close" if "Adj Close" in frame.columns else "Close"
            closes[t] = frame[col].astype(float)
    return dataclasses.replace(_known(list(events.values()), closes), corpus_of=corpus_of)


#: the knowledge last built, by what it is of (every item and price, compared whole): a training's episodes,
#: an experiment's units and a test session audit one corpus again (the sample: 4.6 CPU-s to build, 1 to find)
_KNOWN: OrderedDict[tuple, Knowledge] = OrderedDict()


def _known(events: list[Any], closes: dict[str, pd.Series]) -> Knowledge:
    key = (
        # the metadata too: the replay's summariser reads an item's (its tone, its kind)
        tuple(
            (e.ticker, e.source, e.id, e.published_at, e.text, json.dumps(e.metadata, sort_keys=True, default=str))
            for e in events
        ),  # fmt: skip
        tuple((t, s.index.asi8.tobytes(), s.to_numpy(dtype=float).tobytes()) for t, s in sorted(closes.items())),
    )
    if key not in _KNOWN:
        _KNOWN[key] = knowledge_of(events, closes)
        while len(_KNOWN) > 2:  # the sample's takes ~70 MB: two at most
            _KNOWN.popitem(last=False)
    _KNOWN.move_to_end(key)
    return _KNOWN[key]


def knowledge_of(events: Iterable[Any], closes: Mapping[str, pd.Series]) -> Knowledge:
    """The adversaries' :class:`Knowledge` of ``events`` (the items, with their
    dates) and ``closes`` (ticker -> daily closes), with each firm's terms."""

    events = list(events)
    items: list[Item] = []
    texts: list[str] = []
    docs: dict[str, list[str]] = defaultdict(list)
    for e in events:
        if not e.text:
            continue
        seen = visible_day(e.published_at).date()
        items.append(Item(e.ticker, e.published_at.date(), frozenset(shingles(tokens(e.text))), e.source, seen))
        texts.append(e.text)
        docs[e.ticker].append(e.text)
    closes = dict(closes)
    index = index_items(items)
    terms: dict[str, dict[str, float]] = defaultdict(dict)
    for t in set(NAMES) | set(docs):
        for name in (*NAMES.get(t, ()), *PEOPLE.get(t, ()), t):
            terms[t][name] = 3.0  # a name is a strong cue
        for word in VOCABULARY.get(t, ()):
            terms[t].setdefault(word, 2.0)
    for t, words in distinctive_terms(docs, background=_background()).items():
        for w in words:
            terms[t].setdefault(w, 1.0)
    sessions = pd.DatetimeIndex(sorted(set().union(*(set(s.index) for s in closes.values())))) if closes else None
    k = Knowledge(items, index, closes, sessions if sessions is not None else pd.DatetimeIndex([]), dict(terms))
    k.bags = Bags(texts) if texts else None
    k.events = [e for e in events if e.text]
    k.returns = _return_table(closes, horizons=1)
    k.daily = {
        t: ["nan"] + [f"{100.0 * (b / a - 1.0):.2f}" for a, b in zip(v, v[1:])]
        for t, v in ((t, s.to_numpy(dtype=float)) for t, s in closes.items())
    }
    return k


def index_items(items: Sequence[Item]) -> dict[int, list[int]]:
    """rare shingle -> the items holding it (a shingle of more than ``RARE_DF`` items is boilerplate)."""
    df: Counter = Counter()
    for it in items:
        df.update(it.shingles)
    index: dict[int, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        for h in it.shingles:
            if df[h] <= RARE_DF:
                index[h].append(i)
    return dict(index)


def _return_table(closes: Mapping[str, pd.Series], horizons: int = 20) -> dict[str, list[tuple[str, int, int]]]:
    """ "-2.33" -> every (ticker, day index, k) whose k-day return, in percent to two decimals, it is."""
    out: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for t, s in closes.items():
        v = s.to_numpy(dtype=float)
        for k in range(1, horizons + 1):
            r = 100.0 * (v[k:] / v[:-k] - 1.0)
            for j, x in enumerate(r):
                if np.isfinite(x) and abs(x) < 100:
                    out[f"{x:.2f}"].append((t, j + k, k))
    return dict(out)


def _background() -> Mapping[str, float]:
    try:
        return fincon_data.document_shares()
    except Exception:  # the info extra missing: firms told apart by their own corpora only
        return {}
