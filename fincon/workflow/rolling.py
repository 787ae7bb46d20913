"""``fincon experiment --rolling WINDOW --step STEP --universe RULE``: every
strategy on successive windows, over universes chosen by stated rules.

Test window k starts at ``rolling.start + k * STEP`` and lasts WINDOW; it is
kept while it ends by ``rolling.end`` and by the data's last day. Its
training window is the WINDOW right before it (the team learns its beliefs
there, ``fincon train``, as in the one-split experiment). For each universe
rule, each window's tickers are picked at the window's start from bars
dated before it (:mod:`fincon.workflow.universe`).

Each (universe, window) is a one-split experiment in its own directory,
built from the same config with its tickers and windows set, so it reuses
the experiment's units, resume and results (:mod:`fincon.workflow.experiment_units`,
:mod:`fincon.workflow.experiment_results`)::

    rolling.json                config (rolling section included), status
    windows.json                every (universe, window): dates and tickers
    windows.csv                 one row per universe, window and strategy
    summary.csv                 per universe and strategy (and ``pooled``): medians, share beating buy-and-hold, paired test
    results.json                both tables, and what the test is
    <universe>/<kNN>/           a one-split experiment directory (train/, test/, baselines/, results.json)

The units of all windows run in two batches (trainings and baselines, then
test runs) on the executor given (serial, or Ray tasks), so windows run in
parallel; a rerun skips finished units and ends with the same files.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pandas as pd

from fincon.agents.team.corpus import corpus_coverage, uncovered
from fincon.data.calendar import EDGE_SESSIONS, sessions_between
from fincon.data.prices import validate_bars
from fincon.engine.rundir import check_out_path
from fincon.errors import ConfigError, FinconError
from fincon.files import json_text, write_atomic
from fincon.llm.knowledge import warning
from fincon.strategies.registry import params_model, validate_params
from fincon.strategies.rl import MIN_TRAINING_BARS
from fincon.workflow.executors import Executor, serial
from fincon.workflow.experiment import (
    baseline_knowledge,
    check_inputs,
    experiment_knowledge,
    settings_said,
    units,
    write_placebos,
)
from fincon.workflow.experiment_config import ExperimentConfig, Window
from fincon.workflow.experiment_results import collect, placebo_results
from fincon.workflow.experiment_units import Job, unit_done
from fincon.workflow.rolling_results import tables
from fincon.workflow.runner import inputs_for
from fincon.workflow.status import check_schema, default_dir, differences, other_inputs, read_state
from fincon.workflow.study import Study, inputs_state, run_phases
from fincon.workflow.universe import parse_rule, select


def offset(period: str) -> pd.DateOffset:
    """``1y``, ``6m``, ``2w``, ``90d`` as a calendar offset."""
    n, unit = int(period[:-1]), period[-1]
    return pd.DateOffset(**{{"y": "years", "m": "months", "w": "weeks", "d": "days"}[unit]: n})


@dataclass(frozen=True)
class WindowSpec:
    index: int
    train: Window
    test: Window

    @property
    def name(self) -> str:
        return f"k{self.index:02d}"


def windows(exp: ExperimentConfig, last_day: dt.date) -> list[WindowSpec]:
    """The test windows (and the training window before each) inside the span and the data."""
    r = exp.rolling
    assert r is not None
    w, step = offset(r.window), offset(r.step)
    end = min(r.end, last_day)
    out: list[WindowSpec] = []
    k = 0
    while True:
        start = (pd.Timestamp(r.start) + step * k).date()
        # its end by one offset from the span's start: clipped to a month's end twice (from its own start),
        # window = step left days in no test window (2022-03-28..30 after 01-31; found in review)
        ahead = {u: n * k for u, n in step.kwds.items()}
        ahead = {u: ahead.get(u, 0) + w.kwds.get(u, 0) for u in {*ahead, *w.kwds}}
        stop = (pd.Timestamp(r.start) + pd.DateOffset(**ahead) - pd.Timedelta(days=1)).date()
        if stop > end:
            break
        train_start = (pd.Timestamp(start) - w).date()
        out.append(
            WindowSpec(
                k + 1, Window(start=train_start, end=start - dt.timedelta(days=1)), Window(start=start, end=stop)
            )
        )
        k += 1
    if not out:
        raise ConfigError(f"rolling: no {r.window} window fits in {r.start}..{end} (the data ends {last_day})")
    return out


def _bars(exp: ExperimentConfig) -> dict[str, pd.DataFrame]:
    source = inputs_for(exp).source
    names = getattr(source, "tickers", None)
    if names is None:
        raise ConfigError(
            f"rolling: the {exp.data.source} source cannot list its tickers; use the bundled "
            "sample or a dataset directory (--data DIR)"
        )
    lo, hi = pd.Timestamp("1900-01-01"), pd.Timestamp("2200-01-01")
    return {t: validate_bars(source.load(t, lo, hi), t, source.describe(t)) for t in names()}


@dataclass(frozen=True)
class Cell:
    """One (universe, window): a one-split experiment."""

    universe: str
    slug: str
    window: WindowSpec
    tickers: tuple[str, ...]
    exp: ExperimentConfig

    def root(self, out: Path) -> Path:
        return out / self.slug / self.window.name


def pool_of(bars: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """The candidates the rules pick from, for the card's survivorship check: how many, the data's
    last day, and those whose bars end a week or more before it (a firm that left: delisted, merged,
    or its data stops; :func:`plan` keeps those a window could pick). None ending early is a pool of
    survivors, as a list of today's firms is."""
    last = max(b.index[-1] for b in bars.values())
    ended = sorted(t for t, b in bars.items() if b.index[-1] < last - pd.Timedelta(days=7))
    return {"candidates": len(bars), "last_day": str(last.date()), "ended": ended}


def plan(exp: ExperimentConfig, bars: dict[str, pd.DataFrame] | None = None) -> tuple[list[Cell], dict[str, Any]]:
    """Every (universe, window) with its tickers, picked at the window's start; and the pool they
    are picked from (:func:`pool_of`). ``bars``: every ticker's (:func:`_bars`), when the caller has them."""
    bars = _bars(exp) if bars is None else bars
    pool = pool_of(bars)
    last = dt.date.fromisoformat(pool["last_day"])
    cells = []
    for rule_text in exp.rolling.universes:
        rule = parse_rule(rule_text)
        held: list[dt.date] = []  # the windows whose picks outlive them, so far
        for w in windows(exp, last):
            try:
                tickers = select(rule, bars, w.train.start, w.test.start)
            except ValueError as exc:
                raise ConfigError(f"rolling window {w.test.start}..{w.test.end}: {exc}") from None
            for t in tickers:  # picked point in time among firms that leave too: one may leave inside its window
                gone = bars[t].index[-1].date()
                if sessions_between(pd.Timestamp(gone), pd.Timestamp(w.test.end), bars[t].index) > EDGE_SESSIONS:
                    raise ConfigError(
                        f"rolling window {w.test.start}..{w.test.end} ({rule_text}): the rule picked {t} at the window's "
                        f"start, and its bars end on {gone}, inside the window: fincon does not hold a firm to its exit "
                        "(no delisting return), and leaving it out would pick among survivors; "
                        + (f"an evaluation whose picks outlive their windows ends by {max(held)} here (--rolling-end)"
                           if held else "no window of this evaluation can be run with it in the data")
                    )  # fmt: skip
            held.append(w.test.end)
            _enough_to_train(exp, w, tickers, bars)
            sub = exp.model_copy(
                update={
                    "tickers": tickers,
                    "train": w.train,
                    "test": w.test,
                    "rolling": None,
                    "strategy_params": trained_on_window(exp, w),
                }  # fmt: skip
            )
            cells.append(Cell(rule_text, rule.slug, w, tuple(tickers), sub))
    # a firm that left counts only where a window could pick it (trading on a selection day): one gone
    # before the first window passed the card's survivorship check for picks made among survivors alone
    picks = sorted({c.window.test.start for c in cells})
    pool["ended"] = [t for t in pool["ended"] if any(bars[t].index[0].date() <= d <= bars[t].index[-1].date() for d in picks)]  # fmt: skip
    return cells, pool


def _enough_to_train(exp: ExperimentConfig, w: WindowSpec, tickers: list[str], bars: dict[str, pd.DataFrame]) -> None:
    """Each agent that learns from bars (RL) gets enough of them in the window's training span: short of
    them it failed in its first decision, the evaluation "stopped early ... rerun to resume" (exit 3), a
    rerun never helping (found in review)."""
    params = trained_on_window(exp, w)
    for name in [b for b in exp.baselines if "train_start" in params_model(b).model_fields]:
        lo, hi = params[name].train_start or dt.date.min, min(params[name].train_end or w.train.end, w.train.end)
        n = min(int(((d := bars[t].index.date) >= lo).sum() - (d > hi).sum()) for t in tickers)
        if n < MIN_TRAINING_BARS:
            raise ConfigError(
                f"rolling window {w.test.start}..{w.test.end}: {name} would train on {n} bars of {lo}..{hi} "
                f"(it needs {MIN_TRAINING_BARS}): give a longer --rolling window, or {name}.train_start"
            )


def default_out(exp: ExperimentConfig) -> Path:
    return default_dir("rolling", exp.model_dump(mode="json"))


def trained_on_window(exp: ExperimentConfig, w: WindowSpec) -> dict[str, Any]:
    """The baselines' parameters in window ``w``: each baseline that learns
    from bars (the RL agents: a ``train_start`` parameter) is retrained on
    the window's own training span, as the team is, unless the config names
    its span. (A one-split experiment leaves them their default: every bar
    before the test window, the paper's DRL protocol.)"""

    params = dict(exp.strategy_params)
    for name in exp.baselines:
        if "train_start" not in params_model(name).model_fields:
            continue
        given = params[name].model_dump(exclude_unset=True) if name in params else {}
        span = {"train_start": w.train.start, "train_end": w.train.end}
        params[name] = validate_params(name, {**span, **given})
    return params


@dataclass
class RollingReport:
    out: Path
    results: dict[str, Any]
    ran: list[str]
    skipped: list[str]


def _check_windows_knowledge(cells, require: bool) -> None:
    """One line for the windows whose test span the team's model, or an LLM baseline's, may remember."""

    blocks = [experiment_knowledge(c.exp)["test"] for c in cells]
    blocks += [b for c in cells for b in baseline_knowledge(c.exp).values()]  # llm-trader's too (found in review)
    flagged = [b for b in blocks if warning(b, "") is not None]
    if not flagged:
        return
    first = flagged[0]
    line = (
        f"{len(flagged)} of {len(blocks)} test windows (the team's and each LLM baseline's) are not after the "
        "model's training-data cutoff "
        f"({first['cutoff'] or 'unknown'}; labels: "
        + ", ".join(sorted({b["label"] for b in flagged}))
        + "): the model may remember them; their LLM figures are not evidence of skill"
    )
    if require:
        raise ConfigError(f"--require-after-cutoff: {line}")
    print(f"fincon: warning: {line}", file=sys.stderr)


def run_rolling(
    exp: ExperimentConfig,
    out: Path,
    *,
    progress: bool = True,
    executor: Executor = serial,
    require_after_cutoff: bool = False,
) -> RollingReport:
    """Run (or resume) the rolling evaluation; see the module docstring.
    Windows the team's model may remember are said in one line (refused
    with ``require_after_cutoff``) before anything is written."""

    if "buy-and-hold" not in exp.baselines:
        raise ConfigError("rolling: buy-and-hold must be among the baselines (every strategy is compared with it)")
    out = check_out_path(out)
    bars = _bars(exp)
    cells, pool = plan(exp, bars)
    every = sorted({t for c in cells for t in c.tickers})  # the corpus for every window's universe, said at once
    lacking = [t for t in every if t not in corpus_coverage(exp.team.events, every)]
    if lacking:
        raise uncovered(exp.team.events, lacking, every)
    for c in cells:  # what a unit would refuse (data, corpus, parameters), before anything is written
        try:
            check_inputs(c.exp)
        except FinconError as exc:
            raise type(exc)(
                f"rolling window {c.window.test.start}..{c.window.test.end} ({c.universe}): {exc}"
            ) from None
    _check_windows_knowledge(cells, require_after_cutoff)
    # every window's settings as its one-split experiment says them, once (the first window's: all share them)
    settings_said(cells[0].exp, experiment_knowledge(cells[0].exp), require_after_cutoff, given=exp.model_fields_set)
    span = (exp.rolling.start, exp.rolling.end)
    # every firm of the pool: the universe rules pick among them (the bars as loaded: a recheck reads the corpus
    # and the code again)
    fingerprint = partial(inputs_state, inputs_for(exp), (), span, exp.team.events, bars, every_item=True)
    study = Study(
        out,
        "rolling.json",
        {"config": exp.model_dump(mode="json"), "inputs": fingerprint()},
        "rolling evaluation",
        claimed=_claim,
        cannot_create="--out {out}: cannot create it ({why}); choose another --out",
        inputs_now=fingerprint,
    )
    return study.run(lambda: _run(exp, out, cells, pool, progress, executor))


def _claim(study: Study) -> bool:
    """The same config resumes; a directory that is not this rolling evaluation is refused."""
    if not study.out.exists() or (study.out.is_dir() and not any(study.out.iterdir())):  # an empty folder: new
        return False
    if not study.marker.is_file():
        raise FinconError(f"{study.out} exists and is not a fincon rolling evaluation; pick another --out")
    old = read_state(study.marker)
    check_schema(study.out, old, "rolling evaluation")
    if old.get("config") != study.state["config"]:
        raise FinconError(f"{study.out} holds a rolling evaluation with another config; pick another --out")
    if diff := differences({"inputs": old.get("inputs")}, {"inputs": study.state["inputs"]}):
        raise other_inputs(study.out, "rolling evaluation", diff)
    return True


def _run(
    exp: ExperimentConfig, out: Path, cells: list[Cell], pool: dict[str, Any], progress: bool, executor: Executor
) -> RollingReport:
    listing = [
        {
            "universe": c.universe,
            "window": c.window.name,
            "dir": str(c.root(out).relative_to(out)),
            "train": c.window.train.model_dump(mode="json"),
            "test": c.window.test.model_dump(mode="json"),
            "tickers": list(c.tickers),
        }
        for c in cells
    ]
    write_atomic(out / "windows.json", json.dumps(listing, indent=1, sort_keys=True) + "\n")

    # the units of every window in two batches (trainings and baselines, then tests): windows run in parallel
    phases: list[list[tuple[str, Job]]] = [[], []]
    for c in cells:
        root = c.root(out)
        root.mkdir(parents=True, exist_ok=True)
        write_placebos(c.exp, root)  # each window's own placebo corpora, before its tests
        for i, phase in enumerate(units(c.exp)):
            for u in phase:
                phases[i].append((f"{c.slug}/{c.window.name}/{u.name}", Job(u, c.exp, root)))
    done = run_phases(
        phases,
        lambda job: unit_done(job.unit, job.exp, job.root),
        executor,
        bar={"unit": "unit", "desc": "rolling", "disable": not progress},
    )
    placebo_blocks = []  # each window's placebo block, as its results.json holds it
    for c in cells:
        res = collect(c.exp, c.root(out))
        if c.exp.placebos:
            res["placebo"] = placebo_results(c.exp, c.root(out), res)
            placebo_blocks.append((c.universe, res["placebo"]))
        write_atomic(c.root(out) / "results.json", json_text(res))
    results = tables(exp, out, cells, placebo_blocks, pool)
    return RollingReport(out, results, done.ran, done.skipped)


__all__ = ["Cell", "RollingReport", "WindowSpec", "offset", "plan", "run_rolling", "windows"]
