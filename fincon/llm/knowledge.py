"""What the model could already know: its training-data cutoff against the window.

Data-side point in time (nothing on day t depends on data after t) says
nothing about the model: one trained on text written after a backtest window
may remember what happened in it (Lopez-Lira, Tang & Zhu, "The Memorization
Problem"; "Profit Mirage", arXiv 2510.07920, measures agents' Sharpe falling
by half once the window lies after the cutoff). So every run that calls a
model labels its window against the model's training-data cutoff:

* ``in-training-data``: the window ends on or before the cutoff;
* ``straddles-cutoff``: it starts on or before the cutoff and ends after it;
* ``after-cutoff``: it starts after the cutoff (the only label whose LLM
  figures can be evidence of skill rather than of memory);
* ``cutoff-unknown``: no cutoff is known for the model (never a pass);
* ``no-model``: the strategy calls no model (a rules brain, a baseline).

A cutoff comes from :data:`KNOWN` (the bundled models and common endpoint
models, each with its source) or from ``llm.knowledge_cutoff``
(``--llm-knowledge-cutoff``), and when both exist the later one: a user's
date earlier than a known one would relabel a window the model was trained
on as after its cutoff, so it is kept as the user's claim
(``claimed_cutoff`` in the block), said in the run's warning, and not used. Vendors state a cutoff as a
month: it is taken as that month's last day, so a window inside the cutoff
month counts as in the training data. Where a vendor states none (the Qwen2.5
family), the model's own public release date bounds it from above: a window
before the release may be in the training data, one after it cannot be
(each release its own date: the Coder 0.5B came out two months after the
1.5B).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Literal

from fincon.llm.bundled import DEFAULT_MODEL

Label = Literal["in-training-data", "straddles-cutoff", "after-cutoff", "cutoff-unknown", "no-model"]
LABELS: tuple[Label, ...] = ("in-training-data", "straddles-cutoff", "after-cutoff", "cutoff-unknown", "no-model")


@dataclass(frozen=True)
class Cutoff:
    """A model's training-data cutoff and where that date comes from."""

    date: dt.date
    source: str


_QWEN25 = Cutoff(
    dt.date(2024, 9, 19),
    "no cutoff published; bounded by the Qwen2.5 family's public release on 2024-09-19 "
    "(Qwen2.5-Coder technical report, arXiv 2409.12186)",
)
_QWEN25_CODER_LATER = Cutoff(
    dt.date(2024, 11, 12),
    "no cutoff published; bounded by its public release on 2024-11-12 (the Qwen2.5-Coder sizes 0.5B, 3B, 14B "
    "and 32B came two months after the 1.5B and 7B; arXiv 2409.12186 v3)",
)
#: names a Qwen2.5 key would match that were released later (the 1M-context models, January 2025): no
#: bound known here, so cutoff-unknown rather than the family's September bound
LATER_VARIANTS = ("-1m",)

#: known cutoffs by model name (a name matches the longest key it starts with,
#: case-insensitively); docs/llm.md lists them with their sources. The Qwen2.5 keys name each release:
#: a bare "qwen2.5" would give models released later (Qwen2.5-VL, -Omni, -Max in 2025) a September 2024
#: bound and call a window they may have read "after-cutoff"
KNOWN: dict[str, Cutoff] = {
    # the bundled models (fincon/llm/bundled.py): Qwen2.5-Coder-Instruct GGUFs
    "qwen2.5-coder-1.5b": _QWEN25,
    "qwen2.5-coder-7b": _QWEN25,
    "qwen2.5-coder-0.5b": _QWEN25_CODER_LATER,
    "qwen2.5-coder-3b": _QWEN25_CODER_LATER,
    "qwen2.5-coder-14b": _QWEN25_CODER_LATER,
    "qwen2.5-coder-32b": _QWEN25_CODER_LATER,
    **{f"qwen2.5-{size}b": _QWEN25 for size in ("0.5", "1.5", "3", "7", "14", "32", "72")},
    "qwen2.5-math": _QWEN25,
    "qwen05": _QWEN25_CODER_LATER,  # the name docs and tests give the bundled 0.5B behind llama_cpp.server
    "qwen15": _QWEN25,
    # common endpoint models: the vendors' model pages
    "gpt-4o": Cutoff(dt.date(2023, 10, 31), "OpenAI model documentation: knowledge cutoff October 2023"),
    "gpt-4o-mini": Cutoff(dt.date(2023, 10, 31), "OpenAI model documentation: knowledge cutoff October 2023"),
    "gpt-4-turbo": Cutoff(dt.date(2023, 12, 31), "OpenAI model documentation: knowledge cutoff December 2023"),
    "gpt-4.1": Cutoff(dt.date(2024, 6, 30), "OpenAI model documentation: knowledge cutoff June 2024"),
    "gpt-3.5-turbo": Cutoff(dt.date(2021, 9, 30), "OpenAI model documentation: knowledge cutoff September 2021"),
    "claude-3-5-sonnet": Cutoff(dt.date(2024, 4, 30), "Anthropic model overview: training data cutoff April 2024"),
    "claude-3-haiku": Cutoff(dt.date(2023, 8, 31), "Anthropic model overview: training data cutoff August 2023"),
    "llama-3.1": Cutoff(dt.date(2023, 12, 31), "Meta Llama 3.1 model card: knowledge cutoff December 2023"),
    "meta-llama-3.1": Cutoff(dt.date(2023, 12, 31), "Meta Llama 3.1 model card: knowledge cutoff December 2023"),
}

#: what a user-given cutoff's source reads
USER_SOURCE = "given by the user (llm.knowledge_cutoff)"
#: a masked run's ``model_knowledge.audit.result`` when the leakage audit (fincon.llm.leakage) attacked
#: its prompts; a named run's is ``not audited``
AUDITED = ("blind", "inconclusive", "not blind")


def known_cutoff(model: str | None) -> Cutoff | None:
    """The cutoff :data:`KNOWN` holds for ``model`` (a name or a GGUF path), or None."""
    if not model:
        return None
    name = str(model).replace("\\", "/").rsplit("/", 1)[-1].lower()
    name = name.removesuffix(".gguf")
    best = max((k for k in KNOWN if name.startswith(k)), key=len, default=None)
    if best is None or any(v in name for v in LATER_VARIANTS):
        return None
    return KNOWN[best]


def cutoff_of(settings: Any) -> Cutoff | None:
    """The cutoff of the model ``settings`` (an LLMSettings) names: the later of
    the user's and the known one (module docstring)."""
    given = getattr(settings, "knowledge_cutoff", None)
    model = getattr(settings, "model", None)
    if model is None and getattr(settings, "backend", "local") == "local":
        model = DEFAULT_MODEL
    known = known_cutoff(model)
    if given is None:
        return known
    if known is not None and given < known.date:
        return known
    return Cutoff(given, USER_SOURCE)


def label(start: dt.date, end: dt.date, cutoff: Cutoff | None) -> Label:
    """The window ``start``..``end`` against ``cutoff``."""
    if cutoff is None:
        return "cutoff-unknown"
    if end <= cutoff.date:
        return "in-training-data"
    if start <= cutoff.date:
        return "straddles-cutoff"
    return "after-cutoff"


def model_knowledge(settings: Any | None, start: dt.date, end: dt.date) -> dict[str, Any]:
    """The ``model_knowledge`` block of metrics.json and run_manifest.json:
    the model, its cutoff and the cutoff's source, the window and its label."""
    window = {"start": str(start), "end": str(end)}
    if settings is None:
        return {"label": "no-model", "model": None, "cutoff": None, "source": None, "window": window}
    cutoff = cutoff_of(settings)
    resolved = getattr(settings, "resolved_model", None)
    model = resolved() if callable(resolved) else getattr(settings, "model", None)
    block = {
        "label": label(start, end, cutoff),
        "model": str(model) if model is not None else None,
        "cutoff": str(cutoff.date) if cutoff else None,
        "source": cutoff.source if cutoff else None,
        "window": window,
    }
    given = getattr(settings, "knowledge_cutoff", None)
    if given is not None and cutoff is not None and cutoff.date != given:
        block["claimed_cutoff"] = str(given)  # the user's earlier date, kept as their claim, not used
    return block


def written_by(writer: dict[str, Any] | None, start: dt.date, end: dt.date) -> dict[str, Any] | None:
    """The model that wrote learned beliefs (their ``model_knowledge``, from ``fincon train``) against the
    window of the run that reads them: a model that knew the test window may have written what happened
    into the beliefs the run's model reads every day (found in review: the card passed such a run). None:
    the beliefs name no model."""
    if not writer or not writer.get("model"):
        return None
    cut = Cutoff(dt.date.fromisoformat(writer["cutoff"]), writer.get("source") or "") if writer.get("cutoff") else None
    window = {"start": str(start), "end": str(end)}
    return {"label": label(start, end, cut), "model": writer["model"], "cutoff": writer.get("cutoff"), "window": window}


def warning(block: dict[str, Any], who: str) -> str | None:
    """One line for an LLM run whose window is not after the model's cutoff (or whose learned beliefs a
    model wrote that may know it: ``block["beliefs"]``), else None."""
    own = _own_warning(block, who)
    beliefs = block.get("beliefs")
    if own or not beliefs or beliefs["label"] == "after-cutoff":
        return own
    return _own_warning(beliefs, f"{who} (its --beliefs written by {beliefs['model']})")


def _own_warning(block: dict[str, Any], who: str) -> str | None:
    lab = block["label"]
    if block.get("claimed_cutoff"):
        who += (
            f" (--llm-knowledge-cutoff {block['claimed_cutoff']} is earlier than the known cutoff "
            f"{block['cutoff']}: kept as your claim, the known date used)"
        )
    if lab in ("after-cutoff", "no-model"):
        return None
    w = block["window"]
    if lab == "cutoff-unknown":
        why = "the model's training-data cutoff is unknown (set --llm-knowledge-cutoff YYYY-MM-DD)"
    else:
        where = "inside" if lab == "in-training-data" else "across"
        why = f"the window {w['start']}..{w['end']} lies {where} the model's training data (cutoff {block['cutoff']})"
    return f"{who}: {why}: the model may remember what happened; its figures here are not evidence of skill ({lab})"
