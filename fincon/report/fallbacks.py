"""The card's "model decided" row and the backtest's FLAG: on how many of the days a model was asked
did the rules stand in for one of its answers (fincon.report.card.model_decided)."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from fincon.engine.record import RunRecord
from fincon.report.evidence import FAIL, PASS, Verdict

#: the share of the days the model was asked on which the rules may stand in for one of its answers
#: before a run is graded as partly a rules run: one day in twenty
MAX_FALLBACK = 0.05


def rules_stood_in(runs: Iterable[Path]) -> Verdict | None:
    """Did the rules stand in for the model on more than ``MAX_FALLBACK`` of the days it was asked? Days
    with a fallback (an answer invalid twice, replaced by the team's rules brain, llm-trader's momentum,
    finsent's lexicon), from each run's ``llm_usage.csv`` (the mask's rewriter giving up is no decision:
    left out), or on which such a report was read again (its inputs unchanged: a ``reuse`` event ``of`` a
    fallback in ``llm_audit.jsonl``; a 10-K analyst's is read for a quarter), over the days asked; None
    when no model was asked. The card's row and the backtest's FLAG."""
    asked: set[tuple[Path, str]] = set()
    fell: set[tuple[Path, str]] = set()
    again: set[tuple[Path, str]] = set()
    answers = 0
    for run in runs:
        record = RunRecord(run)
        for row in record.usage:
            k = int(row.get("fallbacks") or 0)
            if row.get("agent") == "paraphrase" or not (k or int(row.get("calls") or 0)):
                continue
            asked.add((run, row["day"]))
            if k:
                fell.add((run, row["day"]))
                answers += k
        again |= {(run, e["day"]) for e in record.audit if e.get("event") == "reuse" and e.get("of") == "fallback"}
    if not asked:
        return None
    asked |= again
    fell |= again
    reread = f"; on {len(again)} of them a report of theirs read again" if again else ""
    said = f"on {len(fell)} of the {len(asked)} days the model was asked ({len(fell) / len(asked):.1%}{reread})"
    if not fell:
        return PASS, f"every answer the model's: the rules stood in {said}"
    said = f"the rules stood in for {answers} answer(s) invalid twice, {said}"
    if len(fell) > MAX_FALLBACK * len(asked):
        return FAIL, f"{said}: more than 1 day in 20, the figures are partly the rules' (llm_audit.jsonl says which)"
    return PASS, f"{said}: at most 1 day in 20 (llm_audit.jsonl says which)"


def rules_flag(run: Path) -> str | None:
    """What a backtest flags of a run whose "model decided" row fails (None when it passes)."""
    verdict = rules_stood_in([run])
    return verdict[1] if verdict is not None and verdict[0] == FAIL else None
