"""One resumable study: what ``fincon train``, ``fincon experiment`` and
``fincon experiment --rolling`` share.

Why one module: each of them turns hours of compute into one directory that
running the same command again resumes, and all three must keep the same
promises in the same order:

1. *claim* the directory: the same config resumes, another is refused, and a
   folder holding the user's files is never emptied (:func:`status.claim`);
2. *preflight*: every input is checked before the first file is written;
3. *hold* the directory (an advisory lock on the folder itself, no lock file
   among the results): a second command on the same folder while the first
   runs says so and leaves, instead of running every unit again beside it;
4. *mark* the status file ``running``, then ``complete``, or ``failed`` /
   ``stopped_early`` / ``interrupted`` with the reason (:func:`status.marking`);
   a failure that finished nothing in a directory this command created
   leaves nothing behind;
5. the *phase loop*: units of work run phase by phase, and a rerun skips the
   units a former command finished.

:class:`Study` holds steps 1 to 4, :func:`run_phases` step 5. What a unit is
(an episode, an experiment's unit, a window's unit) and how it runs stay in
the workflow's own module.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Mapping, Sequence, TypeVar

import pandas as pd

from fincon import stopping
from fincon.data.inputs import RunInputs
from fincon.data.prices import validate_bars
from fincon.engine.artifacts import code_sha256, sha256_bytes
from fincon.errors import Busy, FinconError
from fincon.files import corpus_hash, name_before, write_atomic
from fincon.workflow.status import (
    INPUTS,
    KEPT,
    RESUMABLE,
    an,
    claim,
    differences,
    marking,
    named,
    read_state,
    strays,
    versioned,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
J = TypeVar("J")


def _none_finished(_out: Path) -> int:
    return 0


@dataclass
class Study:
    """A study directory ``out`` with its status file ``out / marker_name``.

    ``state`` is what identifies the study (its config and options): the
    status file holds it with ``status`` (and ``error``). ``kind`` names the
    study in messages (``training``, ``experiment``). ``finished`` counts
    the units a former command finished there and ``layout`` lists the
    top-level names such a study writes (both for :func:`status.claim`);
    ``claimed`` replaces that claim with the study's own. ``disposable``
    says whether, after a failure, the directory holds nothing worth keeping
    (it is then removed, with the parents this command created); None keeps
    it always."""

    out: Path
    marker_name: str
    state: dict[str, Any]
    kind: str
    finished: Callable[[Path], int] = _none_finished
    layout: Collection[str] = ()
    claimed: Callable[[Study], bool] | None = None
    disposable: Callable[[Path], bool] | None = None
    #: glob patterns of the paths (relative to ``out``, any depth) the study writes before it finishes
    #: anything: a disposable folder holding any other file is kept, the file named (status.strays)
    early: Collection[str] | None = None
    #: the one line when the directory cannot be created ({kind}, {out}, {why})
    cannot_create: str = "cannot create the {kind} directory {out}: {why}"
    #: the inputs' fingerprint read again (state["inputs"]'s): checked before ``complete`` is written
    inputs_now: Callable[[], dict[str, Any]] | None = None

    def __post_init__(self) -> None:
        self.state = versioned(self.state)  # the marker says which rules wrote it (status.SCHEMA_VERSION)

    @property
    def marker(self) -> Path:
        return self.out / self.marker_name

    def claim(self) -> bool:
        """True: resume the study in ``out``; False: it is new. Refuses (a
        :class:`FinconError`) a directory that is not this study's."""
        if self.claimed is not None:
            return self.claimed(self)
        return claim(
            self.out, self.marker, self.state, self.kind, self.finished, self.layout, self.disposable, self.early
        )

    def run(self, body: Callable[[], T], preflight: Callable[[], None] | None = None) -> T:
        """Claim the directory, run ``preflight`` (every check before the
        first file), create the directory, then run ``body`` with the status
        file marked ``running``; ``complete`` once it returns, the failure's
        status and reason if it raises."""
        self.claim()
        if preflight is not None:
            preflight()
        made = [p for p in reversed([self.out, *self.out.parents]) if not p.exists()]
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            why = exc.strerror or exc
            raise FinconError(self.cannot_create.format(kind=self.kind, out=self.out, why=why)) from None
        with held(self.out, self.kind):  # taken outside the clean-up below: a refused second command removes nothing
            self._claimed_still()
            return self._marked(body, made)

    def _claimed_still(self) -> None:
        """The directory is still the one claimed: another command may have written a study of another
        config into it while this one ran its checks (a slow download), whose finished units this one
        would then have resumed as its own, under its own config."""
        if self.marker.is_file() and (diff := differences(read_state(self.marker), self.state)):
            raise FinconError(
                f"{self.out}: another fincon command wrote {an(self.kind)} with another config ({', '.join(diff[:3])}) "
                "there while this one checked its inputs; pick another --out (nothing was changed)"
            )

    def _inputs_held(self) -> None:
        """The inputs are still the ones the study began on: a dataset replaced or code changed while it ran
        gave units of two corpora (one with look-ahead) in one table marked complete (found in review)."""
        if self.inputs_now is None:
            return
        was, now = self.state.get("inputs") or {}, self.inputs_now()
        diff = [INPUTS.get(f"inputs.{k}", k) for k in sorted(now) if now[k] != was.get(k)]
        if diff:
            raise FinconError(
                f"{self.out}: {', '.join(diff)} changed while the {self.kind} ran, so its units read different "
                "inputs: not marked complete; rerun it into another --out"
            )

    def _marked(self, body: Callable[[], T], made: list[Path]) -> T:
        try:
            with marking(self.marker, self.state):
                result = body()
                self._inputs_held()
                write_atomic(
                    self.marker, json.dumps({**self.state, "status": "complete"}, indent=1, sort_keys=True) + "\n"
                )
                return result
        except BaseException as exc:
            if self.out in made and self.disposable is not None and self.disposable(self.out):
                stray = strays(self.out, self.early) if self.early is not None else []
                if stray:  # a file the user put there while it ran: the folder stays, and the stop says why
                    exc.add_note(
                        f"{KEPT}{self.out} is kept: it holds {named(stray)}, which no fincon {self.kind} wrote"
                    )
                    raise
                with stopping.held():  # nothing finished: leave nothing behind, a second stop or not
                    shutil.rmtree(self.out, ignore_errors=True)
                for p in reversed(made[:-1]):
                    try:
                        p.rmdir()
                    except OSError:
                        break
                # a stop no longer says the finished units are kept here: there are none, nor the folder
                kept = f"{RESUMABLE}{self.out}"
                if kept in getattr(exc, "__notes__", ()):
                    exc.__notes__ = [n for n in exc.__notes__ if n != kept]
            raise


@contextmanager
def held(out: Path, kind: str) -> Iterator[None]:
    """One command at a time in ``out``: an exclusive ``flock`` on the folder
    itself (released when the process ends, however it ends); a second command
    is refused in one line (exit 1). Nothing is written: the results stay the files
    the study writes."""
    fd = os.open(out, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(
                f"{out}: another fincon command is running this {kind} (wait for it, or pick another --out); "
                "this one did nothing"
            ) from None
        except OSError as exc:  # a filesystem without locks on folders (some network mounts): said, not fatal
            log.warning("cannot lock %s (%s): a second command on this folder would not be kept out", out, exc)
        yield
    finally:
        os.close(fd)


@dataclass
class Outcome:
    """The units (by name) this command ran, and those a former one had finished."""

    ran: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def run_phases(
    phases: Sequence[Sequence[tuple[str, J]]],
    done: Callable[[J], bool],
    execute: Callable[[list[J], Callable[[int, Any], None]], None],
    *,
    bar: Mapping[str, Any],
    note: Callable[[str, Any], str | dict[str, Any]] | None = None,
) -> Outcome:
    """Run ``phases`` (each a list of named units) one after the other.

    A unit for which ``done(unit)`` holds is skipped: a former command
    finished it. ``execute(units, finished)`` runs the others of the phase
    (an :class:`~fincon.workflow.executors.Executor`, or a loop of the
    workflow's own) and calls ``finished(index, result)`` as each ends; a
    later phase starts only when it returns. ``bar`` are the progress bar's
    settings (``desc``, ``unit``, ``disable``, ...); ``note(name, result)``
    its postfix after a unit (a dict or a string). The units skipped before
    the first one runs are where the bar starts, not speed it measures."""
    from tqdm import tqdm

    total = sum(len(p) for p in phases)
    outcome = Outcome()
    progress = None
    try:
        for phase in phases:
            todo: list[tuple[str, J]] = []
            skipped = 0
            for name, unit in phase:
                if done(unit):
                    outcome.skipped.append(name)
                    skipped += 1
                else:
                    todo.append((name, unit))
            if progress is None:
                progress = tqdm(total=total, initial=skipped, dynamic_ncols=True, **bar)
            elif skipped:
                progress.update(skipped)

            def finished(i: int, result: Any, todo=todo, progress=progress) -> None:
                outcome.ran.append(todo[i][0])
                progress.update(1)
                if note is not None:
                    post = note(todo[i][0], result)
                    if isinstance(post, dict):
                        progress.set_postfix(post)
                    else:
                        progress.set_postfix_str(post)

            execute([u for _, u in todo], finished)
    finally:
        if progress is not None:
            progress.close()
    return outcome


def inputs_state(
    inputs: RunInputs,
    tickers: Sequence[str],
    span: tuple[Any, Any],
    events: str | None,
    bars: Mapping[str, pd.DataFrame] | None = None,
    every_item: bool = False,
) -> dict[str, str | None]:
    """What a study's units read besides its config, as one fingerprint the status file keeps beside
    it: each ticker's bars over ``span`` (its first day less :data:`WARMUP_DAYS` for the lookbacks, to
    its last; ``bars`` when the caller has them), the event corpus's files for those tickers (every
    firm's with ``every_item``: a masked run mines names from all of them; none for the bundled sample,
    which changes only with the code) and fincon's own code. A rerun whose fingerprint differs is refused
    (:func:`status.claim`): the finished units ran on the old inputs, and resumed beside units on the new
    ones a training's beliefs, an experiment's table and a rolling window's tickers mixed the two, marked
    complete. The bars are asked for as a run asks (its window: a cache that covers it is read, no
    download), and only files a run opens are read (a stray file beside the corpus changes nothing)."""
    lo, hi = pd.Timestamp(span[0]), pd.Timestamp(span[1])
    first = lo - pd.Timedelta(days=WARMUP_DAYS)
    if bars is None:
        source = inputs.source
        bars = {t: validate_bars(source.load(t, lo, hi), t, source.describe(t)) for t in tickers}
    prices = "".join(
        f"{t}\0{sha256_bytes(bars[t].loc[first:hi].to_csv(float_format='%.10g', lineterminator=chr(10)).encode())}\n"
        for t in sorted(bars)
    )
    try:
        events = inputs.events_spec(events)  # the team's corpus as its runs resolve it
    except FinconError:  # a dataset without items: the preflight says it, in its own words
        events = None
    folder = Path(events) if events not in (None, "sample") else None
    names = {t.upper() for t in bars}
    files = (
        sorted(
            p
            for p in folder.glob("*.jsonl*")
            if p.is_file() and (every_item or name_before(p.name, (".jsonl", ".jsonl.gz")).upper() in names)
        )
        if folder is not None and folder.is_dir()
        else []
    )
    # every other file of the corpus too: the calls' audio the team transcribes, wherever the corpus keeps
    # it (a re-recorded call was not said; then only audio/ was read, and a name filter read
    # "BRK-B-2022Q1.ogg" as BRK's: found in review)
    audio = (
        sorted(p for p in folder.rglob("*") if p.is_file() and ".jsonl" not in p.name)
        if folder is not None and folder.is_dir()
        else []
    )
    events = corpus_hash(files) if not audio else corpus_hash([*files, *audio], folder)
    return {"prices": sha256_bytes(prices.encode()), "events": events, "code": code_sha256()}


#: calendar days before a study's first day its fingerprint covers: the longest lookback a strategy
#: reads (252 sessions of momentum) with room
WARMUP_DAYS = 400
