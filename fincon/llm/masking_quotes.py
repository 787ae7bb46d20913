"""What a run's models said, kept so that no later prompt quotes it (fincon.llm.masking).

A sentence of six words or more that a model answered (or a rules fallback
wrote, quoting its items) is kept with its rewording; wherever a later prompt
would repeat it, the rewording stands instead (:func:`unquote`). A
sentence is kept as the model wrote it and as a prompt shows it, masked on the
day it was said. One with a date in it is kept as written too, and masked
again on each day it is looked for: its date reads as another recency on a
later day ("announced this week" on one day, "this month" two weeks on), and
the form masked on the first day was looked for in vain there (the sentence
reached the prompt whole: found in review 2026-12-02).
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from typing import Any, Callable, Mapping

from fincon.llm import masking_rules as rules


class Quotes:
    """The sentences to reword: ``quoted`` (as a prompt shows them) and ``dated`` (as written, with a
    date: masked per day). Only ever added to, never removed from, as a run goes on."""

    def __init__(self) -> None:
        self.quoted: dict[str, str] = {}  # a sentence -> its rewording
        self.dated: dict[str, str] = {}  # a sentence with a date, as written -> its rewording
        self._on: dict[Any, tuple[int, dict[str, str]]] = {}  # a day -> (len(dated) then, its forms that day)

    def learned(self) -> dict[str, dict[str, str]]:
        return {"quoted": dict(self.quoted), "dated": dict(self.dated)}

    def take_up(self, learned: Mapping[str, Any]) -> None:
        self.quoted = dict(learned["quoted"])
        self.dated = dict(learned.get("dated", {}))  # a state saved before 2026-12-02 has none
        self._on.clear()

    def on(self, day: Any, mask: Callable[[str], str]) -> Mapping[str, str]:
        """The sentences to reword in a prompt of ``day``, whose mask is ``mask``."""
        if not self.dated:
            return self.quoted
        n, forms = self._on.get(day, (0, {}))
        if n != len(self.dated):  # a sentence is only ever added: those after the first n are new to this day
            every = tuple(self.dated.items())  # a copy: another analyst's answer may add one meanwhile
            forms = dict(forms)
            for said, shown in every[n:]:
                forms.setdefault(mask(said).strip(), shown)
            self._on[day] = (len(every), forms)
            for gone in list(self._on)[:-4]:  # a run goes day by day: the latest few are kept
                self._on.pop(gone, None)
        return {**forms, **self.quoted}

    def remember(
        self,
        answer: str,
        form: Callable[[str], str] | None,
        shown: Callable[[str], str],
        dated: Callable[[str], str | None],
    ) -> None:
        """The sentences of each text in ``answer`` (JSON): ``form(text)``'s (``None``: as written),
        each kept as ``shown`` rewords it; with a ``form``, a sentence with a date is kept as written
        too (``dated``: its masked form, None when it has none)."""
        try:
            data = json.loads(answer)
        except ValueError:
            return
        stack = [data]
        while stack:
            x = stack.pop()
            if isinstance(x, dict):
                stack.extend(x.values())
            elif isinstance(x, list):
                stack.extend(x)
            elif isinstance(x, str):
                for sentence in rules.SENTENCE.split(form(x) if form else x):
                    sentence = sentence.strip()
                    if len(sentence.split()) >= 6 and sentence not in self.quoted:
                        self.quoted[sentence] = shown(sentence)
                if form is None or not rules.DIGIT.search(x):  # every date needs a digit
                    continue
                for said in rules.SENTENCE.split(x):
                    said = said.strip()
                    if len(said.split()) >= 6 and said not in self.dated and (masked := dated(said)) is not None:
                        self.dated[said] = self.quoted.get(masked.strip()) or shown(masked.strip())


#: a quoted sentence's first words: where a prompt holds them, it quotes the sentence (whole or clipped)
_HEAD = re.compile(r"\S+(?:\s+\S+){5}")
#: where a prompt clipped a sentence at a count of characters, mid-word and with no "…" (the scm protocol's
#: reports and evidence, fincon.agents.protocols.scm_prompts): what is left of the word it cut (masked
#: alone, a cut word can read other than whole: "20" of "2020" is "[n]"), then the end of the clip, the
#: citation label after it ("[E1]", "[E1, E2]"), the next analyst's quote (" | ") or the line's end
CLIP_END = re.compile(r"\S*(?=[^\S\n]*(?:\[E\d+[],]|\| |$))", re.M)
CLIP_AT = re.compile(r"[^\S\n]*(?:\[E\d+[],]|\| |$)", re.M)  # a clip at a word's end: the end comes next


@lru_cache(maxsize=65536)
def _head(sentence: str) -> str | None:
    m = _HEAD.match(sentence)
    return m.group(0) if m else None


def unquote(s: str, quoted: Mapping[str, str]) -> str:
    """``s`` with each sentence of ``quoted`` (one a model answered, or a rules fallback wrote) that
    it repeats as its rewording: the whole sentence, or the head a prompt clipped it to ("... seven
    different strategies…": fincon.memory.distill.clip_sentences; or cut mid-word before a label or at
    a line's end: :data:`CLIP_END`), from its first six words on. The longest first, so that the result
    does not depend on the order the answers came in. The sentences are read from a copy (``tuple``
    copies in one step under the GIL): the team's analysts ask at once, and another thread's answer may
    add one during the scan (a sentence only ever added, never removed)."""
    hits = [q for q in tuple(quoted) if (h := _head(q)) is not None and h in s]  # a scan per prompt
    for q in sorted(hits, key=lambda q: (-len(q), q)):
        head, start = _head(q), 0
        while head is not None and (i := s.find(head, start)) >= 0:
            n = end = len(os.path.commonprefix([s[i : i + len(q)], q]))
            if n < len(q) and s[i + n : i + n + 1] != "…":
                # the scm protocol's clip (found in review: 295 prompt lines with a run of six words of the
                # corpus): at a word's end, or inside a word; else another sentence begins alike ("... days?"
                # of a prompt's own question is no clip of a model's "... days is a rebound.", diff review)
                inside = s[i + n - 1 : i + n].strip() and q[n].strip()
                cut = CLIP_END.match(s, i + n) if inside else None
                if cut is None and CLIP_AT.match(s, i + n) is None:
                    start = i + 1
                    continue
                end = cut.end() - i if cut is not None else len(s[i : i + n].rstrip())
            # a clip of a model's sentence: its own key words; of one shown otherwise (a fallback quoting an
            # item: "a quoted item", its topics) as the whole is (its key words named the item, review 2026-12-02)
            new = quoted[q] if n == len(q) or not quoted[q].startswith(rules.KEY_WORDS) else rules.reword(s[i : i + n])
            s, start = s[:i] + new + s[i + end :], i + len(new)
    return s
