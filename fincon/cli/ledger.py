"""``fincon ledger``: every scored strategy you have run, counted.

Each backtest, experiment test run and baseline, rolling window and
protocol comparison adds one row per strategy and window to the trial
ledger (a SQLite file: $FINCON_LEDGER, else ~/.local/share/fincon/trials.sqlite);
the same config run again is the same trial, not a new one. A best Sharpe
ratio means little without the number of configurations tried before it:
this command lists them per study (the tickers and the window), and the
deflated Sharpe ratio of a rolling evaluation is deflated by that count."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ledger",
        help="the trial ledger: how many configurations were tried per study, and the best of them",
        description=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n  fincon ledger\n  fincon ledger --study 'TSLA 2022-10-05..2023-06-09'\n"
        "  fincon ledger --ledger runs/trials.sqlite --json\n",
    )
    p.add_argument("--ledger", metavar="PATH", help="the ledger to read (default $FINCON_LEDGER or the user's)")
    p.add_argument("--study", metavar="STUDY", help="list this study's trials, in the order they were first run")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fincon.errors import ConfigError
    from fincon.workflow import trials

    path = trials.resolve(args.ledger) if args.ledger != "off" else None
    if path is None:
        raise ConfigError("--ledger off: there is no ledger to read; name one with --ledger PATH")
    if not Path(path).is_file():
        raise ConfigError(f"no trial ledger at {path} yet: every backtest or experiment adds to it")
    rows = trials.read(Path(path))
    if args.study:
        picked = [r for r in rows if r["study"] == args.study]
        if not picked:
            studies = sorted({r["study"] for r in rows})
            raise ConfigError(f"--study {args.study!r} is not in {path}; studies: {', '.join(studies[:5])}")
        if args.json:
            print(json.dumps(picked, indent=1, sort_keys=True))
            return 0
        print(
            f"{'first seen':<26}{'strategy':<24}{'config':<10}{'model knowledge':<20}{'days':>6}{'CR %':>9}{'Sharpe':>8}"
        )
        for r in picked:
            print(
                f"{r['first_seen']:<26}{r['strategy']:<24}{r['config_hash'][:8]:<10}{r['model_knowledge'] or '':<20}"
                f"{r['n_days']:>6}{_num(r['cr_pct'], '{:.2f}'):>9}{_num(r['sharpe'], '{:.3f}'):>8}"
            )
        return 0
    summ = trials.summary(rows)
    if args.json:
        print(json.dumps({"ledger": str(path), "studies": summ}, indent=1, sort_keys=True))
        return 0
    print(f"trial ledger {path}: {len(rows)} trials in {len(summ)} studies")
    width = max([len(s["study"]) for s in summ] + [5])
    print(
        f"{'study':<{width}}  {'trials':>6}  {'configs':>7}  {'best Sharpe':>11}  {'tried before it':>15}  best strategy"
    )
    for s in summ:
        print(
            f"{s['study']:<{width}}  {s['trials']:>6}  {s['configurations']:>7}  {_num(s['best_sharpe'], '{:.3f}'):>11}  "
            f"{_num(s['tried_before_best'], '{}'):>15}  {s['best_strategy'] or ''}"
        )
    return 0


def _num(v, fmt: str) -> str:
    return "n/a" if v is None else fmt.format(v)
