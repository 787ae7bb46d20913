"""Model backends that answer without a model.

Both satisfy the backend protocol of ``fincon.llm`` (``name``, ``model_id``,
``price_model``, ``complete(messages, schema, params)``, ``close()``), so
they run through the real ``LLMClient``: its validation, re-asks, fallbacks,
cache and ledger are what the tests exercise, not a mock of them.
"""

from __future__ import annotations

import hashlib
import json
import re

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
                ans = {
                    k: ["buy", "sell", "hold"][(h + i) % 3]
                    for i, k in enumerate(sorted(props))
                    if k not in ("rationale", "relied_on")
                }
                ans.update(rationale="stub", relied_on=relied)
            if injected:
                ans = {"action": "buy"}  # what an obedient model answers: not even the schema
        return Completion(json.dumps(ans), prompt_tokens=100, completion_tokens=20)

    def close(self):
        pass


def stub_client(**kw) -> tuple[LLMClient, TeamStub]:
    """A real ``LLMClient`` (with its own ledger) on a ``TeamStub(**kw)``."""
    stub = TeamStub(**kw)
    return LLMClient(stub, ledger=UsageLedger()), stub
