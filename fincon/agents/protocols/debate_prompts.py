"""``debate`` prompt building: the role templates (``debate_<role>.txt``
beside this module) and the text blocks they are filled with (chunks with
short labels, insights, the report). Everything a debate model reads is
assembled here; no model call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from fincon.agents.protocols.debate_chunks import Chunk
from fincon.agents.protocols.debate_rules import _cite
from fincon.agents.protocols.debate_schemas import DebateReport
from fincon.agents.reports import Insight, InsightAnswer
from fincon.agents.roles.base import load_template

HERE = Path(__file__).parent
CHUNK_CHARS_IN_PROMPT = 300


def _template(name: str) -> tuple[str, str]:
    return load_template(str(HERE / f"debate_{name}.txt"))


def _line(text: str) -> str:
    """A passage on one line: a prompt lists a passage a line each, and the mask reads a passage's line
    as one item (a speaker's second line, on a line of its own, was shown whole)."""
    return " ".join(text[:CHUNK_CHARS_IN_PROMPT].split())


def _chunk_lines(chunks: Sequence[Chunk], labels: dict[str, str]) -> str:
    return "\n".join(
        f"[{labels.get(c.id, c.id)}] ({'Q&A' if c.section == 'qa' else 'prepared remarks'}"
        f"{'' if c.speaker == 'unknown' else ', ' + c.speaker}): {_line(c.text)}"
        for c in chunks
    )


def _insight_lines(insights: Sequence[Insight], labels: dict[str, str]) -> str:
    return (
        "\n".join(f"- {i.text[:200]} [{', '.join(labels.get(c.id, c.id) for c in i.citations)}]" for i in insights)
        or "- (none)"
    )


def _report_text(r: DebateReport, labels: dict[str, str]) -> str:
    return (
        f"Direction: {r.direction} (confidence {r.confidence:.2f}), horizon {r.horizon} trading days.\n"
        f"Evidence:\n{_insight_lines(r.insights, labels)}"
    )


#: how the prompts name the document a debate reads, by event source
KINDS = {"earnings_call": "quarterly earnings call", "10-Q": "quarterly 10-Q filing", "10-K": "annual 10-K filing"}


def _messages(name: str, **values: str) -> list[dict[str, str]]:
    values.setdefault("kind", KINDS["earnings_call"])
    system, user = _template(name)
    return [{"role": "system", "content": system.format(**values)}, {"role": "user", "content": user.format(**values)}]


def _insights(answers: Sequence[InsightAnswer], by_id: dict[str, Chunk]) -> list[Insight]:
    return [Insight(text=a.text, citations=[_cite(by_id[c]) for c in a.cites if c in by_id]) for a in answers]


def _evidence_lines(chunks: Sequence[Chunk], cited_by: dict[str, list[str]], labels: dict[str, str]) -> str:
    """The specialists' evidence for the Skeptic: each passage they cited, with who cited it."""
    return "\n".join(
        f"[{labels.get(c.id, c.id)}] (cited by {', '.join(cited_by.get(c.id, [])) or 'nobody'}): {_line(c.text)}"
        for c in chunks
    )


def _call_text(r: DebateReport) -> str:
    return f"{r.direction} (confidence {r.confidence:.2f}) over {r.horizon} trading days"
