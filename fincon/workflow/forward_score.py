"""A forward journal read back: ``status``, ``verify`` (the chain, every hash, every decision replayed
from its frozen inputs) and ``score`` (everything a backtest reports, to date)."""

from __future__ import annotations

import datetime as dt
import math
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd

from fincon import risk, workflow
from fincon.engine.costs import total_paid
from fincon.engine.record import RunRecord, draw_charts
from fincon.engine.resume import Resume
from fincon.errors import ConfigError, FinconError
from fincon.llm.cache import CacheMode
from fincon.strategies.registry import make_strategy
from fincon.workflow import forward_calls, forward_code, trials
from fincon.workflow.forward_anchor import anchored, said
from fincon.workflow.forward_attempts import said as attempts_said
from fincon.workflow.forward_clock import next_session, session_to_trade
from fincon.workflow.forward_ledger import ledger_of
from fincon.workflow.forward_plan import Plan, _frozen_config
from fincon.workflow.journal import (
    CALLS,
    PLAN_FILE,
    REPLAY,
    Journal,
    JournalError,
    decided,
    failed,
    locked,
    missed,
    sealed_decisions,
    sealed_part,
    settled,
    verify_chain,
)
from fincon.workflow.tables import MIN_STAT_DAYS, significance_flags

#: how near a replayed book's every amount must come to the sealed one: 1e-6 absolute, 1e-9 relative (a
#: tenth of a cent on a million; at 1e-6 relative a charged spend of $0.30 went unseen)
BOOK_TOL = 1e-6


def status(root: Path) -> dict[str, Any]:
    """The journal at a glance: decided and missed sessions, the next one, each strategy's book."""
    root = Path(root)
    plan = Plan.load(root)
    entries = Journal(root).entries()
    done = decided(entries)
    if plan.simulated:
        after = settled(entries)  # the last session decided or sealed missed
        nxt = next_session(after) if after else plan.first
    else:
        wall = dt.datetime.now(dt.timezone.utc)
        nxt = session_to_trade(wall)
    # each strategy's book as its last session entry sealed it (DIR/books/ holds copies for people to read,
    # and the Alpaca orders a broker step placed)
    last = {e["strategy"]: e for e in entries if e.get("kind") == "session"}
    books = {n: {"session": last[n]["decided"], **last[n]["book"]} for n in plan.config.strategies
             if n in last and last[n].get("book")}  # fmt: skip
    return {
        "simulated": plan.simulated,
        "first_session": str(plan.first),
        "decided": len(done),
        "missed": len(missed(entries)),
        "last": str(done[-1]) if done else None,
        "next": str(nxt),
        "strategies": plan.config.strategies,
        "books": books,
        "entries": len(entries),
    }


def verify(root: Path, into: Path | None = None) -> dict[str, Any]:
    """The chain and every hash it names (fincon.workflow.journal.verify_chain), then every sealed
    decision replayed from the frozen inputs, the model calls answered from the journal's own
    ``calls.sqlite`` (no model asked): ``ok`` or the first problem. The replay is written to ``into``
    (score's, which holds the journal's lock), else to a folder removed after, under the lock: verify
    beside a running step read the folders it was about to seal as sealed by nobody, and said to
    remove them."""

    root = Path(root)
    if into is not None:
        return _verify(root, into)
    Plan.load(root)  # no journal there: said before the lock would make its folder
    with locked(root, "verify"):
        return _verify(root, into)


def _verify(root: Path, into: Path | None) -> dict[str, Any]:
    plan = Plan.load(root)
    entries = Journal(root).entries()
    problems = list(verify_chain(entries, root))  # the registration against plan.yaml too: its clock, first session
    if not problems and not plan.simulated:  # a live plan answered from a recording: no model was asked
        try:
            forward_calls.check_kept({n: make_strategy(n, plan.config.strategy_params.get(n), plan.config.llm)
                                      for n in plan.config.strategies}, live=True)  # fmt: skip
        except ConfigError as exc:
            problems.append(f"{PLAN_FILE}: {exc}")
    anchor = anchored(root, entries) if (root / ".git").is_dir() else None  # a re-signed chain holds; git does not
    if anchor is None and entries and entries[0].get("anchor") == "git":  # a copy of an anchored journal
        anchor = {"unread": "registered with --anchor git, and this copy holds no .git: the anchor is not read "
                  "(verify a clone of its remote)"}  # fmt: skip
    if anchor is not None and "problem" in anchor:
        problems.append(anchor["problem"])
    if problems:
        return {"ok": False, "problem": problems[0], "entries": len(entries), "replayed": 0}
    done = decided(entries)
    if not done:
        return {
            "ok": True,
            "entries": len(entries),
            "replayed": 0,
            "anchor": anchor,
            "code": forward_code.record(entries),
            "failed": failed(entries),
        }
    with tempfile.TemporaryDirectory(prefix="fincon-verify-") as d:
        cfg = _frozen_config(root, plan, done[-1], joined=None if into else Path(d) / "inputs")
        # a replay kept (``into``: score's) reads its calls beside its other inputs, where its config.yaml
        # says, for explain and eval leakage (a temporary folder's, gone when they read it: found in review)
        calls = forward_calls.named_calls(root, entries, (Path(cfg.data.dir).parent if into else Path(d)) / CALLS)
        cfg = cfg.model_copy(
            update={"llm": cfg.llm.model_copy(update={"cache": CacheMode.REPLAY, "cache_path": calls})}
        )
        for name in cfg.strategies:  # a strategy's own llm section points at the journal's calls too
            own = (cfg.params(name) or {}).get("llm")
            if own:
                cfg = cfg.with_params(name, {**cfg.params(name), "llm": {**own, "cache": "replay",
                                                                         "cache_path": str(calls)}})  # fmt: skip
        try:
            report = workflow.run_config(cfg, into or Path(d) / "replay", progress=False, replace=True, warn_knowledge=False,
                                ledger=None, decide_last=True, plots=False, audit=into is not None,
                                resume={name: Resume(missed=frozenset(missed(entries))) for name in cfg.strategies})  # fmt: skip
        except FinconError as exc:
            return {"ok": False, "problem": f"the replay could not run: {exc}{forward_code.hint(entries[0])}",
                    "entries": len(entries), "replayed": 0}  # fmt: skip
    if report.failed:  # a replay that finished no day: its reason, not "not reproduced" (found in review)
        name, why = next(iter(sorted(report.failed.items())))
        why = why.replace(str(calls), f"the calls of {CALLS} the entries name")
        return {"ok": False, "problem": f"the replay of {name} could not run: {why}{forward_code.hint(entries[0])}",
                "entries": len(entries), "replayed": 0}  # fmt: skip
    sealed = sealed_decisions(entries)
    gone = set(map(str, missed(entries)))
    for name, result in report.results.items():  # a day the replay traded that no entry of it sealed or missed
        kept = {d for n, d in sealed if n == name} | gone  # its own: a session sealed for another traded unsealed
        extra = next((d["date"] for d in result.decisions if d["date"] not in kept), None)
        if extra is not None:
            return {"ok": False, "problem": f"the replay of {name} decided on {extra}, a day the journal neither "
                    "sealed nor missed (its prices hold a bar on a day that is no session): its score is not the "
                    "sealed record's", "entries": len(entries), "replayed": 0}  # fmt: skip
    replayed = 0
    last = {e["strategy"]: e for e in entries if e.get("kind") == "session"}
    days = {name: _by_day(result) for name, result in report.results.items()}
    for i, e in enumerate(entries):
        if e.get("kind") != "session":
            continue
        result = report.results.get(e["strategy"])
        got = next((d for d in (result.decisions if result else []) if d["date"] == e["decided"]), None)
        if got is None or sealed_part(got) != sealed[(e["strategy"], e["decided"])]:
            # a replay that stopped says why (a prompt the journal never sent is a call not in its calls.sqlite)
            why = f" (the replay stopped: {result.stopped})" if got is None and result and result.stopped else ""
            why = why.replace(str(calls), f"the calls of {CALLS} the entries name")  # not verify's temporary copy
            return {
                "ok": False,
                "problem": f"entry {i} (seq {e['seq']}, {e['strategy']} at {e['decided']}): the sealed decision is "
                f"not reproduced from the frozen inputs{why}{forward_code.hint(e if e.get('code') else entries[0])}",
                "entries": len(entries),
                "replayed": replayed,
            }
        why = _book_problem(
            e,
            result,
            days.get(e["strategy"], ({}, {})),
            root / e["inputs"]["path"] / "prices",
            e is last[e["strategy"]],
        )
        if why:
            return {"ok": False, "problem": f"entry {i} (seq {e['seq']}, {e['strategy']} at {e['decided']}): {why}",
                    "entries": len(entries), "replayed": replayed}  # fmt: skip
        replayed += 1
    return {"ok": True, "entries": len(entries), "replayed": replayed, "anchor": anchor,
            "code": forward_code.record(entries), "failed": failed(entries)}  # fmt: skip


def past_problem(report: Any, entries: list[dict[str, Any]], root: Path) -> str | None:
    """Why a step's replay does not bear out the sessions sealed before today's (each strategy's decisions,
    and its book at each: cash and shares at the close), or None: a step compared decisions alone, and
    with --charge-llm an edited token count sealed a book verify then refused (found in review)."""
    past = sealed_decisions(entries)
    for name, result in report.results.items():
        for d in result.decisions[:-1]:
            want = past.get((name, d["date"]))
            if want is not None and sealed_part(d) != want:
                return (f"{name} on {d['date']}: the sealed decision is not reproduced from the frozen inputs "
                        "(edited inputs, another model, or fincon changed); nothing sealed")  # fmt: skip
    days = {name: _by_day(result) for name, result in report.results.items()}
    for e in entries:
        if e.get("kind") == "session" and (result := report.results.get(e["strategy"])) is not None:
            why = _book_problem(e, result, days[e["strategy"]], root / e["inputs"]["path"] / "prices", False)
            if why:
                return f"{e['strategy']} on {e['decided']}: {why}; nothing sealed"
    return None


def _close(a: float, b: float) -> bool:
    """One amount of a book and the replay's: the same computation, so equal but for float noise."""
    return math.isclose(a, b, rel_tol=BOOK_TOL * 1e-3, abs_tol=BOOK_TOL)


def _by_day(result: Any) -> tuple[dict[str, int], dict[str, dict[str, float]]]:
    """A replay's row of each session in its values, and its holdings at each close: indexed once (looked
    up by each entry, they were a scan of the whole replay per session, quadratic in a journal's length)."""
    held: dict[str, dict[str, float]] = {}
    for d, t, n in result.positions[["date", "ticker", "shares"]].itertuples(index=False):
        held.setdefault(str(pd.Timestamp(d).date()), {})[str(t)] = float(n)
    return {str(d.date()): i for i, d in enumerate(result.dates)}, held


def _book_problem(
    e: dict[str, Any], result: Any, days: tuple[dict[str, int], dict[str, dict[str, float]]], prices: Path, last: bool
) -> str | None:
    """Why the replay's book at ``e``'s session is not the one ``e`` sealed (``days``: :func:`_by_day` of the
    replay; ``prices``: the folder of its session's frozen closes): its value (cash and shares at
    the close) and each holding, and for the strategy's last entry the whole book (cash, shares, cost
    basis, the targets pending). Found in review: with --charge-llm, token counts edited in calls.sqlite
    moved the score (CR 9.404 to 8.254) while every decision, so verify, held."""
    book = e.get("book")
    if not book or result is None:
        return None
    day = e["decided"]
    row, held = days[0].get(day), days[1].get(day, {})
    if row is None:
        return None  # a decision the replay did not reach is named above
    closes = {t: float(pd.read_csv(prices / f"{t}.csv").set_index("Date").loc[day, "Close"]) for t in book["shares"]}
    value = book["cash"] + sum(n * closes[t] for t, n in book["shares"].items())
    got = float(result.values[row])
    said = (
        "; the money the replay makes is not the sealed record's (calls.sqlite's token counts, or the inputs, changed?)"
    )
    if not _close(value, got):
        return f"its sealed book is worth {value:,.6f} at the close, the replay's {got:,.6f}{said}"
    for t, n in book["shares"].items():
        if t in held and not _close(n, held[t]):
            return f"its sealed book holds {n:,.6f} {t} shares, the replay's {held[t]:,.6f}{said}"
    mine = result.book.to_json() if last and result.book is not None else None
    for k in ("cash", "shares", "basis", "pending") if mine else ():
        a, b = book.get(k), mine.get(k)
        same = _close(a, b) if isinstance(a, float | int) and isinstance(b, float | int) else (
            isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(_close(a[x], b[x]) for x in a)
        ) or a == b  # fmt: skip
        if not same:
            return f"its sealed book's {k} is {a}, the replay's {b}{said}"
    return None


@contextmanager
def score(root: Path) -> Iterator[dict[str, Any]]:
    """What a backtest reports, for the sessions decided so far (the journal replayed into ``DIR/replay``:
    metrics, equity.png), with each strategy's PSR, MinTRL and the sessions still needed for its Sharpe
    to mean something and its DSR against the trial ledger's family; the journal's lock is held until the
    ``with`` block ends (the card and the page read the replay, which a step rewrites)."""

    plan = Plan.load(Path(root))  # no journal there: said before the lock would make its folder
    with locked(Path(root), "score"):
        yield _score(Path(root), plan)


def _score(root: Path, plan: Plan) -> dict[str, Any]:
    entries = Journal(root).entries()
    done = decided(entries)
    replay = root / REPLAY
    if not done or not replay.is_dir():
        raise ConfigError(f"{root}: no session decided yet; score after `fincon forward step {root}`")
    # the score is the sealed record's, replayed here: the folder a step left is no part of it (an edited
    # metrics.json was printed as the score while verify passed)
    checked = verify(root, into=replay)
    if not checked["ok"]:
        raise JournalError(f"{root}: the journal does not verify ({checked['problem']}); no score")
    draw_charts(
        replay, workflow.chart_title(plan.config.model_copy(update={"end": done[-1]})), list(plan.config.strategies)
    )
    multi = len(plan.config.strategies) > 1
    ledger = ledger_of(entries[0])  # the one it registered in: FINCON_LEDGER set otherwise today counts others
    fam = trials.family(ledger, plan.config.tickers, str(plan.first), str(done[-1]))
    picked = fam.picked_among()  # the trials on other tickers too, as the card's selection row deflates by
    costed = plan.config.broker.sets_a_cost
    out: dict[str, Any] = {"directory": str(root), "sessions": len(done), "missed": len(missed(entries)),
                           "first": str(plan.first), "last": str(done[-1]), "simulated": plan.simulated,
                           "strategies": {}}  # fmt: skip
    out["failed"] = failed(entries)  # attempts stopped or failed before a seal: a redraw is on the record
    gone = f" decided, {out['missed']} missed," if out["missed"] else ""  # held through, nothing decided on them
    for name in plan.config.strategies:
        rec = RunRecord(replay / name if multi else replay)
        metrics = rec.metrics
        eq = rec.equity.to_numpy(dtype=float)
        r = eq[1:] / eq[:-1] - 1.0
        record = risk.significance.track_record(r, max(fam.trials, 1), fam.sharpe_var())
        among = risk.significance.track_record(r, *picked)["dsr"] if fam.beside else None
        mintrl = record["min_track_record_days"]
        out["strategies"][name] = {
            "cr_pct": metrics.get("cr_pct"),
            "sharpe": metrics.get("sharpe"),
            "mdd_pct": metrics.get("mdd_pct"),
            "days": len(r),
            "sharpe_daily": record["sharpe_daily"],
            "psr": _finite(record["psr"]),
            "min_track_record_days": mintrl,
            # how many more sessions its Sharpe needs to clear zero at 95 % (MinTRL); a Sharpe at or below
            # zero never does
            "sessions_still_needed": max(0, int(np.ceil(mintrl)) - len(r)) if np.isfinite(mintrl) else None,
            "dsr": _finite(record["dsr"]) if fam.trials else None,  # in no ledger: a DSR of nothing counted
            "dsr_trials": fam.trials,
            # deflated by the other tickers' trials over the same sessions too, as the card's selection row is
            "dsr_among_tickers": _finite(among) if among is not None else None,
            "model_knowledge": metrics.get("model_knowledge"),
        }
        if costed:  # net of them, the CR said nothing of what they took
            out["strategies"][name]["costs_paid"] = total_paid(metrics.get("costs") or {})
    out["benchmark"] = _benchmark(RunRecord(replay / plan.config.strategies[0] if multi else replay))
    clock = (
        "simulated (decided on past data, session by session: its times prove nothing)" if plan.simulated else "live"
    )
    out["note"] = (  # what the page is, atop the report (it read as any backtest's)
        f"forward journal {root}: {clock}; {len(done)} sessions{gone} {plan.first}..{done[-1]}; verified when scored: the "
        f"chain, every hash, {checked['replayed']} decisions replayed; {said(checked.get('anchor')).removeprefix('; ')}"
        f"{forward_code.said(checked['code'])}{'; ' if out['failed'] else ''}{attempts_said(out['failed'])}"
    )
    out["sealed"] = {  # for the card: its temporal integrity, and the ledger its selection row counts in
        "simulated": plan.simulated,
        "anchor": checked.get("anchor"),
        "ledger": str(ledger) if ledger is not None else None,
    }
    out["flags"] = significance_flags(list(out["strategies"].values()), "a journal")
    out["flags"] += [  # a record of two codes is not the one plan it registered
        f"{part}: not the plan it registered carried out" for part in forward_code.other_sessions(checked["code"])
    ]
    if not fam.trials:
        out["flags"].append(
            "DSR n/a: this journal was registered with the trial ledger off, so nothing counts the journals begun "
            "beside it"
            if ledger is None
            else f"DSR n/a: the trial ledger it was registered in, {ledger}, holds "
            "none of its trials (not this machine's, or moved): the journals begun beside it are not counted"
        )
    if fam.beside:  # a journal picked among tickers: a pick no family of one ticker counts
        out["flags"].append(
            f"DSR deflates by this family's {fam.trials} trial{'s' * (fam.trials != 1)}; over the same days the "
            f"trial ledger also holds {trials.said_beside(fam.beside)} on other tickers: a journal picked among "
            f"tickers was picked among those too (deflated by all {picked[0]}: DSR "
            + ", ".join(f"{n} {_said_dsr(m['dsr_among_tickers'])}" for n, m in out["strategies"].items())
            + ")"
        )
    if fam.trials > 1 and len(fam.sharpes) < 2:
        out["flags"].append(
            f"DSR n/a: the trial ledger holds a Sharpe ratio of {MIN_STAT_DAYS} sessions or more for "
            f"{len(fam.sharpes)} of this family's {fam.trials} trials (a journal's, once it has as many sessions): "
            "fewer than two, no spread to deflate by"
        )
    return out


def _said_dsr(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _benchmark(rec: RunRecord) -> dict[str, Any] | None:
    """Buy-and-hold on the journal's sessions, as the replay ran it beside the strategies (a score
    without it read +15 % over 61 sessions with nothing to hold it against); None: planned without."""
    bench, eq = (rec.summary.get("benchmark") or {}), rec.benchmark_equity
    if not bench or eq is None:
        return None
    v = eq.to_numpy(dtype=float)
    r = v[1:] / v[:-1] - 1.0  # the daily Sharpe ratio as the strategies' rows compute theirs
    out = {k: bench.get(k) for k in ("cr_pct", "sharpe", "mdd_pct")} | {
        "days": len(r),
        "sharpe_daily": risk.significance.sharpe(r),
    }
    if "costs" in bench:  # written when a cost is set: it paid them too
        out["costs_paid"] = total_paid(bench["costs"])
    return out


def _finite(x: float) -> float | None:
    """A statistic as JSON holds it: None where it is undefined (NaN)."""
    return x if np.isfinite(x) else None


def _cell(x: Any, spec: str) -> str:
    return "n/a" if x is None or (isinstance(x, float) and x != x) else spec.format(x)


def format_score(res: dict[str, Any]) -> str:
    # fees, slippage and borrow, when the plan set any (a journal without costs prints as it did)
    costed = any("costs_paid" in m for m in res["strategies"].values())
    lines = [
        f"forward journal {res['directory']}: {res['sessions']} sessions"
        + (f" decided, {res['missed']} missed," if res.get("missed") else "")
        + f" {res['first']}..{res['last']} "
        f"({'simulated' if res['simulated'] else 'live'})",
        f"{'strategy':<18}{'CR %':>9}{'Sharpe':>8}{'MDD %':>8}{'SR/day':>8}{'PSR':>6}{'MinTRL d':>10}{'still needed':>15}"
        f"{'DSR (N)':>12}" + (f"{'costs $':>13}" if costed else ""),
    ]
    f = _cell
    for name, m in res["strategies"].items():
        sr = (
            "n/a" if m["days"] < 2 else f(m["sharpe_daily"], "{:+.3f}")
        )  # fewer than 2 returns: no Sharpe (0 was printed)
        lines.append(
            f"{name:<18}{f(m['cr_pct'], '{:.3f}'):>9}{f(m['sharpe'], '{:.3f}'):>8}{f(m['mdd_pct'], '{:.2f}'):>8}"
            f"{sr:>8}{f(m['psr'], '{:.2f}'):>6}{f(m['min_track_record_days'], '{:,.0f}') if m['sharpe_daily'] > 0 else '-':>10}"
            f"{'n/a' if sr == 'n/a' else f(m['sessions_still_needed'], '{:,}') if m['sharpe_daily'] > 0 else 'never (SR<=0)':>15}"
            f"{f(m['dsr'], '{:.2f}') + ' (' + str(m['dsr_trials']) + ')':>12}"
            + (f"{f(m.get('costs_paid'), '{:,.2f}'):>13}" if costed else "")
        )
    b = res.get("benchmark")
    if b:  # the market over the same sessions: no trial, so no PSR or DSR of its own
        lines.append(
            f"{'buy-and-hold':<18}{f(b['cr_pct'], '{:.3f}'):>9}{f(b['sharpe'], '{:.3f}'):>8}"
            f"{f(b['mdd_pct'], '{:.2f}'):>8}{f(b['sharpe_daily'], '{:+.3f}'):>8}{'(benchmark)':>16}"
            + (f"{f(b.get('costs_paid'), '{:,.2f}'):>37}" if costed else "")
        )
    lines.append("Sharpe: annualised, of daily log returns (as a backtest's); SR/day: of daily simple returns, the "
                 "one PSR, MinTRL and DSR are computed on")  # fmt: skip
    if (res.get("sealed") or {}).get("ledger"):
        lines.append(f"DSR (N): N counts this family's trials in the trial ledger {res['sealed']['ledger']}, the one "
                     "the journal registered in; journals begun against another ledger count nowhere here")  # fmt: skip
    if res.get("failed"):
        lines.append(attempts_said(res["failed"]))
    lines += [f"FLAG: {flag}" for flag in res.get("flags", ())]
    c = res.get("card")
    if c:
        of = f" of {c['graded']}" if c.get("graded") else ""
        lines.append(f"report card{of}: {c['passed']} pass, {c['failed']} fail, {c['not_measured']} not measured "
                     f"(fincon report --card {res['directory']}/replay)")  # fmt: skip
    return "\n".join(lines)
