"""The status file of a training or an experiment (``train.json``, ``experiment.json``).

Why one module: a directory that days of compute went into must say what
state it is in, and every command that reads it must agree. The status is
``running`` while a command works on it, ``complete`` when it finished,
``failed`` / ``stopped_early`` / ``interrupted`` (with the one-line reason
under ``error``) when it did not. Readers (``report``, ``plot``,
``explain``, the resume of the same command) show that mark instead of
presenting leftovers as a result.

Resuming: the same config resumes whatever state the directory is in. A
different config is refused, except when the directory holds only the
leftovers of a run that failed before finishing anything: those are
removed (with one line saying so) so the corrected rerun can use the same
``--out``. A ``running`` directory is never removed: another process may
be working in it.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Mapping

from fincon import stopping
from fincon.errors import DataError, FinconError, NoDayFinished
from fincon.files import write_atomic

#: states in which the directory's results are not to be presented as finished
UNFINISHED = ("running", "failed", "stopped_early", "interrupted")
#: the note a stop signal carries out of a study that keeps its finished units (then the folder's path)
RESUMABLE = "fincon-resumable: "
#: a note on a stop whose text after it is what the stop left, said as it is (a forward step's sealed sessions)
KEPT = "fincon-kept: "


def read_state(marker: Path) -> dict[str, Any]:
    """The status file as a mapping; a damaged one is a :class:`DataError` naming it."""
    try:
        state = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise DataError(
            f"{marker} is damaged (not the JSON fincon wrote); delete the directory or pick another --out"
        ) from None
    if not isinstance(state, dict):
        raise DataError(f"{marker} is damaged (not a JSON object); delete the directory or pick another --out")
    return state


def failure(state: dict[str, Any] | None) -> str | None:
    """One line for a reader: why the directory is not a finished result, or None."""
    if not isinstance(state, dict):
        return None
    status = state.get("status")
    if status == "complete" or status is None:
        return None
    why = state.get("error")
    if status == "running":
        return "status running: still running, or killed before it could record why"
    return f"status {status}" + (f": {why}" if why else "")


@contextmanager
def stopped_early(kept: bool, advice: str) -> Iterator[None]:
    """A run that stopped before its first day (``NoDayFinished``: exit 2, nothing left) inside a study
    whose folder is ``kept`` (an experiment's other units, a training's earlier episodes) is a unit stopped
    early: exit 3, said with ``advice`` (an experiment's, a training's episode 2 exited 2: diff review 81)."""
    try:
        yield
    except NoDayFinished as exc:
        if not kept:
            raise
        err = NoDayFinished(f"{exc}; {advice}")
        err.exit_code = 3
        raise err from None


def unfinished(root: Any, what: str, why: str, instead: str = "") -> str:
    """The one line refusing to read ``root``, ``what`` (a training, an experiment) that did not finish
    (``why``: :func:`failure`'s), with the way on once: a stopped one's reason already says to rerun."""
    again = "" if "rerun" in why else "; rerun its command to finish it"
    return f"{root} is {what} that did not finish ({why}){again}{instead}"


#: the version of what a training's, an experiment's and a rolling evaluation's marker says about
#: its config (``schema_version`` beside ``config``). A directory of another version is refused in one
#: line (its settings were written by other rules: they cannot be compared key by key); it is raised
#: when a change would make an unchanged command read a finished directory differently.
#: 2: the training's options written in full (seed, cvrf_brain), an experiment's placebos a list.
#: 3: the broker's cost models written as their mappings (no flat ``commission_model`` keys).
SCHEMA_VERSION = 3


def default_dir(name: str, config: Any, root: Path = Path("runs")) -> Path:
    """``root/NAME_HASH``: the directory a command writes when no --out is given, named by the
    config it runs and the schema it writes (the same command resumes there; another schema gets
    another directory instead of a refusal)."""

    key = json.dumps(versioned({"config": config}), sort_keys=True)
    return root / f"{name}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"


def versioned(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` as a marker holds it: with this fincon's :data:`SCHEMA_VERSION` first."""
    return {"schema_version": SCHEMA_VERSION, **state}


def _differences(old: Any, new: Any, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for k in sorted(set(old) | set(new), key=str):
            out += _differences(old.get(k), new.get(k), f"{prefix}.{k}" if prefix else str(k))
        return out
    return [] if old == new else [prefix or "(all)"]


def check_schema(out: Path, old: dict[str, Any], kind: str) -> None:
    """A directory written under another :data:`SCHEMA_VERSION` is refused, in one line saying what to do."""
    version = old.get("schema_version", 1)
    if version != SCHEMA_VERSION:
        raise FinconError(
            f"{out} holds {an(kind)} written by {'an older' if version < SCHEMA_VERSION else 'a newer'} fincon "
            f"(schema {version}; this one writes schema {SCHEMA_VERSION}): its settings cannot be compared with "
            "this command's, so it is not resumed; pick another --out (the directory is kept as it is)"
        )


def _foreign(out: Path, layout: Collection[str]) -> list[str]:
    """Top-level entries of ``out`` that a run of this kind does not write
    (``layout``: the names it writes; its hidden staging and temporary
    siblings count as its own)."""
    out_names = []
    for entry in sorted(out.iterdir(), key=lambda e: e.name):
        name = entry.name
        if name in layout or (name.startswith(".") and (".partial-" in name or ".tmp-" in name)):
            continue
        out_names.append(name + ("/" if entry.is_dir() and not entry.is_symlink() else ""))
    return out_names


def strays(out: Path, early: Collection[str]) -> list[str]:
    """Files under ``out``, at any depth, that a study which finished nothing does not write (``early``: glob
    patterns of the paths it writes then, relative to ``out``; its hidden staging and temporary names count
    as its own). A failed training's leftovers were removed whole with a file the user had put in its
    ``beliefs/`` (found in review): these keep the folder."""
    found = []
    for p in sorted(out.rglob("*")):
        rel = p.relative_to(out).as_posix()
        if (p.is_dir() and not p.is_symlink()) or any(
            part.startswith(".") and (".partial-" in part or ".tmp-" in part) for part in rel.split("/")
        ):
            continue
        if not any(fnmatch.fnmatchcase(rel, pattern) for pattern in early):
            found.append(rel)
    return found


def named(paths: list[str]) -> str:
    """Up to three paths, then how many more."""
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def an(kind: str) -> str:
    """``kind`` with its article: an experiment, a training."""
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


def differences(old: Mapping[str, Any], state: Mapping[str, Any]) -> list[str]:
    """The keys of ``state`` (a study's config and options) a status file's ``old`` state has otherwise."""
    new = json.loads(json.dumps(state))
    return _differences({k: old.get(k) for k in new}, new)


def claim(
    out: Path,
    marker: Path,
    state: dict[str, Any],
    kind: str,
    finished: Callable[[Path], int],
    layout: Collection[str],
    disposable: Callable[[Path], bool] | None = None,
    early: Collection[str] | None = None,
) -> bool:
    """May this command write ``state``'s run into ``out``? True: resume it
    (same config), False: it is new. ``finished(out)`` counts what a former
    run there finished; nothing is written or removed unless the directory
    holds only a failed run's leftovers under another config, and nothing
    but what such a run writes (``layout``: its top-level names; ``early``: the
    paths it writes before it finishes anything, at any depth): a folder the
    user has put files into is refused, naming them, never emptied."""
    if not out.exists():
        return False
    if not marker.is_file():
        if out.is_dir() and not any(out.iterdir()):
            return False
        raise FinconError(f"{out} exists and is not a fincon {kind}; pick another --out")
    old = read_state(marker)
    check_schema(out, old, kind)
    diff = differences(old, state)
    if not diff:
        return True
    if all(d.startswith("inputs") for d in diff) and finished(out):
        raise other_inputs(out, kind, diff)
    shown = ", ".join(diff[:3]) + (f" and {len(diff) - 3} more" if len(diff) > 3 else "")
    status = old.get("status")
    done = finished(out)
    if status in ("failed", "stopped_early", "interrupted") and done == 0:
        foreign = _foreign(out, {*layout, marker.name})
        if foreign:
            more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
            raise FinconError(
                f"{out} holds the leftovers of {an(kind)} that {status.replace('_', ' ')} (another config: {shown}) "
                f"and {', '.join(foreign[:3])}{more}, which no fincon {kind} wrote; move "
                f"{'it' if len(foreign) == 1 else 'them'} out or pick another --out (nothing was changed)"
            )
        stray = strays(out, early) if early is not None else []
        if stray:
            raise FinconError(
                f"{out} holds the leftovers of {an(kind)} that {status.replace('_', ' ')} (another config: {shown}) "
                f"and {named(stray)}, which no fincon {kind} wrote; move {'it' if len(stray) == 1 else 'them'} "
                "out or pick another --out (nothing was changed)"
            )
        if disposable and not disposable(out):  # nothing finished, but work kept (committed episodes)
            raise FinconError(
                f"{out} holds {an(kind)} that {status.replace('_', ' ')} under another config ({shown}), with work "
                f"it kept in {', '.join(sorted(p.name + '/' for p in out.iterdir() if p.is_dir()))}; rerun its "
                "own command to resume it, or pick another --out (nothing was changed)"
            )
        shutil.rmtree(out)
        print(
            f"fincon: {out} held only the leftovers of {an(kind)} that {status.replace('_', ' ')} before finishing "
            f"anything (another config: {shown}); removed them",
            file=sys.stderr,
        )
        return False
    if status == "running" and done == 0:
        raise FinconError(
            f"{out} holds {an(kind)} with another config ({shown}) whose status is running (still "
            f"running, or killed); if no fincon command works in it, delete it, or pick another --out"
        )
    raise FinconError(
        f"{out} holds {an(kind)} with another config ({shown}; status {status}, {done} finished "
        f"{'episode' if kind == 'training' else 'unit'}{'' if done == 1 else 's'}); pick another "
        "--out (or delete it to start over)"
    )


#: what each key of a study's input fingerprint (workflow.study.inputs_state) names
INPUTS = {"inputs.prices": "the price data", "inputs.events": "the event corpus", "inputs.code": "fincon's code"}


def other_inputs(out: Path, kind: str, diff: list[str]) -> FinconError:
    """The one line for a study whose finished units ran on inputs that have changed since."""
    what = (
        "the fincon that ran them recorded none"
        if "inputs" in diff
        else ", ".join(INPUTS.get(d, d) for d in diff) + " changed since"
    )
    return FinconError(
        f"{out} holds {an(kind)} whose finished {'episodes' if kind == 'training' else 'units'} ran on other "
        f"inputs ({what}): resumed, its results would "
        "mix the two; pick another --out, or delete it to start over"
    )


@contextmanager
def marking(marker: Path, state: dict[str, Any]) -> Iterator[None]:
    """Mark the status file ``running`` now and, if the block raises,
    ``failed`` / ``stopped_early`` / ``interrupted`` with the reason, so
    leftovers never look like a result."""
    write_atomic(marker, json.dumps({**state, "status": "running"}, indent=1, sort_keys=True) + "\n")
    try:
        yield
    except BaseException as exc:
        stop = stopping.received()  # an error a stop caused is the stop
        if isinstance(exc, FinconError) and not stop:
            status = "stopped_early" if exc.exit_code == 3 else "failed"
            why = " ".join(str(exc).split())
        elif isinstance(exc, Exception) and not stop:
            status, why = "failed", f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:300]
        else:  # KeyboardInterrupt, SIGTERM: what the CLI says on the way out (fincon.cli.main)
            status, why = "interrupted", "Ctrl-C or SIGTERM; rerun the same command to resume"
            exc.add_note(f"{RESUMABLE}{marker.parent}")
        try:
            write_atomic(marker, json.dumps({**state, "status": status, "error": why}, indent=1, sort_keys=True) + "\n")
        except OSError:
            pass
        raise
