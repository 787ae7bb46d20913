"""From a validated :class:`~fincon.config.RunConfig` to run directories.

One code path for every strategy: load and validate the data once (with the
largest warm-up any strategy asks for), run each strategy on the same
bars, add buy-and-hold as the benchmark, then write everything through a
staging directory that is renamed only when complete.
"""

from __future__ import annotations

import difflib
import hashlib
import logging
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import yaml

from fincon import __version__, stopping
from fincon.config import BrokerConfig, RunConfig, RunSections, typed_strategy_params
from fincon.data.calendar import Calendar, annualisation
from fincon.data.inputs import RunInputs, open_inputs, planted_said
from fincon.data.prices import LoadedPrices, load_prices
from fincon.data.view import MarketData
from fincon.engine.artifacts import config_hash, manifest, summary_row
from fincon.engine.backtest import run_backtest
from fincon.engine.broker import BrokerSettings
from fincon.engine.costs import Costs, Participation
from fincon.engine.record import CHART, METRICS, RunRecord, benchmark_metrics, draw, run_status, write_run
from fincon.engine.result import BacktestResult
from fincon.engine.resume import Resume
from fincon.engine.rundir import RunDir, check_out_path, write_json
from fincon.errors import CloseOnly, ConfigError, NoDayFinished
from fincon.strategies.base import RunContext, Strategy
from fincon.strategies.registry import base_name, make_strategy, params_model, strategy_names
from fincon.workflow import model_checks as checks, provenance, trials

log = logging.getLogger(__name__)
BENCHMARK = "buy-and-hold"


@dataclass
class RunReport:
    """What the CLI shows: results by strategy name, and where they went."""

    out: Path
    results: dict[str, BacktestResult]
    benchmark: BacktestResult | None
    run_dirs: dict[str, Path] = field(default_factory=dict)
    dropped_dates: int = 0
    failed: dict[str, str] = field(default_factory=dict)  # strategy -> why it finished no day
    #: strategy -> its model_knowledge block (the window against its model's cutoff)
    knowledge: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def complete(self) -> bool:
        return not self.failed and not any(r.stopped for r in self.results.values())


MAX_NAME = 100  # well under the 255 bytes of a file name, leaving room for -N and .partial-PID@HOST


def default_out(cfg: RunConfig, root: Path = Path("runs")) -> Path:
    """runs/<strategies>_<tickers>_<start>_<end>; long lists are shortened to
    a count and a hash of the list, so 42 tickers still make a valid name."""
    strategies = "+".join(cfg.strategies)
    tickers = "-".join(cfg.tickers)
    name = f"{strategies}_{tickers}_{cfg.start}_{cfg.end}"
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(f"{strategies}|{tickers}".encode()).hexdigest()[:8]
        if len(strategies) > 40:
            strategies = f"{len(cfg.strategies)}strategies"
        if len(tickers) > 40:
            tickers = f"{len(cfg.tickers)}tickers"
        name = f"{strategies}_{tickers}_{cfg.start}_{cfg.end}_{digest}"
    return root / name


def inputs_for(cfg: RunSections) -> RunInputs:
    """The inputs of a run's (or an experiment's) data section, opened once (fincon.data.inputs)."""
    return open_inputs(cfg.data.source, cfg.data.dir, cfg.data.cache_dir)


def _market(cfg: RunConfig, inputs: RunInputs, warmup: int, min_days: int = 2) -> tuple[MarketData, LoadedPrices]:
    source = inputs.source
    loaded = load_prices(
        source, tuple(cfg.tickers), pd.Timestamp(cfg.start), pd.Timestamp(cfg.end), warmup=warmup, min_days=min_days
    )
    costs = broker_settings(cfg.broker).costs
    needs = {"open": "--fill next-open"} if cfg.broker.fill == "next_open" else {}
    for column in costs.columns:
        needs.setdefault(column, COLUMN_USERS.get(column, column))
    if loaded.close_only and needs:
        t = loaded.close_only[0]
        column, flag = next(iter(needs.items()))
        raise CloseOnly(
            f"{flag} needs {COLUMN_WORDS[column]}, and {t} ({source.describe(t)}) has close prices only; "
            f"{COLUMN_FIX[column]}",
            column,
            f"{t} ({source.describe(t)})",
        )
    if loaded.dropped_dates:
        log.warning("%s", loaded.dropped_note)
    return MarketData(loaded.frames, loaded.first_index), loaded


#: the flag that asks for a bar column, what it is called, and what to do without it
COLUMN_USERS = {"high": "--slippage-model range", "low": "--slippage-model range", "volume": "--participation"}
COLUMN_WORDS = {"open": "an Open column", "high": "High and Low columns", "low": "High and Low columns",
                "volume": "a Volume column"}  # fmt: skip
COLUMN_FIX = {"open": "use --fill close", "high": "use --slippage-model bps", "low": "use --slippage-model bps",
              "volume": "leave the cap out"}  # fmt: skip


#: who reads a strategy's news, in an error's words
READERS = {"fincon": "the agent team", "finmem": "finmem", "finsent": "finsent", "sentiment": "the sentiment baseline"}


def with_events(cfg: RunConfig, inputs: RunInputs) -> RunConfig:
    """``cfg`` with the corpus each news-reading strategy reads written into
    its parameters (fincon.data.inputs.RunInputs.events_spec: the one rule,
    ``--events`` over the dataset's own events over the sample corpus), so
    the saved config.yaml names the corpus and a rerun from it reads the same."""

    for name in cfg.strategies:
        if base_name(name) not in strategy_names():  # finsent@b is finsent's: it read the sample beside a dataset
            continue  # an unknown name is make_strategy's one-line error
        if "events" not in params_model(name).model_fields:
            continue
        given = cfg.params(name).get("events")
        spec = inputs.events_spec(given, READERS.get(base_name(name), name))
        if spec != given:
            cfg = cfg.with_params(name, {**cfg.params(name), "events": spec})
    return cfg


def with_corpus(market: MarketData, strategy: Strategy, inputs: RunInputs) -> MarketData:
    """The market as ``strategy`` sees it: with its event corpus when it reads news."""
    if not getattr(strategy, "reads_events", False):
        return market
    spec = getattr(getattr(strategy, "params", None), "events", None)
    return market.with_events(
        inputs.events(inputs.events_spec(spec), market.tickers, f"strategy_params.{strategy.name}.events")
    )


def _single_config(cfg: RunConfig, name: str) -> RunConfig:
    params = {name: cfg.strategy_params[name]} if name in cfg.strategy_params else {}
    return cfg.model_copy(update={"strategies": [name], "strategy_params": params})


@dataclass(frozen=True)
class RunPlan:
    """A run resolved once, before anything is written: the config as ``config.yaml`` records it
    (each news reader's corpus named, every strategy's parameters with their defaults, the
    calendar's days a year), its opened inputs, strategies, market and broker settings, and each
    strategy's ``model_knowledge`` block. :func:`run_config` runs a plan; nothing rewrites it."""

    config: RunConfig
    inputs: RunInputs
    strategies: Mapping[str, Strategy]
    market: MarketData
    settings: BrokerSettings
    knowledge: Mapping[str, Mapping[str, Any]]
    dropped_dates: int
    #: how the metrics are annualised, in metrics.json's words
    calendar: str
    #: the calendar of the bars the tickers share (a forward journal refuses a 24/7 one)
    bars: Calendar
    #: a warning: the bars' missing days inflate the annualised figures (a 24/7 file with gaps)
    gaps: str | None = None

    def single(self, name: str) -> RunConfig:
        """Strategy ``name``'s own config (its run directory's ``config.yaml``)."""
        return _single_config(self.config, name)


def plan_run(cfg: RunConfig, *, min_days: int = 2) -> RunPlan:
    """Resolve ``cfg`` into a :class:`RunPlan`: open the inputs, name the corpora, build the
    strategies, refuse what cannot run (masking without names, a window outside the data), load
    the bars with the largest warm-up any strategy asks for. ``min_days``: 1 for a forward step,
    whose last session is decided too."""
    inputs = inputs_for(cfg)
    cfg = with_events(cfg, inputs)
    strategies = {name: make_strategy(name, cfg.strategy_params.get(name), cfg.llm) for name in cfg.strategies}
    cfg = _resolved(cfg, strategies)
    checks.check_masking(cfg, inputs, strategies)
    blocks = checks.knowledge(cfg, strategies)
    market, loaded = _market(cfg, inputs, max(s.warmup for s in strategies.values()), min_days=min_days)
    thin = loaded.short_history({n: s.warmup for n, s in strategies.items()})
    if thin:
        log.warning("%s", thin)
    ds = inputs.dataset.manifest.calendar if inputs.dataset is not None else None
    days_per_year, calendar = annualisation(loaded.calendar, loaded.gaps, cfg.tickers, ds, cfg.metrics.days_per_year)
    cfg = cfg.model_copy(update={"metrics": cfg.metrics.model_copy(update={"days_per_year": days_per_year})})
    gaps = loaded.gaps if days_per_year == loaded.calendar.days_per_year else None  # unless the days were set
    settings = broker_settings(cfg.broker)
    return RunPlan(
        cfg, inputs, strategies, market, settings, blocks, loaded.dropped_dates, calendar, loaded.calendar, gaps
    )


def preflight(cfg: RunConfig) -> RunPlan:
    """Every check :func:`run_config` makes before its first file, and what
    its strategies would refuse when they start (the team: events, beliefs),
    without writing anything; returns the plan it checked. ``fincon train``,
    ``fincon experiment`` and ``fincon forward init`` create their own
    directory before any run: they call this first, so bad input (a window
    outside the data, a missing corpus) leaves nothing behind."""
    plan = plan_run(cfg)
    for strategy in plan.strategies.values():
        strategy.check_inputs(plan.market.tickers, pd.Timestamp(plan.config.start), pd.Timestamp(plan.config.end))
    return plan


def run_config(
    cfg: RunConfig,
    out: Path | None = None,
    *,
    progress: bool = True,
    replace: bool = False,
    require_after_cutoff: bool = False,
    warn_knowledge: bool = True,
    ledger: Path | None | str = "default",
    control: bool = False,
    decide_last: bool = False,
    plots: bool = True,
    audit: bool = True,
    resume: Mapping[str, Resume] | None = None,
    episode: bool = False,
) -> RunReport:
    """Run every strategy of ``cfg`` (plus the benchmark) and write the runs.

    A strategy that stops before finishing its first day (a dead LLM server, a spent budget) has no result
    to write: in a multi-strategy run it is listed as ``failed`` in the top ``metrics.json`` and the others
    are written as usual; if no strategy finished a day, nothing is written (``NoDayFinished``).

    Each strategy that finished is a trial: a row in ``trials.csv`` and in
    the trial ledger (``ledger``: a path, None for none, by default the
    user's; fincon.workflow.trials), appended once the run is complete;
    with ``control`` (an experiment's placebo run) its rows are controls,
    never counted as configurations tried. ``decide_last``: a forward step
    (fincon.workflow.forward): the window's last session is decided too.
    ``plots`` off (a forward replay: ``score`` draws the charts): no ``equity.png``; ``audit`` off (a replay no
    one grades: a step's, verify's; score's is audited): no leakage audit of the prompts.
    ``resume``: a forward step's strategies that take up their saved state, by name (engine ``Resume``).
    ``episode``: the run is an episode of ``fincon train`` (``RunContext.episode``).
    """
    plan = plan_run(cfg, min_days=1 if decide_last else 2)
    cfg, inputs, strategies, market, settings = plan.config, plan.inputs, plan.strategies, plan.market, plan.settings
    blocks = {name: dict(b) for name, b in plan.knowledge.items()}
    checks.check_knowledge(blocks, require=require_after_cutoff, warn=False)  # refused before anything else
    if warn_knowledge:
        checks.warn_run_without_model(cfg, blocks, require_after_cutoff, strategies)
    want_benchmark = cfg.benchmark and BENCHMARK not in strategies
    lookahead = inputs.lookahead
    target = check_out_path(out) if out is not None else default_out(cfg)
    checks.check_cache_outside(strategies, target)
    multi = len(strategies) > 1
    # the ledger opened now: one that cannot be written failed once the run was committed (exit 2 beside
    # a complete run, which no ledger counted)
    ledger_path = trials.resolve(None) if ledger == "default" else (None if ledger is None else Path(ledger))
    trials.writable(ledger_path)

    with RunDir(target, replace=replace) as staging:
        checks.check_knowledge(blocks, warn=warn_knowledge)  # once the inputs are known good, before any model call
        early = {n: s.lookahead() for n, s in strategies.items()}  # a strategy's own (sentiment-same-day)
        for said in (lookahead, *early.values(), plan.gaps):
            if said and warn_knowledge:
                print(f"fincon: warning: {said}", file=sys.stderr)
        results: dict[str, BacktestResult] = {}
        failed: dict[str, str] = {}
        benchmark = None
        if want_benchmark:
            benchmark = run_backtest(
                market,
                make_strategy(BENCHMARK),
                settings,
                RunContext(staging.path, market.tickers),
                alpha=cfg.metrics.alpha,
                risk_free=cfg.metrics.risk_free,
                progress=progress,
                days_per_year=cfg.metrics.days_per_year,
            )
        for name, strategy in strategies.items():
            run_path = staging.path / name if multi else staging.path
            run_path.mkdir(parents=True, exist_ok=True)
            single_cfg = plan.single(name)
            ctx = RunContext(
                run_path, market.tickers, cfg.start, cfg.end, settings.costs, fill=settings.fill, episode=episode
            )
            seen = with_corpus(market, strategy, inputs)
            if planted := planted_said(seen.events, strategy.params.events) if seen is not market else None:
                early[name] = "; ".join(x for x in (early[name], planted) if x)  # its own corpus: said, never others'
                print(f"fincon: warning: {planted}", file=sys.stderr) if warn_knowledge else None
            result = run_backtest(
                seen,
                strategy,
                settings,
                ctx,
                alpha=cfg.metrics.alpha,
                risk_free=cfg.metrics.risk_free,
                progress=progress,
                days_per_year=cfg.metrics.days_per_year,
                decide_last=decide_last,
                resume=(resume or {}).get(name),
            )
            if len(result.dates) == 0:
                failed[name] = result.stopped or "stopped before its first day"
                if multi:
                    shutil.rmtree(run_path, ignore_errors=True)
                continue
            results[name] = result
            bench = benchmark if name != BENCHMARK else None
            if audit:  # a masked run's prompts read back (fincon.llm.leakage): score's replay is audited
                blocks[name] = checks.with_audit(blocks[name], strategy, run_path, single_cfg)
            write_run(
                run_path,
                single_cfg.to_yaml(),
                chart_title(cfg),
                settings,
                result,
                bench,
                version=__version__,
                dropped=plan.dropped_dates,
                calendar=plan.calendar,
                model_knowledge=blocks[name],
                lookahead="; ".join(x for x in (lookahead, early[name]) if x) or None,
                plot=plots,
            )
        if not results:
            raise NoDayFinished("; ".join(f"{n} stopped before finishing its first day: {r}" for n, r in failed.items()))  # fmt: skip
        write_standard(
            staging.path,
            cfg,
            market,
            {n: (staging.path / n if multi else staging.path) for n in results},
            blocks,
            "; ".join(x for x in (lookahead, *early.values()) if x) or None,
            provenance.calls_read(cfg, inputs, market.tickers),
        )
        if multi:
            (staging.path / "config.yaml").write_text(cfg.to_yaml())
            table: dict[str, Any] = {
                n: {"status": run_status(r), **r.metrics.as_dict(), "model_knowledge": blocks[n]["label"]}
                for n, r in results.items()
            }
            for n, reason in failed.items():
                table[n] = {"status": "failed", "stop_reason": reason}
            if benchmark is not None:
                table[f"{BENCHMARK} (benchmark)"] = benchmark_metrics(settings, benchmark)
            write_json(staging.path / METRICS, table)
            curves = {n: r.equity for n, r in results.items()}
            if benchmark is not None:
                curves[BENCHMARK] = benchmark.equity
            if plots:
                draw(curves, staging.path / CHART, chart_title(cfg), {n: r.decisions for n, r in results.items()})
        # a strategy that reads ahead by design (sentiment-same-day) is a reference, never a configuration tried
        roles = {n: trials.CONTROL if control or early[n] else trials.TRIAL for n in results}
        trial_rows = _trial_rows(cfg, results, blocks, roles)
        (staging.path / "trials.csv").write_text(trials.rows_csv(trial_rows))
        with stopping.held():  # a stop between the two left a complete run that no ledger counted
            final = staging.commit()
            try:
                trials.append(ledger_path, trial_rows)
            except ConfigError as exc:  # writable before the run, not now: the run stands, said uncounted
                print(f"fincon: warning: {exc}; the run is complete in {final}, its trials are in its "
                      "trials.csv and in no ledger", file=sys.stderr)  # fmt: skip
    run_dirs = {n: (final / n if multi else final) for n in results}
    return RunReport(
        out=final,
        results=results,
        benchmark=benchmark,
        run_dirs=run_dirs,
        dropped_dates=plan.dropped_dates,
        failed=failed,
        knowledge=blocks,
    )


def _trial_rows(
    cfg: RunConfig,
    results: Mapping[str, BacktestResult],
    blocks: Mapping[str, Mapping[str, Any]],
    roles: Mapping[str, str],
) -> list[dict[str, Any]]:
    """One row per strategy that finished, in its role (``roles``: trial or control): its config's hash,
    window, returns and scores."""
    return [
        trials.row(
            config_hash=config_hash(trial_identity(cfg, name, blocks.get(name))),
            strategy=name,
            tickers=cfg.tickers,
            start=str(cfg.start),
            end=str(cfg.end),
            values=list(r.values),
            metrics=r.metrics.as_dict(),
            knowledge=blocks.get(name),
            beliefs_version=(r.strategy_summary or {}).get("team_beliefs_version"),
            role=roles[name],
        )
        for name, r in results.items()
    ]


def trial_identity(cfg: RunConfig, name: str, knowledge: Mapping[str, Any] | None) -> str:
    """The config that makes strategy ``name`` a trial: its own config, without
    the ``llm`` section when it calls no model (``--anonymize``,
    ``--llm-temperature`` or a cutoff on ``sma-cross`` or the rules team change
    nothing it does: the same trial, not a new one)."""

    tree = _single_config(cfg, name).model_dump(mode="json")
    if (knowledge or {}).get("label", "no-model") == "no-model":
        tree.pop("llm", None)
    return yaml.safe_dump(tree, sort_keys=True)


def _resolved(cfg: RunConfig, strategies: dict[str, Strategy]) -> RunConfig:
    """``cfg`` with every strategy's parameters filled in with their defaults,
    so the saved ``config.yaml`` really is the resolved config."""
    unused = sorted(set(cfg.strategy_params) - set(cfg.strategies))
    if unused:
        hints = []
        for name in unused:
            close = difflib.get_close_matches(name, list(cfg.strategies) + strategy_names(), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close and close[0] != name else ""
            hints.append(f"{name!r}{hint}")
        raise ConfigError(
            f"strategy_params given for {', '.join(hints)}, which this run does not run "
            f"(running: {', '.join(cfg.strategies)}); drop them or add the strategy to --strategy"
        )
    params = {name: cfg.params(name) for name in cfg.strategies}
    for name, strategy in strategies.items():
        params[name] = strategy.resolved_params() or params[name]
    return cfg.model_copy(update={"strategy_params": typed_strategy_params({k: v for k, v in params.items() if v})})


def chart_title(cfg: RunConfig) -> str:
    return f"{', '.join(cfg.tickers)}  {cfg.start} .. {cfg.end}"


def write_standard(
    top: Path,
    cfg: RunConfig,
    market: MarketData,
    run_dirs: dict[str, Path],
    blocks: Mapping[str, Mapping[str, Any]] | None = None,
    lookahead: str | None = None,
    calls: Mapping[str, Any] | None = None,
) -> None:
    """run_summary.csv and run_manifest.json at the top (fincon.engine.artifacts: loadable with
    pandas alone; each run dir's round_trips.csv is written with it, from the frame its win rate read)."""

    rows = [{"strategy": name, **summary_row(RunRecord(path).metrics)} for name, path in run_dirs.items()]
    pd.DataFrame(rows).drop_duplicates().to_csv(
        top / "run_summary.csv", index=False, float_format="%.10g", lineterminator="\n"
    )
    corpus = None
    team = next((n for n in ("fincon", "finmem") if n in cfg.strategies), None)  # the agents' corpus, hashed
    if team is not None:
        events = cfg.params(team).get("events")
        corpus = (
            Path(__file__).resolve().parents[1] / "data" / "sample" / "events"
            if events in (None, "sample")
            else Path(str(events))
        )
    seeds = {
        f"{n}.{k}": v for n in sorted(cfg.strategy_params) for k, v in sorted(cfg.params(n).items()) if "seed" in k
    }
    seeds.update(
        {f"llm.{k}": v for k, v in sorted(cfg.llm.model_dump(mode="json", exclude_unset=True).items()) if "seed" in k}
    )
    beliefs = provenance.beliefs_read({n: RunRecord(p).strategy_summary for n, p in run_dirs.items()})
    content = manifest(cfg.to_yaml(), {t: market.frame(t) for t in market.tickers}, corpus, seeds, beliefs)
    content.update(calls or {})  # the calls' audio and transcripts read (fincon.workflow.provenance)
    if lookahead:
        content["data_lookahead"] = lookahead
    if blocks:
        content["model_knowledge"] = {n: dict(blocks[n]) for n in sorted(run_dirs) if n in blocks}
    write_json(top / "run_manifest.json", content)


def broker_settings(broker: BrokerConfig) -> BrokerSettings:
    """The engine's broker for a run config's ``broker`` section: its cost models as they are."""
    fill = None
    if broker.participation is not None:
        fill = Participation(participation=broker.participation, rest=broker.participation_rest)
    return BrokerSettings(
        cash=broker.cash,
        fill=broker.fill,
        cash_buffer=broker.cash_buffer,
        charge_llm=broker.charge_llm,
        costs=Costs(broker.commission, broker.slippage, fill, broker.borrow),
    )
