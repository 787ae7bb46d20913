"""``fincon plot``: equity curves and drawdowns of several runs in one PNG."""

from __future__ import annotations

import argparse
import json
import textwrap
from pathlib import Path
from typing import Annotated, Any

from fincon import engine, report, workflow
from fincon.cli.flags import Args, add
from fincon.errors import FinconError
from fincon.flag import Flag
from fincon.ownership import is_fincon_png, shown
from fincon.workflow.journal import journal_hint


class PlotArgs(Args):
    runs: Annotated[
        list[Path],
        Flag("runs", required=True, metavar="RUN",
             help="run directories (or a comparison, training or experiment) to plot together"),
    ]  # fmt: skip
    out: Annotated[Path, Flag(help="PNG to write (default {default})")] = Path("equity_comparison.png")
    title: Annotated[str, Flag(help="plot title")] = ""


COMMAND = "plot"
SUMMARY = "draw several runs' equity curves and drawdowns in one PNG"
HELP = (
    "Plot the equity curve (top) and drawdown (bottom) of each RUN in one headless PNG. "
    "A RUN is a run directory holding equity.csv; a comparison directory (several strategies) "
    "expands into its runs, a training into its episodes, an experiment (or one window of a rolling "
    "evaluation) into its median team runs and baselines. A training or experiment that did not finish is refused with its status."
)
EXAMPLES = "example:\n  fincon plot runs/demo/fincon runs/demo/sma-cross --out compare.png"


def register(p: argparse.ArgumentParser) -> None:
    add(p, PlotArgs)
    p.set_defaults(func=run)


def _expand(run: Path) -> list[Path]:
    """The run directories behind one RUN argument: a run, a comparison's
    strategies, a training's episodes, an experiment's (or a rolling
    window's) median team runs and baselines. An unfinished training or experiment is refused with its
    status: its curves would be shown as a result."""

    if engine.staging_name(run.name):  # a run that was stopped (or still runs): its finished half read as whole
        raise FinconError(f"{run} is the staging folder of a run that was stopped or still runs: nothing to plot")
    for marker, kind in (("experiment.json", "experiment"), ("train.json", "training")):
        if (run / marker).is_file():
            why = workflow.failure(workflow.read_state(run / marker))
            if why:
                raise FinconError(
                    workflow.unfinished(run, workflow.an(kind), why, ", or plot the finished runs inside it")
                )
            return _experiment_runs(run) if kind == "experiment" else _training_runs(run)
    if (run / "rolling.json").is_file():  # windows over different spans: one at a time
        windows = [str(p.parent) for p in sorted(run.glob("*/*/results.json"))]
        raise FinconError(
            f"{run} is a rolling evaluation: plot one of its windows ({shown(windows) or 'none finished yet'}); "
            f"`fincon report {run}` shows them all"
        )
    blocks = sorted(p.parent for p in run.glob("*/experiment.json"))
    if blocks and not (run / "equity.csv").is_file():  # a --preset fincon-paper comparison: a block at a time
        raise FinconError(
            f"{run} is a --preset fincon-paper comparison: plot one of its experiments "
            f"({shown([str(b) for b in blocks])}); "
            f"`fincon report {run}` shows them all"
        )
    if (run / "results.json").is_file() and (run / "test").is_dir():  # a window of a rolling evaluation
        return _experiment_runs(run)
    if (run / "equity.csv").is_file():
        return [run]
    if (run / "metrics.json").is_file():  # a comparison: each strategy its top metrics.json names, all there
        top = engine.read_json(run / "metrics.json")
        subs = [engine.member_run(run, n, m) for n, m in sorted(top.items())] if isinstance(top, dict) else []
        if any(subs):
            return [p for p in subs if p is not None]
    if run.is_dir():
        subs = sorted(p.parent for p in run.glob("*/equity.csv"))
        if subs:
            return subs
    if not run.exists():
        raise FinconError(f"{run} does not exist; pass directories written by fincon backtest")
    raise FinconError(
        journal_hint(run) or f"{run}: not a run directory (no equity.csv); pass directories written by fincon backtest"
    )


def _training_runs(run: Path) -> list[Path]:
    eps = sorted(p.parent for p in (run / "episodes").glob("ep-*/equity.csv"))
    if not eps:
        raise FinconError(f"{run}: a training without a finished episode; nothing to plot")
    return eps


def _experiment_runs(run: Path) -> list[Path]:
    """The median team run of each variant (results.json) and the baselines."""

    try:
        results = json.loads((run / "results.json").read_text(encoding="utf-8"))
        medians = [run / m["run_dir"] for m in results["median"].values()]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        raise FinconError(f"{run}/results.json is missing or damaged; rerun the experiment's command") from None
    base = run / "baselines"
    baselines = [base] if (base / "equity.csv").is_file() else sorted(p.parent for p in base.glob("*/equity.csv"))
    return medians + baselines


def _check_writable(out: Path) -> None:
    """Fail before drawing (and before matplotlib writes its caches) when the
    PNG cannot be written; a probe file is removed again."""
    existed = out.exists()
    blocker = next((p for p in out.parents if p.exists()), None)
    if blocker is not None and not blocker.is_dir():  # mkdir would say only "File exists"
        raise FinconError(f"--out {out}: {blocker} is a file, not a folder; give another path")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "ab"):
            pass
    except OSError as exc:
        raise FinconError(f"cannot write {out}: {exc.strerror or exc}") from None
    if not existed:
        out.unlink()


def run(args: argparse.Namespace) -> int:
    curves, unfinished, windows, configs = {}, [], {}, {}
    for run_dir in args.runs:
        for path in _expand(run_dir):
            label = str(path)
            if label in curves:
                continue
            if not engine.is_run(path):  # a curve with no metrics.json says nothing of how its run ended
                raise FinconError(f"{path} holds equity.csv but no metrics.json: not a whole fincon run; run it again")
            rec = engine.RunRecord(path)
            curves[label] = rec.equity
            windows[label] = rec.window
            configs[label] = rec.config
            if rec.metrics.get("status", "complete") != "complete":
                unfinished.append(f"{label} ({rec.metrics['status']}, to {rec.equity.index[-1]:%Y-%m-%d})")
    if args.out.suffix.lower() != ".png":
        raise FinconError(f"--out {args.out}: give a .png file name")
    if args.out.is_dir():
        raise FinconError(f"--out {args.out} is a directory; give a .png file name")
    if args.out.exists() and not is_fincon_png(args.out):
        raise FinconError(
            f"--out {args.out} exists and is not a plot fincon wrote; nothing was written: give a new path "
            "(fincon replaces only its own earlier plots)"
        )
    _check_writable(args.out)
    apart = report.settings_apart(configs)  # other costs, fills, cash or rates: said in the legend and below
    # the settings under each run's name, wrapped: on one line they pushed the axes into a third of the image
    shown = {f"{k}\n" + textwrap.fill(f"({apart[k]})", 60) if apart else k: c for k, c in curves.items()}

    try:
        engine.plot_equity(shown, args.out, args.title, software="fincon")
    except OSError as exc:
        raise FinconError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    print(f"wrote {args.out} ({len(curves)} run{'s' if len(curves) != 1 else ''})")
    if unfinished:  # drawn beside whole windows, a run that stopped early reads as a result
        print(f"note: did not cover its window: {', '.join(unfinished)}")
    if apart:
        print(f"note: the runs differ in their settings: {'; '.join(f'{k}: {v}' for k, v in apart.items())}")
    if note := _apart(curves):
        print(note)
    elif len(set(windows.values())) > 1:  # each curve starts at its cash on its own first day
        said = ", ".join(f"{k} ({', '.join(t)} {a}..{b})" for k, (t, a, b) in windows.items())
        print(f"note: the runs trade other tickers or windows, each from its own first day: {said}")
    return 0


def _apart(curves: dict[str, Any]) -> str | None:
    """A line when two of the runs share no day: their curves are side by side on the date axis, and a
    reader comparing them compares two markets (found by hand: MSFT 2020-21 beside TSLA 2022-23)."""
    spans = {k: (c.index[0], c.index[-1]) for k, c in curves.items() if len(c)}
    if len(spans) < 2:
        return None
    first = min(spans, key=lambda k: spans[k][1])  # ends first
    last = max(spans, key=lambda k: spans[k][0])  # starts last
    if spans[last][0] <= spans[first][1]:
        return None
    when = {k: f"{spans[k][0]:%Y-%m-%d}..{spans[k][1]:%Y-%m-%d}" for k in (first, last)}
    return (
        f"note: {first} ({when[first]}) and {last} ({when[last]}) share no day: their curves stand side by "
        "side on one date axis, not against each other"
    )
