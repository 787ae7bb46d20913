"""``fincon backtest``: run strategies on a window and write run directories."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from fincon.cli.args import add_ledger_argument, iso_date, ledger_path, number
from fincon.cli.llm import add_llm_arguments, llm_overrides
from fincon.config import load_config
from fincon.errors import ConfigError
from fincon.report.table import format_table
from fincon.strategies.registry import strategy_names

HELP = """\
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

Transcripts: the team hears earnings calls through Whisper (rules brain
too) and caches the transcripts outside the run directory, in
$FINCON_CACHE_DIR/transcripts/ (default ~/.cache/fincon/transcripts/).
Move it with FINCON_CACHE_DIR=DIR or --param fincon.transcript_cache=DIR;
clear it with `rm -r ~/.cache/fincon/transcripts` (docs/information.md).
"""

EXAMPLES = """\
examples:
  fincon backtest --ticker TSLA --strategy buy-and-hold --start 2022-10-05 --end 2023-06-09
  fincon backtest --tickers TSLA,MSFT,PFE --strategy markowitz,equal-weight --json
  fincon backtest --config examples/run.yaml --commission 0.001 --fill next-open
  fincon backtest --ticker AAPL --data ./my_csvs --strategy sma-cross --param sma-cross.fast=5
  fincon backtest --ticker TSLA --strategy fincon --brain rules                 # the agent team, rules brain
  fincon backtest --tickers TSLA,MSFT,PFE --strategy fincon,markowitz          # the team (bundled LLM) on a portfolio
  fincon backtest --candidates TSLA,MSFT,PFE,AAPL,NFLX --strategy fincon --brain rules --events runs/events-planted
  fincon backtest --ticker TSLA --strategy llm-trader --max-tokens 20000        # bundled local model
  fincon backtest --ticker TSLA --strategy llm-trader --llm-backend openai \
      --llm-base-url http://localhost:11434/v1 --llm-model qwen2.5:1.5b          # Ollama
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "backtest",
        help="run strategies on a window and compare them with buy-and-hold",
        description=HELP,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g = p.add_argument_group("what to run")
    g.add_argument("--config", type=Path, help="YAML run config (see README); flags override it")
    g.add_argument(
        "--ticker",
        "--tickers",
        dest="tickers",
        metavar="T[,T...]",
        help="ticker or comma-separated tickers (default TSLA)",
    )
    g.add_argument(
        "--strategy",
        "--strategies",
        dest="strategies",
        metavar="NAME[,NAME...]",
        help=f"one or more of: {', '.join(strategy_names())} (default buy-and-hold)",
    )
    g.add_argument("--start", type=iso_date, help="first trading day, YYYY-MM-DD (default 2022-10-05)")
    g.add_argument("--end", type=iso_date, help="last trading day, YYYY-MM-DD (default 2023-06-09)")
    g.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="STRATEGY.KEY=VALUE",
        help="strategy parameter, repeatable (value parsed as YAML)",
    )
    g.add_argument("--no-benchmark", action="store_true", help="do not add buy-and-hold")
    d = p.add_argument_group("data")
    d.add_argument(
        "--source",
        choices=["sample", "csv", "yfinance"],
        help="price source (default sample: bundled, offline; csv implied by --data)",
    )
    d.add_argument(
        "--data",
        type=Path,
        metavar="DIR",
        help="a dataset directory from `fincon data import` (its prices, events and calendar), or a "
        "directory of TICKER.csv files with Date,Open,High,Low,Close,Adj Close,Volume",
    )
    d.add_argument(
        "--cache-dir",
        type=Path,
        help="yfinance download cache (default $FINCON_CACHE_DIR/yfinance, else ~/.cache/fincon/yfinance)",
    )
    b = p.add_argument_group("broker")
    b.add_argument("--cash", type=number(float, 0, lo_open=True), help="starting cash (default 1,000,000)")
    b.add_argument(
        "--commission",
        type=number(float, 0, 0.1, hi_open=True),
        help="fraction of traded value, e.g. 0.001 (default 0)",
    )
    b.add_argument(
        "--commission-model",
        choices=["percent", "per-share", "zero"],
        help="percent of value (default, --commission), per share with a minimum and a maximum per "
        "order (--commission-per-share, --commission-min, --commission-max), or zero",
    )
    b.add_argument(
        "--commission-per-share",
        type=number(float, 0, 10, hi_open=True),
        metavar="USD",
        help="per-share: dollars a share (0.005)",
    )
    b.add_argument(
        "--commission-min",
        type=number(float, 0, 1000, hi_open=True),
        metavar="USD",
        help="per-share: dollars an order at least (1.0)",
    )
    b.add_argument(
        "--commission-max",
        type=number(float, 0, 1, hi_open=True),
        metavar="FRAC",
        help="per-share: fraction of the order's value at most (0.01; 0: no maximum)",
    )
    b.add_argument(
        "--slippage",
        type=number(float, 0, 1000, hi_open=True),
        help="fraction of price, e.g. 0.0005 (default 0; below 0.1); basis points with --slippage-model "
        "bps; a fraction of the decision day's high-low range with --slippage-model range",
    )
    b.add_argument("--slippage-model", choices=["percent", "bps", "range"], help="how --slippage reads (percent)")
    b.add_argument(
        "--participation",
        type=number(float, 0, 1, lo_open=True),
        metavar="FRAC",
        help="an order fills at most this fraction of the day's volume, e.g. 0.025; every partial or "
        "rejected order is in orders.csv with its reason",
    )
    b.add_argument(
        "--charge-llm",
        action="store_true",
        default=None,
        help="take each day's LLM spend from the cash, a trading cost (priced by --llm-prices; "
        "equity.csv gets an llm_cost_usd column)",
    )
    b.add_argument(
        "--participation-rest",
        choices=["cancel", "carry"],
        help="the unfilled rest of a capped order: cancel (default) or carry to the next day",
    )
    b.add_argument("--fill", choices=["close", "next-open"], help="fill at the decision close (default) or next open")
    t = p.add_argument_group("agent team (--strategy fincon; see README)")
    t.add_argument(
        "--brain",
        choices=["llm", "rules"],
        help="llm: every agent asks the model (default); rules: deterministic baseline, runs in seconds",
    )
    t.add_argument(
        "--events",
        metavar="sample|DIR",
        help="event corpus the analysts read: the bundled synthetic sample (default) or a directory "
        "written by `fincon data sample` / in the event format of docs/information.md",
    )
    t.add_argument(
        "--candidates",
        metavar="T[,T...]",
        help="portfolio: tickers the stock-selection analyst picks the traded pool from "
        "(sets --tickers when that is not given)",
    )
    t.add_argument(
        "--beliefs",
        metavar="FILE|RUN",
        help="start from learned investment beliefs and reflections: a beliefs.json or the run dir of "
        "`fincon train` (test stage: no belief learning, CVaR alerts stay on)",
    )
    t.add_argument(
        "--allow-overlap",
        action="store_true",
        help="accept --beliefs trained on a window that does not end before --start "
        "(lookahead: flagged in the summary and on stderr)",
    )
    t.add_argument(
        "--no-cvar", action="store_true", help="turn off the within-episode CVaR alert (the paper's ablation)"
    )
    t.add_argument(
        "--protocol",
        metavar="NAME",
        help="decision step after the analysts: fincon (the paper's manager, default); see "
        "docs/protocols.md for the others",
    )
    t.add_argument(
        "--samples",
        type=number(int, 1, 9),
        metavar="N",
        help="protocols that sample several proposals (scm): how many per day (default 3)",
    )
    t.add_argument(
        "--critics",
        choices=["on", "off"],
        help="numeric critics check the analysts' figures about filings and calls (default off)",
    )
    add_llm_arguments(p, with_cutoff_gate=True, with_masking=True)
    m = p.add_argument_group("metrics and output")
    add_ledger_argument(m)
    m.add_argument(
        "--alpha",
        type=number(float, 0, 0.5, lo_open=True, hi_open=True),
        help="VaR/CVaR tail probability (default 0.05)",
    )
    m.add_argument(
        "--risk-free", type=number(float, -0.1, 0.5, hi_open=True), help="annual risk-free rate for Sharpe (default 0)"
    )
    m.add_argument(
        "--out",
        metavar="DIR",
        help="run directory (default runs/<strategies>_<tickers>_<window>); an existing one is kept "
        "and the run goes to DIR-2, DIR-3...",
    )
    m.add_argument(
        "--replace",
        action="store_true",
        help="replace --out if it is an earlier fincon run (swapped in only when the new run is complete)",
    )
    m.add_argument("--json", action="store_true", help="print the metrics as one JSON object instead of a table")
    m.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    m.add_argument(
        "--report",
        action="store_true",
        help="also write report.html into the run directory (the page of `fincon report`)",
    )
    p.set_defaults(func=run)


def _parse_params(items: list[str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        name, dot, field = key.rpartition(".")
        if not sep or not dot or not name or not field:
            raise ConfigError(f"--param {item!r}: expected STRATEGY.KEY=VALUE, e.g. markowitz.lookback=60")
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError:
            value = raw
        out.setdefault(name, {})[field] = value
    return out


def _split(text: str | None) -> list[str] | None:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def build_config(args: argparse.Namespace):
    overrides: dict[str, Any] = {
        "tickers": _split(args.tickers),
        "strategies": _split(args.strategies),
        "start": args.start,
        "end": args.end,
        "data.source": args.source or ("csv" if args.data else None),
        # saved absolute, so the run's config.yaml works from any directory
        "data.dir": str(args.data.expanduser().absolute()) if args.data else None,
        "data.cache_dir": str(args.cache_dir.expanduser().absolute()) if args.cache_dir else None,
        "broker.cash": args.cash,
        "broker.commission": args.commission,
        "broker.slippage": args.slippage,
        "broker.commission_model": getattr(args, "commission_model", None),
        "broker.commission_per_share": getattr(args, "commission_per_share", None),
        "broker.commission_min": getattr(args, "commission_min", None),
        "broker.commission_max": getattr(args, "commission_max", None),
        "broker.slippage_model": getattr(args, "slippage_model", None),
        "broker.participation": getattr(args, "participation", None),
        "broker.participation_rest": getattr(args, "participation_rest", None),
        "broker.charge_llm": getattr(args, "charge_llm", None),
        "broker.fill": args.fill.replace("-", "_") if args.fill else None,
        "metrics.alpha": args.alpha,
        "metrics.risk_free": args.risk_free,
        "benchmark": False if args.no_benchmark else None,
    }
    for key, value in llm_overrides(args).items():
        overrides[f"llm.{key}"] = str(value) if isinstance(value, Path) else value
    # commands that share this builder (train, experiment) may lack some team flags
    opt = lambda name: getattr(args, name, None)  # noqa: E731
    team = {
        "brain": args.brain,
        "events": args.events,
        "candidates": _split(args.candidates),
        "beliefs": str(Path(args.beliefs).expanduser().absolute()) if opt("beliefs") else None,
        "allow_overlap": True if opt("allow_overlap") else None,
        "cvar": False if opt("no_cvar") else None,
        "protocol": opt("protocol"),
        "samples": opt("samples"),
        "critics": None if opt("critics") is None else opt("critics") == "on",
    }
    if args.events and args.events != "sample":
        team["events"] = str(Path(args.events).expanduser().absolute())
    team = {k: v for k, v in team.items() if v is not None}
    if team:
        if "candidates" in team and not overrides["tickers"]:
            overrides["tickers"] = team["candidates"]
        for key, value in team.items():
            overrides[f"strategy_params.fincon.{key}"] = value
    for name, params in _parse_params(args.param).items():
        for key, value in params.items():
            overrides[f"strategy_params.{name}.{key}"] = value
    flags = {key: _flag_of(key) for key, value in overrides.items() if value is not None}
    if args.config is None:  # nothing but a flag can set these: an error may name their flags too
        flags.update({key: _flag_of(key) for key in ("broker.commission_model", "broker.participation")})
    cfg = load_config(args.config, overrides, flags)
    check_unused_flags(args, cfg)
    if team and "fincon" not in cfg.strategies:
        flags = ", ".join({"cvar": "--no-cvar"}.get(k, f"--{k}") for k in team)
        raise ConfigError(f"{flags} apply to the agent team; add fincon to --strategy")
    return cfg


#: config keys whose flag is not --KEY-WITH-DASHES
_FLAG_NAMES = {
    "strategies": "--strategy",
    "data.dir": "--data",
    "benchmark": "--no-benchmark",
    "strategy_params.fincon.cvar": "--no-cvar",
    "strategy_params.fincon.critics": "--critics",
}


def _flag_of(key: str) -> str:
    """The flag that sets config ``key`` (``broker.commission_min`` -> ``--commission-min``;
    a strategy parameter set with --param is named as that --param)."""
    if key in _FLAG_NAMES:
        return _FLAG_NAMES[key]
    if key.startswith("strategy_params.fincon."):
        return "--" + key.rsplit(".", 1)[1].replace("_", "-")
    if key.startswith("strategy_params."):
        return "--param " + key[len("strategy_params.") :]
    if key.startswith("llm."):
        return "--llm-" + key[4:].replace("_", "-")
    return "--" + key.rsplit(".", 1)[-1].replace("_", "-")


def check_unused_flags(args: argparse.Namespace, cfg) -> None:
    """A flag the run would not read is an error (one line, exit 2), never
    dropped: the config validator catches settings that differ from their
    defaults; this catches a flag given at its default value too."""
    b = cfg.broker
    opt = lambda name: getattr(args, name, None)  # noqa: E731
    for name in ("commission_per_share", "commission_min", "commission_max"):
        flag = "--" + name.replace("_", "-")
        if opt(name) is not None and b.commission_model != "per-share":
            raise ConfigError(
                f"{flag} applies to --commission-model per-share (this run's commission model is "
                f"{b.commission_model}); add --commission-model per-share or drop {flag}"
            )
    if opt("commission") is not None and b.commission_model != "percent":
        raise ConfigError(
            f"--commission is the percent model's rate; --commission-model {b.commission_model} does not read it: "
            "drop --commission"
            + (" (the price a share is --commission-per-share)" if b.commission_model == "per-share" else "")
        )
    if opt("participation_rest") is not None and b.participation is None:
        raise ConfigError("--participation-rest applies to a participation cap: add --participation (e.g. 0.025)")
    if opt("data") is not None and opt("source") not in (None, "csv"):
        raise ConfigError(
            f"--source {opt('source')} does not read --data {opt('data')} (that is a folder of prices): drop one of them"
        )
    if opt("cache_dir") is not None and cfg.data.source != "yfinance":
        raise ConfigError("--cache-dir is the yfinance download cache: add --source yfinance or drop --cache-dir")


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
    from fincon.errors import FinconError
    from fincon.report import write_report

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
    from fincon.cli.main import EXIT_STOPPED
    from fincon.engine.rundir import check_out_path
    from fincon.workflow.runner import BENCHMARK, run_config, run_status

    progress = progress and not as_json
    with _stdout_to_stderr(as_json):
        report = run_config(
            cfg,
            None if out is None else check_out_path(out),
            progress=progress,
            replace=replace,
            require_after_cutoff=require_after_cutoff,
            ledger=ledger,
        )
    # status as in metrics.json (complete / stopped_early / failed); the table shows where a stop happened
    columns = {n: {"status": run_status(r), **r.metrics.as_dict()} for n, r in report.results.items()}
    for n, block in report.knowledge.items():  # beside every LLM row: may the model remember this window?
        if n in columns and block["label"] != "no-model":
            columns[n]["model_knowledge"] = block["label"]
    for name in report.failed:
        columns[name] = {"status": "failed"}
    if report.benchmark is not None:
        columns[f"{BENCHMARK} (benchmark)"] = {"status": "complete", **report.benchmark.metrics.as_dict()}
    stopped = {n: r.stopped for n, r in report.results.items() if r.stopped}
    page = _write_html_report(report.out) if html_report else None
    if as_json:
        if len(report.results) == 1:
            ((name, result),) = report.results.items()
            obj = {"strategy": name, "run_dir": str(report.out), **columns[name]}
            if result.stopped:
                obj["stop_reason"] = result.stopped
            if report.benchmark is not None:
                obj["benchmark"] = report.benchmark.metrics.as_dict()
        else:
            obj = {"run_dir": str(report.out), "strategies": columns}
        if page is not None:
            obj["report"] = str(page)
        print(json.dumps(obj, sort_keys=True))
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
            f"fincon: {name} stopped early ({' '.join(reason.split())}); results saved up to the last "
            "finished day; the benchmark covers the full window",
            file=sys.stderr,
        )
    for name, reason in report.failed.items():
        print(f"fincon: {name} finished no day and was not written: {' '.join(reason.split())}", file=sys.stderr)
    rejected = sum(r.rejected_orders for r in report.results.values())
    if rejected:
        print(f"fincon: warning: {rejected} order(s) were rejected by the broker; see the log (-v)", file=sys.stderr)
    return 0 if report.complete else EXIT_STOPPED
