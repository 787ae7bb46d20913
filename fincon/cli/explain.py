"""``fincon explain RUN --date D``: what the team saw, said and did on one day.

Reads only the run directory (``decisions.jsonl``), so it works on any run,
anywhere, with no model, memory store or event corpus. Every claim is
printed with the evidence it cites: id, source, date and the first words of
the text the agent read.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
from pathlib import Path
from typing import Annotated, Any, Mapping

from fincon import engine, workflow
from fincon.agents.records import format_day
from fincon.cli.flags import Args, add
from fincon.errors import DataError
from fincon.files import json_text
from fincon.flag import Flag
from fincon.workflow.journal import JOURNAL, Journal, journal_hint

HELP = """\
Print one day of an agent-team run: each analyst's inputs, its direction and
insights with the evidence each insight cites, then the manager's decision,
rationale and the evidence it relied on, the model calls made and reused,
and how the previous day's decision was settled.

RUN is a run directory written by `fincon backtest --strategy fincon` (or a
comparison directory holding exactly one team run)."""

EXAMPLES = """\
examples:
  fincon explain runs/demo --date 2022-11-01
  fincon explain runs/demo/fincon --date 2022-11-01 --json
"""


class ExplainArgs(Args):
    run: Annotated[Path, Flag("run", required=True, metavar="RUN", help="run directory")]
    date: Annotated[dt.date, Flag(required=True, help="decision day, YYYY-MM-DD")]
    as_json: Annotated[bool, Flag("--json", help="print the day's record as JSON")] = False


COMMAND = "explain"
SUMMARY = "what an agent team saw, said and did on one day, with its evidence"


def register(p: argparse.ArgumentParser) -> None:
    add(p, ExplainArgs)
    p.set_defaults(func=run)


def find_team_run(run: Path) -> Path:
    """The directory holding the team's ``decisions.jsonl``: RUN, its one team
    sub-run, or, for a training or an experiment, its one team run one level
    further down (several: they are listed, and one is asked for)."""
    if not run.is_dir():
        what = "is not a run directory" if run.exists() else "does not exist"
        raise DataError(f"{run} {what}; pass a directory written by fincon backtest")
    if (run / "decisions.jsonl").is_file():
        return run
    for marker, kind, pattern in (
        ("experiment.json", "experiment", "test/*/decisions.jsonl"),
        ("train.json", "training", "episodes/ep-*/decisions.jsonl"),
        ("rolling.json", "rolling evaluation", "*/*/test/*/decisions.jsonl"),
    ):
        if (run / marker).is_file():
            why = workflow.failure(workflow.read_state(run / marker))
            subs = sorted(p.parent for p in run.glob(pattern) if _has_records(p))
            note = f" (it did not finish: {why})" if why else ""
            if len(subs) == 1:
                return subs[0]
            if not subs:
                raise DataError(f"{run} is {workflow.an(kind)} with no team run yet{note}")
            shown = ", ".join(str(p) for p in subs[:6]) + (f" and {len(subs) - 6} more" if len(subs) > 6 else "")
            raise DataError(f"{run} is {workflow.an(kind)}{note}; its team runs are {shown}: pass one of them")
    subs = sorted(p.parent for p in run.glob("*/decisions.jsonl") if _has_records(p))
    if len(subs) == 1:
        return subs[0]
    if not subs:
        raise DataError(journal_hint(run) or f"{run} holds no agent-team run (no decisions.jsonl with team records)")
    raise DataError(f"{run} holds several team runs ({', '.join(p.name for p in subs)}); pass one of them")


def _has_records(path: Path) -> bool:
    try:
        with open(path, encoding="utf-8") as fh:
            first = fh.readline()
    except (OSError, UnicodeDecodeError):
        raise DataError(f"{path}: cannot read (not the text fincon wrote)") from None
    try:
        return engine.team_day(json.loads(first))
    except ValueError:
        return False


def _cited(entry: Mapping[str, Any], cache: str) -> str:
    """What a single agent's or a baseline's line says it read: the items it scored, or the call it cites."""
    scored = [x for v in (entry.get("record") or {}).values() if isinstance(v, list) for x in v if isinstance(x, dict)]
    scored = [x for x in scored if "id" in x and isinstance(x.get("score"), int)]
    if scored:
        listed = ", ".join(f"{x['id']} {x['score']:+d}" for x in scored[:6])
        more = f" and {len(scored) - 6} more" if len(scored) > 6 else ""
        return f", and the {len(scored)} items it scored ({listed}{more}): fincon explain --json prints the line"
    keys = [str(k)[:16] for k in entry.get("evidence") or []]  # one command: the first key, and a count
    if not keys:
        return ""
    more = f" (and {len(keys) - 1} more on that line)" if len(keys) > 1 else ""
    return f", and the call it cites: fincon llm cache --path {cache} --key {keys[0]}{more}"


def load_day(run: Path, date: str) -> dict[str, Any]:
    """The team's record of ``date`` in the run, comparison or journal folder ``run`` (the notebooks
    call it so)."""
    return _day(engine.RunRecord(find_team_run(run)), date)


def _day(rec: engine.RunRecord, date: str) -> dict[str, Any]:
    """The team's record of ``date``; a decisions.jsonl that is not what fincon writes is named by
    its line (fincon.engine.record)."""

    path = rec.path / "decisions.jsonl"
    days = []
    for n, entry in enumerate(rec.decisions, 1):
        if not isinstance(entry.get("date"), str):
            raise DataError(f"{path}:{n}: not a decision line (a JSON object with a date) as fincon writes")
        days.append(entry["date"])
        if entry["date"] == date:
            if entry.get("missed"):
                raise DataError(
                    f"{date} is a session the forward journal sealed missed ({_missed_reason(rec.path, date)}): "
                    "the team was asked nothing, every position was kept"
                )
            if not engine.team_day(entry):  # a single agent's or a baseline's decision: said, and where its evidence is
                cache = (rec.config.get("llm") or {}).get("cache_path") or "CACHE"  # the run's, as it was started
                what = entry.get("actions") or entry.get("weights") or entry.get("position")
                who = (rec.config.get("strategies") or [rec.path.name])[0]
                said = (f"{path}: {date} has no team record (explain reads an agent team's)" if rec.team else
                        f"{rec.path} is a run of {who}, not of the agent team (explain reads the team's records: "
                        f"--strategy fincon); its line of {date}")  # fmt: skip
                raise DataError(f"{said} holds this strategy's decision {what}{_cited(entry, str(cache))}")
            return entry
    if not days:
        raise DataError(f"{path} is empty")
    if rec.status == "stopped_early" and date > days[-1]:  # its window runs on: the days it never reached
        why = rec.summary.get("stop_reason") or "its summary.json gives no reason"
        raise DataError(f"{date} is not a decision day of this run: it stopped early after {days[-1]} ({why})")
    raise DataError(
        f"{date} is not a decision day of this run ({days[0]}..{days[-1]}; the last day of a run makes no decision)"
    )


def _missed_reason(run: Path, date: str) -> str:
    """Why the journal whose replay ``run`` is sealed ``date`` missed (no step ran, a hole in the data, a
    decision too late to trade), from its entry; a replay copied away from its journal cannot say."""
    for root in (run.parent, run.parent.parent):
        if (root / JOURNAL).is_file():
            for e in Journal(root).entries():
                if e.get("kind") == "missed" and e.get("session") == date:
                    return str(e.get("reason"))
    return "its journal, not beside this run, says why"


def run(args: argparse.Namespace) -> int:
    rec = engine.RunRecord(find_team_run(args.run))  # read once: the day, the knowledge and the mask lines
    entry = _day(rec, args.date)
    if args.json:
        print(json_text(entry, indent=2), end="")
        return 0
    try:
        text = format_day(entry, (rec.config.get("broker") or {}).get("fill"))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        # a record edited or written by another version: its layout, not the user's input, is at fault
        raise DataError(
            f"{args.run}: the record of {args.date} is not laid out as this fincon writes it "
            f"({type(exc).__name__}: {exc}); `fincon explain ... --json` prints it as stored"
        ) from None
    print(text)
    for line in _after_the_day(rec, args.date):
        print(line)
    return 0


def _after_the_day(rec: engine.RunRecord, date: str) -> list[str]:
    """The run's window against its model's cutoff (metrics.json), and for a masked run what its model
    read (RunRecord.masked_note): a line each; none when metrics.json cannot be read."""

    try:
        block, masked = rec.metrics.get("model_knowledge"), rec.masked_note(date)
    except DataError:
        return []
    lines = [masked] if masked else []
    if not isinstance(block, dict) or block.get("label") in (None, "no-model"):
        return lines
    cut = block.get("cutoff") or "unknown"
    return [
        f"model knowledge: {block['label']} (model {block.get('model') or 'default'}, training-data cutoff {cut}): "
        + ("the window lies after it" if block["label"] == "after-cutoff" else "the model may remember this window"),
        *lines,
    ]
