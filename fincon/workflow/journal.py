"""A forward journal: decisions sealed into a hash chain before the session they trade.

A backtest cannot settle what a model knew; a record made and sealed before
the market opens can, if anyone can check that it was not written after the
fact. ``DIR/journal.jsonl`` holds one entry a line, each canonical JSON
(sorted keys, no spaces) whose ``hash`` is the SHA-256 of the entry without
it, and whose ``prev_hash`` is the hash of the line before: removing,
reordering, inserting or editing a line breaks the chain at that line.

* the first entry, ``register``, seals the whole plan before any session:
  strategies, model (name, knowledge cutoff, a local model's weights hash),
  universe, costs, capital, calendar, the first session, simulated or live;
* one ``session`` entry per strategy and session: the session it trades,
  the wall-clock time it was sealed, the SHA-256 of the frozen inputs (the
  files kept in ``DIR/inputs/SESSION/``), the hashes of every prompt and
  answer (the call cache entries kept in ``DIR/calls.sqlite``), the
  decision and the orders;
* a ``missed`` entry for a session no step decided (never decided later);
* a ``failed`` entry for an attempt at a session that sealed no decision (a step stopped or failed once
  its inputs were frozen, a write cut short: fincon.workflow.forward_attempts), which verify counts;
* a ``fill`` entry when the paper broker fills a session's orders at the
  next open, and the book after.

:func:`verify` recomputes the chain and every hash it names and says, for
the first entry that fails, which and why (edited, reordered or removed,
inputs swapped, a call's prompt or answer changed). Replaying the decisions
from the frozen inputs is the forward command's (fincon.workflow.forward).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, Iterator, Mapping

import yaml

from fincon import workflow
from fincon.errors import FinconError
from fincon.files import sha256_file
from fincon.workflow import forward_sessions
from fincon.workflow.forward_sessions import failed as failed
from fincon.workflow.journal_calls import check_call

JOURNAL = "journal.jsonl"
INPUTS = "inputs"
CALLS = "calls.sqlite"
LOCK = ".lock"
BOOKS = "books"
#: what a step keeps for the next (each strategy's saved state, a trained RL agent): a cache verify never reads
STATE = "state"
REPLAY = "replay"
#: the version of the journal's entries: a journal of another is refused with one line
FORMAT = 1
GENESIS = "0" * 64


class JournalError(FinconError):
    """A journal that does not verify: exit 1, naming the first entry that fails."""

    exit_code = 1


class ForwardError(FinconError):
    """A step that could not decide (a source down or stale, a past decision not reproduced): exit 1,
    nothing sealed; the next step retries."""

    exit_code = 1


class Late(ForwardError):
    """A live decision ready only after the session it trades opened (``at``: when): sealed missed."""

    def __init__(self, message: str, at: str):
        super().__init__(message)
        self.at = at


class StaleSource(ForwardError):
    """A ticker's source has no bar for the session a step decides at (``ticker``, ``day``): stale,
    or a hole in its data when it has later bars."""

    def __init__(self, message: str, ticker: str, day: str):
        super().__init__(message)
        self.ticker, self.day = ticker, day


def canonical(entry: Mapping[str, Any]) -> str:
    """The entry as the chain hashes it: sorted keys, no spaces, no NaN."""
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def entry_hash(entry: Mapping[str, Any]) -> str:
    """SHA-256 of the entry without its own ``hash``."""
    return hashlib.sha256(canonical({k: v for k, v in entry.items() if k != "hash"}).encode()).hexdigest()


def _whole(line: str) -> bool:
    """Whether ``line`` is a sealed entry (JSON whose hash holds), not a write cut short."""
    try:
        e = json.loads(line)
    except ValueError:
        return False
    return isinstance(e, dict) and e.get("hash") == entry_hash(e)


def tree_hash(folder: Path, skip: Collection[str] = ()) -> str:
    """SHA-256 over every file under ``folder`` (its relative path and contents, in path order) but the
    ones at the relative paths ``skip``."""
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file() and q.relative_to(folder).as_posix() not in skip):
        h.update(p.relative_to(folder).as_posix().encode() + b"\0" + bytes.fromhex(sha256_file(p)) + b"\0")
    return h.hexdigest()


@dataclass
class Journal:
    """The journal of the folder ``root``: read, appended to (one sealed line at a time), verified."""

    root: Path

    @property
    def path(self) -> Path:
        return self.root / JOURNAL

    def entries(self) -> list[dict[str, Any]]:
        """Every entry, in order; a line that is not JSON is a :class:`JournalError` naming it. A last
        line without its newline is a write a stop cut short, never sealed, so not an entry
        (:meth:`append` writes over it), unless it is a whole entry whose hash holds (a copy or an
        editor that dropped the final newline: dropped, a sealed decision was lost and written over)."""
        if not self.path.is_file():
            return []
        raw = self.path.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:  # was a traceback in `forward status|verify`
            n = raw[: exc.start].count(b"\n") + 1
            raise JournalError(
                f"{self.path}: line {n} is not the UTF-8 text fincon wrote (edited or damaged?); the journal "
                "does not verify"
            ) from None
        if text and not text.endswith("\n"):
            cut = text.rfind("\n") + 1
            text = text + "\n" if _whole(text[cut:]) else text[:cut]
        out = []
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                e = json.loads(line)
            except ValueError:
                raise JournalError(
                    f"{self.path}: line {n} is not JSON (edited by hand?); the journal does not verify"
                ) from None
            if not isinstance(e, dict):
                raise JournalError(f"{self.path}: line {n} is not an entry; the journal does not verify")
            out.append(e)
        return out

    def last(self) -> dict[str, Any] | None:
        es = self.entries()
        return es[-1] if es else None

    def append(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """Seal ``entry`` and append it (:meth:`append_all`)."""
        return self.append_all([entry])[0]

    def miss(self, session: dt.date, reason: str, at: str) -> dict[str, Any]:
        """Seal ``session`` missed (no step ran, a hole in the data, a decision too late to trade) at ``at``."""
        return self.append({"kind": "missed", "session": str(session), "sealed_at": at, "reason": reason})

    def append_all(self, entries: list[Mapping[str, Any]], cut: int | None = None) -> list[dict[str, Any]]:
        """Seal ``entries`` (each one's ``seq``, ``prev_hash`` and ``hash`` set
        here, chained) and append them in one write, synced before this
        returns: a session's entries for every strategy go in together, and a
        step stopped mid-write leaves no sealed line (a torn last line is
        dropped and written over). A stop once the lines are whole keeps them
        (a reader may have seen them); a failed write keeps none. ``cut``: the
        journal's first ``cut`` bytes are kept and the entries written after
        them, in the same write (fincon.workflow.forward_attempts cuts a torn
        session back so, its cut sealed with it)."""
        last = self.last() if cut is None else _last_before(self.path, cut)
        sealed = []
        for entry in entries:
            e = dict(entry)
            e["format"] = FORMAT
            e["seq"] = (last["seq"] + 1) if last else 0
            e["prev_hash"] = last["hash"] if last else GENESIS
            e["hash"] = entry_hash(e)
            sealed.append(e)
            last = e
        self.root.mkdir(parents=True, exist_ok=True)
        keep, lead = 0, ""
        if cut is not None:
            keep = cut
        elif self.path.is_file():
            data = self.path.read_bytes()
            keep = data.rfind(b"\n") + 1  # a torn last line (a stop mid-write) is not kept
            if keep < len(data) and _whole(data[keep:].decode("utf-8", "replace")):
                keep, lead = len(data), "\n"  # a whole entry without its newline: kept, its newline put back
        data = memoryview((lead + "".join(canonical(e) + "\n" for e in sealed)).encode("utf-8"))
        whole = keep + len(data)
        with open(self.path, "r+b" if self.path.is_file() else "wb", buffering=0) as fh:  # unbuffered: undoable
            os.ftruncate(fh.fileno(), keep)
            fh.seek(keep)
            try:
                while data:
                    data = data[fh.write(data) or 0 :]
                os.fsync(fh.fileno())
            except Exception:  # a full disk: no strategy's entry of the session is kept
                os.ftruncate(fh.fileno(), keep)
                raise
            except BaseException:  # a stop: a line already whole on disk may have been read, so it stays
                if os.fstat(fh.fileno()).st_size == whole:
                    os.fsync(fh.fileno())
                else:
                    os.ftruncate(fh.fileno(), keep)
                raise
        return sealed


def _last_before(path: Path, cut: int) -> dict[str, Any] | None:
    """The last entry of the journal's first ``cut`` bytes (whole lines)."""
    lines = path.read_bytes()[:cut].decode("utf-8").splitlines()
    return next((json.loads(x) for x in reversed(lines) if x.strip()), None)


#: a step's clock: UTC now (the machine's, or a test's)
Clock = Callable[[], dt.datetime]


@contextmanager
def locked(root: Path, who: str = "step") -> Iterator[None]:
    """One step at a time (cron may start two), and no score while one runs (both write the replay): the
    second says so and leaves."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ForwardError(
                f"{root}: another step is running; this one did nothing"
                if who == "step"
                else f"{root}: a step is running; the {who} did nothing: {who} again once it is done"
            ) from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def wall_clock() -> dt.datetime:
    """The machine's clock, in UTC: a live journal's time (tests hand a step their own)."""
    return dt.datetime.now(dt.timezone.utc)


def stamp(clock: Clock = wall_clock) -> str:
    """A seal's time as the journal writes it."""
    return clock().isoformat(timespec="seconds")


#: the plan a journal registers (plan.yaml), its hash sealed in the register entry
PLAN_FILE = "plan.yaml"


def journal_hint(path: Path) -> str | None:
    """What to run on a forward journal given where a run, training or
    experiment directory belongs (``fincon report J``); None: not a journal."""
    if not ((path / JOURNAL).is_file() and (path / PLAN_FILE).is_file()):
        return None
    return (
        f"{path} is a forward journal: `fincon forward score {path}` writes its report ({path / 'report.html'}) "
        f"and the replayed run {path / REPLAY}, which report (and its --card), plot, explain and eval leakage read"
    )


def verify_chain(entries: list[dict[str, Any]], root: Path, leftover: bool = False) -> Iterator[str]:
    """Why each entry fails, in order (nothing: the chain holds). Checks the
    chain itself, the register entry first, the format, the plan file against
    the hash the register entry sealed, and the hashes of the frozen inputs
    and of the kept calls each session entry names; that no session is sealed twice, that a decision
    trades the session after its own, and that no folder of frozen inputs is named by no entry (a
    replay and a score read every one). ``leftover`` (a step's check): folders after every sealed one
    pass, as the step seals them failed before it decides (fincon.workflow.forward_attempts.tidy)."""
    prev, last_at = GENESIS, dt.datetime.min.replace(tzinfo=dt.timezone.utc)
    seen: dict[tuple[str | None, str], int] = {}  # (strategy, session) sealed, and a miss's (None, session)
    if not entries:  # verified as "0 entries, every hash holds", and a step was an IndexError traceback
        yield "the journal holds no registration (an init that did not finish): remove the folder and init again"
        return
    plan = _plan_read(root)
    simulated = clock_of(root, entries, plan)  # the plan's clock: every entry's late check reads it, never its own
    for i, e in enumerate(entries):
        what = " ".join(str(x) for x in (e.get("kind"), e.get("strategy"), e.get("session") or e.get("decided")) if x)
        where = f"entry {i} (seq {e.get('seq')}, {what})"
        try:
            problem = _entry_problem(i, e, prev, simulated, seen, root, plan)
        except (KeyError, TypeError, ValueError, sqlite3.Error) as exc:  # a re-signed malformed entry, a damaged file
            problem = f"it cannot be read as a sealed entry ({type(exc).__name__}: {exc})"
        if problem:
            yield f"{where}: {problem}"
            return
        try:  # a live clock set back: its seals out of time order (an entry without a time is the checks' above)
            at = dt.datetime.fromisoformat(e["sealed_at"]) if e.get("sealed_at") else last_at
            back = i > 0 and not simulated and at < last_at
        except (TypeError, ValueError) as exc:
            yield f"{where}: it cannot be read as a sealed entry (its time: {type(exc).__name__}: {exc})"
            return
        if back:
            yield f"{where}: sealed at {e['sealed_at']}, before the entry before it ({last_at.isoformat()}): a clock set back"
            return
        prev, last_at = e["hash"], at
    incomplete = forward_sessions.incomplete(entries)
    if incomplete:
        yield incomplete
        return
    named = {e["inputs"]["path"] for e in entries if isinstance(e.get("inputs"), dict) and "path" in e["inputs"]}
    folders = sorted(f"{INPUTS}/{p.name}" for p in (root / INPUTS).glob("[!.]*") if p.is_dir())
    for path in [f for f in folders if f not in named and not (leftover and f > max(named, default=""))][:1]:
        said = f"{path}: frozen inputs no entry seals (a step that froze them and sealed nothing)"
        if any(f > path for f in named):
            yield f"{said}, read by the replay of every session sealed after it: those rest on bars nobody sealed"
        else:
            yield f"{said}: a replay and a score would read them; the next step seals the attempt failed and removes them"


def _entry_problem(
    i: int, e: Mapping[str, Any], prev: str, simulated: bool, seen: dict[tuple[str | None, str], int], root: Path,
    plan: dict[str, Any] | None = None,
) -> str | None:  # fmt: skip
    """Why entry ``i`` fails (:func:`verify_chain`), or None; ``prev``: the hash before it, ``simulated``:
    the plan's clock, ``seen``: what earlier entries sealed (updated), ``plan``: plan.yaml as read."""
    if e.get("format") != FORMAT:
        return f"written by another journal format ({e.get('format')!r}, this fincon reads {FORMAT})"
    if e.get("hash") != entry_hash(e):
        return "its contents do not match its hash (edited after it was sealed)"
    if e.get("seq") != i or e.get("prev_hash") != prev:
        return "it does not follow the entry before it (an entry was removed, inserted or reordered)"
    if i == 0 and e.get("kind") != "register":
        return "the first entry is not the plan's registration"
    if i > 0 and e.get("kind") == "session" and bool(e.get("simulated")) != simulated:  # one entry's flag said
        # otherwise than the plan's clock (the late-seal check once read each entry's own)
        return f"says simulated={bool(e.get('simulated'))} in a journal registered simulated={simulated}"
    path = root / PLAN_FILE
    if e.get("plan_sha256") and path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() != e["plan_sha256"]:
        return f"{PLAN_FILE} was changed after it was registered (its hash differs from the one sealed)"
    why = (_register_problem(e, plan) if i == 0 else None) or _sealed_again(e, seen) or _sealed_late(e, simulated)
    if why:
        return why
    inputs = e.get("inputs")
    if inputs:
        folder = root / inputs["path"]
        if not folder.is_dir():
            return f"its frozen inputs {inputs['path']} are missing"
        if tree_hash(folder) != inputs["sha256"]:
            return f"its frozen inputs {inputs['path']} were changed or swapped (their hash differs)"
    for call in e.get("calls") or ():
        why = check_call(root / CALLS, call)
        if why:
            return why
    return None


def _sealed_again(e: Mapping[str, Any], seen: dict[tuple[str | None, str], int]) -> str | None:
    """Why ``e`` seals what an earlier entry sealed (a session decided or missed twice), or a decision a
    session it does not trade; ``seen`` records what ``e`` seals."""
    if e.get("kind") == "missed":
        day = str(e.get("session"))
        first = seen.get((None, day), next((k for (s, d), k in seen.items() if d == day), None))
        seen[(None, day)] = int(e.get("seq") or 0)
        return None if first is None else f"the session {day} is sealed already (seq {first})"
    if e.get("kind") == "failed":  # an attempt that sealed nothing comes before the session's seal
        day = str(e.get("session"))
        first = next((k for (s, d), k in seen.items() if d == day), None)
        return None if first is None else f"a failed attempt at the session {day}, sealed already (seq {first})"
    if e.get("kind") != "session":
        return None
    day, name = str(e.get("decided")), str(e.get("strategy"))
    first = seen.get((name, day), seen.get((None, day)))
    seen[(name, day)] = int(e.get("seq") or 0)
    if first is not None:
        return f"{name}'s decision at {day} is sealed already (seq {first})"
    trades = str(workflow.forward_clock.next_session(dt.date.fromisoformat(day)))
    if e.get("trades") != trades:
        return f"it says it trades {e.get('trades')}, and a decision at {day}'s close trades {trades}"
    return None


def _plan_read(root: Path) -> dict[str, Any] | None:
    """``plan.yaml`` as its text reads (None: none there, or not a plan: Plan.load says why)."""
    try:
        data = yaml.safe_load((root / PLAN_FILE).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def clock_of(root: Path, entries: list[dict[str, Any]], plan: dict[str, Any] | None = None) -> bool:
    """Whether the journal's clock is simulated: its plan's word (the registration's where no plan reads)."""
    plan = plan if plan is not None else _plan_read(root)
    if plan is not None and "simulated" in plan:
        return bool(plan["simulated"])
    return bool(entries[0].get("simulated")) if entries else False


def _register_problem(e: Mapping[str, Any], plan: dict[str, Any] | None) -> str | None:
    """Why a registration is not the plan it seals (its clock, first session or plan not ``plan.yaml``'s:
    a re-signed registration that said simulated over a live plan switched every late-seal check off)."""
    if plan is None:
        return None
    if bool(e.get("simulated")) != bool(plan.get("simulated")):
        return (f"it says simulated={bool(e.get('simulated'))}, and {PLAN_FILE}'s clock is "
                f"simulated={bool(plan.get('simulated'))}: a registration not of its plan")  # fmt: skip
    if e.get("first_session") != str(plan.get("first")):  # the late check reads it
        return f"its first session is written {e.get('first_session')}; {PLAN_FILE}'s is {plan.get('first')}"
    if "plan" in e and canonical(e["plan"]) != canonical(plan):
        return f"the plan it seals is not {PLAN_FILE} (re-signed with another plan)"
    return None


def must_precede(e: Mapping[str, Any], simulated: bool) -> tuple[dt.date, dt.datetime] | None:
    """The session a live entry must be sealed (and committed) before, and that session's open: a
    decision's, the session it trades; a registration's, its first. None for anything else, and for
    every entry of a journal whose plan's clock is ``simulated`` (never an entry's own word)."""
    day = e.get("trades") if e.get("kind") == "session" else e.get("first_session")
    if simulated or not day or e.get("kind") not in ("session", "register"):
        return None
    # the exchange's calendar through the package's face: the CLI's --help reads this module, not pandas
    session = dt.date.fromisoformat(day)
    return session, workflow.forward_clock.session_open(session)


def _sealed_late(e: Mapping[str, Any], simulated: bool) -> str | None:
    """Why a live entry was sealed too late to say what was known before its session (:func:`must_precede`)."""
    bound = must_precede(e, simulated)
    if bound is None or dt.datetime.fromisoformat(e["sealed_at"]) < bound[1]:
        return None
    what = "a decision" if e["kind"] == "session" else "a registration"
    return (f"sealed at {e['sealed_at']}, once {bound[0]} had opened ({bound[1]:%Y-%m-%d %H:%M} UTC): {what} sealed "
            "after the open of its session settles nothing")  # fmt: skip


def decided(entries: list[dict[str, Any]]) -> list[dt.date]:
    """The sessions the journal has decided at (each session entry's ``decided``), in order, once each."""
    out: list[dt.date] = []
    for e in entries:
        if e.get("kind") == "session":
            d = dt.date.fromisoformat(e["decided"])
            if not out or out[-1] != d:
                out.append(d)
    return out


def missed(entries: list[dict[str, Any]]) -> set[dt.date]:
    """The sessions the journal sealed ``missed`` (never decided, never sealed again)."""
    return {dt.date.fromisoformat(e["session"]) for e in entries if e.get("kind") == "missed"}


def settled(entries: list[dict[str, Any]]) -> dt.date | None:
    """The last session the journal decided or sealed missed: a simulated clock goes on after it."""
    return max([*decided(entries), *missed(entries)], default=None)


def sealed_part(d: dict[str, Any]) -> dict[str, Any]:
    """What a session entry seals of a decision record: its targets and actions (the rest is in the replay)."""
    return {"weights": d.get("weights"), "actions": d.get("actions"), "position": d.get("position")}


def sealed_decisions(entries: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["strategy"], e["decided"]): e["decision"] for e in entries if e.get("kind") == "session"}


class Sealed(list):
    """The entries a forward step sealed, each handed to ``on_seal`` as it is added (said at once)."""

    def __init__(self, on_seal: Callable[[dict[str, Any]], None]):
        super().__init__()
        self.on_seal = on_seal

    def append(self, entry: dict[str, Any]) -> None:
        super().append(entry)
        self.on_seal(entry)
