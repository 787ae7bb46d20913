"""``debate`` transcript chunking: a call transcript cut into
structure-aware chunks (sections, speaker turns; sentences when the
transcript has no speaker cues). Pure text processing: no model, no store.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

#: a speaker turn longer than this is split at paragraph, then sentence boundaries
MAX_CHUNK_CHARS = 1200
#: a sentence shorter than this is merged with the next (unlabelled transcripts)
MIN_SENTENCE_CHARS = 40


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a call: a whole speaker turn (or a part of a
    too-long one, or a sentence of an unlabelled transcript)."""

    id: str
    event_id: str
    ticker: str
    day: str  # the day the call became visible
    section: str  # "prepared" or "qa"
    speaker: str
    turn: int
    part: int
    text: str

    def metadata(self) -> dict[str, Any]:
        return {
            "event_id": self.event_id,
            "ticker": self.ticker,
            "day": self.day,
            "section": self.section,
            "speaker": self.speaker,
            "turn": self.turn,
            "part": self.part,
        }


_SECTION = re.compile(
    r"^\s*(?:#+\s*)?(?P<name>prepared remarks|presentation|management discussion|opening remarks|"
    r"questions?[- ]and[- ]answers?(?: session)?|q\s*&\s*a(?: session)?)\s*:?\s*$",
    re.I,
)
_SPEAKER = re.compile(
    r"^\s*(?P<speaker>(?:[A-Z][\w.'&]*)(?:\s+[A-Z][\w.'&]*){0,3})"
    r"(?:\s*(?:--|\u2014|\u2013|,)\s*(?P<title>[^:\n]{1,80}))?\s*:\s+(?P<text>\S.*)$"
)
_QA_CUE = re.compile(
    r"take (?:your |our first )?questions?|open (?:up )?the (?:line|floor)|question-and-answer session|"
    r"first question",
    re.I,
)
_SENT = re.compile(r"(?<=[.!?])\s+")
_NOISE = re.compile(r"synthetic sample", re.I)


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text) if s.strip()]


def _split_long(text: str, limit: int) -> list[str]:
    """Paragraphs first, then sentences, then words: pieces of at most ``limit`` chars."""
    if len(text) <= limit:
        return [text]
    out: list[str] = []
    for para in [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]:
        if len(para) <= limit:
            units = [para]
        else:
            units = []
            for s in _sentences(para):
                while len(s) > limit:  # a sentence longer than a chunk: cut at a word boundary
                    cut = s.rfind(" ", 0, limit)
                    cut = cut if cut > 0 else limit
                    units.append(s[:cut].strip())
                    s = s[cut:].strip()
                if s:
                    units.append(s)
        buf = ""
        for u in units:
            if buf and len(buf) + 1 + len(u) > limit:
                out.append(buf)
                buf = u
            else:
                buf = f"{buf} {u}".strip()
        if buf:
            out.append(buf)
    return out


def chunk_transcript(
    text: str, event_id: str, ticker: str = "", day: str = "", max_chars: int = MAX_CHUNK_CHARS
) -> list[Chunk]:
    """Structure-aware chunks of a call transcript (see the module doc)."""
    section = "prepared"
    turns: list[tuple[str, str, list[str]]] = []  # (section, speaker, lines)
    unlabelled: list[tuple[str, str]] = []  # (section, line) before any speaker cue
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or _NOISE.search(line) and len(line) < 120 and line.isupper():
            continue
        m = _SECTION.match(line)
        if m:
            section = "qa" if re.match(r"q|questions?", m.group("name"), re.I) else "prepared"
            continue
        s = _SPEAKER.match(line)
        if s:
            speaker = s.group("speaker") + (f" ({s.group('title').strip()})" if s.group("title") else "")
            turns.append((section, speaker, [s.group("text")]))
        elif turns:
            turns[-1][2].append(line)
        else:
            unlabelled.append((section, line))
        if s and speaker.lower().startswith("operator") and _QA_CUE.search(s.group("text")):
            section = "qa"

    chunks: list[Chunk] = []

    def add(sec: str, speaker: str, turn: int, parts: Sequence[str]) -> None:
        for j, p in enumerate(parts):
            chunks.append(Chunk(f"{event_id}#c{len(chunks) + 1}", event_id, ticker, day, sec, speaker, turn, j, p))

    if not turns:
        # no speaker cues: sentences are the only structure; the operator's cue ends the prepared remarks
        sents: list[tuple[str, str]] = []
        for sec, line in unlabelled:
            for s in _sentences(line):
                if _NOISE.search(s):
                    continue
                sents.append((section_of(sents, sec), s))
        merged: list[tuple[str, str]] = []
        for sec, s in sents:
            if merged and len(merged[-1][1]) < MIN_SENTENCE_CHARS and merged[-1][0] == sec:
                merged[-1] = (sec, f"{merged[-1][1]} {s}")
            else:
                merged.append((sec, s))
        for n, (sec, s) in enumerate(merged):
            add(sec, "unknown", n, _split_long(s, max_chars))
        return chunks
    n = 0
    if unlabelled:  # text before the first speaker cue: a turn of its own
        add(unlabelled[0][0], "unknown", n, _split_long("\n".join(l for _, l in unlabelled), max_chars))
        n += 1
    for sec, speaker, lines in turns:
        add(sec, speaker, n, _split_long("\n".join(lines), max_chars))
        n += 1
    return chunks


def section_of(previous: list[tuple[str, str]], current: str) -> str:
    """Unlabelled text: the sentence after the cue to questions starts the Q&A."""
    if current == "qa" or (previous and (previous[-1][0] == "qa" or _QA_CUE.search(previous[-1][1]))):
        return "qa"
    return current
