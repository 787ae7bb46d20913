"""Forward testing: decisions made and sealed before the session they trade.

``fincon forward init DIR`` registers a plan (strategies, universe, model,
costs, capital, the first session) as the journal's first entry, before any
session; ``fincon forward step DIR`` then decides once a session:

1. the clock names the session to decide: the next to open (live) or, with
   ``--simulate-from``, the next one of a simulated clock over bundled or
   imported data (every entry then says ``simulated``; a journal is never
   both). A session whose open has passed is never decided (no backfill);
   sessions no step decided are recorded as ``missed``;
2. the inputs of that decision are frozen into ``DIR/inputs/SESSION/``:
   the closes up to the last session before it and the items visible by
   then, new since the previous step (the warm-up history is frozen at
   ``init``). Later revisions of a source change no past decision;
3. the strategies run through the same engine a backtest uses
   (fincon.engine.backtest, next-open fills through the run's cost models),
   from the first session to this one, on the frozen inputs alone: the
   decisions already sealed must come out again (a step that cannot
   reproduce them stops, exit 1), and the last one is this session's;
4. each strategy's decision is sealed into ``DIR/journal.jsonl`` with the
   hash of its inputs, the hashes of every prompt and answer it took (the
   calls kept in ``DIR/calls.sqlite``), its model and cutoff, and its book
   (``DIR/books/STRATEGY.json``: cash, shares, the targets pending for the
   next open, which the paper broker fills there).

A step restores each strategy's state by running it again over the frozen
inputs of every earlier session (the team's memory, beliefs and reflections,
a baseline's position): replayed model calls make that exact, and it costs
one backtest of the journal so far, not one session (docs/forward.md).
"""

from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import logging
import shutil
import sqlite3
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import pandas as pd
import yaml

from fincon import __version__
from fincon.config import RunConfig
from fincon.errors import ConfigError, DataError, FinconError
from fincon.files import json_text, write_atomic
from fincon.workflow.journal import CALLS, INPUTS, PLAN_FILE, Journal, JournalError, now_utc, tree_hash, verify_chain

log = logging.getLogger(__name__)
if TYPE_CHECKING:  # pragma: no cover
    from fincon.engine.backtest import Resume

LOCK = ".lock"
BOOKS = "books"
#: what a step keeps for the next (each strategy's saved state, a trained RL agent): a cache verify never reads
STATE = "state"
REPLAY = "replay"
#: the exchange whose sessions the clock counts (exchange-calendars' code)
EXCHANGE = "XNYS"


class ForwardError(FinconError):
    """A step that could not decide (a source down or stale, a past decision not reproduced): exit 1,
    nothing sealed; the next step retries."""

    exit_code = 1


# -- the clock ----------------------------------------------------------------------------------------


@lru_cache(maxsize=4)
def _calendar(since: dt.date):
    """The exchange's calendar from ``since`` (exchange-calendars: holidays and early closes known)."""
    import warnings

    import exchange_calendars as xcals

    with warnings.catch_warnings():  # its own use of a pandas API pandas deprecates: not ours to act on
        warnings.simplefilter("ignore")
        return xcals.get_calendar(EXCHANGE, start=pd.Timestamp(since) - pd.Timedelta(days=400))


def _quiet(fn, *args):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args)


def _since(day: dt.date) -> dt.date:
    return dt.date(day.year, 1, 1)  # one calendar a year: the cache keeps a few


def sessions(start: dt.date, end: dt.date) -> list[dt.date]:
    """The exchange's sessions from ``start`` to ``end``."""
    cal = _calendar(_since(start))
    return [d.date() for d in _quiet(cal.sessions_in_range, pd.Timestamp(start), pd.Timestamp(end))]


def _neighbour(day: dt.date, direction: str) -> dt.date:
    """The first session after (``next``) or the last before (``previous``) ``day``."""
    cal = _calendar(_since(day))
    t = pd.Timestamp(day)
    if _quiet(cal.is_session, t):
        return _quiet(getattr(cal, f"{direction}_session"), t).date()
    return _quiet(cal.date_to_session, t, direction).date()


def next_session(after: dt.date) -> dt.date:
    """The first session after ``after``."""
    return _neighbour(after, "next")


def previous_session(day: dt.date) -> dt.date:
    """The last session before ``day``."""
    return _neighbour(day, "previous")


def session_open(day: dt.date) -> dt.datetime:
    """The session's opening time, in UTC (``day`` a session, else the next one's)."""
    cal = _calendar(_since(day))
    t = pd.Timestamp(day)
    session = t if _quiet(cal.is_session, t) else _quiet(cal.date_to_session, t, "next")
    return _quiet(cal.session_open, session).to_pydatetime()


# -- the plan ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What ``init`` registers: the run config (its end is the last decided session), the first session,
    and whether the clock is simulated."""

    config: RunConfig
    first: dt.date
    simulated: bool
    #: where decisions are also placed: "paper" (the built-in paper broker alone) or "alpaca" (fincon.workflow.alpaca)
    broker: str = "paper"

    def to_yaml(self) -> str:
        tree = yaml.safe_load(self.config.to_yaml())
        data = {"config": tree, "first": str(self.first), "simulated": self.simulated}
        if self.broker != "paper":  # the key a journal on the paper broker never had
            data["broker"] = self.broker
        return yaml.safe_dump(data, sort_keys=True)

    @classmethod
    def load(cls, root: Path) -> "Plan":
        from fincon.config import load_config

        try:
            data = yaml.safe_load((root / PLAN_FILE).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError):
            raise ConfigError(
                f"{root}: no forward journal here (no readable {PLAN_FILE}); start one with fincon forward init DIR"
            ) from None
        cfg = load_config(None, _flatten(data["config"]))
        return cls(cfg, dt.date.fromisoformat(data["first"]), bool(data["simulated"]), data.get("broker", "paper"))


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A config tree as the dotted overrides load_config takes (strategy params and llm kept whole)."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and k not in ("strategy_params", "llm") and prefix == "":
            out.update(_flatten(v, f"{key}."))
        else:
            out[key] = v
    return out


def init(
    root: Path, cfg: RunConfig, *, simulate_from: dt.date | None, anchor_git: bool = False, broker: str = "paper"
) -> dict[str, Any]:
    """Register ``cfg`` as a new journal in ``root`` (which must not hold one)."""
    from fincon.workflow.runner import preflight

    root = Path(root)
    if (root / JOURNAL_NAME).exists() or (root.exists() and any(root.iterdir())):
        raise ConfigError(f"{root} is not empty; a forward journal starts in a new folder (nothing was changed)")
    if broker == "alpaca":
        from fincon.workflow.alpaca import check_available

        if simulate_from is not None:
            raise ConfigError("--broker alpaca places orders on a paper account: a live journal; drop --simulate-from")
        if len(cfg.strategies) != 1:
            raise ConfigError(
                f"--broker alpaca: an Alpaca account is one book, so one strategy (--strategy gave {len(cfg.strategies)})"
            )
        check_available()
    if cfg.broker.fill != "next_open":
        cfg = cfg.model_copy(update={"broker": cfg.broker.model_copy(update={"fill": "next_open"})})
    today = dt.datetime.now(dt.timezone.utc).date()
    if simulate_from is None and cfg.data.source != "yfinance":
        raise ConfigError(
            f"a live journal reads a live source (--source yfinance); the {cfg.data.source} data ends in the past: "
            "offline, run a simulated journal with --simulate-from YYYY-MM-DD"
        )
    first = simulate_from if simulate_from is not None else next_session(today)
    if simulate_from is not None and not sessions(simulate_from, simulate_from):
        raise ConfigError(f"--simulate-from {simulate_from} is no session of {EXCHANGE}; give a trading day")
    warm = cfg.model_copy(update={"start": first, "end": next_session(first)})
    preflight(warm)  # the data, the corpus, the strategies' own checks: refused before the journal exists
    plan = Plan(cfg.model_copy(update={"start": first, "end": first}), first, simulate_from is not None, broker)
    root.mkdir(parents=True, exist_ok=True)
    write_atomic(root / PLAN_FILE, plan.to_yaml())
    journal = Journal(root)
    entry = journal.append(
        {
            "kind": "register",
            "sealed_at": now_utc(),
            "simulated": plan.simulated,
            "first_session": str(first),
            "plan_sha256": hashlib.sha256((root / PLAN_FILE).read_bytes()).hexdigest(),
            "plan": yaml.safe_load(plan.to_yaml()),
            "models": _models(plan.config),
            "fincon": __version__,
        }
    )
    _ledger_rows(plan, entry)
    if anchor_git:
        _anchor(root, f"register {first}")
    return entry


JOURNAL_NAME = "journal.jsonl"


def _models(cfg: RunConfig) -> dict[str, Any]:
    """Each strategy's model: name, knowledge cutoff and, for a local model, the sha256 of its weights."""
    from fincon.strategies.registry import make_strategy
    from fincon.workflow.runner import knowledge

    strategies = {n: make_strategy(n, cfg.strategy_params.get(n), cfg.llm) for n in cfg.strategies}
    blocks = knowledge(cfg, strategies)
    out = {}
    for name, s in strategies.items():
        settings = s.llm_settings()
        block = dict(blocks[name])
        if settings is not None and settings.backend == "local":
            from fincon.llm.bundled import BUNDLED, file_sha256

            model = settings.resolved_model()
            # a bundled model's pinned hash (its parts are checked against it when assembled); a GGUF of the
            # user's: its file's
            block["weights_sha256"] = BUNDLED[model].sha256 if model in BUNDLED else file_sha256(Path(model))
        out[name] = block
    return out


def _ledger_rows(plan: Plan, register: dict[str, Any]) -> None:
    """Every journal counts in the trial ledger (one trial per strategy, from its registration): twenty
    journals cannot be started and the best one shown alone."""
    from fincon.workflow import trials

    path = trials.resolve(None)
    rows = [
        trials.row(
            config_hash=register["plan_sha256"],
            strategy=name,
            tickers=plan.config.tickers,
            start=str(plan.first),
            end=str(plan.first),
            values=[1.0, 1.0 + int(register["hash"][:8], 16) / 2**40],  # a series of its own: the journal
            metrics={"cr_pct": None, "sharpe": None},
        )
        for name in plan.config.strategies
    ]
    trials.append(path, rows)


# -- a step ------------------------------------------------------------------------------------------


@contextmanager
def locked(root: Path) -> Iterator[None]:
    """One step at a time (cron may start two): the second says so and leaves."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ForwardError(f"{root}: another step is running; this one did nothing") from None
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def decided(entries: list[dict[str, Any]]) -> list[dt.date]:
    """The sessions the journal has decided at (each session entry's ``decided``), in order, once each."""
    out: list[dt.date] = []
    for e in entries:
        if e.get("kind") == "session":
            d = dt.date.fromisoformat(e["decided"])
            if not out or out[-1] != d:
                out.append(d)
    return out


def step(root: Path, *, until: dt.date | None = None, progress: bool = False, now: dt.datetime | None = None):
    """Decide the next session (or, simulated, every session up to ``until``); returns the sealed entries."""
    root = Path(root)
    plan = Plan.load(root)
    journal = Journal(root)
    sealed: list[dict[str, Any]] = []
    with locked(root):
        entries = journal.entries()
        problems = list(verify_chain(entries, root))
        if problems:
            raise JournalError(f"{root}: {problems[0]}; no step is taken on a journal that does not verify")
        done = decided(entries)
        if until is not None and not plan.simulated:
            raise ConfigError(
                "--until steps a simulated journal; a live one decides only the next session to open (no backfill)"
            )
        if plan.simulated:
            target = next_session(done[-1]) if done else plan.first
            last = until or target
            todo = [d for d in sessions(target, last)] if last >= target else []
            if not todo:
                print(f"fincon: {root}: session {target} is decided already" if until is None and done and
                      target <= done[-1] else f"fincon: {root}: nothing to decide up to {last}", file=sys.stderr)  # fmt: skip
                return sealed
        else:
            wall = now or dt.datetime.now(dt.timezone.utc)
            if done and wall.date() < done[-1]:
                raise ForwardError(
                    f"{root}: the clock reads {wall.date()}, before the journal's last session {done[-1]}: a clock "
                    "that went backwards decides nothing"
                )
            trades = next_session(wall.date()) if session_open(wall.date()) <= wall else wall.date()
            # the decision is made at the last close before the session it trades
            day = previous_session(trades)
            if done and day <= done[-1]:
                print(
                    f"fincon: {root}: the session {trades} is decided already (at {done[-1]}'s close)", file=sys.stderr
                )
                return sealed
            gap = sessions(next_session(done[-1]), day) if done else []
            for missed in gap[:-1]:
                sealed.append(journal.append({"kind": "missed", "session": str(missed), "sealed_at": now_utc(),
                                              "reason": "no step ran for this session"}))  # fmt: skip
            todo = [day]
        for day in todo:
            try:
                sealed += _decide(root, plan, journal, day, progress)
            except OSError as exc:  # a full disk, a folder made read-only: before the seal, nothing is sealed
                where = f" ({exc.filename})" if exc.filename else ""
                raise ForwardError(
                    f"{root}: cannot write the session {day}'s inputs or replay: {exc.strerror or exc}{where}; "
                    "nothing sealed, the journal is as it was: free the space and step again"
                ) from None
    return sealed


def _decide(root: Path, plan: Plan, journal: Journal, day: dt.date, progress: bool) -> list[dict[str, Any]]:
    """Freeze the inputs of ``day``, run the strategies from the first session to it, check the sealed
    decisions come out again and seal this one's."""
    from fincon.workflow.runner import run_config

    frozen = freeze(root, plan, day)
    cfg = _frozen_config(root, plan, day, keep_state=True)
    broker = held = None
    if plan.broker == "alpaca":  # the account must hold what the journal says before anything is decided
        from fincon.workflow.alpaca import AlpacaPaper

        broker = AlpacaPaper()
        held = broker.reconcile(_expected_positions(journal.entries()))
    out = root / REPLAY
    done = decided(journal.entries())
    past = _sealed_decisions(journal.entries())
    resume = {name: _resume(root, name, done, past) for name in cfg.strategies}
    from fincon.engine.backtest import Resume, StateError

    def replay(resume: dict[str, Resume]):  # score draws the charts
        return run_config(cfg, out, progress=progress, replace=True, warn_knowledge=False, ledger=None,
                          decide_last=True, plots=False, resume=resume)  # fmt: skip

    try:
        report = replay(resume)
    except StateError as exc:  # the saved state is a cache: without it, every session is asked again
        log.warning("%s; asking every strategy again from the first session", exc)
        report = replay({name: Resume(save=r.save) for name, r in resume.items()})
    if report.failed or any(r.stopped for r in report.results.values()):
        why = "; ".join([*report.failed.values(), *(r.stopped or "" for r in report.results.values())])
        raise ForwardError(f"{day}: the strategies could not decide ({why}); nothing sealed, the next step retries")
    for name, result in report.results.items():
        for d in result.decisions[:-1]:
            want = past.get((name, d["date"]))
            if want is not None and _decision(d) != want:
                raise JournalError(
                    f"{name} on {d['date']}: the sealed decision is not reproduced from the frozen inputs "
                    "(edited inputs, another model, or fincon changed); nothing sealed"
                )
    entries = []
    books: dict[str, str] = {}
    for name, result in report.results.items():
        last = result.decisions[-1]
        if last["date"] != str(day):
            raise ForwardError(f"{name}: the data ends before {day}; nothing sealed, the next step retries")
        run_dir = report.run_dirs[name]
        calls = _keep_calls(root, cfg, run_dir, str(day))
        book = result.book.to_json() if result.book is not None else None
        books[name] = json_text({"session": str(day), **(book or {})})
        model = report.knowledge.get(name) or {}
        orders: dict[str, Any] = {"fill": "next open", "targets": (last.get("weights") or {})}
        if broker is not None and held is not None:
            from fincon.workflow.alpaca import AlpacaPaper, expected_after

            equity = broker.equity()
            placed = AlpacaPaper.orders_for(orders["targets"], _closes(root, cfg.tickers, day), equity, held)
            orders["alpaca"] = {"equity": equity, "held": held, "orders": placed,
                                "expected": expected_after(held, placed)}  # fmt: skip
        entries.append(
            {
                "kind": "session",
                "strategy": name,
                "decided": str(day),
                "trades": str(next_session(day)),
                "sealed_at": now_utc(),
                "simulated": plan.simulated,
                "inputs": frozen,
                "model": {k: model.get(k) for k in ("model", "cutoff", "label")},
                "calls": calls,
                "decision": _decision(last),
                "orders": orders,
                "book": book,
            }
        )
    try:
        sealed = journal.append_all(entries)  # every strategy's decision of the session, in one write
    except OSError as exc:
        raise ForwardError(f"{root}: cannot write the journal ({exc.strerror or exc}); nothing sealed") from None
    try:
        (root / BOOKS).mkdir(exist_ok=True)
        for name, text in books.items():
            write_atomic(root / BOOKS / f"{name}.json", text)
    except OSError as exc:  # the entries hold the books: these files are a copy the next step rewrites
        raise ForwardError(
            f"{root}: the session {day} is sealed, but its books' copy in {BOOKS}/ could not be written "
            f"({exc.strerror or exc}); the journal holds them, and the next step rewrites the copy"
        ) from None
    for name in report.results:  # the state each strategy stands in after this session, for the next step
        _keep_state(root, name, report.run_dirs[name], day)
    if broker is not None:  # sealed first: an order placed is always on the record
        for e in sealed:
            _place(root, broker, e)
    if (root / ".git").is_dir():
        _anchor(root, f"seal {day}")
    return sealed


def _resume(root: Path, name: str, done: list[dt.date], past: dict[tuple[str, str], Any]) -> Resume:
    """How strategy ``name``'s replay starts: from the state the last step saved when it stands at the
    journal's last session, its recorded decisions the sealed ones and the code the same; otherwise
    (the first step, a step that failed after saving, fincon changed) asked again from the first session.
    Either way its state after this step is saved to ``state/NAME/resume.next``."""
    from fincon.engine.backtest import Resume
    from fincon.engine.record import DECISIONS, read_jsonl
    from fincon.strategies.state import STATE_FILE

    folder = root / STATE / name
    nxt = folder / "resume.next"
    shutil.rmtree(nxt, ignore_errors=True)
    saved = folder / "resume"
    fresh = Resume(save=nxt)
    try:
        meta = json.loads((saved / "meta.json").read_text(encoding="utf-8"))
        recorded = read_jsonl(saved / DECISIONS)
    except (OSError, ValueError, DataError):
        return fresh
    sealed = sorted(d for (n, d) in past if n == name)
    if (
        not done
        or meta.get("session") != str(done[-1])
        or meta.get("code") != code_hash()
        or [d["date"] for d in recorded] != sealed
        or any(_decision(d) != past[(name, d["date"])] for d in recorded)
    ):
        log.info("%s: no saved state at the journal's last session; asked again from the first session", name)
        return fresh
    if not (saved / STATE_FILE).is_file():
        return fresh
    return Resume(decisions=tuple(recorded), state=saved, save=nxt)


def _keep_state(root: Path, name: str, run_dir: Path, day: dt.date) -> None:
    """After the seal: the state saved by this step's replay becomes the one the next step takes up."""
    from fincon.engine.record import DECISIONS

    folder = root / STATE / name
    nxt = folder / "resume.next"
    if not nxt.is_dir():
        return
    shutil.copyfile(run_dir / DECISIONS, nxt / DECISIONS)
    write_atomic(nxt / "meta.json", json_text({"session": str(day), "code": code_hash()}))
    shutil.rmtree(folder / "resume", ignore_errors=True)
    nxt.rename(folder / "resume")


@lru_cache(maxsize=1)
def code_hash() -> str:
    """The sha256 of fincon's source: a saved state is taken up only by the code that saved it."""
    import fincon

    h = hashlib.sha256()
    top = Path(fincon.__file__).parent
    for f in sorted(top.rglob("*.py")):
        h.update(f.relative_to(top).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _place(root: Path, broker: Any, entry: dict[str, Any]) -> None:
    """A sealed entry's orders placed on the broker; its answers kept beside the journal (``books/alpaca.json``)."""
    from fincon.workflow.alpaca import BrokerError

    planned = entry["orders"]["alpaca"]["orders"]
    try:
        answers = broker.submit(planned)
    except BrokerError as exc:
        raise BrokerError(
            f"{exc}; the session {entry['decided']} is sealed with its orders, which did not all reach Alpaca: "
            "the next step reports the drift (place them by hand, or start a new journal)"
        ) from None
    write_atomic(root / BOOKS / "alpaca.json", json_text({"session": entry["decided"], "placed": answers}))


def _expected_positions(entries: list[dict[str, Any]]) -> dict[str, float]:
    """The positions the broker holds once the last sealed session's orders fill (none before the first)."""
    for e in reversed(entries):
        if e.get("kind") == "session":
            return dict(e["orders"].get("alpaca", {}).get("expected", {}))
    return {}


def _closes(root: Path, tickers: list[str], day: dt.date) -> dict[str, float]:
    """Each ticker's close on ``day`` from the frozen inputs: what an order is sized at."""
    out = {}
    for t in tickers:
        frame = pd.read_csv(root / ".replay-inputs" / "prices" / f"{t}.csv").set_index("Date")
        out[t] = float(frame.loc[str(day), "Close"])
    return out


def _decision(d: dict[str, Any]) -> dict[str, Any]:
    """What a session entry seals of a decision record: its targets and actions (the rest is in the replay)."""
    return {"weights": d.get("weights"), "actions": d.get("actions"), "position": d.get("position")}


def _sealed_decisions(entries: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(e["strategy"], e["decided"]): e["decision"] for e in entries if e.get("kind") == "session"}


def _keep_calls(root: Path, cfg: RunConfig, run_dir: Path, day: str) -> list[dict[str, Any]]:
    """The model calls of ``day`` (the run's llm_calls.csv), copied into ``DIR/calls.sqlite`` with their
    prompt and answer hashes: what a verifier replays the decision from."""
    import csv

    listing = run_dir / "llm_calls.csv"
    if not listing.is_file():
        return []
    with open(listing, newline="", encoding="utf-8") as fh:
        keys = [r for r in csv.DictReader(fh) if r["day"] == day]
    if not keys:
        return []
    from fincon.llm.cache import CallCache

    CallCache(root / CALLS, "read-write")._open()  # the call cache's own table: a verifier replays from it
    dst = sqlite3.connect(root / CALLS)
    try:
        dst.execute("ATTACH DATABASE ? AS src", (f"{Path(cfg.llm.cache_path).resolve().as_uri()}?mode=ro",))
        out = []
        for r in keys:
            row = dst.execute("SELECT messages, answer FROM src.calls WHERE key = ?", (r["key"],)).fetchone()
            if row is None:
                continue
            dst.execute("INSERT OR IGNORE INTO calls SELECT * FROM src.calls WHERE key = ?", (r["key"],))
            out.append({"key": r["key"], "agent": r["agent"],
                        "prompt_sha256": hashlib.sha256(row[0].encode()).hexdigest(),
                        "answer_sha256": hashlib.sha256(row[1].encode()).hexdigest()})  # fmt: skip
        dst.commit()
        return out
    finally:
        dst.close()


# -- frozen inputs -------------------------------------------------------------------------------------


def freeze(root: Path, plan: Plan, day: dt.date) -> dict[str, Any]:
    """The inputs the decision at ``day``'s close reads, new since the last freeze, written into
    ``DIR/inputs/DAY/`` (prices: the bars up to ``day``; events: the items visible by its close)."""
    from fincon.data.events.loaders.directory import write_jsonl_gz
    from fincon.data.events.model import decision_cutoff
    from fincon.data.prices import validate_bars
    from fincon.workflow.runner import inputs_for, with_events

    folder = root / INPUTS / str(day)
    if folder.is_dir():
        shutil.rmtree(folder)  # a step stopped before sealing: its inputs are taken again
    staging = folder.with_name(f".{day}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "prices").mkdir(parents=True)
    cfg = plan.config
    inputs = inputs_for(cfg)
    previous = _frozen_days(root)
    since = previous[-1] if previous else None
    from fincon.errors import SourceUnavailable

    for t in cfg.tickers:
        try:
            raw = inputs.source.load(t, pd.Timestamp("1900-01-01"), pd.Timestamp(day))
        except SourceUnavailable as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise ForwardError(f"{t}: the source is down ({exc}); nothing decided, the next step retries") from None
        bars = validate_bars(raw, t, inputs.source.describe(t)).loc[: pd.Timestamp(day)]
        if bars.empty or bars.index[-1].date() < day:
            raise ForwardError(
                f"{t}: the last bar the source has is {bars.index[-1].date() if len(bars) else 'none'}, older than "
                f"the session {day}: stale data, nothing decided; the next step retries"
            )
        if since is not None:
            bars = bars.loc[pd.Timestamp(since) + pd.Timedelta(days=1) :]
        frame = pd.DataFrame({"Date": bars.index.strftime("%Y-%m-%d"), "Open": bars["open"], "High": bars["high"],
                              "Low": bars["low"], "Close": bars["close"], "Adj Close": bars["close"],
                              "Volume": bars["volume"]})  # fmt: skip
        frame.to_csv(staging / "prices" / f"{t}.csv", index=False, float_format="%.10g")
    spec = _events_spec(with_events(cfg, inputs))
    if spec is not None:
        cut = decision_cutoff(day)
        lo = decision_cutoff(since) if since is not None else None
        store = inputs.events(spec, tuple(cfg.tickers))
        for t in cfg.tickers:
            items = [e for e in store.all_events() if e.ticker == t and e.published_at < cut
                     and (lo is None or e.published_at >= lo)]  # fmt: skip
            write_jsonl_gz(staging / "events" / f"{t}.jsonl.gz", items)
    staging.rename(folder)
    return {"path": f"{INPUTS}/{day}", "sha256": tree_hash(folder)}


def _events_spec(cfg: RunConfig) -> str | None:
    for name in cfg.strategies:
        spec = (cfg.params(name) or {}).get("events")
        if spec:
            return str(spec)
    return None


def _frozen_days(root: Path) -> list[dt.date]:
    base = root / INPUTS
    return (
        sorted(dt.date.fromisoformat(p.name) for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
        if base.is_dir()
        else []
    )


def _frozen_config(root: Path, plan: Plan, day: dt.date, keep_state: bool = False) -> RunConfig:
    """The plan's config over the first session .. ``day``, reading the frozen inputs alone (every
    freeze's prices and items joined into ``DIR/replay-inputs``). ``keep_state`` (a step, not verify):
    an RL agent trained once is kept in ``DIR/state/NAME`` and loaded by the next step's replay."""
    from fincon.strategies.registry import params_model

    joined = root / ".replay-inputs"
    shutil.rmtree(joined, ignore_errors=True)
    (joined / "prices").mkdir(parents=True)
    frames: dict[str, list[pd.DataFrame]] = {}
    events: dict[str, list[str]] = {}
    for d in _frozen_days(root):
        if d > day:
            break
        for f in sorted((root / INPUTS / str(d) / "prices").glob("*.csv")):
            frames.setdefault(f.stem, []).append(pd.read_csv(f))
        for f in sorted((root / INPUTS / str(d) / "events").glob("*.jsonl.gz")):
            import gzip

            events.setdefault(f.name, []).append(gzip.decompress(f.read_bytes()).decode("utf-8"))
    for t, parts in frames.items():
        pd.concat(parts).to_csv(joined / "prices" / f"{t}.csv", index=False, float_format="%.10g")
    cfg = plan.config.model_copy(update={"end": day, "data": plan.config.data.model_copy(
        update={"source": "csv", "dir": joined / "prices"})})  # fmt: skip
    if events:
        import gzip
        import io

        (joined / "events").mkdir()
        for name, parts in events.items():
            buf = io.BytesIO()
            with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
                gz.write("".join(parts).encode("utf-8"))
            (joined / "events" / name).write_bytes(buf.getvalue())
        for name in cfg.strategies:  # every strategy that reads a corpus reads the frozen one
            if "events" in params_model(name).model_fields:
                cfg = cfg.with_params(name, {**cfg.params(name), "events": str(joined / "events")})
    if keep_state:  # every strategy that can keep a trained model keeps it in DIR/state/NAME
        for name in cfg.strategies:
            if "model_cache" in params_model(name).model_fields and cfg.params(name).get("model_cache") is None:
                cfg = cfg.with_params(name, {**cfg.params(name), "model_cache": str(root / STATE / name)})
    return cfg


def _anchor(root: Path, message: str) -> None:
    """``--anchor git``: every sealed step is a commit of DIR (push it to a public remote to timestamp it)."""
    import subprocess

    if not (root / ".git").is_dir():
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / ".gitignore").write_text(f"{REPLAY}/\n.replay-inputs/\n{STATE}/\n{LOCK}\n")
    env = {"GIT_AUTHOR_NAME": "fincon", "GIT_AUTHOR_EMAIL": "fincon@localhost", "GIT_COMMITTER_NAME": "fincon",
           "GIT_COMMITTER_EMAIL": "fincon@localhost", "PATH": "/usr/bin:/bin"}  # fmt: skip
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", message], check=True, env=env)


# -- status, score, verify ---------------------------------------------------------------------------


def status(root: Path) -> dict[str, Any]:
    """The journal at a glance: decided and missed sessions, the next one, each strategy's book."""
    root = Path(root)
    plan = Plan.load(root)
    entries = Journal(root).entries()
    done = decided(entries)
    if plan.simulated:
        nxt = next_session(done[-1]) if done else plan.first
    else:
        wall = dt.datetime.now(dt.timezone.utc)
        nxt = next_session(wall.date()) if session_open(wall.date()) <= wall else wall.date()
    books = {}
    for f in sorted((root / BOOKS).glob("*.json")) if (root / BOOKS).is_dir() else []:
        books[f.stem] = json.loads(f.read_text(encoding="utf-8"))
    return {
        "simulated": plan.simulated,
        "first_session": str(plan.first),
        "decided": len(done),
        "missed": sum(e.get("kind") == "missed" for e in entries),
        "last": str(done[-1]) if done else None,
        "next": str(nxt),
        "strategies": plan.config.strategies,
        "books": books,
        "entries": len(entries),
    }


def verify(root: Path) -> dict[str, Any]:
    """The chain and every hash it names (fincon.workflow.journal.verify_chain), then every sealed
    decision replayed from the frozen inputs, the model calls answered from the journal's own
    ``calls.sqlite`` (no model asked): ``ok`` or the first problem."""
    import tempfile

    from fincon.workflow.runner import run_config

    root = Path(root)
    plan = Plan.load(root)
    entries = Journal(root).entries()
    problems = list(verify_chain(entries, root))
    if problems:
        return {"ok": False, "problem": problems[0], "entries": len(entries), "replayed": 0}
    done = decided(entries)
    if not done:
        return {"ok": True, "entries": len(entries), "replayed": 0}
    cfg = _frozen_config(root, plan, done[-1])
    from fincon.llm.cache import CacheMode

    cfg = cfg.model_copy(
        update={"llm": cfg.llm.model_copy(update={"cache": CacheMode.REPLAY, "cache_path": root / CALLS})}
    )
    for name in cfg.strategies:  # a strategy's own llm section points at the journal's calls too
        own = (cfg.params(name) or {}).get("llm")
        if own:
            cfg = cfg.with_params(name, {**cfg.params(name), "llm": {**own, "cache": "replay",
                                                                     "cache_path": str(root / CALLS)}})  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="fincon-verify-") as d:
        try:
            report = run_config(cfg, Path(d) / "replay", progress=False, replace=True, warn_knowledge=False,
                                ledger=None, decide_last=True, plots=False)  # fmt: skip
        except FinconError as exc:
            return {"ok": False, "problem": f"the replay could not run: {exc}", "entries": len(entries),
                    "replayed": 0}  # fmt: skip
    sealed = _sealed_decisions(entries)
    replayed = 0
    for i, e in enumerate(entries):
        if e.get("kind") != "session":
            continue
        result = report.results.get(e["strategy"])
        got = next((d for d in (result.decisions if result else []) if d["date"] == e["decided"]), None)
        if got is None or _decision(got) != sealed[(e["strategy"], e["decided"])]:
            return {
                "ok": False,
                "problem": f"entry {i} (seq {e['seq']}, {e['strategy']} at {e['decided']}): the sealed decision is "
                "not reproduced from the frozen inputs",
                "entries": len(entries),
                "replayed": replayed,
            }
        replayed += 1
    return {"ok": True, "entries": len(entries), "replayed": replayed}


def score(root: Path) -> dict[str, Any]:
    """What a backtest reports, for the sessions decided so far (the last step's replay directory:
    metrics, equity.png), with each strategy's PSR, MinTRL and the sessions still needed for its Sharpe
    to mean something, its DSR against the trial ledger's family, and the report card."""
    import numpy as np

    from fincon.risk import significance as sig
    from fincon.workflow import trials

    root = Path(root)
    plan = Plan.load(root)
    done = decided(Journal(root).entries())
    replay = root / REPLAY
    if not done or not replay.is_dir():
        raise ConfigError(f"{root}: no session decided yet; score after `fincon forward step {root}`")
    multi = len(plan.config.strategies) > 1
    from fincon.engine.record import RunRecord, draw_charts
    from fincon.workflow.runner import chart_title

    draw_charts(replay, chart_title(plan.config.model_copy(update={"end": done[-1]})), list(plan.config.strategies))
    fam = trials.family(trials.resolve(None), plan.config.tickers, str(plan.first), str(done[-1]))
    out: dict[str, Any] = {"directory": str(root), "sessions": len(done), "first": str(plan.first),
                           "last": str(done[-1]), "simulated": plan.simulated, "strategies": {}}  # fmt: skip
    for name in plan.config.strategies:
        rec = RunRecord(replay / name if multi else replay)
        metrics = rec.metrics
        eq = rec.equity.to_numpy(dtype=float)
        r = eq[1:] / eq[:-1] - 1.0
        s = sig.sharpe(r)
        sk, ku = sig.moments(r) if len(r) > 2 else (0.0, 3.0)
        mintrl = sig.min_track_record(s, sk, ku) if len(r) > 2 else float("nan")
        out["strategies"][name] = {
            "cr_pct": metrics.get("cr_pct"),
            "sharpe": metrics.get("sharpe"),
            "mdd_pct": metrics.get("mdd_pct"),
            "days": len(r),
            "sharpe_daily": s,
            "psr": sig.psr(s, len(r), sk, ku) if len(r) > 2 else None,
            "min_track_record_days": mintrl,
            # how many more sessions its Sharpe needs to clear zero at 95 % (MinTRL); a Sharpe at or below
            # zero never does
            "sessions_still_needed": max(0, int(np.ceil(mintrl)) - len(r)) if np.isfinite(mintrl) else None,
            "dsr": sig.dsr(s, len(r), sk, ku, max(fam.trials, 1), fam.sharpe_var()) if len(r) > 2 else None,
            "dsr_trials": fam.trials,
            "model_knowledge": metrics.get("model_knowledge"),
        }
    return out


def format_score(res: dict[str, Any]) -> str:
    lines = [
        f"forward journal {res['directory']}: {res['sessions']} sessions {res['first']}..{res['last']} "
        f"({'simulated' if res['simulated'] else 'live'})",
        f"{'strategy':<18}{'CR %':>9}{'Sharpe':>8}{'MDD %':>8}{'PSR':>6}{'MinTRL d':>10}{'still needed':>15}{'DSR (N)':>12}",
    ]
    for name, m in res["strategies"].items():

        def f(x, spec):  # noqa: E306
            return "n/a" if x is None or (isinstance(x, float) and x != x) else spec.format(x)

        lines.append(
            f"{name:<18}{f(m['cr_pct'], '{:.3f}'):>9}{f(m['sharpe'], '{:.3f}'):>8}{f(m['mdd_pct'], '{:.2f}'):>8}"
            f"{f(m['psr'], '{:.2f}'):>6}{f(m['min_track_record_days'], '{:,.0f}') if m['sharpe_daily'] > 0 else '-':>10}"
            f"{f(m['sessions_still_needed'], '{:,}') if m['sharpe_daily'] > 0 else 'never (SR<=0)':>15}"
            f"{f(m['dsr'], '{:.2f}') + ' (' + str(m['dsr_trials']) + ')':>12}"
        )
    c = res.get("card")
    if c:
        lines.append(f"report card: {c['passed']} pass, {c['failed']} fail, {c['not_measured']} not measured "
                     f"(fincon report --card {res['directory']}/replay)")  # fmt: skip
    return "\n".join(lines)
