"""``fincon report RUN [RUN ...] --out report.html``: one self-contained HTML page."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Annotated

from fincon import report
from fincon.cli.args import ledger_path
from fincon.cli.flags import Args, add
from fincon.errors import ConfigError
from fincon.files import json_text
from fincon.flag import Flag
from fincon.report import write_report

HELP = """\
Write one HTML page a person can read about a run, a comparison of runs, a
training or an experiment: the metrics of every strategy beside the
buy-and-hold benchmark; interactive equity and drawdown curves with the
team's CVaR alerts marked; the decision timeline (click a day to see what the
team saw, said and did, with the evidence it cites, as `fincon explain`
prints it); LLM usage per agent (calls, tokens, cost, re-asks, fallbacks,
reused reports); for a training, its beliefs, tau and objective per episode;
for an experiment, its table of median runs and tests; and quantstats'
performance statistics.

The page is self-contained (plotly.js and the styles inlined; nothing is
fetched when it is opened) and reproducible: the same run directories give
the same bytes.

RUN is a directory written by `fincon backtest` (one strategy or a
comparison), `fincon train` or `fincon experiment`; several RUNs are shown
side by side."""

EXAMPLES = """\
examples:
  fincon report runs/demo --out demo.html
  fincon report runs/demo/fincon runs/other/fincon --out compare.html
  fincon report runs/experiment_TSLA --out experiment.html
  fincon backtest --ticker TSLA --strategy fincon --brain rules --report   # report.html in the run directory
"""


class ReportArgs(Args):
    runs: Annotated[
        list[Path], Flag("runs", required=True, metavar="RUN", help="run, comparison, training or experiment directory")
    ]
    out: Annotated[
        Path | None,
        Flag(
            metavar="FILE",
            help="HTML file to write (default report.html; a page fincon wrote there before is replaced, any other "
            "file refused)",
        ),
    ] = None
    card: Annotated[
        bool,
        Flag(
            help="print the report card instead (the six-point protocol, fincon's checks and FINSABER's checklist: "
            "pass, fail or not measured, with the number behind each); one RUN"
        ),
    ] = False
    as_json: Annotated[bool, Flag("--json", help="with --card: print it as JSON")] = False
    ledger: Annotated[
        str | None,
        Flag(
            metavar="PATH|off",
            help="with --card: the trial ledger its selection row counts the tries beside the run in (default "
            "$FINCON_LEDGER or the user's; off: not read)",
        ),
    ] = None


COMMAND = "report"
SUMMARY = "one self-contained HTML page for runs, a training or an experiment"


def register(p: argparse.ArgumentParser) -> None:
    add(p, ReportArgs)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.card:
        if len(args.runs) != 1:
            raise ConfigError("--card reads one directory; give one RUN")
        if args.out is not None:
            raise ConfigError(
                "--card prints the card (--json: as JSON) and writes no file; drop --out, or drop --card for the "
                "HTML report (which shows the card too)"
            )
        c = report.run_card(args.runs[0], ledger=ledger_path(args))
        print(json_text(c).rstrip("\n") if args.json else report.format_card(c))
        return 0
    if args.json:
        raise ConfigError("--json goes with --card (the HTML report is a page, not JSON)")
    if args.ledger is not None:
        raise ConfigError("--ledger goes with --card (the HTML page reads no ledger, so that its bytes are the runs')")

    if args.out is not None and args.out.suffix.lower() not in (".html", ".htm"):  # r.png held a page (review)
        raise ConfigError(f"--out {args.out}: the report is an HTML page; give a .html file name")
    out = write_report(args.runs, args.out if args.out is not None else Path("report.html"))
    print(f"report: {out} ({out.stat().st_size:,} bytes)")
    return 0
