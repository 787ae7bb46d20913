"""``fincon backtest``: run strategies on a window and write run directories."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from pathlib import Path
from typing import Annotated, Any

from fincon import engine, report as reports, workflow
from fincon.cli.args import ledger_path
from fincon.cli.broker_flags import add_broker, broker_overrides, check_broker_flags
from fincon.cli.flags import add, given
from fincon.cli.llm import add_llm_arguments, llm_overrides
from fincon.cli.main import EXIT_STOPPED
from fincon.cli.options import (
    TRANSCRIPTS,
    RunArgs,
    add_data,
    add_team,
    check_data_flags,
    data_overrides,
    flag_of,
    load_run_config,
    team_values,
)
from fincon.config import OUTPUT, RunConfig
from fincon.errors import ConfigError, FinconError
from fincon.files import json_text
from fincon.flag import Flag
from fincon.llm.knowledge import AUDITED
from fincon.report import write_report
from fincon.report.table import format_table, short_window_flags
from fincon.strategies.registry import base_name, strategy_names
from fincon.workflow.tables import optimizer_flags

HELP = (
    """\
Run one or more strategies over a window of daily bars and compare them with
buy-and-hold on the same window. Decisions are taken at each day's close with
data up to that day only; fills happen at that close (default) or at the
next open (--fill next-open).

Every run writes a directory (default under runs/) holding config.yaml (the
resolved config: rerun it with --config), equity.csv, positions.csv,
trades.csv, decisions.jsonl, metrics.json, summary.json and equity.png.
With several strategies, each gets a sub-directory and the top one holds
the comparison plot and metrics.

Flags override the config file; strategy parameters go through --param:
  --param markowitz.lookback=60 --param equal-weight.rebalance_every=5

Exit status: 0 every strategy completed; 2 bad input, or no strategy
finished a single day (one line on stderr, nothing written); 3 a strategy
stopped early (LLM server gone, token budget spent): results are saved up
to its last finished day, marked stopped_early in metrics.json and in the
table's status row; 143 terminated by SIGTERM (partial output removed).

"""
    + TRANSCRIPTS
)

EXAMPLES = """\
examples:
  fincon backtest --ticker TSLA --strategy buy-and-hold --start 2022-10-05 --end 2023-06-09
  fincon backtest --tickers TSLA,MSFT,PFE --strategy markowitz,equal-weight --json
  fincon backtest --config examples/run.yaml --commission 0.001 --fill next-open
  fincon backtest --ticker AAPL --data ./my_csvs --strategy sma-cross --param sma-cross.fast=5
  fincon backtest --ticker TSLA --strategy fincon --brain rules                 # the agent team, rules brain
  fincon backtest --tickers TSLA,MSFT,PFE --strategy fincon,markowitz          # the team (bundled LLM) on a portfolio
  fincon backtest --candidates TSLA,MSFT,PFE,AAPL,NFLX --strategy fincon --brain rules   # it picks its stocks
  fincon backtest --ticker TSLA --strategy llm-trader --max-tokens 20000        # bundled local model
  fincon backtest --ticker TSLA --strategy llm-trader --llm-backend openai \
      --llm-base-url http://localhost:11434/v1 --llm-model qwen2.5:1.5b          # Ollama
"""


#: the team flags backtest has (FinConParams' fields)
TEAM_FLAGS = ("brain", "events", "candidates", "beliefs", "allow_overlap", "cvar", "protocol", "samples", "critics")


class BacktestArgs(RunArgs):
    """``fincon backtest``'s own flags (what no config model holds)."""

    replace: Annotated[
        bool,
        Flag(
            help="replace --out if it is an earlier fincon run (swapped in only when the new run is complete)",
            group=OUTPUT,
        ),
    ] = False
    report: Annotated[
        bool, Flag(help="also write report.html into the run directory (the page of `fincon report`)", group=OUTPUT)
    ] = False


COMMAND = "backtest"
SUMMARY = "run strategies on a window and compare them with buy-and-hold"


def register(p: argparse.ArgumentParser) -> None:
    add_plan_flags(p, window=True)
    add(p, RunConfig, "metrics.alpha", "metrics.risk_free")
    add(p, BacktestArgs, "ledger", "out", "as_json", "no_progress", "replace", "report", helps=OUTPUT_HELPS)
    p.set_defaults(func=run)


#: what backtest's output flags say
OUTPUT_HELPS = {
    "out": "run directory (default runs/<strategies>_<tickers>_<window>); an existing one is kept "
    "and the run goes to DIR-2, DIR-3...",
    "as_json": "print the metrics as one JSON object instead of a table",
}

#: the run config's flags of backtest and forward init (the window: backtest's alone)
PLAN = ("tickers", "strategies")
WINDOW = ("start", "end")


def add_plan_flags(p: argparse.ArgumentParser, *, window: bool) -> None:
    """What a run is (strategies, tickers, parameters, data, costs, the team, the model): the flags
    ``backtest`` and ``forward init`` share; ``window``: also --start and --end."""
    add(p, BacktestArgs, "config", helps={"config": "YAML run config (see README); flags override it"})
    strategies = (
        f"one or more of: {', '.join(strategy_names())} (default buy-and-hold); NAME@LABEL is a second NAME "
        "with its own --param NAME@LABEL.KEY=VALUE (fincon@rules beside fincon)"
    )
    add(p, RunConfig, *PLAN, *(WINDOW if window else ()), helps={"strategies": strategies})
    add(p, BacktestArgs, "param")
    add(p, RunConfig, "benchmark")
    add_data(p)
    add_broker(p)
    add_team(p, *TEAM_FLAGS)
    add_llm_arguments(p, with_cutoff_gate=True, with_masking=True)


def build_config(args: argparse.Namespace) -> RunConfig:
    """The run config of ``fincon backtest``'s flags over ``--config``."""
    flags: dict[str, Any] = {
        **given(args, RunConfig, *PLAN, *WINDOW, "metrics.alpha", "metrics.risk_free", "benchmark"),
        **data_overrides(args),
        **broker_overrides(args),
    }
    team = team_values(args, *TEAM_FLAGS)
    cfg = load_run_config(
        args.config,
        flags,
        team=team,
        params=args.param,
        llm=llm_overrides(args),
        # nothing but a flag can set these without a config: an error may name their flags too
        named=() if args.config is not None else ("broker.participation",),
    )
    check_unused_flags(args, cfg)
    return with_brain(cfg, team)


#: the strategies with a brain (a model or its rules): --brain sets each one's
BRAINY = ("fincon", "finsent", "finmem")


def with_brain(cfg: RunConfig, team: dict[str, Any]) -> RunConfig:
    """``--brain`` for every strategy of the run that has one (the team, the
    single-agent baselines); the other team flags are the team's alone, an
    error naming them when it is not run."""
    # labelled copies too (fincon@r beside fincon: --brain rules reached fincon alone, and fincon@r asked a model)
    brainy = [s for s in cfg.strategies if base_name(s) in BRAINY]
    if "brain" in team:
        if not brainy:
            raise ConfigError(f"--brain applies to {', '.join(BRAINY)}; none of them is in --strategy")
        for name in brainy:
            if name != "fincon":
                given = cfg.params(name).get("brain")
                if given is not None and given != team["brain"]:
                    raise ConfigError(f"--brain {team['brain']} and --param {name}.brain={given} disagree; give one")
                cfg = cfg.with_params(name, {**cfg.params(name), "brain": team["brain"]})
    own = [key for key in team if key != "brain"]
    if "fincon" not in cfg.strategies:
        if own:
            names = ", ".join(flag_of(f"strategy_params.fincon.{key}") for key in own)
            raise ConfigError(
                f"{names} {'applies' if len(own) == 1 else 'apply'} to the agent team; add fincon to --strategy"
            )
        # --brain was written for the team too; a --param fincon.KEY (or the config's) stays, and the runner
        # refuses it as it refuses any strategy's parameters the run does not run
        rest = {k: v for k, v in cfg.params("fincon").items() if k not in team}
        params = {k: v for k, v in cfg.strategy_params.items() if k != "fincon"}
        cfg = cfg.model_copy(update={"strategy_params": params})
        if rest:
            cfg = cfg.with_params("fincon", rest)
    return cfg


def check_unused_flags(args: argparse.Namespace, cfg: RunConfig) -> None:
    """A flag the run would not read is an error (one line, exit 2), never
    dropped: the config validator catches settings that differ from their
    defaults; this catches a flag given at its default value too."""
    check_broker_flags(args, cfg.broker)
    check_data_flags(args, cfg.data)
    protocol = (cfg.params("fincon") or {}).get("protocol", "fincon")
    if getattr(args, "samples", None) is not None and protocol != "scm" and "fincon" in cfg.strategies:
        raise ConfigError(
            f"--samples is scm's (its Strategist's proposals a day); --protocol {protocol} samples none: "
            "drop it, or add --protocol scm"
        )


@contextlib.contextmanager
def _stdout_to_stderr(active: bool):
    """Send file descriptor 1 to stderr while active: native solvers (OSQP)
    sometimes print to the C-level stdout, which would corrupt --json."""
    if not active:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _llm_line(summary: dict[str, Any]) -> str:
    """One line of LLM usage for strategies that called a model ('' otherwise)."""
    if "llm_calls" not in summary:
        return ""
    return (
        f"LLM usage: {summary['llm_calls']} calls, {summary.get('llm_tokens', 0):,} tokens, "
        f"${summary.get('llm_cost_usd', 0.0):.4f}; re-asks {summary.get('llm_reasks', 0)}, "
        f"fallbacks {summary.get('llm_fallbacks', 0)}, failures {summary.get('llm_failures', 0)}"
        + (f", reused {summary['team_reused']} (no call)" if "team_reused" in summary else "")
        + (f"; structured output {summary['llm_structured_mode']}" if summary.get("llm_structured_mode") else "")
        + " (per day and agent: llm_usage.csv, llm_audit.jsonl)"
    )


def _status_label(result) -> str:
    """'complete', or where a stopped run ended (its window is shorter than the benchmark's)."""
    if not result.stopped:
        return "complete"
    return f"stopped {result.dates[-1]:%Y-%m-%d}" if len(result.dates) else "stopped"


def run(args: argparse.Namespace) -> int:
    cfg = build_config(args)
    return run_and_report(
        cfg,
        args.out,
        as_json=args.json,
        progress=not args.no_progress,
        replace=args.replace,
        html_report=args.report,
        require_after_cutoff=args.require_after_cutoff,
        ledger=ledger_path(args),
    )


def _write_html_report(run_dir: Path) -> Path:
    """``report.html`` in a finished run directory (``--report``)."""

    try:
        return write_report([run_dir], run_dir / "report.html")
    except FinconError as exc:
        raise FinconError(f"the run was saved in {run_dir}, but its report was not written: {exc}") from None


def run_and_report(
    cfg,
    out: str | None,
    *,
    as_json: bool = False,
    progress: bool = True,
    replace: bool = False,
    html_report: bool = False,
    require_after_cutoff: bool = False,
    ledger: Path | None | str = "default",
) -> int:
    """Run a resolved config, print the table (or JSON) and the notes; the exit status."""

    progress = progress and not as_json
    with _stdout_to_stderr(as_json):
        report = workflow.run_config(
            cfg,
            None if out is None else engine.check_out_path(out),
            progress=progress,
            replace=replace,
            require_after_cutoff=require_after_cutoff,
            ledger=ledger,
        )
    # status as in metrics.json (complete / stopped_early / failed); the table shows where a stop happened
    columns = {n: {"status": engine.run_status(r), **r.metrics.as_dict()} for n, r in report.results.items()}
    for n, block in report.knowledge.items():  # beside every LLM row: may the model remember this window?
        if n in columns and block["label"] != "no-model":
            audit = (block.get("audit") or {}).get("result")
            masked = f", masked: {audit}" if audit in AUDITED else ""
            columns[n]["model_knowledge"] = block["label"] + masked
    for name in report.failed:
        columns[name] = {"status": "failed"}
    bench = f"{workflow.BENCHMARK} (benchmark)"
    # every run with a result, the benchmark's as its column is named
    results = {**report.results, **({bench: report.benchmark} if report.benchmark is not None else {})}
    if report.benchmark is not None:
        columns[bench] = {"status": "complete", **report.benchmark.metrics.as_dict()}
    # what the costs took, hidden in the final value otherwise: every run's once any paid (a team that
    # never traded paid 0.00, not n/a); when none paid, no key (a run without costs prints as it did)
    if any(r.costs_paid for r in results.values()):
        for n, r in results.items():
            columns[n]["costs_paid"] = r.costs_paid
    stopped = {n: r.stopped for n, r in report.results.items() if r.stopped}
    page = _write_html_report(report.out) if html_report else None
    if as_json:
        if len(report.results) == 1:
            ((name, result),) = report.results.items()
            obj = {"strategy": name, "run_dir": str(report.out), **columns[name]}
            if result.stopped:
                obj["stop_reason"] = result.stopped
            if report.benchmark is not None:
                obj["benchmark"] = {k: v for k, v in columns[bench].items() if k != "status"}
        else:
            obj = {"run_dir": str(report.out), "strategies": columns}
        if page is not None:
            obj["report"] = str(page)
        print(json_text(obj, indent=None), end="")
    else:
        print(
            f"{', '.join(cfg.tickers)}  {cfg.start} .. {cfg.end}  (alpha={cfg.metrics.alpha}, "
            f"fill={cfg.broker.fill}, source={cfg.data.source})"
        )
        print(
            format_table(
                {
                    n: {**c, "status": _status_label(report.results[n]) if n in report.results else c["status"]}
                    for n, c in columns.items()
                }
            )
        )
        summaries = {n: r.strategy_summary for n, r in report.results.items()}
        for flag in [*short_window_flags(columns), *optimizer_flags(summaries)]:
            print(f"FLAG: {flag}")
        for name, folder in report.run_dirs.items():  # the card's "model decided" row, as it fails
            if stood_in := reports.rules_flag(folder):
                print(f"FLAG: {name}: {stood_in}")
        for name, result in report.results.items():
            line = _llm_line(result.strategy_summary)
            if line:
                print(f"\n{name} {line}")
        print(f"\nrun directory: {report.out}")
        print(f"equity plot:   {report.out / 'equity.png'}")
        if page is not None:
            print(f"report:        {page}")
    for name, reason in stopped.items():
        print(
            f"fincon: {name} stopped early ({' '.join(reason.split())}); its decisions are saved up to the last "
            "finished day, its book to the stopped day's close; the benchmark covers the full window",
            file=sys.stderr,
        )
    for name, reason in report.failed.items():
        print(f"fincon: {name} finished no day and was not written: {' '.join(reason.split())}", file=sys.stderr)
    rejected = sum(r.rejected_orders for r in report.results.values())
    if rejected:
        print(f"fincon: warning: {rejected} order(s) were rejected by the broker; see the log (-v)", file=sys.stderr)
    cap = cfg.broker.participation
    why = f" under the participation cap ({100 * cap:.3g}% of the day's volume)" if cap else ""
    for name, result in results.items():  # a book cut short, said where it is read
        orders = result.orders
        cut = int((orders["status"] == "partial").sum()) if orders is not None and len(orders) else 0
        if cut:
            print(
                f"fincon: warning: {name}: {cut} of {len(orders)} orders filled in part{why}: the book held less "
                "than it decided (orders.csv names each)",
                file=sys.stderr,
            )
    return 0 if report.complete else EXIT_STOPPED
