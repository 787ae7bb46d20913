"""Each strategy's state between forward steps (fincon.strategies.state): which saved state a step
takes up, and the one it leaves for the next. A cache, never evidence: ``verify`` never reads it."""

from __future__ import annotations

import datetime as dt
import json
import logging
import shutil
from pathlib import Path
from typing import Any

from fincon import engine, strategies
from fincon.engine import artifacts
from fincon.errors import DataError
from fincon.files import json_text, write_atomic
from fincon.workflow.journal import STATE, sealed_part, tree_hash

log = logging.getLogger(__name__)
#: what a saved state says of itself (its session, code and the hash of every other file in its folder)
META = "meta.json"


def resume_for(
    root: Path, name: str, done: list[dt.date], past: dict[tuple[str, str], Any], missed: frozenset[dt.date]
) -> engine.Resume:
    """How strategy ``name``'s replay starts: from the state the last step saved when it stands at the
    journal's last session, its recorded decisions the sealed ones and the code the same; otherwise
    (the first step, a step that failed after saving, fincon changed) asked again from the first session.
    Either way its state after this step is saved to ``state/NAME/resume.next``, and it is asked nothing
    on the ``missed`` sessions (engine ``Resume``)."""

    folder = root / STATE / name
    nxt = folder / "resume.next"
    shutil.rmtree(nxt, ignore_errors=True)
    saved = folder / "resume"
    fresh = engine.Resume(save=nxt, missed=missed)
    try:
        meta = json.loads((saved / META).read_text(encoding="utf-8"))
        recorded = engine.read_jsonl(saved / engine.DECISIONS)
    except (OSError, ValueError, DataError):
        return fresh
    sealed = sorted(d for (n, d) in past if n == name)
    asked = [d for d in recorded if dt.date.fromisoformat(d["date"]) not in missed]
    if (
        not done
        or meta.get("session") != str(done[-1])
        or meta.get("code") != artifacts.code_sha256()
        or [d["date"] for d in asked] != sealed
        or any(sealed_part(d) != past[(name, d["date"])] for d in asked)
    ):
        log.info("%s: no saved state at the journal's last session; asked again from the first session", name)
        return fresh
    state = saved / strategies.STATE_FILE
    # the state written with it, every file of it (the pickle, the mask's mask.json, the memory store):
    # another (edited, swapped, damaged) was taken up and sealed decisions no replay reproduces, session
    # after session, until someone ran verify (a mask.json edited to quote the firm's name: review 81)
    if not state.is_file() or "folder_sha256" not in meta:  # none, or kept before the folder's hash was
        return fresh
    if meta["folder_sha256"] != tree_hash(saved, skip=(META,)):
        log.warning(
            "%s: its saved state in %s is not the one its step wrote (edited, swapped or damaged); asked "
            "again from the first session", name, saved,
        )  # fmt: skip
        return fresh
    return engine.Resume(decisions=tuple(recorded), state=saved, save=nxt, missed=missed)


def keep_state(root: Path, name: str, run_dir: Path, day: dt.date) -> None:
    """After the seal: the state saved by this step's replay becomes the one the next step takes up."""

    folder = root / STATE / name
    nxt = folder / "resume.next"
    if not nxt.is_dir():
        return
    shutil.copyfile(run_dir / engine.DECISIONS, nxt / engine.DECISIONS)
    # every file the next step takes up, hashed: the state is a cache, but one the step wrote
    meta = {"session": str(day), "code": artifacts.code_sha256(), "folder_sha256": tree_hash(nxt, skip=(META,))}
    write_atomic(nxt / META, json_text(meta))
    shutil.rmtree(folder / "resume", ignore_errors=True)
    nxt.rename(folder / "resume")
