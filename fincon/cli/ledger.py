"""``fincon ledger``: every scored strategy you have run, counted.

Each backtest, experiment test run and baseline, rolling window and
protocol comparison adds one row per strategy and window to the trial
ledger (a SQLite file: $FINCON_LEDGER, else ~/.local/share/fincon/trials.sqlite);
the same config run again is the same trial, not a new one, unless it
traded otherwise (a model asked afresh: another draw). A best Sharpe
ratio (a family's best by daily Sharpe, shown annualised) means little without the number of configurations tried before it:
this command lists them per family (the same tickers, test windows that
overlap: moving a window by a day is another try at the same question),
counting distinct daily return series (configurations that traded
identically are one trial); an experiment's placebo runs (and buy-and-hold
on its price twin) are listed as controls, never counted and never a
family's best. The report card's selection row deflates a run's Sharpe
ratio by that count and the other tickers' trials over the same days; a
rolling evaluation's tables deflate each window by the series tried inside
the evaluation alone, not by this ledger."""

from __future__ import annotations

import argparse
import re
from typing import Annotated

from fincon import workflow
from fincon.cli.flags import Args, add
from fincon.errors import ConfigError
from fincon.files import json_text
from fincon.flag import Flag
from fincon.validation import parse_iso_date


class LedgerArgs(Args):
    ledger: Annotated[
        str | None, Flag(metavar="PATH", help="the ledger to read (default $FINCON_LEDGER or the user's)")
    ] = None
    study: Annotated[
        str | None,
        Flag(
            metavar="STUDY",
            help="list the trials of this study's family (TICKERS START..END), in the order they were first run",
        ),
    ] = None
    as_json: Annotated[bool, Flag("--json", help="print JSON instead of a table")] = False


COMMAND = "ledger"
SUMMARY = "the trial ledger: how many configurations were tried per family of windows, and the best of them"
HELP = __doc__.split("\n\n", 1)[1]
EXAMPLES = (
    "examples:\n  fincon ledger\n  fincon ledger --study 'TSLA 2022-10-05..2023-06-09'\n"
    "  fincon ledger --ledger runs/trials.sqlite --json\n"
)


def register(p: argparse.ArgumentParser) -> None:
    add(p, LedgerArgs)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.ledger == "off":
        raise ConfigError("--ledger off: there is no ledger to read; name one with --ledger PATH")
    try:
        path = workflow.trials.resolve(args.ledger)
    except ConfigError as exc:  # "..., or off" is a run's way to keep none: no ledger is no ledger to read here
        raise ConfigError(str(exc).removesuffix(", or off")) from None
    assert path is not None
    if not path.is_file():
        raise ConfigError(f"no trial ledger at {path} yet: every backtest or experiment adds to it")
    rows = workflow.trials.read(path)
    if args.study is not None:
        return _study(args, path, rows)
    summ = workflow.trials.summary(rows)
    if args.json:
        print(json_text({"ledger": str(path), "families": summ}), end="")
        return 0
    n_controls, n_trials = sum(s["controls"] for s in summ), sum(s["trials"] for s in summ)
    print(
        f"trial ledger {path}: {n_trials} distinct trial{'s' * (n_trials != 1)} in {len(summ)} "
        f"famil{'ies' if len(summ) != 1 else 'y'} "
        f"({len(rows) - n_controls} run{'s' * (len(rows) - n_controls != 1)} recorded, {n_controls} "
        f"control{'s' * (n_controls != 1)} not counted"
        f"{': placebo runs, buy-and-hold on a price twin and runs that read ahead by design' if n_controls else ''})"
    )
    width = max([len(s["family"]) for s in summ] + [6])
    print(
        f"{'family':<{width}}  {'windows':>7}  {'trials':>6}  {'runs':>5}  {'controls':>8}  {'best (by daily SR)':>18}  "
        f"{'tried before it':>15}  {'other tickers':>13}  best strategy"
    )
    for s in summ:
        other = f"{s['other_tickers']} ({s['other_trials']})" if s["other_tickers"] else "-"
        print(
            f"{s['family']:<{width}}  {s['windows']:>7}  {s['trials']:>6}  {s['runs']:>5}  {s['controls']:>8}  "
            f"{_num(s['best_sharpe'], '{:.3f}'):>18}  {_num(s['tried_before_best'], '{}'):>15}  {other:>13}  "
            f"{s['best_strategy'] or ''}"
        )
    print(
        "trials: distinct daily return series; runs: rows recorded; a family: the same tickers (in any order), "
        "overlapping windows"
    )
    print(  # the best was chosen by one Sharpe and shown as another, unsaid (found in review)
        "best (by daily SR): the trial with the highest daily Sharpe ratio of simple returns (what DSR deflates), "
        "shown as its annualised Sharpe ratio of daily log returns (`--json`: best_sharpe_daily, best_sharpe)"
    )
    if any(s["other_tickers"] for s in summ):
        print(
            "other tickers: ticker sets tried over days the family shares (their trials): a best picked among "
            "tickers was picked among these too; the report card's selection row deflates by them too"
        )
    short = sum(s["too_short"] for s in summ)
    if short:
        print(
            f"{short} trial{'s' * (short != 1)} of fewer than {workflow.tables.MIN_STAT_DAYS} daily returns: counted "
            "as tries, never a family's best, kept out of the Sharpe variance DSR deflates by (their Sharpe ratios "
            "are noise)"
        )
    return 0


def _study(args: argparse.Namespace, path, rows: list[dict]) -> int:
    """The rows of the family a study belongs to (its window on its tickers)."""

    m = re.fullmatch(r"\s*(\S+)\s+(\d{4}-\d{2}-\d{2})\.\.(\d{4}-\d{2}-\d{2})\s*", args.study)
    if not m:
        raise ConfigError(
            f"--study {args.study!r}: give TICKERS START..END as `fincon ledger` lists them, "
            "e.g. 'TSLA 2022-10-05..2023-06-09'"
        )
    tickers, start, end = m.group(1).split(","), m.group(2), m.group(3)
    try:
        first, last = parse_iso_date(start, "--study"), parse_iso_date(end, "--study")
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if first > last:  # was accepted: the family of a window that ends before it starts
        raise ConfigError(f"--study {args.study!r}: {start} is after {end}; give START..END, the earlier day first")
    fam = workflow.trials.family_of(rows, tickers, start, end)
    if not fam.rows:
        families = [s["family"] for s in workflow.trials.summary(rows)]
        raise ConfigError(
            f"--study {args.study!r}: no trial on {','.join(tickers)} overlaps {start}..{end} in {path}; "
            f"families: {', '.join(families[:5]) or 'none'}"
        )
    if args.json:
        print(json_text({"family": fam.name, "trials": fam.trials, "beside": fam.beside, "rows": fam.rows}), end="")
        return 0
    print(f"family {fam.name}: {fam.trials} distinct trials, {len(fam.trial_rows)} runs, {len(fam.controls)} controls")
    if fam.beside:
        print(f"tried over the same days on other tickers too: {workflow.trials.said_beside(fam.beside)}")
    print(
        f"{'first seen':<26}{'role':<9}{'strategy':<24}{'config':<10}{'window':<24}{'model knowledge':<20}"
        f"{'days':>6}{'CR %':>9}{'Sharpe':>8}"
    )
    for r in fam.rows:
        print(
            f"{r['first_seen']:<26}{r.get('role') or 'trial':<9}{r['strategy']:<24}{r['config_hash'][:8]:<10}"
            f"{r['start'] + '..' + r['end']:<24}{r['model_knowledge'] or '':<20}"
            f"{r['n_days']:>6}{_num(r['cr_pct'], '{:.2f}'):>9}{_num(r['sharpe'], '{:.3f}'):>8}"
        )
    return 0


def _num(v, fmt: str) -> str:
    return "n/a" if v is None else fmt.format(v)
