"""``fincon eval leakage``: could a model that has read the corpus tell which firm and which day a prompt is about?

A mask that hides names and ISO dates blinds a model that looks facts up by
name and date; a model that has *read the corpus* needs neither. This audit
attacks the prompts a finished run sent (read back from the call cache
through its ``llm_calls.csv``) with adversaries that need no model, each
knowing what such a model could know (docs/llm.md#masked-prompts):

* **corpus**: every item of the corpus, with its date. A line sharing enough
  rare word 5-grams with one item names its firm; the item's date and the
  line's date phrase ("3 days before the decision day", "this week") place
  the day. A full date in a prompt gives it away (cue ``explicit date``).
* **bag of words**: the items as TF-IDF bags. A listed item far closer to
  one item than to any other story's names it, in any word order. A line in
  the mask's form (topic and tone) is looked up among the corpus's items
  masked the same way, one line at a time, then a prompt's lines together
  (the firm and days they all fit: cue ``topics jointly``).
* **prices** (:mod:`fincon.llm.leakage_numbers`): three or more consecutive
  daily returns to two decimals matched against every ticker's closes; a
  count of closes under the run's window ("the 6-day high") is the data's
  session number (cue ``history length``).
* **vocabulary**: each firm's names, people, products and the terms mined
  from the corpus (:func:`distinctive_terms`, the statistic the mask uses).
* **linker**: prompts of one day sharing a verbatim 8-word run no other
  day's prompts hold are one group: what one gives away, all do.
* **replayed** (passed in: fincon.agents.replayed_prompts): the analysts' own pipeline over every firm
  and session, a prompt's lines looked up in what it lists (a session's topics in order named it).
* **read together** (passed in: fincon.agents.replayed_sessions): a run's prompts session after
  session, as its call log's holder reads them; reported beside the verdict, not in it.

Per agent and overall: the share of prompts whose firm, day (exactly; within
±5 sessions) and both are recovered, with a Wilson 95 % interval and the
cues. More than ``threshold`` (10 %) giving away firm and day: **not
blind**; **blind** only when the whole interval lies at or under it (0 of 5
could still be 43 %); between: **inconclusive**, with the prompts that
would settle it. It asks no model: a real one may recognise what these
rules miss (a paraphrase it once read, a style); passing is necessary for a
blind run, not a proof of one.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fincon.data.terms import STOP, tokens
from fincon.errors import DataError
from fincon.llm.leakage_inputs import (
    SHINGLE,
    Guess,
    Knowledge,
    Prompt,
    RunInfo,
    build_knowledge,
    prompts_of,
    read_run,
    runs_in,
    shingles,
)
from fincon.llm.leakage_numbers import history_caps, history_guess, price_guess
from fincon.llm.leakage_report import report as report  # the audit as a table, `fincon eval leakage` prints
from fincon.llm.leakage_verdict import SESSIONS, outcome, share_of, verdict
from fincon.llm.masking_rules import ITEM_LINE, KEY_WORDS, common

Adversary = Callable[[Prompt], Guess]
THRESHOLD = 0.10
LINK = 8
#: the one source an analyst reads (fincon.agents.roles: its ``sources``), which its prompts' items are of
ROLE_SOURCE = {
    "news": "news",
    "10-k": "10-K",
    "10-q": "10-Q",
    "earnings-call": "earnings_call",
    "analyst-notes": "analyst_note",
}
#: rare shingles a line must share with one item (and with no other as many) to name it
MIN_SHARED = 3
#: what the span of a masked recency phrase says of the distance from an item to the decision day (days)
RECENCY_SPANS = {
    "the decision day": (0, 0),
    "this week": (1, 7),
    "this month": (8, 31),
    "this quarter": (32, 92),
    "this year": (93, 365),
    "over a year ago": (366, 730),
}
_OFFSET = re.compile(r"\b(\d+) days? (before|after) the decision day\b")
_MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
_FULL_DATE = re.compile(
    r"\b(?:(20\d{2}|19\d{2})-(\d{2})-(\d{2})"
    r"|(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+((?:19|20)\d{2}))\b",
    re.I,
)
# -- the adversaries ----------------------------------------------------------------------------------


def explicit_date(text: str) -> dt.date | None:
    """The latest full date a prompt writes (a named prompt's "Today is Oct 5 2022")."""
    best = None
    for m in _FULL_DATE.finditer(text):
        try:
            if m.group(1):
                d = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            else:
                d = dt.date(int(m.group(6)), _MONTHS.index(m.group(4)[:3].lower()) + 1, int(m.group(5)))
        except ValueError:
            continue
        best = d if best is None or d > best else best
    return best


def corpus_guess(text: str, k: Knowledge) -> Guess:
    """Lines of ``text`` that name one corpus item; the firm and the decision day they give away."""
    g = Guess()
    day = explicit_date(text)
    if day is not None:
        g.day, g.exact, g.day_cue = day, True, "explicit date"
    firms: Counter = Counter()
    days: list[tuple[dt.date, bool]] = []
    for line in text.splitlines():
        toks = tokens(line)
        if len(toks) < SHINGLE + MIN_SHARED:
            continue
        hits: Counter = Counter()
        for h in shingles(toks):
            for i in k.index.get(h, ()):
                hits[i] += 1
        if not hits:
            continue
        (best, n), *rest = hits.most_common(2) + [(None, 0)]
        if n < MIN_SHARED or (rest and rest[0][1] == n and k.items[rest[0][0]].ticker != k.items[best].ticker):
            continue
        firms[k.items[best].ticker] += 1
        days.append(_line_day(line, k.items[best].day))
    return _placed(g, firms, days, "corpus")


def _span(line: str) -> tuple[int, int, bool] | None:
    """The days before the decision day a line's date phrase says (fewest, most) and whether exactly:
    its offset ("3 days before the decision day"), else its recency phrase's span; None without either."""
    low = line.lower()
    if m := _OFFSET.search(low):
        n = int(m.group(1)) * (1 if m.group(2) == "before" else -1)
        return n, n, True
    return next(((lo, hi, False) for p, (lo, hi) in RECENCY_SPANS.items() if p in low), None)


def _line_day(line: str, item_day: dt.date) -> tuple[dt.date, bool]:
    """The decision day a line naming an item of ``item_day`` places (its span's middle), and whether exactly."""
    lo, hi, exact = _span(line) or (1, 7, False)
    return item_day + dt.timedelta(days=(lo + hi) // 2), exact


def _placed(g: Guess, firms: Counter, days: list[tuple[dt.date, bool]], cue: str) -> Guess:
    """``g`` with the firm named by most lines and the day they place (an exact one first)."""
    if firms:
        g.firm, g.firm_cue = firms.most_common(1)[0][0], cue
    if days and not g.exact:
        exact = [d for d, e in days if e]
        if exact:
            g.day, g.exact = Counter(exact).most_common(1)[0][0], True
        else:
            g.day, g.exact = max(d for d, _ in days), False  # the newest item read: the day is just after it
        g.day_cue = cue
    return g


_KEY_WORDS = re.compile(re.escape(KEY_WORDS) + r"[^\[\n…]*")


def bag_guess(text: str, k: Knowledge, source: str | None = None) -> Guess:
    """Item lines of ``text`` ("[E1] this week: ...") that name one corpus item by their bag of words (no
    5-word run of it needed), or by the topic and tone the mask gives (``Bags.named``), placed as corpus
    lines are; and together (:func:`_jointly`, among ``source``'s items for an analyst of one source);
    else the firm their topics' industry names (``Bags.industry``)."""
    lines = [(line, ITEM_LINE.match(line)) for line in text.splitlines()]  # each line read once
    found = [m for _, m in lines if m is not None]
    # and a model's sentence reworded anywhere ("- Company A news: ... key words: ..."): its key words can
    # name the item it retold (the 0.5B's, or a fallback's quote when the mask showed a clip so: review 2026-12-02)
    asked = [(m.group(2), m.group(3), m.group(0)) for m in found] + [
        (q.group(0), "", line) for line, m in lines if m is None for q in _KEY_WORDS.finditer(line)
    ]
    if k.bags is None or not asked:
        return Guess()
    firms: Counter = Counter()
    days: list[tuple[dt.date, bool]] = []
    for (_, _, line), i in zip(asked, k.bags.named([(a, tone) for a, tone, _ in asked], k.items)):
        if i is not None:
            firms[k.items[i].ticker] += 1
            days.append(_line_day(line, k.items[i].day))
    g = _placed(Guess(), firms, days, "topics" if "topics: " in text else "bag of words") if firms else Guess()
    if (j := _jointly(found, k, source)).firm in (None, g.firm) or g.firm is None:
        g.take(j)
    if g.firm is None and (f := k.bags.industry([m.group(2) for m in found if m.group(2)[:8] == "topics: "], k.items)):
        g.firm, g.firm_cue = f, "topics' industry"
    return g


def _jointly(found: Sequence[re.Match], k: Knowledge, source: str | None = None) -> Guess:
    """A prompt's masked items together: the firm and day when every (firm, session) they all fit
    (:meth:`~fincon.llm.leakage_inputs.Bags.fitting`) is one firm's within 2 x ``SESSIONS`` sessions (the
    day exactly when one). Two lines or more, or one of an analyst of one ``source`` (the 10-K analyst is
    asked on the day a 10-K becomes visible: "the decision day: topics: revenue" among the corpus's 10-Ks).
    A line of a recency over a month long constrains too little: left out."""
    spans = [(m.group(2), m.group(3), _span(m.group(1))) for m in found if m.group(2).startswith("topics: ")]
    lines = [(line, tone, sp[0], sp[1]) for line, tone, sp in spans if sp and sp[1] - sp[0] <= 31]
    every = k.bags.fitting(lines, k.items, source) if k.bags and len(lines) >= (1 if source else 2) else set()
    fits = sorted(f for f in every if not len(k.sessions) or pd.Timestamp(f[1]) in k.sessions)  # a session
    if not fits or len({f for f, _ in fits}) > 1 or sessions_apart(fits[0][1], fits[-1][1], k.sessions) > 2 * SESSIONS:
        return Guess()
    return Guess(fits[0][0], "topics jointly", fits[len(fits) // 2][1], len(fits) == 1, "topics jointly")


def vocabulary_guess(text: str, k: Knowledge) -> Guess:
    """The firm whose names, products and distinctive terms ``text`` uses most (one firm, clearly)."""
    low = text.lower()
    toks = set(tokens(text))
    pairs = {f"{a} {b}" for a, b in zip(tokens(text), tokens(text)[1:])}
    scores: dict[str, float] = {}
    for t, words in k.terms.items():
        s = 0.0
        for w, weight in words.items():
            if w == t:  # the ticker itself: as a word in capitals, or in title case where that is no word
                if re.search(rf"(?<![\w$]){re.escape(t)}(?![\w])", text) or (
                    t.title() in text and _titled(t) and re.search(rf"(?<![\w$]){re.escape(t.title())}(?![\w])", text)
                ):
                    s += weight
            elif " " in w or not w.isalnum():
                if w.lower() in low if not w.islower() else w in pairs or w in low:
                    s += weight
            elif w.lower() in toks:
                s += weight
        if s:
            scores[t] = s
    if not scores:
        return Guess()
    ranked = sorted(scores.items(), key=lambda x: -x[1])
    top, s = ranked[0]
    second = ranked[1][1] if len(ranked) > 1 else 0.0
    if s >= 2.0 and s >= 1.5 * second:
        return Guess(firm=top, firm_cue="vocabulary")
    return Guess()


def _titled(ticker: str) -> bool:
    """Does the ticker in title case name its firm ("Msft", a schema's title of a field named after it),
    being no word of English ("On", "All" are)?"""
    return len(ticker) >= 3 and ticker.lower() not in common() and ticker.lower() not in STOP


def link(prompts: Sequence[Prompt]) -> list[int]:
    """A group id per prompt: prompts of one run and day that share a verbatim
    8-word run no other day's prompts contain (the manager quoting its analysts).
    A text sent again (another episode or repeat asking what it asked) is where
    it was first sent: its copies in other runs made every run of it look like
    another day, and no day's prompts were linked."""
    runs: dict[int, set[int]] = {}
    for i, p in enumerate(prompts):
        runs[i] = shingles(tokens(p.text), LINK)
    days_of: dict[int, set[tuple[str, str]]] = defaultdict(set)
    sent: set[str] = set()
    for i, sh in runs.items():
        if prompts[i].text in sent:
            continue
        sent.add(prompts[i].text)
        for h in sh:
            days_of[h].add((prompts[i].run, prompts[i].day))  # one run's day: runs are not linked to each other
    parent = list(range(len(prompts)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[int, int] = {}
    for i, sh in runs.items():
        for h in sh:
            if len(days_of[h]) != 1 or prompts[i].day == "-":
                continue
            if h in first:
                a, b = find(first[h]), find(i)
                if a != b:
                    parent[b] = a
            else:
                first[h] = i
    return [find(i) for i in range(len(prompts))]


# -- the audit ------------------------------------------------------------------------------------------


def audit(
    prompts: Sequence[Prompt], k: Knowledge, threshold: float = THRESHOLD, replayed: Adversary | None = None
) -> dict[str, Any]:
    """Every adversary on every prompt (with ``replayed``: the one that runs the agents' own pipeline over
    the corpus, fincon.agents.replayed_prompts), the linker over their findings, and the shares (module
    docstring). A text sent again (by another episode, repeat or ablation asking what it asked, or the same
    run) is one prompt, which gives away what any of its sendings does: it tells an adversary nothing new,
    and counted again it narrowed the interval that says "blind" (3 episodes: 150 sent, 110 texts)."""
    guesses, caps = [], history_caps(prompts)
    for p in prompts:
        g = corpus_guess(p.text, k)
        g.take(bag_guess(p.text, k, ROLE_SOURCE.get(p.kind)))
        g.take(price_guess(p.text, k))
        g.take(vocabulary_guess(p.text, k))
        g.take(history_guess(p.text, k, caps.get(p.run), g.firm))
        r = replayed(p) if replayed is not None else Guess()
        if r.firm is not None and r.firm != g.firm and r.day is not None:
            g = r  # the lines are that firm's session's: more than a firm named by its words or topics
        elif r.firm in (None, g.firm):
            g.take(r)
        guesses.append(g)
    groups = link(prompts)
    by_group: dict[int, Guess] = {}
    for gid, g in zip(groups, guesses):
        by_group.setdefault(gid, Guess()).take(g)
    for gid, g in zip(groups, guesses):
        found = by_group[gid]
        linked = Guess(
            found.firm,
            "linked" if found.firm is not None else None,
            found.day,
            found.exact,
            "linked" if found.day else None,
        )
        g.take(linked)
    rows: dict[str, dict[str, Any]] = {}
    for p, g in zip(prompts, guesses):
        row = _score(p, g, k)
        if (seen := rows.get(p.text)) is None:
            rows[p.text] = row
            continue
        for key in ("firm", "day_exact", "day_near", "both"):  # what any sending gave away, with its cue
            if row[key] and not seen[key]:
                seen.update({key: True, **{c: row[c] for c in ("firm_guess", "day_guess", "firm_cue", "day_cue")
                                           if row[c] and not seen[c]}})  # fmt: skip
    return {**summarise(list(rows.values()), threshold), "sent": len(prompts)}


def sessions_apart(a: dt.date, b: dt.date, sessions: pd.DatetimeIndex) -> int:
    """How many of ``sessions`` lie between two days (weekdays when there are none)."""
    if len(sessions) == 0:
        return abs(int(np.busday_count(min(a, b), max(a, b))))
    return abs(int(sessions.searchsorted(pd.Timestamp(a))) - int(sessions.searchsorted(pd.Timestamp(b))))


def _score(p: Prompt, g: Guess, k: Knowledge) -> dict[str, Any]:
    firm = g.firm is not None and g.firm in p.tickers
    exact = near = False
    if p.span is not None and g.day is not None:  # a day inside the span is exact; near: within SESSIONS of it
        lo, hi = p.span
        exact = lo <= g.day <= hi
        near = exact or min(sessions_apart(g.day, lo, k.sessions), sessions_apart(g.day, hi, k.sessions)) <= SESSIONS
    return {
        "run": p.run,
        "agent": p.agent,
        "kind": p.kind,
        "day": p.day,
        "key": p.key[:16],
        "dated": p.span is not None,
        "firm": firm,
        "day_exact": exact,
        "day_near": near,
        "both": firm and near,
        "firm_guess": g.firm,
        "day_guess": str(g.day) if g.day else None,
        "firm_cue": g.firm_cue if firm else None,
        "day_cue": g.day_cue if near else None,
    }


def summarise(rows: Sequence[Mapping[str, Any]], threshold: float = THRESHOLD) -> dict[str, Any]:
    def block(rs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        dated = [r for r in rs if r["dated"]]
        cues = Counter(r["firm_cue"] for r in rs if r["firm_cue"]) + Counter(r["day_cue"] for r in rs if r["day_cue"])
        days: dict[str, bool] = {}  # a decision day, in any run: given away when one of its prompts is
        for i, r in enumerate(dated):
            day = r.get("day") or f"#{i}"
            days[day] = days.get(day, False) or bool(r["both"])
        return {
            "prompts": len(rs),
            "firm": share_of(sum(r["firm"] for r in rs), len(rs)),
            "day_exact": share_of(sum(r["day_exact"] for r in dated), len(dated)),
            "day_within_5_sessions": share_of(sum(r["day_near"] for r in dated), len(dated)),
            "firm_and_day": share_of(sum(r["both"] for r in dated), len(dated)),
            "firm_and_day_days": share_of(sum(days.values()), len(days)),
            "cues": dict(sorted(cues.items())),
        }

    overall = block(rows)
    kinds = {kind: block([r for r in rows if r["kind"] == kind]) for kind in sorted({r["kind"] for r in rows})}
    result = outcome(overall["firm_and_day"], threshold, overall["firm_and_day_days"])
    return {
        "threshold": threshold,
        "result": result,
        # True only when shown blind; None when nothing was audited or too little to tell
        "blind": {"blind": True, "not blind": False}.get(result),
        "overall": overall,
        "by_agent": kinds,
        "verdict": verdict(overall, threshold),
        "prompts": list(rows),
    }


def summary(res: Mapping[str, Any]) -> dict[str, Any]:
    """The few figures a run's ``model_knowledge`` block keeps of its audit."""
    fd, days = res["overall"]["firm_and_day"], res["overall"]["firm_and_day_days"]
    return {
        "result": res["result"],
        "prompts": res["overall"]["prompts"],
        "firm_and_day": fd["k"],
        "days": days["n"],
        "days_firm_and_day": days["k"],
        "share": None if fd["share"] is None else round(fd["share"], 4),
        "threshold": res["threshold"],
        "cues": res["overall"]["cues"],
        # the log reader's stretches (fincon.agents.replayed_sessions), beside the verdict: the card prints them
        **(
            {"together": {n: {"k": x["k"], "n": x["n"]} for n, x in t["lengths"].items()}}
            if (t := res.get("together"))
            else {}
        ),
    }


def run_audit(
    root: Path,
    *,
    replay: Callable[[Sequence[RunInfo], Knowledge], Adversary] | None,
    together: Callable[[Any, Sequence[Prompt]], dict[str, Any]] | None = None,
    cache: Path | None = None,
    against: Iterable[Path] = (),
    threshold: float = THRESHOLD,
):
    """Audit every run under ``root`` (a run, or a comparison of several strategies), with the replaying
    adversary ``replay`` builds and the log reader ``together`` reading its prompts together
    (fincon.agents.audit_run passes both)."""
    found = runs_in(root)
    if not found:
        raise DataError(
            f"{root}: no run here lists its model calls (llm_calls.csv): audit a run made with --brain llm "
            "(or another strategy that calls a model) by this fincon version"
        )
    runs = [read_run(p, cache) for p in found]
    prompts = [p for r in runs for p in prompts_of(r)]
    k = build_knowledge(runs, tuple(against))
    adversary = replay(runs, k) if replay else None
    res = audit(prompts, k, threshold, adversary)
    if together is not None and adversary is not None:  # beside the verdict, not in it
        res["together"] = together(adversary, prompts)
    res["directory"] = str(root)
    res["masked"] = sorted({r.masked for r in runs}) == [True]
    res["runs"] = [str(r.path) for r in runs]
    return res
