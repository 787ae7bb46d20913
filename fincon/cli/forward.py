"""``fincon forward``: a forward record: decisions sealed before the session they trade."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Annotated, Literal

from fincon import cli, report, workflow
from fincon.cli.flags import Args, action, add
from fincon.cli.options import RunArgs
from fincon.config import read_yaml
from fincon.errors import ConfigError
from fincon.files import json_text
from fincon.flag import Flag
from fincon.report import write_report

HELP = """\
A backtest cannot settle what a model knew: it may have read about the
window. A forward record can: each decision made and sealed into a hash
chain before the session it trades, on inputs frozen as they were read,
and scored later against prices nobody chose (docs/forward.md).

  init DIR    register the plan (strategies, tickers, model, costs, capital,
              the first session) as the journal's first entry, before any
              session; every flag of `fincon backtest` that says what runs
  step DIR    decide the next session: freeze the inputs, run the strategies
              (the engine of a backtest, next-open fills), seal each decision;
              safe from cron (a lock; a second step in one session says so)
  status DIR  the sessions decided, missed and next; each strategy's book
  score DIR   everything a backtest reports, to date (metrics, plot, report
              card), with PSR, MinTRL and the sessions still needed
  verify DIR  recompute the chain and every hash, replay every decision from
              the frozen inputs; exit 1 naming the first entry that fails

Offline (these machines, CI, docs): `init --simulate-from DATE` runs the same
code over bundled or imported data with a simulated clock; `step --until
DATE` steps it to DATE. Every entry says `simulated`; a journal is never both.

Exit status: 0 done (or nothing to do); 1 a step could not decide (source
down or stale, a past decision not reproduced) or the journal does not
verify; 2 bad input."""

EXAMPLES = """\
examples:
  fincon forward init runs/fw --ticker TSLA --strategy fincon,buy-and-hold --brain rules --simulate-from 2022-10-05
  fincon forward step runs/fw --until 2022-12-30
  fincon forward verify runs/fw
  fincon forward score runs/fw --json
"""


COMMAND = "forward"
SUMMARY = "forward testing: decisions sealed in a verifiable journal before the session they trade"


def register(p: argparse.ArgumentParser) -> None:
    inner = p.add_subparsers(dest="forward", metavar="COMMAND", required=True)
    i = inner.add_parser(
        "init",
        help="register a journal's plan before its first session",
        description="Register a journal's plan (strategies, data, costs, model) before its first session.",
    )
    add(i, InitArgs, "dir")
    cli.add_plan_flags(i, window=False)
    for a in i._actions:  # a backtest's default (close) is refused here: its help said it was the default
        if a.dest == "fill":
            a.help = "a journal decides after the close and fills at the next open (next-open, the only choice)"
    add(i, InitArgs, "simulate_from", "anchor", "broker")
    add(
        i,
        RunArgs,
        "ledger",
        helps={
            "ledger": "the trial ledger the journal counts in, sealed at its registration "
            "(default $FINCON_LEDGER, else ~/.local/share/fincon/trials.sqlite; off: none)"
        },
    )
    i.set_defaults(func=_init)
    action(inner, "step", StepArgs, _step, help="decide the next session (or, simulated, every one up to --until)")
    for name, fn, help_ in (
        ("status", _status, "the sessions decided, missed and next, and each strategy's book"),
        ("score", _score, "metrics, plot and report card of the journal so far"),
        ("verify", _verify, "recompute the chain and every hash, replay every decision"),
    ):
        action(inner, name, ReadArgs, fn, help=help_)


class InitArgs(Args):
    dir: Annotated[Path, Flag("dir", required=True, metavar="DIR", help="a new folder for the journal")]
    simulate_from: Annotated[
        dt.date | None,
        Flag(
            metavar="YYYY-MM-DD",
            help="a simulated clock from this session, over bundled or imported data (offline; every entry says so)",
        ),
    ] = None
    anchor: Annotated[
        Literal["git"] | None,
        Flag(help="git: commit every sealed step to a git repository in DIR (push it to a public remote)"),
    ] = None
    broker: Annotated[
        Literal["paper", "alpaca"],
        Flag(
            help="paper: the built-in paper broker (next-open fills through the cost models; default); alpaca: "
            "also place each decision on an Alpaca paper account (live, one strategy; keys in ALPACA_API_KEY and "
            "ALPACA_SECRET_KEY; pip install 'fincon[alpaca]'), reconciled every step"
        ),
    ] = "paper"


class StepArgs(Args):
    dir: Annotated[Path, Flag("dir", required=True, metavar="DIR", help="the journal (fincon forward init)")]
    until: Annotated[dt.date | None, Flag(metavar="YYYY-MM-DD", help="simulated journals: step up to this session")] = (
        None
    )
    no_progress: Annotated[bool, Flag(help="hide the progress bars")] = False


class ReadArgs(Args):
    dir: Annotated[Path, Flag("dir", required=True, metavar="DIR", help="the journal (fincon forward init)")]
    as_json: Annotated[bool, Flag("--json", help="print JSON to stdout")] = False


def _init(args: argparse.Namespace) -> int:
    if getattr(args, "fill", None) == "close":
        raise ConfigError("--fill close: a forward journal decides after the close and fills at the next open")
    cfg = cli.build_config(args)
    if args.config is not None and (window := [k for k in ("start", "end") if k in (read_yaml(args.config) or {})]):
        # replaced unsaid (2021-01-04.. became 2022-10-05): the clock names a journal's sessions
        print(f"fincon: warning: {args.config}: {' and '.join(window)} are a backtest's window; a journal's sessions "
              "are its clock's (--simulate-from, or the next to open)", file=sys.stderr)  # fmt: skip
    start = dt.date.fromisoformat(args.simulate_from) if args.simulate_from else None
    entry = workflow.forward.init(
        args.dir, cfg, simulate_from=start, anchor_git=args.anchor == "git", broker=args.broker, ledger=args.ledger
    )
    mode = "simulated" if entry["simulated"] else "live"
    print(f"registered {args.dir} ({mode}; first session {entry['first_session']}; hash {entry['hash'][:16]})")
    return 0


def _step(args: argparse.Namespace) -> int:
    until = dt.date.fromisoformat(args.until) if args.until else None
    workflow.forward.step(args.dir, until=until, progress=not args.no_progress, on_seal=_say)
    return 0


def _say(e: dict) -> None:
    """A sealed entry in one line, at once (a step stopped later has said what it sealed)."""
    if e["kind"] == "session":
        print(f"sealed {e['strategy']} at {e['decided']}'s close for {e['trades']}: {said(e['decision'])}", flush=True)
    else:
        print(f"missed {e['session']}: {e['reason']}", flush=True)


def said(decision: dict) -> str:
    """A sealed decision in words, per ticker: the team's action (or a
    baseline's new target weight, or no order) and the book it leads to,
    e.g. ``TSLA sell, short 0.45``; ``TSLA no order, flat``. (The raw
    weights read ``None`` for no order and ``{}`` for a team's hold.)"""
    actions, weights = decision.get("actions") or {}, decision.get("weights")
    out = []
    for t, pos in sorted((decision.get("position") or {}).items()):
        if t in actions:
            what = actions[t]
        elif weights is not None and t in weights:
            what = f"target {weights[t]:+.2f}"
        else:
            what = "no order"
        book = "flat" if pos.get("side") == "flat" else f"{pos.get('side')} {float(pos.get('size', 0)):.2f}"
        out.append(f"{t} {what}, {book}")
    return "; ".join(out) or "no position"


def _status(args: argparse.Namespace) -> int:
    st = workflow.forward_score.status(args.dir)
    if args.json:
        print(json_text(st), end="")
        return 0
    print(
        f"{args.dir}: {'simulated' if st['simulated'] else 'live'}; first session {st['first_session']}; "
        f"{st['decided']} sessions decided, {st['missed']} missed; last {st['last'] or '-'}; next {st['next']}"
    )
    for name, book in st["books"].items():
        shares = ", ".join(f"{t} {n:,.2f}" for t, n in sorted((book.get("shares") or {}).items())) or "none"
        pending = book.get("pending")
        order = ", ".join(f"{t} {w:+.2f}" for t, w in sorted(pending.items())) if pending else ""
        print(
            f"  {name:<18} cash {book.get('cash', 0):,.2f}  shares {shares}  "
            + (f"target weights at the next open {order}" if order else "no order pending")
        )
    return 0


def _score(args: argparse.Namespace) -> int:
    replay = Path(args.dir) / workflow.forward_score.REPLAY
    with workflow.forward_score.score(args.dir) as res:  # no step rewrites the replay while it is read
        res["card"] = report.run_card(replay, res["sealed"])
        res["report"] = str(write_report([replay], Path(args.dir) / "report.html", res["note"], res["sealed"]))
        res["equity_plot"] = str(replay / "equity.png")
    if args.json:
        print(json_text(res, default=str), end="")
        return 0
    print(workflow.forward_score.format_score(res))
    print(f"report:      {res['report']}\nequity plot: {res['equity_plot']}")
    return 0


def _verify(args: argparse.Namespace) -> int:
    res = workflow.forward_score.verify(args.dir)
    if args.json:
        print(json_text(res), end="")
    if res["ok"]:
        if not args.json:
            anchor = workflow.forward_anchor.said(res.get("anchor"))
            print(f"{args.dir}: verified: {res['entries']} entries, the chain and every hash hold, "
                  f"{res['replayed']} decision{'' if res['replayed'] == 1 else 's'} replayed from the frozen inputs"
                  f"{anchor}{workflow.forward_code.said(res['code'])}"
                  + (f"; {workflow.forward_attempts.said(res['failed'])}" if res.get("failed") else ""))  # fmt: skip
        return 0
    print(f"fincon: verify: {res['problem']}", file=sys.stderr)
    return 1
