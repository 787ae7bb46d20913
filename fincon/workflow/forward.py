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
   (fincon.engine.backtest, next-open fills through the run's cost models)
   on the frozen inputs alone: each takes up the state the last step saved
   (fincon.workflow.forward_state) and is asked for this session, the
   sessions before fed to the broker as they were sealed; without a state
   that matches the journal, every session is asked again and the decisions
   already sealed must come out again (a step that cannot reproduce them
   stops, exit 1);
4. each strategy's decision is sealed into ``DIR/journal.jsonl`` with the
   hash of its inputs, the hashes of every prompt and answer it took (the
   calls kept in ``DIR/calls.sqlite``), its model and cutoff, and its book
   (``DIR/books/STRATEGY.json``: cash, shares, cost basis, the targets
   pending for the next open, which the paper broker fills there).

The clock is fincon.workflow.forward_clock, the plan and the frozen inputs
fincon.workflow.forward_plan, status, verify and score
fincon.workflow.forward_score (docs/forward.md).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import os
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import yaml

from fincon import __version__, stopping, workflow
from fincon.config import RunConfig
from fincon.engine.resume import Resume, StateError
from fincon.errors import CloseOnly, ConfigError, FinconError, SourceUnavailable
from fincon.files import json_text, write_atomic
from fincon.workflow import (
    forward_anchor,
    forward_attempts,
    forward_broker,
    forward_calls,
    forward_clock,
    forward_code,
    forward_ledger,
    forward_media,
    forward_plan,
    forward_score,
)
from fincon.workflow.alpaca import AlpacaPaper, check_available, expected_after
from fincon.workflow.forward_clock import (
    EXCHANGE,
    next_session,
    previous_session,
    session_close,
    session_open,
    session_to_trade,
    sessions,
)
from fincon.workflow.forward_plan import Plan, _frozen_config, a_hole, frozen_inputs, models, same_weights
from fincon.workflow.forward_state import keep_state, resume_for
from fincon.workflow.journal import (
    BOOKS,
    CALLS,
    PLAN_FILE,
    REPLAY,
    Clock,
    ForwardError,
    Journal,
    JournalError,
    Late,
    Sealed,
    StaleSource,
    decided,
    locked,
    missed,
    sealed_decisions,
    sealed_part,
    settled,
    stamp,
    verify_chain,
    wall_clock,
)
from fincon.workflow.model_checks import check_knowledge, warn_run_without_model

log = logging.getLogger(__name__)


def init(
    root: Path,
    cfg: RunConfig,
    *,
    simulate_from: dt.date | None,
    anchor_git: bool = False,
    broker: str = "paper",
    ledger: str | None = None,
) -> dict[str, Any]:
    """Register ``cfg`` as a new journal in ``root`` (which must not hold one); ``ledger``: the trial ledger
    it counts in (``--ledger``: a path or ``off``; None: ``$FINCON_LEDGER`` or the default)."""

    root = Path(root)
    above = next((p for p in (root, *root.parents) if p.exists()), None)  # a file there or above: a traceback
    if above is not None and not above.is_dir():
        raise ConfigError(f"{root}: {above} is a file; a forward journal starts in a new folder (nothing was changed)")
    if (root / JOURNAL_NAME).exists() or (root.exists() and any(root.iterdir())):
        raise ConfigError(f"{root} is not empty; a forward journal starts in a new folder (nothing was changed)")
    if broker == "alpaca":
        if simulate_from is not None:
            raise ConfigError("--broker alpaca places orders on a paper account: a live journal; drop --simulate-from")
        if len(cfg.strategies) != 1:
            raise ConfigError(
                f"--broker alpaca: an Alpaca account is one book, so one strategy (--strategy gave {len(cfg.strategies)})"
            )
        check_available()
    if anchor_git:
        forward_anchor.git_runs()
    if cfg.broker.fill != "next_open":
        cfg = cfg.model_copy(update={"broker": cfg.broker.model_copy(update={"fill": "next_open"})})
    today = dt.datetime.now(dt.timezone.utc).date()
    if simulate_from is None and cfg.data.source != "yfinance":
        raise ConfigError(
            f"a live journal reads a live source (--source yfinance); the {cfg.data.source} data ends in the past: "
            "offline, run a simulated journal with --simulate-from YYYY-MM-DD"
        )
    if simulate_from is not None and simulate_from > forward_clock.last_known():
        raise forward_clock.beyond(simulate_from, "--simulate-from")
    first = simulate_from if simulate_from is not None else next_session(today)
    if simulate_from is not None and not sessions(simulate_from, simulate_from):
        raise ConfigError(f"--simulate-from {simulate_from} is no session of {EXCHANGE}; give a trading day")
    warm = cfg.model_copy(update={"start": first, "end": next_session(first)})
    try:  # the data, the corpus, the strategies' own checks: before the journal exists
        checked = workflow.preflight(warm)
    except CloseOnly as exc:
        if exc.column != "open":
            raise
        raise ConfigError(  # not --fill's advice ("use --fill close"): a journal cannot fill at the close
            f"a forward journal fills each decision at the next open, and {exc.which} has close prices only: "
            "give prices with an Open column (--source yfinance, or --data with OHLCV prices)"
        ) from None
    except SourceUnavailable as exc:  # a price source's advice (--data, --source sample) is refused live
        if simulate_from is not None or ". Use --data" not in str(exc):
            raise
        said = str(exc).split(". Use --data")[0]
        raise SourceUnavailable(f"{said}; offline, run a simulated journal with --simulate-from YYYY-MM-DD") from None
    if checked.bars.name != "exchange":  # every ticker trades every day: its weekends would be traded unsealed
        t = cfg.tickers[0]
        raise ConfigError(
            f"{t} ({checked.inputs.source.describe(t)}) has a bar every day (a 24/7 market): a forward journal decides "
            f"and fills on the sessions of {EXCHANGE}, and its replay would trade the days between them it never "
            "sealed; backtest it (fincon backtest), or give prices on the exchange's sessions"
        )
    ahead = next((said for s in checked.strategies.values() if (said := s.lookahead())), None)
    if ahead:  # what it reads is not out before the session: a journal would trade another strategy than named
        raise ConfigError(
            f"{ahead}: a forward journal seals only what was out before each session and cannot give it that; journal its point-in-time form"
        )
    forward_calls.check_kept(checked.strategies, simulate_from is None)  # each call it sealed replayed, live asked
    warn_run_without_model(cfg, checked.knowledge, False, checked.strategies)  # a setting sealed for nothing: said
    check_knowledge(checked.knowledge)  # a window the model may remember: said as a backtest says it
    cfg = forward_plan.cache_from_anywhere(cfg)
    ledger = forward_ledger.resolve(ledger)  # a ledger that is no fincon ledger: said before the journal exists
    beliefs = forward_media.sealed_beliefs(cfg)  # sealed with the plan: a file rewritten later trades nothing
    plan = Plan(cfg.model_copy(update={"start": first, "end": first}), first, simulate_from is not None, broker,
                beliefs)  # fmt: skip
    hashed = models(plan.config)  # a local model's weights hashed in full: before anything is written
    fresh = not root.exists()
    try:  # the folder claimed: two inits at once both passed the check above and wrote one folder
        root.mkdir(parents=True, exist_ok=True)
        os.close(os.open(root / JOURNAL_NAME, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))  # umask applies
    except FileExistsError:
        raise ConfigError(f"{root}: another init registers a journal there; nothing was changed") from None
    except OSError as exc:  # a parent folder not writable: was a PermissionError traceback
        raise ConfigError(f"cannot create {root}: {exc.strerror or exc}; choose a folder you can write") from None
    try:  # a plan without its registration (stopped between the two) was a folder every command misread
        write_atomic(root / PLAN_FILE, plan.to_yaml())
        entry = _register(root, plan, first, hashed, ledger, anchor_git)
    except BaseException:
        for made in (root / PLAN_FILE, root / JOURNAL_NAME):
            made.unlink(missing_ok=True)
        if fresh:
            shutil.rmtree(root, ignore_errors=True)
        raise
    forward_ledger.register(plan, entry)
    if anchor_git:
        forward_anchor.commit(root, f"register {first}", f"{root} is registered")
    return entry


def _register(root: Path, plan: Plan, first: dt.date, hashed: Any, ledger: Any, anchor_git: bool) -> dict[str, Any]:
    """The registration entry, the journal's first."""
    return Journal(root).append(
        {
            "kind": "register",
            "sealed_at": stamp(),
            # its own: two journals of one plan registered in one second had one hash, so one ledger row
            # that each step overwrote (twenty started in a loop counted as one trial)
            "journal_id": secrets.token_hex(16),
            "simulated": plan.simulated,
            "first_session": str(first),
            "plan_sha256": hashlib.sha256((root / PLAN_FILE).read_bytes()).hexdigest(),
            "plan": yaml.safe_load(plan.to_yaml()),
            "models": hashed,
            "ledger": ledger,
            "anchor": "git" if anchor_git else None,  # a step refuses to go on unanchored once its .git is gone
            "fincon": __version__,
            "code": forward_code.stamp(),
        }
    )


JOURNAL_NAME = "journal.jsonl"


# -- a step ------------------------------------------------------------------------------------------


def step(
    root: Path,
    *,
    until: dt.date | None = None,
    progress: bool = False,
    clock: Clock = wall_clock,
    on_seal: Callable[[dict[str, Any]], None] = lambda entry: None,
):
    """Decide the next session (or, simulated, every session up to ``until``); returns the sealed entries,
    each also handed to ``on_seal`` as it is sealed (said at once: a stop or an error later in the step
    leaves them sealed, and the user is told so). ``clock`` (UTC) says which session is next on a live
    journal and stamps every seal; a live decision ready only once the session it trades has opened is
    sealed missed, never as a decision."""
    root = Path(root)
    sealed = Sealed(on_seal)
    journal = Journal(root)
    start = len(journal.entries())
    try:
        _step(root, until, progress, clock, sealed)
    except BaseException as exc:
        try:  # the journal's count: a stop between a seal and its line on stdout leaves it unsaid, never uncounted
            new = journal.entries()[start:]
        except FinconError:
            new = list(sealed)
        n = len({e["decided"] for e in new if e["kind"] == "session"})
        tried = forward_attempts.own(new)
        if (n or tried) and (not isinstance(exc, FinconError) or stopping.received()):  # a stop: said on the way out
            said = [f"the {n} session{'s' if n > 1 else ''} this step sealed {'are' if n > 1 else 'is'} kept in {root}"]
            if tried:  # the session under way: its attempt on the record, never re-decided as if untried
                said = [*said[:n and 1], f"{'its' if n else f'{root}: the'} attempt at {tried[-1]} is sealed failed "
                        "(verify and score count it)"]  # fmt: skip
            exc.add_note(f"{workflow.KEPT}{', and '.join(said)}: step again to go on")
        raise
    return list(sealed)


def _step(root: Path, until: dt.date | None, progress: bool, clock: Clock, sealed: Sealed) -> None:
    plan = Plan.load(root)
    journal = Journal(root)
    with locked(root), forward_anchor.commits_what_it_seals(root, journal):
        # a seal cut short, a step killed after its freeze: found, checked, then sealed failed (review 79)
        found = forward_attempts.tail(root, journal)
        entries = found.entries
        forward_anchor.refuse_unless_anchored(root, entries, found.lines if found.cut is not None else None)
        problems = list(verify_chain(entries, root, leftover=True))
        if problems:
            raise JournalError(f"{root}: {problems[0]}; no step is taken on a journal that does not verify")
        forward_anchor.still_there(root, entries[0])
        forward_attempts.tidy(root, journal, found, clock)
        entries = journal.entries()
        same_weights(plan.config, entries[0])
        code = forward_code.stamp()
        if other := forward_code.other_than_registered(entries[0], code):
            print(f"fincon: warning: {root}: {other}", file=sys.stderr)
        done = decided(entries)
        gone = missed(entries)  # sealed once
        if until is not None and not plan.simulated:
            raise ConfigError(
                "--until steps a simulated journal; a live one decides only the next session to open (no backfill)"
            )
        lost: list[dt.date] = []
        if plan.simulated:
            if until is not None and until > forward_clock.last_known():
                raise forward_clock.beyond(until, "--until")
            after = settled(entries)  # a session sealed missed is not taken again
            target = next_session(after) if after else plan.first
            last = until or target
            todo = [d for d in sessions(target, last)] if last >= target else []
            if not todo:
                through = f" (decided through {done[-1]})" if done else ""
                print(f"fincon: {root}: session {target} is decided already" if until is None and done and
                      target <= done[-1] else f"fincon: {root}: nothing to decide up to {last}{through}", file=sys.stderr)  # fmt: skip
                return
        else:
            wall = clock()
            last_seal = max(
                (dt.datetime.fromisoformat(e["sealed_at"]) for e in entries if e.get("sealed_at")), default=wall
            )
            if wall < last_seal:  # a missed session was decided again under a clock set back (found in review)
                raise ForwardError(
                    f"{root}: the clock reads {wall:%Y-%m-%d %H:%M} UTC, before the journal's last entry (sealed "
                    f"{last_seal:%Y-%m-%d %H:%M} UTC): a clock that went backwards decides nothing"
                )
            if session_open(wall.date()) <= wall < (close := session_close(wall.date())):
                print(f"fincon: {root}: the session {wall.date()} is open until {close:%H:%M} UTC; the decision for "
                      f"{next_session(wall.date())} is made at its close: step after it", file=sys.stderr)  # fmt: skip
                return
            trades = session_to_trade(wall)
            # the decision is made at the last close before the session it trades
            day = previous_session(trades)
            if day < plan.first:  # registered today: the step that evening has nothing to decide yet
                print(f"fincon: {root}: the journal's first session is {plan.first}; its decision is made at its "
                      "close: step after it", file=sys.stderr)  # fmt: skip
                return
            if done and day <= done[-1]:
                print(
                    f"fincon: {root}: the session {trades} is decided already (at {done[-1]}'s close)", file=sys.stderr
                )
                return
            if day in gone or (gone and day < max(gone)):  # sealed missed: never decided later
                print(f"fincon: {root}: the decision at {day}'s close is sealed missed already", file=sys.stderr)
                return
            # sessions no step ran (since the first session, at the first step): sealed missed, or the
            # replay, which runs from the first session, would trade them unsealed; sealed by _decide once
            # the source holds the session (a clock running fast sealed the future missed, found in review)
            gap = sessions(next_session(done[-1]), day) if done else sessions(plan.first, day)
            lost = [d for d in gap[:-1] if d not in gone]
            todo = [day]
        for day in todo:
            stopping.check()  # a stop lost on its way out (fincon.stopping) ends the step here
            try:
                for entry in _decide(root, plan, journal, day, progress, clock, code, lost, sealed.append):
                    sealed.append(entry)
            except Late as exc:
                sealed.append(journal.miss(day, str(exc), exc.at))
            except StaleSource as exc:
                if not (plan.simulated and a_hole(plan, exc, todo[-1])):
                    raise
                # the simulated clock has passed a session its data never holds: missed, as a live one seals it
                reason = f"{exc.ticker}: the source has no bar for {day} and has later ones: a hole in its data"
                sealed.append(journal.miss(day, reason, stamp(clock)))
            except OSError as exc:  # a full disk, a folder made read-only
                why = f"{exc.strerror or exc}{f' ({exc.filename})' if exc.filename else ''}"
                if day in decided(journal.entries()):  # after the seal: what the step keeps beside the journal
                    raise ForwardError(
                        f"{root}: the session {day} is sealed, but what its step keeps beside the journal could not "
                        f"be written: {why}; free the space and step again, which writes it"
                    ) from None
                last = journal.last() or {}  # a failed attempt is sealed if the disk had room for it
                tried = last.get("kind") == "failed" and last.get("session") == str(day)
                raise ForwardError(
                    f"{root}: cannot write the session {day}'s inputs or replay: {why}; "
                    + (
                        "no decision sealed, the attempt sealed failed"
                        if tried
                        else "nothing sealed, the journal is as it was"
                    )
                    + ": free the space and step again"
                ) from None


def _decide(
    root: Path, plan: Plan, journal: Journal, day: dt.date, progress: bool, clock: Clock = wall_clock,
    code: dict[str, Any] | None = None, gap: Sequence[dt.date] = (), on_gap: Callable[[dict], None] = lambda e: None,
) -> list:  # fmt: skip
    """Freeze the inputs of ``day`` (:func:`frozen_inputs`), seal the live ``gap`` before it missed (each
    handed to ``on_gap``), run the strategies from the first session to it, check the sealed decisions come
    out again and seal this one's; a failure or a stop before that seal is sealed failed."""

    broker = held = None
    if plan.broker == "alpaca":  # the account must hold what the journal says before anything is decided
        broker = AlpacaPaper()
        held = broker.reconcile(forward_broker.expected_positions(journal.entries()))
    with frozen_inputs(root, plan, day, journal) as frozen, forward_attempts.recorded(journal, day, frozen, clock):
        for lost in gap:  # the source holds the session: the clock is not ahead of it
            on_gap(journal.miss(lost, "no step ran for this session", stamp(clock)))
        sealed_so_far = journal.entries()
        own = _frozen_config(root, plan, day, keep_state=True)
        cfg = forward_calls.asking(root, own, sealed_so_far)  # the model asked for this session, the past as sealed
        if n := forward_calls.sealed_into_caches(root, cfg, sealed_so_far):  # a recording's past sessions as sealed
            print(f"fincon: warning: {root}: {n} sealed call{'s' * (n > 1)} missing or changed in the call cache "
                  f"{'were' if n > 1 else 'was'} written back from {CALLS} (past sessions are answered as sealed)",
                  file=sys.stderr)  # fmt: skip
        out = root / REPLAY
        past = sealed_decisions(sealed_so_far)
        skip = frozenset(missed(sealed_so_far))  # sessions no step ran: nothing asked on them
        if cfg.broker.charge_llm:  # the model's spend is charged on the day it is made: every session asked again
            resume = {name: Resume(missed=skip) for name in cfg.strategies}
        else:
            resume = {name: resume_for(root, name, decided(sealed_so_far), past, skip) for name in cfg.strategies}

        def replay(resume: dict[str, Resume]):  # score draws the charts
            return workflow.run_config(cfg, out, progress=progress, replace=True, warn_knowledge=False, ledger=None,
                              decide_last=True, plots=False, audit=False, resume=resume)  # fmt: skip

        try:
            report = replay(resume)
        except StateError as exc:  # the saved state is a cache: without it, every session is asked again
            log.warning("%s; asking every strategy again from the first session", exc)
            report = replay({name: Resume(save=r.save, missed=skip) for name, r in resume.items()})
        if report.failed or any(r.stopped for r in report.results.values()):
            said: dict[str, list[str]] = {}  # one reason once, with the strategies it stopped (a server down stops all)
            for name, text in [
                *report.failed.items(),
                *((n, r.stopped) for n, r in report.results.items() if r.stopped),
            ]:
                said.setdefault(text, []).append(name)
            why = "; ".join(f"{', '.join(names)}: {text}" for text, names in said.items())
            raise ForwardError(
                f"{day}: the strategies could not decide ({why}); no decision sealed, the next step retries"
            )
        if why := forward_score.past_problem(report, sealed_so_far, root):  # decisions and books, as verify
            raise JournalError(why)
        entries = []
        books: dict[str, str] = {}
        for name, result in report.results.items():
            last = result.decisions[-1]
            if last["date"] != str(day):
                raise ForwardError(f"{name}: the data ends before {day}; nothing sealed, the next step retries")
            run_dir = report.run_dirs[name]
            calls = forward_calls.keep(root, cfg, name, run_dir, str(day))
            book = result.book.to_json() if result.book is not None else None
            books[name] = json_text({"session": str(day), **(book or {})})
            model = report.knowledge.get(name) or {}
            orders: dict[str, Any] = {"fill": "next open", "targets": (last.get("weights") or {})}
            if broker is not None and held is not None:
                equity = broker.equity()
                placed = AlpacaPaper.orders_for(
                    orders["targets"], forward_broker.closes(root, cfg.tickers, day), equity, held
                )
                orders["alpaca"] = {"equity": equity, "held": held, "orders": placed,
                                    "expected": expected_after(held, placed)}  # fmt: skip
            entries.append(
                {
                    "kind": "session",
                    "strategy": name,
                    "decided": str(day),
                    "trades": str(next_session(day)),
                    "sealed_at": None,  # the clock read last, once everything but the write is done
                    "simulated": plan.simulated,
                    "inputs": frozen,
                    "model": {k: model.get(k) for k in ("model", "cutoff", "label")},
                    "code": code or forward_code.stamp(),  # the code that decided it (fincon.workflow.forward_code)
                    "calls": calls,
                    "decision": sealed_part(last),
                    "orders": orders,
                    "book": book,
                }
            )
        # read after the calls are kept and a broker asked (a slow one once stamped an earlier time than its write)
        at, opens = clock(), session_open(next_session(day))
        if not plan.simulated and at >= opens:  # its open is known by now: a decision sealed now could trade on it
            raise Late(f"decided at {at:%Y-%m-%d %H:%M:%S} UTC, after {next_session(day)} opened at {opens:%H:%M} UTC: "
                       "too late to trade it (a slow model or machine: step earlier)", at.isoformat(timespec="seconds"))  # fmt: skip
        for e in entries:
            e["sealed_at"] = at.isoformat(timespec="seconds")
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
            keep_state(root, name, report.run_dirs[name], day)
        forward_calls.into_own_caches(root, own, sealed)  # the user's call cache holds what the model was asked
        forward_ledger.track(plan, sealed_so_far[0], report.results, day)
        if broker is not None:  # sealed first: an order placed is always on the record
            for e in sealed:
                forward_broker.place(root, broker, e)
        if (root / ".git").is_dir():
            forward_anchor.commit(root, f"seal {day}", f"the session {day} is sealed")
        return sealed
