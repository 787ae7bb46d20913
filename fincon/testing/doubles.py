"""Model backends that answer without a model.

Both satisfy the backend protocol of ``fincon.llm`` (``name``, ``model_id``,
``price_model``, ``complete(messages, schema, params)``, ``close()``), so
they run through the real ``LLMClient``: its validation, re-asks, fallbacks,
cache and ledger are what the tests exercise, not a mock of them.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
from typing import Any

from fincon.llm import LLMClient, UsageLedger
from fincon.llm.types import Completion, Message


class Scripted:
    """Answers from a list, in order, and records every prompt it was sent.

    ``tokens`` are the (prompt, completion) counts each answer reports.
    Running out of answers is an ``IndexError``: a test that asks more than
    it scripted fails loudly."""

    name = "scripted"
    model_id = "scripted-1"
    price_model = "scripted-1"

    def __init__(self, answers, tokens: tuple[int, int] = (100, 10)):
        self.answers = list(answers)
        self.tokens = tokens
        self.seen: list[list[Message]] = []

    def complete(self, messages, schema, params):
        self.seen.append(list(messages))
        return Completion(self.answers.pop(0), prompt_tokens=self.tokens[0], completion_tokens=self.tokens[1])

    def close(self):
        pass


#: the risk-control agent's schemas (fincon.agents.risk_control): episode insights, the comparison, the edits
_CVRF = ("EpisodeInsights", "MetaPrompt", "BeliefEdits")


def _enum(schema: Any) -> list[str]:
    """The first enum in ``schema`` (the perspectives a CVRF answer may name)."""
    if isinstance(schema, dict):
        if isinstance(schema.get("enum"), list):
            return schema["enum"]
        values = schema.values()
    elif isinstance(schema, list):
        values = schema
    else:
        return []
    return next((e for v in values if (e := _enum(v))), [])


def _cvrf_answer(schema: dict, h: int) -> dict:
    names = _enum(schema) or ["news"]
    first = names[h % len(names)]
    if schema["title"] == "EpisodeInsights":
        return {"insights": [{"perspective": first, "text": f"stub insight {h % 5}: its views came before gains."}]}
    if schema["title"] == "MetaPrompt":
        return {"text": f"stub direction {h % 5}: the better episode trusted {first} more.", "perspectives": [first]}
    return {"updates": [{"perspective": first, "text": f"stub belief {h % 5}: trust the {first} views more."}]}


class TeamStub:
    """A deterministic fake model for the FinCon team's analyst and manager
    schemas: each answer is a function of the prompt's hash, so two runs
    that send the same prompts get the same answers (a replay test can tell
    a changed prompt from a changed answer).

    ``obey``: follows instructions planted in its input (prompt injection:
    cites ``INJECTED`` and answers off-schema); ``bad_ids``: cites ids it was
    never given. ``calls`` counts the answers it gave."""

    name = "stub"
    model_id = "stub-1"
    price_model = "stub-1"

    def __init__(self, obey: bool = False, bad_ids: bool = False):
        self.obey, self.bad_ids = obey, bad_ids
        self.calls = 0

    def complete(self, messages, schema, params):
        self.calls += 1
        user = messages[1].content
        h = int(hashlib.sha256(user.encode()).hexdigest()[:8], 16)
        props = schema.get("properties", {})
        injected = self.obey and "ignore previous instructions" in user.lower()
        if schema.get("title") in _CVRF:  # the risk-control agent's belief update between episodes
            return Completion(json.dumps(_cvrf_answer(schema, h)), prompt_tokens=100, completion_tokens=20)
        if "reflection" in props:  # the manager's self-reflection on a settled decision
            ans = {"reflection": f"stub reflection {h % 7}: weigh the filings more than the day's news."}
        elif "insights" in props:
            ids = re.findall(r"^\[([^\]]+)\]", user, re.M)
            cite = "INJECTED" if (injected or self.bad_ids) else ids[h % len(ids)]
            ans = {
                "insights": [{"text": "stub reading", "cites": [cite]}],
                "direction": ["bullish", "bearish", "neutral"][h % 3],
                "confidence": round((h % 100) / 100, 2),
            }
        else:
            cited = [x.strip() for grp in re.findall(r"\[([^\]]+)\]", user) for x in grp.split(",")]
            relied = ["INJECTED"] if injected else cited[:1]
            if "action" in props:
                ans = {"action": ["buy", "sell", "hold"][h % 3], "size": 1.0, "rationale": "stub", "relied_on": relied}
            else:
                ans = {  # a direction per asset; a number where the schema asks one (the portfolio's size)
                    k: min(1.0, props[k].get("maximum", 1.0)) if props[k].get("type") == "number"
                    else ["buy", "sell", "hold"][(h + i) % 3]
                    for i, k in enumerate(sorted(props))
                    if k not in ("rationale", "relied_on")
                }  # fmt: skip
                ans.update(rationale="stub", relied_on=relied)
            if injected:
                ans = {"action": "buy"}  # what an obedient model answers: not even the schema
        return Completion(json.dumps(ans), prompt_tokens=100, completion_tokens=20)

    def close(self):
        pass


class ScmStub(TeamStub):
    """The team's stub plus the scm schemas: alternatives that depend on the
    prompt and the sampling seed (so samples disagree), sometimes with
    faults for the Critic and the fix round; a critic issue; a moderator
    that always picks A."""

    def complete(self, messages, schema, params):
        props = schema.get("properties", {})
        if not {"alternatives", "issues", "choice", "checks"} & set(props):
            return super().complete(messages, schema, params)
        self.calls += 1
        user = messages[-1].content if messages[-1].role == "user" else messages[1].content
        h = int(hashlib.sha256(f"{user}|{params.seed}".encode()).hexdigest()[:8], 16)
        labels = re.findall(r"\b(E\d+) = ", user) or []
        if "alternatives" in props:
            tickers = list(schema["$defs"]["Weights"]["properties"])
            fixing = "Issues to fix" in user
            sign = 1 if h % 3 else -1
            alts = []
            for n, size in zip("ABC", (0.5 / len(tickers), 0.25 / len(tickers), 0.0)):
                w = {t: round(sign * size * (1 if (h >> k) % 2 else -1), 4) for k, t in enumerate(tickers)}
                gross = round(sum(map(abs, w.values())), 4)
                bad = n == "A" and h % 4 == 0 and not fixing  # an arithmetic and a calibration fault
                alts.append(
                    {
                        "name": n,
                        "evidence": labels[:1] if size else [],
                        "rule": f"stub rule {n}",
                        "weights": w,
                        "gross": gross + (0.3 if bad else 0),
                        "p5": 1.0 if bad else -2.0,
                        "p50": 0.1,
                        "p95": 2.0,
                        "risks": ["stub risk"],
                    }
                )
            ans = {"alternatives": alts[: 2 + h % 2]}
        elif "checks" in props:  # the verifier: answers every question, passes on half of them
            qs = re.findall(r"^(Q\d+):", user, re.M)
            ans = {
                "checks": [
                    {"issue": q, "answer": "the evidence covers it", "passes": (h >> n) % 2 == 0, "cites": labels[:1]}
                    for n, q in enumerate(qs)
                ]
            }
        elif "issues" in props:
            ans = {
                "issues": [
                    {
                        "alternative": "B",
                        "category": "risks",
                        "severity": "medium",
                        "issue": "liquidity not covered",
                        "question": "How liquid is it?",
                    }
                ]
            }
        else:
            ans = {"discard": [], "choice": "A", "rationale": "stub moderator", "relied_on": labels[:1]}
        return Completion(json.dumps(ans), prompt_tokens=100, completion_tokens=20)


def stub_client(**kw) -> tuple[LLMClient, TeamStub]:
    """A real ``LLMClient`` (with its own ledger) on a ``TeamStub(**kw)``."""
    stub = TeamStub(**kw)
    return LLMClient(stub, ledger=UsageLedger()), stub


_MON = {
    m: i for i, m in enumerate(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"], 1)
}
_FULL_DATE = re.compile(
    r"\b((?:19|20)\d{2})-(\d{2})-(\d{2})\b|\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\w*\.? (\d{1,2}),? ((?:19|20)\d{2})\b"
)


class Clairvoyant(TeamStub):
    """A model that cheats: whenever a prompt names one of the run's tickers
    and a full date, it looks the real future up in ``closes`` (ticker ->
    close series, the whole sample) and answers bullish / buy when the close
    ``horizon`` trading days later is higher, bearish / sell when lower, with
    full confidence; with no ticker or no date to go on it answers exactly as
    :class:`TeamStub` (a function of the prompt's hash: a random double).

    It stands for a model that remembers the window: with the prompts named,
    the team's backtest beats buy-and-hold by a wide margin and a recall
    probe flags it; masked (``--anonymize``), it cannot tell which firm or
    day it is asked about and its edge disappears."""

    name = "clairvoyant"
    model_id = "clairvoyant-1"
    price_model = "clairvoyant-1"

    def __init__(self, closes, horizon: int = 5):
        super().__init__()
        self.closes = closes
        self.horizon = horizon
        self.peeked = 0

    def future(self, text: str) -> dict[str, float] | None:
        """ticker -> its return over the next ``horizon`` days, for the tickers
        and the last full date the text names (None when it names neither)."""

        tickers = [t for t in self.closes if re.search(rf"(?<![\w]){re.escape(t)}(?![\w])", text)]
        dates = []
        for m in _FULL_DATE.finditer(text):
            try:
                if m.group(1):
                    dates.append(dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3))))
                else:
                    dates.append(dt.date(int(m.group(6)), _MON[m.group(4)[:3]], int(m.group(5))))
            except ValueError:
                continue
        if not tickers or not dates:
            return None
        day = max(dates)
        out = {}
        for t in tickers:
            s = self.closes[t]
            i = int(s.index.searchsorted(str(day), side="right")) - 1
            if i < 0:
                continue
            j = min(i + self.horizon, len(s) - 1)
            out[t] = float(s.iloc[j] / s.iloc[i] - 1.0)
        return out or None

    def complete(self, messages, schema, params):
        text = "\n".join(m.content for m in messages)
        props = schema.get("properties", {})
        if "answer" in props or "ticker" in props:  # the lookahead probes (fincon.eval.lookahead)
            return self._probe(messages[-1].content, props)
        ahead = None if "reflection" in props else self.future(text)
        if ahead is None:
            return super().complete(messages, schema, params)
        self.calls += 1
        self.peeked += 1
        up = {t: r > 0 for t, r in ahead.items()}
        first = next(iter(up.values()))
        if "insights" in props:
            ids = re.findall(r"^\[([^\]]+)\]", messages[1].content, re.M)
            ans = {
                "insights": [{"text": "what happens next", "cites": ids[:1]}],
                "direction": "bullish" if first else "bearish",
                "confidence": 1.0,
            }
        elif "action" in props:
            ans = {"action": "buy" if first else "sell", "size": 1.0, "rationale": "known", "relied_on": []}
        else:
            ans = {
                k: ("buy" if up.get(k, True) else "sell")
                for k in sorted(props)
                if k not in ("rationale", "relied_on", "size")
            }
            ans.update(rationale="known", relied_on=[])
            if "size" in props:
                ans["size"] = 1.0
        return Completion(json.dumps(ans), prompt_tokens=100, completion_tokens=20)

    def _probe(self, user: str, props) -> Completion:
        """Answer a probe question from the real future (recall) or from the
        names in the item (re-identification); with nothing to go on, a guess
        that is a function of the prompt's hash."""
        self.calls += 1
        h = int(hashlib.sha256(user.encode()).hexdigest()[:8], 16)
        if "ticker" in props:
            item = user.split("Which company is it about")[0]
            choices = re.findall(r"\b[A-Z]{1,5}\b", user.split("The company is one of:")[-1].split("(answer")[0])
            years = [int(y) for y in re.findall(r"\b(?:19|20)\d{2}\b", user.split("The year is one of:")[-1])]
            named = [t for t in choices if re.search(rf"(?<![\w]){re.escape(t)}(?![\w])", item)]
            dated = [int(y) for y in re.findall(r"\b((?:19|20)\d{2})\b", item)]
            if named or dated:
                self.peeked += 1
            ans = {
                "ticker": named[0] if named else choices[h % len(choices)],
                "year": dated[0] if dated else years[h % len(years)],
            }
            return Completion(json.dumps(ans), prompt_tokens=100, completion_tokens=10)
        horizon = re.search(r"next (\d+) trading days|(\d+) trading days after", user)
        if horizon:
            self.horizon = int(horizon.group(1) or horizon.group(2))
        ahead = self.future(user)
        letters = re.findall(r"^([A-E]): ", user, re.M)
        if ahead is None:
            options = letters or ["up", "down"]
            return Completion(json.dumps({"answer": options[h % len(options)]}), prompt_tokens=100, completion_tokens=5)
        self.peeked += 1
        r = next(iter(ahead.values()))
        if letters:
            edges = [float(x) / 100 for x in re.findall(r"([+-]\d+\.\d)%", user)]
            cut = sorted(set(edges))
            k = sum(r >= e for e in cut)
            return Completion(json.dumps({"answer": "ABCDE"[min(k, 4)]}), prompt_tokens=100, completion_tokens=5)
        return Completion(json.dumps({"answer": "up" if r > 0 else "down"}), prompt_tokens=100, completion_tokens=5)
