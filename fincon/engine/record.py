"""What a run directory holds, written and read in one place.

A strategy's run directory is written once, by :func:`write_run`, from the
engine's :class:`~fincon.engine.backtest.BacktestResult`:

==========================  ===================================================
``config.yaml``             the resolved config (rerun it with ``--config``)
``equity.csv``              ``date,value`` (and ``llm_cost_usd`` when charged)
``benchmark_equity.csv``    buy-and-hold's curve on the same bars
``positions.csv``           shares and weight held at each close
``trades.csv``              every fill; ``orders.csv`` every order
``decisions.jsonl``         every decision with the evidence it cites
``metrics.json``            status and every metric
``summary.json``            run facts, the strategy's own summary, the benchmark's metrics
``equity.png``              the chart (a forward step's replay leaves it to ``score``)
==========================  ===================================================

Every module that reads one (the report, the card, training, experiments,
rolling evaluations, forward journals, ``plot``, ``explain``) reads it
through :class:`RunRecord`, whose fields are read when first asked for; a
file that is present but not what fincon writes is a :class:`DataError`
naming it, never a traceback.
"""

from __future__ import annotations

import csv
import json
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd
import yaml

from fincon import engine
from fincon.engine.broker import BrokerSettings
from fincon.engine.rundir import add_files, run_kind, write_json
from fincon.errors import DataError

CONFIG = "config.yaml"
EQUITY = "equity.csv"
BENCHMARK_EQUITY = "benchmark_equity.csv"
POSITIONS = "positions.csv"
TRADES = "trades.csv"
ROUND_TRIPS = "round_trips.csv"
ORDERS = "orders.csv"
DECISIONS = "decisions.jsonl"
METRICS = "metrics.json"
SUMMARY = "summary.json"
CHART = "equity.png"
USAGE = "llm_usage.csv"
RUNTIME = "llm_runtime.csv"
AUDIT = "llm_audit.jsonl"
CALLS = "llm_calls.csv"


# -- small readers -----------------------------------------------------------------------------


def read_json(path: Path) -> Any:
    """A JSON file fincon wrote; unreadable or not JSON: a :class:`DataError` naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({type(exc).__name__})") from None
    except json.JSONDecodeError:
        raise DataError(f"{path}: not valid JSON; is this a fincon run directory?") from None


#: what a decisions.jsonl line holds, by type, where present
DECISION_SHAPE: dict[str, type | tuple[type, ...]] = {
    "date": str,
    "record": dict,
    "actions": dict,
    "weights": (dict, type(None)),
    "rationale": str,
    "evidence": list,
}

#: what a team record holds (the report and ``fincon explain`` read it); None allowed where the team may omit it
RECORD_SHAPE: dict[str, type | tuple[type, ...]] = {
    "agents": list,
    "manager": dict,
    "calls": dict,
    "pool": list,
    "selection": (dict, type(None)),
    "settled": (dict, type(None)),
    "risk": (dict, type(None)),
    "closes": dict,
}


def record_problem(rec: Any) -> str | None:
    """Why a decisions.jsonl team record is not laid out as fincon writes it (None: it is)."""
    if not isinstance(rec, dict):
        return f"the team record is a {type(rec).__name__}, not a JSON object"
    for key, want in RECORD_SHAPE.items():
        if key in rec and not isinstance(rec[key], want):
            return f"record.{key} is a {type(rec[key]).__name__}"
    bad = [i for i, a in enumerate(rec.get("agents") or []) if not isinstance(a, dict)]
    if bad:
        return f"record.agents[{bad[0]}] is not a JSON object"
    return None


def read_jsonl(path: Path, shape: Mapping[str, type | tuple[type, ...]] | None = None) -> list[dict[str, Any]]:
    """A JSON-lines file fincon wrote ([] when absent); ``shape`` names keys whose values must have a
    type when present (a line of another shape is an error naming the line)."""
    if not path.is_file():
        return []
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({type(exc).__name__}; not the text fincon wrote)") from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            raise DataError(f"{path}:{n}: not a JSON line (a truncated or foreign file?)") from None
        if not isinstance(obj, dict):
            raise DataError(f"{path}:{n}: expected a JSON object, found {type(obj).__name__}")
        for key, want in (shape or {}).items():
            if key in obj and not isinstance(obj[key], want):
                raise DataError(f"{path}:{n}: {key!r} is a {type(obj[key]).__name__}, not what fincon writes")
        if shape is DECISION_SHAPE and "record" in obj and record_problem(obj["record"]):
            raise DataError(f"{path}:{n}: {record_problem(obj['record'])}, not what fincon writes")
        out.append(obj)
    return out


def read_csv_rows(path: Path) -> list[dict[str, str]]:
    """A CSV fincon wrote, as rows ([] when absent)."""
    if not path.is_file():
        return []
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return list(csv.DictReader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataError(f"{path}: cannot read ({type(exc).__name__}; not the CSV fincon wrote)") from None


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML config fincon wrote ({} when absent or not a mapping)."""
    if not path.is_file():
        return {}
    try:
        obj = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValueError):  # ValueError: a date that is no date
        raise DataError(f"{path}: not a readable YAML config") from None
    return obj if isinstance(obj, dict) else {}


def read_curve(path: Path) -> pd.Series:
    """An equity curve (``date,value``) as a value series; a file that is empty or not in that layout
    is a :class:`DataError` naming it."""
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise DataError(f"{path}: cannot read ({type(exc).__name__}); is this a fincon run directory?") from None
    if list(frame.columns[:2]) != ["date", "value"] or not set(frame.columns[2:]) <= {"llm_cost_usd"}:
        raise DataError(f"{path}: expected the columns date,value, found {','.join(map(str, frame.columns))[:60]}")
    dates = pd.to_datetime(frame["date"], errors="coerce", format="%Y-%m-%d")
    values = pd.to_numeric(frame["value"], errors="coerce")
    if frame.empty or dates.isna().any() or values.isna().any() or not np.isfinite(values).all():
        raise DataError(f"{path}: no rows, or rows that are not YYYY-MM-DD,number; rerun the backtest")
    return pd.Series(values.to_numpy(dtype=float), index=pd.DatetimeIndex(dates, name="date"), name="value")


def is_run(path: Path) -> bool:
    """``path`` is one strategy's run directory (its metrics and its curve)."""
    return (path / METRICS).is_file() and (path / EQUITY).is_file()


def member_run(top: Path, name: str, metrics: Any) -> Path | None:
    """Strategy ``name``'s run in the comparison ``top`` (its top metrics.json gave ``metrics``), or
    None for one with no run (the benchmark's column, a strategy that failed before its first day); a
    complete strategy whose folder is gone is refused (plot drew the rest as the whole comparison)."""
    sub = top / name
    if is_run(sub):
        return sub
    if isinstance(metrics, dict) and metrics.get("status") == "complete" and not name.endswith("(benchmark)"):
        raise DataError(
            f"{top / METRICS} names {name}, complete, but {sub} holds no run (its metrics.json and equity.csv): "
            "the run directory is damaged; run it again"
        )
    return None


def team_day(entry: Any) -> bool:
    """A decision line of an agent team: its record lists the agents (finsent keeps a record too, of
    its items' scores, and is no team)."""
    return isinstance(entry, dict) and isinstance(entry.get("record"), dict) and "agents" in entry["record"]


class RunRecord:
    """One strategy's run directory, read: each field when first asked for."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    @cached_property
    def metrics(self) -> dict[str, Any]:
        m = read_json(self.path / METRICS)
        if not isinstance(m, dict):
            raise DataError(f"{self.path / METRICS}: expected a JSON object")
        return m

    @cached_property
    def summary(self) -> dict[str, Any]:
        """``summary.json`` ({} for a run without one)."""
        s = read_json(self.path / SUMMARY) if (self.path / SUMMARY).is_file() else {}
        return s if isinstance(s, dict) else {}

    @property
    def strategy_summary(self) -> dict[str, Any]:
        """What the strategy said of itself at its end (the team's counts, beliefs, usage)."""
        return self.summary.get("strategy_summary") or {}

    @cached_property
    def config(self) -> dict[str, Any]:
        """``config.yaml`` as plain data ({} without one)."""
        return read_yaml(self.path / CONFIG)

    @cached_property
    def equity(self) -> pd.Series:
        """The curve, as whole as metrics.json and summary.json say it is: one cut short was drawn and
        scored beside the metrics of the whole run (a report contradicting itself, exit 0)."""
        curve = read_curve(self.path / EQUITY)
        days = self.metrics.get("n_days") if (self.path / METRICS).is_file() else None
        span = (self.summary.get("first_day"), self.summary.get("last_day"))
        held = (f"{curve.index[0]:%Y-%m-%d}", f"{curve.index[-1]:%Y-%m-%d}") if len(curve) else (None, None)
        if (isinstance(days, int) and days != len(curve)) or (all(span) and span != held):
            said = f"{days} closes" if isinstance(days, int) else "its closes"
            raise DataError(
                f"{self.path / EQUITY}: {len(curve)} closes, {held[0]}..{held[1]}, where {METRICS} counts {said}"
                + (f" from {span[0]} to {span[1]}" if all(span) else "")
                + ": the run directory is damaged; run it again"
            )
        return curve

    @cached_property
    def benchmark_equity(self) -> pd.Series | None:
        """Buy-and-hold's curve on the run's bars (None: a run written without its benchmark)."""
        path = self.path / BENCHMARK_EQUITY
        return read_curve(path) if path.is_file() else None

    @cached_property
    def written(self) -> set[str] | None:
        """The files of this run its run manifest (its own, or its comparison's) says were written, by
        name within the run, or None when no manifest lists them (a run of an older fincon, a test's)."""
        for top, prefix in ((self.path, ""), (self.path.parent, f"{self.path.name}/")):
            _, files = run_kind(top)
            if files is not None:
                return {f[len(prefix) :] for f in files if f.startswith(prefix)} or None
        return None

    def _file(self, name: str, why: str | None = None) -> Path:
        """``name`` in the run, refused when it is gone and the manifest lists it (or ``why`` says what
        else shows it was written): a reader that took a missing file for an empty one showed a run
        without decisions (or usage) as complete, and the report card scored the damaged copy kinder."""
        path = self.path / name
        if not path.is_file() and (why or name in (self.written or ())):
            where = why or "run_manifest.json lists it"
            raise DataError(f"{path}: missing, where {where}: the run directory is damaged; run it again")
        return path

    @cached_property
    def decisions(self) -> list[dict[str, Any]]:
        days = self.metrics.get("n_days") if (self.path / METRICS).is_file() else None
        written = f"{METRICS} counts {days} days" if isinstance(days, int) and days > 1 else None
        rows = read_jsonl(self._file(DECISIONS, written), DECISION_SHAPE)
        if isinstance(days, int) and len(rows) not in (days - 1, days):  # one a day, the last but one's
            raise DataError(
                f"{self.path / DECISIONS}: {len(rows)} decisions where {METRICS} counts {days} days (one a day "
                "before the last): the run directory is damaged; run it again"
            )
        return rows

    @cached_property
    def usage(self) -> list[dict[str, str]]:
        made = any(((d.get("record") or {}).get("calls") or {}).get("made") for d in self.decisions)
        return read_csv_rows(self._file(USAGE, "its decisions record model calls" if made else None))

    @cached_property
    def runtime(self) -> list[dict[str, str]]:
        """``llm_runtime.csv``: each day and agent's live calls and cache hits ([] without one)."""
        path = self._file(RUNTIME)
        return read_csv_rows(path) if path.is_file() else []

    @cached_property
    def audit(self) -> list[dict[str, Any]]:
        return read_jsonl(self._file(AUDIT))

    @cached_property
    def orders(self) -> list[dict[str, str]]:
        """``orders.csv`` as text rows ([] without one)."""
        return read_csv_rows(self._file(ORDERS))

    @cached_property
    def calls(self) -> list[dict[str, str]]:
        """``llm_calls.csv``: each model call's day, agent and cache key ([] without one)."""
        return read_csv_rows(self._file(CALLS))

    def masked_note(self, date: str) -> str | None:
        """For a masked run, what a reader of its day (``fincon explain``, the report's timeline) must
        know: the model read none of the items as they are printed; the command that prints one of the
        day's prompts as sent; what the run's leakage audit found. None for a named run."""
        llm = self.config.get("llm") or {}
        if not llm.get("anonymize"):
            return None
        keys = [r for r in self.calls if r.get("day") == date]
        audit = (self.metrics.get("model_knowledge") or {}).get("audit") or {}
        sent = (
            f"the day's {len(keys)} prompts as sent: fincon llm cache --path {llm.get('cache_path') or 'CACHE'} "
            f"--key {keys[0]['key'][:16]} ({keys[0]['agent']}; llm_calls.csv lists the others)"
            if keys
            else "no prompt of the day in llm_calls.csv (its reports were reused)"
        )
        found = (
            f"; leakage audit: {audit['result']} ({audit.get('firm_and_day')} of {audit.get('prompts')} "
            "prompts give firm and day away)"
            if audit.get("result")
            else ""
        )
        return (
            "masked: the model read the items above masked (firms as pseudonyms, dates as recency, an item as its "
            f"{'topic and ' if llm.get('mask_items', 'topics') == 'topics' else ''}tone word; who is who in masking.json), not as "
            f"printed; {sent}{found}"
        )

    @property
    def strategy(self) -> str:
        return str(self.metrics.get("strategy") or self.summary.get("strategy") or self.path.name)

    @property
    def status(self) -> str | None:
        """``complete`` or ``stopped_early`` (metrics.json)."""
        return self.metrics.get("status")

    @property
    def team(self) -> bool:
        """The run is an agent team's (its decisions carry records of its agents)."""
        return any(team_day(d) for d in self.decisions)

    @property
    def window(self) -> tuple[tuple[str, ...], str, str]:
        """(tickers, first day, last day) of the market the run traded (the benchmark's window, even
        for a run that stopped early)."""
        tickers = tuple(self.config.get("tickers") or self.summary.get("tickers") or ())
        start = str(self.config.get("start") or self.summary.get("first_day") or "")
        end = str(self.config.get("end") or self.summary.get("last_day") or "")
        return tickers, start, end


# -- writing ------------------------------------------------------------------------------------


def run_status(result: Any) -> str:
    """``complete`` or ``stopped_early``, as in metrics.json."""
    return "stopped_early" if result.stopped else "complete"


def costs_summary(settings: BrokerSettings, result: Any) -> dict[str, Any]:
    """The cost and fill settings in force and what they cost (metrics.json ``costs``)."""
    out: dict[str, Any] = {
        **settings.costs.summary(),
        "commission_paid": round(result.commission_paid, 6),
    }
    if settings.costs.slips:
        out["slippage_paid"] = round(float(result.slippage_paid), 6)
    if settings.costs.borrow:
        out["borrow_paid"] = round(float(result.borrow_paid), 6)
    if result.llm_cost is not None:
        out["llm_charged_usd"] = round(float(result.llm_cost.sum()), 6)
    if result.orders is not None and len(result.orders):
        counts = result.orders["status"].value_counts()
        out.update(
            orders=int(len(result.orders)),
            orders_partial=int(counts.get("partial", 0)),
            orders_rejected=int(counts.get("rejected", 0)),
        )
    return out


def draw(curves: Mapping[str, pd.Series], out: Path, title: str, decisions: Mapping[str, list] | None = None) -> None:
    """The equity chart, each strategy's CVaR alert days (from its ``decisions``) marked."""
    # matplotlib is imported only when a run is written: a run that fails
    # earlier (bad input) must not even create matplotlib's font cache

    alerts = {n: engine.alert_days(d) for n, d in (decisions or {}).items()}
    engine.plot_equity(dict(curves), out, title, alerts={n: d for n, d in alerts.items() if d})


def benchmark_metrics(settings: BrokerSettings, benchmark: Any, strategy: bool = False) -> dict[str, Any]:
    """The benchmark's metrics as summary.json and a comparison's metrics.json hold them: with its costs
    block when a cost is set (it pays them too: the terminal said buy-and-hold paid $1,498.25 and no file
    did), and without one otherwise, as a run without costs always wrote them."""
    out = {"strategy": benchmark.strategy} if strategy else {}
    out.update(benchmark.metrics.as_dict())
    if not settings.costs.default:
        out["costs"] = costs_summary(settings, benchmark)
    return out


def write_run(
    path: Path,
    config_yaml: str,
    title: str,
    settings: BrokerSettings,
    result: Any,
    benchmark: Any | None,
    *,
    version: str,
    dropped: int,
    calendar: str | None = None,
    model_knowledge: Mapping[str, Any] | None = None,
    lookahead: str | None = None,
    plot: bool = True,
) -> None:
    """Write one strategy's run directory (every file in this module's table) from its
    ``BacktestResult`` and the benchmark's."""
    (path / CONFIG).write_text(config_yaml)
    equity = pd.DataFrame({"date": result.dates.strftime("%Y-%m-%d"), "value": result.values})
    if result.llm_cost is not None:
        equity["llm_cost_usd"] = result.llm_cost
    equity.to_csv(path / EQUITY, index=False, float_format="%.6f")
    result.positions.to_csv(path / POSITIONS, index=False, float_format="%.10g")
    result.trades.to_csv(path / TRADES, index=False, float_format="%.10g")
    if result.orders is not None:
        result.orders.to_csv(path / ORDERS, index=False, float_format="%.10g")
    if result.round_trips is not None:
        result.round_trips.to_csv(path / ROUND_TRIPS, index=False, float_format="%.10g", lineterminator="\n")
    with open(path / DECISIONS, "w") as fh:
        for entry in result.decisions:
            fh.write(json.dumps(entry, sort_keys=True) + "\n")
    status = run_status(result)
    metrics = {"strategy": result.strategy, "status": status, **result.metrics.as_dict()}
    if calendar:
        metrics["annualisation"] = calendar
    if model_knowledge is not None:
        metrics["model_knowledge"] = dict(model_knowledge)
    if lookahead:
        metrics["data_lookahead"] = lookahead
    metrics["costs"] = costs_summary(settings, result)
    write_json(path / METRICS, metrics)
    summary: dict[str, Any] = {
        "fincon_version": version,
        "strategy": result.strategy,
        "tickers": list(result.tickers),
        "first_day": result.dates[0].strftime("%Y-%m-%d") if len(result.dates) else None,
        "last_day": result.dates[-1].strftime("%Y-%m-%d") if len(result.dates) else None,
        "status": status,
        "stop_reason": result.stopped,
        "rejected_orders": result.rejected_orders,
        "days_buys_scaled_to_cash": result.scaled_days,
        "dropped_dates": dropped,
        "backtrader_drawdown_max_pct": round(result.analyzers["drawdown_max_pct"], 10),
        "strategy_summary": result.strategy_summary,
        "benchmark": benchmark_metrics(settings, benchmark, strategy=True) if benchmark is not None else None,
    }
    write_json(path / SUMMARY, summary)
    if benchmark is not None:  # its curve, so that a report draws it without running the engine again
        pd.DataFrame({"date": benchmark.dates.strftime("%Y-%m-%d"), "value": benchmark.values}).to_csv(
            path / BENCHMARK_EQUITY, index=False, float_format="%.6f"
        )
    curves = {result.strategy: result.equity}
    if benchmark is not None:
        curves[f"{benchmark.strategy} (benchmark)"] = benchmark.equity
    if plot:
        draw(curves, path / CHART, title, {result.strategy: result.decisions})


def draw_charts(root: Path, title: str, names: list[str]) -> None:
    """The ``equity.png`` of a run written with its charts off (a forward step's replay), drawn from
    what it wrote: each strategy's curve and decisions (its CVaR alert days), and the comparison's."""
    multi = len(names) > 1
    runs = {name: RunRecord(root / name if multi else root) for name in names}
    # the run's own before a pixel is drawn: a stop while drawing left charts no manifest listed, and
    # every later step refused to replace the replay ("which no fincon run wrote", found in review)
    add_files(root, [r.path / CHART for r in runs.values()] + ([root / CHART] if multi else []))
    curves = {name: rec.equity.rename(name) for name, rec in runs.items()}
    decisions = {name: rec.decisions for name, rec in runs.items()}
    for name, rec in runs.items():
        draw({name: curves[name]}, rec.path / CHART, title, {name: decisions[name]})
    if multi:
        draw(curves, root / CHART, title, decisions)
