"""Read run, comparison, training and experiment directories for a report.

Everything here reads files a fincon command wrote; nothing calls a model or
the network. The reader is defensive about what a directory holds (a run of
a baseline has no team records, a rules-brain run no LLM ledger, a training
has ``episodes.jsonl`` and ``beliefs.json``): a section whose files are
absent is left out, a file that is present but unreadable is an error
naming it. What is not a fincon directory at all is a :class:`DataError`.

The buy-and-hold benchmark's equity curve is read from the run's
``benchmark_equity.csv``; the report runs no engine. A run directory written
before that file existed shows the benchmark's metrics without its curve,
and a note saying so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from fincon.engine.record import METRICS, RunRecord, is_run, member_run, read_json, read_jsonl, read_yaml
from fincon.engine.rundir import staging_name
from fincon.errors import DataError
from fincon.ownership import shown
from fincon.workflow.journal import journal_hint
from fincon.workflow.status import failure

BENCHMARK = "buy-and-hold"
BENCHMARK_KEY = f"{BENCHMARK} (benchmark)"


class Run(RunRecord):
    """One strategy's run directory, as the report shows it: the record, its label, and whether its
    decision timeline is drawn (a team run)."""

    def __init__(self, path: Path, label: str | None = None, timeline: bool = True):
        super().__init__(path)
        self.label = label or self.strategy
        self.timeline = timeline

    @property
    def terms(self) -> tuple[tuple[tuple[str, ...], str, str], str]:
        """What its benchmark is: buy-and-hold on its window, on its prices, with its costs, fills and
        cash, annualised as it is (a run of another broker's on the window was its benchmark when
        given first)."""
        return self.window, json.dumps({k: self.config.get(k) for k in ("broker", "data", "metrics")}, sort_keys=True)


@dataclass
class Training:
    """A ``fincon train`` directory (or a run dir holding its files)."""

    label: str
    path: Path
    episodes: list[dict[str, Any]]
    beliefs: dict[str, Any] | None
    status: str | None = None
    failure: str | None = None  # why it is not a finished training (workflow.status.failure)


@dataclass
class Experiment:
    label: str
    path: Path
    results: dict[str, Any]
    status: str | None = None
    failure: str | None = None  # why it is not a finished experiment


@dataclass
class Rolling:
    """A rolling evaluation's tables (windows.csv, summary.csv)."""

    label: str
    path: Path
    windows: pd.DataFrame
    summary: pd.DataFrame
    results: dict[str, Any]
    status: str | None = None


@dataclass
class Benchmark:
    """Buy-and-hold on a window: its metrics, and its curve when known."""

    label: str
    terms: tuple[tuple[tuple[str, ...], str, str], str]  # its window and settings (Run.terms)
    metrics: dict[str, Any] | None = None
    equity: pd.Series | None = None
    note: str = ""
    run: Run | None = None  # a buy-and-hold run directory serving as the benchmark
    of: str = ""  # the first run it is the benchmark of

    @property
    def window(self) -> tuple[tuple[str, ...], str, str]:
        return self.terms[0]


@dataclass
class Source:
    """One RUN argument of ``fincon report``."""

    path: Path
    kind: str  # run | comparison | training | experiment | rolling
    runs: list[Run] = field(default_factory=list)
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)  # metrics-only columns (failed, benchmark)
    trainings: list[Training] = field(default_factory=list)
    experiment: Experiment | None = None
    rolling: Rolling | None = None
    failure: str | None = None  # a training or experiment that did not finish: why (shown on top of the page)


@dataclass
class ReportData:
    sources: list[Source]
    benchmarks: list[Benchmark]
    #: each ``--preset fincon-paper`` directory given, with its paper.json
    papers: list[tuple[Path, dict[str, Any]]] = field(default_factory=list)

    @property
    def runs(self) -> list[Run]:
        return [r for s in self.sources for r in s.runs]


def load_run(path: Path, label: str | None = None, timeline: bool = True) -> Run:
    """One strategy's run directory (``metrics.json`` + ``equity.csv``), every file read now so that
    a damaged one is named before the page is laid out."""
    run = Run(path, label, timeline)
    for part in ("equity", "decisions", "summary", "config", "usage", "audit"):
        getattr(run, part)
    return run


def load_training(path: Path, label: str) -> Training | None:
    """``episodes.jsonl`` / ``beliefs.json`` of a training, if present."""
    episodes = read_jsonl(path / "episodes.jsonl", {"episode": int, "objective": (int, float)})
    beliefs = read_json(path / "beliefs.json") if (path / "beliefs.json").is_file() else None
    if not episodes and beliefs is None:
        return None
    status, why = None, None
    if (path / "train.json").is_file():
        state = read_json(path / "train.json")
        status = state.get("status") if isinstance(state, dict) else None
        why = failure(state if isinstance(state, dict) else None)
    return Training(label, path, episodes, beliefs if isinstance(beliefs, dict) else None, status, why)


# -- one RUN argument ------------------------------------------------------------


def load_source(path: Path) -> Source:
    """Classify and read one RUN argument."""
    if not path.exists():
        raise DataError(f"{path} does not exist; pass a directory written by fincon backtest, train or experiment")
    if not path.is_dir():
        raise DataError(f"{path} is not a directory; pass a directory written by fincon backtest, train or experiment")
    if staging_name(path.name):
        raise DataError(f"{path} is the staging folder of a run that was stopped or still runs: not a run to report")
    if (path / "experiment.json").is_file():
        return _experiment(path)
    if (path / "rolling.json").is_file():
        return _rolling(path)
    if (path / "train.json").is_file() or ((path / "episodes.jsonl").is_file() and (path / "episodes").is_dir()):
        return _training(path)
    if not (path / METRICS).is_file():
        blocks = sorted(p.parent.name for p in path.glob("*/experiment.json"))
        unfinished = (
            f"{path} holds experiments ({shown(blocks, 6)}) but no paper.json: a --preset fincon-paper comparison "
            f"that has not finished; report one of them ({path / blocks[0]}), or rerun its command to finish it"
            if blocks
            else None
        )
        raise DataError(
            journal_hint(path)
            or unfinished
            or f"{path} is not a fincon run directory (no metrics.json, train.json or experiment.json)"
        )
    metrics = read_json(path / METRICS)
    if not isinstance(metrics, dict):
        raise DataError(f"{path / 'metrics.json'}: expected a JSON object")
    if is_run(path):
        src = Source(path, "run", runs=[load_run(path)])
    else:
        src = _comparison(path, metrics)
    training = load_training(path, path.name)  # a run dir may carry a training's files
    if training is not None:
        src.trainings.append(training)
    return src


def _comparison(path: Path, metrics: dict[str, Any]) -> Source:
    src = Source(path, "comparison")
    # in the order the run was asked for (metrics.json is written with sorted keys)
    asked = [str(n) for n in (read_yaml(path / "config.yaml").get("strategies") or [])]
    names = sorted(metrics, key=lambda n: (asked.index(n) if n in asked else len(asked), n == BENCHMARK_KEY, n))
    for name in names:
        m = metrics[name]
        if not isinstance(m, dict):
            continue
        sub = member_run(path, name, m)
        if sub is not None:
            src.runs.append(load_run(sub, label=name))
        else:  # the benchmark's metrics, or a strategy that failed before its first day
            src.columns[name] = m
    if not src.runs and not src.columns:
        raise DataError(f"{path / 'metrics.json'} names no strategy; is this a fincon run directory?")
    return src


def _episode_dirs(path: Path) -> list[Path]:
    return sorted(p for p in (path / "episodes").glob("ep-*") if is_run(p))


def _training(path: Path) -> Source:
    why = failure(read_json(path / "train.json")) if (path / "train.json").is_file() else None
    src = Source(path, "training", failure=why)
    eps = _episode_dirs(path)
    for i, ep in enumerate(eps):
        src.runs.append(load_run(ep, label=f"{ep.name}", timeline=i == len(eps) - 1))
    training = load_training(path, path.name)
    if training is not None:
        src.trainings.append(training)
    if not src.runs and training is None and not why:
        raise DataError(f"{path} holds no finished episode yet (no episodes/ep-*/metrics.json, no episodes.jsonl)")
    return src


def _experiment(path: Path) -> Source:
    state = read_json(path / "experiment.json")
    if not isinstance(state, dict):
        raise DataError(f"{path / 'experiment.json'}: expected a JSON object; is this a fincon experiment?")
    status = state.get("status")
    why = failure(state)
    results = read_json(path / "results.json") if (path / "results.json").is_file() and not why else {}
    if not isinstance(results, dict):
        raise DataError(f"{path / 'results.json'}: expected a JSON object")
    if not results:  # an unfinished experiment: what it was asked to do, from its config
        cfg = state.get("config") if isinstance(state.get("config"), dict) else {}
        team = cfg.get("team") if isinstance(cfg.get("team"), dict) else {}
        results = {k: cfg.get(k) for k in ("tickers", "train", "test", "repeats", "episodes")}
        results["brain"] = team.get("brain", "llm")
    src = Source(path, "experiment", experiment=Experiment(path.name, path, results, status, why), failure=why)
    if why:
        for unit in sorted((path / "test").glob("*")) if (path / "test").is_dir() else []:
            m = read_json(unit / METRICS) if is_run(unit) else None
            if isinstance(m, dict) and m.get("status") == "complete":
                src.runs.append(load_run(unit, label=f"fincon {unit.name}"))
    median = results.get("median") if isinstance(results.get("median"), dict) else {}
    for ablation, m in median.items():
        rel = m.get("run_dir") if isinstance(m, dict) else None
        if rel and is_run(path / rel):
            label = f"fincon {ablation} (median r{m.get('repeat', '?')})"
            src.runs.append(load_run(path / rel, label=label))
    base = path / "baselines"
    if (base / METRICS).is_file() and not is_run(base):
        sub = _comparison(base, read_json(base / METRICS))
        src.runs.extend(sub.runs)
    elif is_run(base):
        src.runs.append(load_run(base))
    # the belief evolution of the full ablation's median repeat (as the experiment's beliefs.png)
    full = median.get("full") if isinstance(median.get("full"), dict) else None
    if full and (path / "train" / f"full-r{full.get('repeat')}").is_dir():
        t = load_training(path / "train" / f"full-r{full.get('repeat')}", f"full-r{full.get('repeat')}")
        if t is not None:
            src.trainings.append(t)
    if not src.runs and not why:
        raise DataError(f"{path} holds no finished unit yet (no results.json, no test runs)")
    return src


def _rolling(path: Path) -> Source:
    state = read_json(path / "rolling.json")
    status = state.get("status") if isinstance(state, dict) else None
    if not (path / "windows.csv").is_file() or not (path / "summary.csv").is_file():
        raise DataError(
            f"{path} is a rolling evaluation without its tables yet (windows.csv, summary.csv); "
            "run the same fincon experiment command again to finish it"
        )
    try:
        windows = pd.read_csv(path / "windows.csv")
        summary = pd.read_csv(path / "summary.csv")
    except (ValueError, OSError) as exc:
        raise DataError(f"{path}: cannot read its tables ({type(exc).__name__})") from None
    results = read_json(path / "results.json") if (path / "results.json").is_file() else {}
    return Source(
        path,
        "rolling",
        rolling=Rolling(path.name, path, windows, summary, results if isinstance(results, dict) else {}, status),
    )


# -- putting the sources together ------------------------------------------------


def _unique_labels(sources: list[Source]) -> None:
    """Labels are strategy names; runs of several RUN arguments that share one
    get the directory's name in front (then a number if that still clashes)."""
    runs = [r for s in sources for r in s.runs]
    counts: dict[str, int] = {}
    for r in runs:
        counts[r.label] = counts.get(r.label, 0) + 1
    for s in sources:
        for r in s.runs:
            if counts[r.label] > 1:
                r.label = f"{s.path.name}/{r.label}"
    seen: dict[str, int] = {}
    for r in runs:
        n = seen.get(r.label, 0) + 1
        seen[r.label] = n
        if n > 1:
            r.label = f"{r.label} ({n})"


def _benchmarks(sources: list[Source]) -> list[Benchmark]:
    """One benchmark per window and settings traded (:attr:`Run.terms`): a buy-and-hold run directory
    on them if one was given, else the recorded benchmark metrics and curve."""
    by_terms: dict[tuple, Benchmark] = {}
    for s in sources:
        for r in s.runs:
            if r.strategy == BENCHMARK and r.terms not in by_terms:
                by_terms[r.terms] = Benchmark(r.label, r.terms, r.metrics, r.equity, run=r, of=r.label)
    for s in sources:
        for r in s.runs:
            if r.strategy == BENCHMARK or r.terms in by_terms:
                continue
            metrics = s.columns.get(BENCHMARK_KEY) or r.summary.get("benchmark")
            b = Benchmark(BENCHMARK_KEY, r.terms, metrics if isinstance(metrics, dict) else None, of=r.label)
            if r.benchmark_equity is not None:  # the run wrote the benchmark's curve: drawn as it was
                b.equity = r.benchmark_equity
            elif isinstance(b.metrics, dict):
                b.note = "not drawn: the run saved no curve of it (written before benchmark_equity.csv; re-run it to draw one)"
            by_terms[r.terms] = b
    out = list(by_terms.values())
    if len(out) > 1:
        windows = [b.window for b in out]
        for b in out:
            if b.run is None:
                tickers, start, end = b.window
                b.label = f"{BENCHMARK_KEY} {', '.join(tickers)} {start}..{end}"
                if windows.count(b.window) > 1:  # one window, other costs, fills, cash or prices
                    b.label += f" as {b.of} trades"
    return out


def _is_paper(p: Path) -> bool:
    return (p / "paper.json").is_file() and not (p / "experiment.json").is_file()


def _expand(paths: list[Path]) -> list[Path]:
    """A ``--preset fincon-paper`` directory stands for its blocks' experiments (one section each)."""
    out = []
    for p in map(Path, paths):
        if _is_paper(p):
            blocks = read_json(p / "paper.json").get("blocks")
            if not isinstance(blocks, dict) or not blocks:
                raise DataError(f"{p / 'paper.json'}: names no experiment; is this a fincon paper run?")
            out += [p / key for key in blocks]
        else:
            out.append(p)
    return out


def settings_apart(configs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Per run (label -> its config), the broker, data and metrics settings in which the runs differ,
    as "key value" words ({} when they agree): two runs of one curve with risk-free rates of 0 and 5 %
    were shown with Sharpe 1.95 and 1.78 and nothing said why, and a plot laid a $100k book under
    three $1M ones."""

    def flat(node: Any, prefix: str = "") -> dict[str, str]:
        if isinstance(node, Mapping):
            return {k: v for key, sub in node.items() for k, v in flat(sub, f"{prefix}{key}.").items()}
        text = Path(node).name if isinstance(node, str) and node.startswith("/") else json.dumps(node)
        return {prefix.rstrip("."): text}

    each = {label: flat({k: c.get(k) for k in ("broker", "data", "metrics")}) for label, c in configs.items()}
    # a key some runs lack is no setting they differ in (a per-share price beside a percent commission: the
    # model key says it); listed, it made every legend label 200 characters long (found in review)
    keys = sorted(
        {
            k
            for f in each.values()
            for k in f
            if all(k in g for g in each.values()) and len({g[k] for g in each.values()}) > 1
        }
    )
    return (
        {label: ", ".join(f"{k.split('.', 1)[-1]} {f.get(k, '-')}" for k in keys) for label, f in each.items()}
        if keys
        else {}
    )


def load_report_data(paths: list[Path]) -> ReportData:
    if not paths:
        raise DataError("no run directory given")
    papers = [(p, read_json(p / "paper.json")) for p in map(Path, paths) if _is_paper(p)]
    sources = [load_source(p) for p in _expand(paths)]
    _unique_labels(sources)
    runs = [r for s in sources for r in s.runs]
    if len({r.window for r in runs}) > 1:  # a 171-day CR beside a 42-day one, unsaid
        for r in runs:
            tickers, start, end = r.window
            r.label += f" ({', '.join(tickers)} {start}..{end})"
    apart = settings_apart({str(i): r.config for i, r in enumerate(runs)})
    for i, r in enumerate(runs):  # costs, fills, cash or a risk-free rate: said in each column's name
        if apart:
            r.label += f" ({apart[str(i)]})"
    benchmarks = _benchmarks(sources)
    for s in sources:  # a comparison's benchmark column is shown as its benchmark
        if s.runs:
            s.columns.pop(BENCHMARK_KEY, None)
    return ReportData(sources, benchmarks, papers)
