"""What the report card reads from one directory (a backtest run, an experiment or a rolling
evaluation), loaded once and handed to every check of fincon.report.card: the run that holds the
team's records, its metrics, config and decisions, and for a forward journal's replay what
`fincon forward score` verified of its seals."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable

import pandas as pd
from pydantic import ValidationError

from fincon.config import FLAT_COST_KEYS, BrokerConfig
from fincon.data.dataset import open_dataset
from fincon.engine.record import CONFIG, DECISIONS, METRICS, ORDERS, POSITIONS, RunRecord, read_csv_rows
from fincon.errors import DataError, FinconError
from fincon.report.calibration import calibration
from fincon.validation import format_validation_error
from fincon.workflow.experiment_results import team_variant
from fincon.workflow.journal import journal_hint
from fincon.workflow.status import failure, unfinished

PASS, FAIL, NONE = "pass", "fail", "not measured"
#: an order costing less than this (bp of its value, a side) is a run without frictions: IB's per-share
#: minimum alone is 1 bp of a $10,000 order, a large cap's half spread about as much
MIN_COST_BP = 1.0
#: a check of fincon.report.card: what it measured in the evidence, as (verdict, the number behind it)
Verdict = tuple[str, str]


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def under_cost(bp: float) -> str:
    """``bp`` (a side) when under MIN_COST_BP to 6 decimals, to as many digits as show it under ("" when not):
    orders.csv's 10 digits put a rate of 1e-4 at 0.9999999999 bp, and a run paying exactly the bar failed
    "frictions" and "costs" as having "paid 1 bp a side ...: under 1 bp"."""
    if round(bp, 6) >= MIN_COST_BP:
        return ""
    return next((said for k in range(2, 7) if float(said := f"{bp:.{k}g}") < MIN_COST_BP), f"{bp:.7g}")


def run_part(run: Path, part: str) -> Any:
    """A run's ``metrics``, ``config`` or ``strategy_summary`` (engine.record), None when unreadable."""
    try:
        return getattr(RunRecord(run), part)
    except DataError:
        return None


def on_its_side(x: float, passes: Callable[[float], bool], places: int, sign: str = "") -> str:
    """``x`` to ``places`` decimals, or to as many more as show it on the side of its bar that ``x`` is
    (``passes``: the verdict's test of it): a DSR of 0.9496 read "DSR 0.95 ...: under 0.95", a Brier's bound
    of 0.2496 "0.250" beside a pass under 0.25."""
    for k in range(places, 17):
        if passes(float(said := f"{x:{sign}.{k}f}")) == passes(x):
            return said
    return repr(x)


def _team_run(root: Path, config: dict[str, Any] | None = None) -> Path | None:
    """The directory whose decisions.jsonl holds team records (the run, its fincon sub-run, an experiment's
    median run of :func:`team_variant`, ``config`` the experiment's or its rolling evaluation's)."""
    for cand in (root, root / "fincon"):
        if (cand / DECISIONS).is_file() and '"record"' in (cand / DECISIONS).read_text()[:20000]:
            return cand
    res = _json(root / "results.json")
    run = res["median"][v] if (v := team_variant(res, config or {})) is not None else None
    return root / run["run_dir"] if isinstance(run, dict) and isinstance(run.get("run_dir"), str) else None


def _strategy_run(root: Path, team: Path | None) -> Path | None:
    """A run directory with metrics.json and config.yaml: the team's (``team``) if any, else the first that
    asks a model (what is under test; in a run of llm-trader beside buy-and-hold the card graded buy-and-hold,
    and passed temporal integrity as "no-model"), else the first the run lists that is not buy-and-hold
    (the yardstick: a journal of sma-cross beside it was carded as buy-and-hold, first by name)."""
    if team is not None and (team / METRICS).is_file():
        return team
    runs = []
    for cand in [root, *sorted(p for p in root.iterdir() if p.is_dir())] if root.is_dir() else []:
        m = RunRecord(cand).metrics if (cand / METRICS).is_file() else None  # a damaged one named, not skipped
        if isinstance(m, dict) and "cr_pct" in m and (cand / CONFIG).is_file():
            runs.append((cand, (m.get("model_knowledge") or {}).get("label") not in (None, "no-model")))
    listed = list((run_part(root, "config") or {}).get("strategies") or []) if (root / CONFIG).is_file() else []
    runs.sort(
        key=lambda r: (r[0].name == "buy-and-hold", listed.index(r[0].name) if r[0].name in listed else len(listed))
    )
    return next((c for c, asks in runs if asks), runs[0][0] if runs else None)


def _rolling_knowledge(results: dict[str, Any]) -> dict[str, Any]:
    """The team's windows against its model's cutoff in a rolling evaluation:
    its summary rows count each label ("in-training-data 5/6, no-model 1/6");
    the card takes the worst one any window has."""
    seen = {
        part.split()[0]
        for row in results.get("summary") or []
        if str(row.get("strategy", "")).startswith("fincon") and row.get("model_knowledge")
        for part in str(row["model_knowledge"]).split(", ")
    }
    for label in ("in-training-data", "straddles-cutoff", "cutoff-unknown", "after-cutoff", "no-model"):
        if label in seen:
            return {"label": label}
    return {}


@dataclass
class Evidence:
    """What a card reads from one directory (a backtest run, an experiment or
    a rolling evaluation), loaded once and handed to every check."""

    root: Path
    run: Path | None
    team: Path | None
    rolling: dict[str, Any] | None
    results: dict[str, Any]
    metrics: dict[str, Any]
    config: dict[str, Any]
    #: each team run's decisions, apart (a rolling evaluation's windows: a call is scored against its own run's next close)
    decisions: list[list[dict[str, Any]]]
    #: a forward journal's replay: whether it is simulated and its git anchor, as `forward score` verified them
    sealed: dict[str, Any] | None = None
    #: a rolling evaluation's team run of each window (its median run of :attr:`variant`), whose records the card reads
    windows: tuple[Path, ...] = ()
    #: the trial ledger that counts what was tried beside the run (None: not read; the HTML page of a run
    #: reads none, so that its bytes are the directory's; a journal's, the ledger its registration sealed)
    ledger: Path | None = None
    #: the team variant whose median run is graded (each window's, of a rolling evaluation): :func:`team_variant`
    variant: str | None = None
    #: each run's record, read once for every check that reads it (paid, lookahead, shorts)
    _records: dict[Path, RunRecord] = field(default_factory=dict, repr=False, compare=False)

    def record(self, run: Path) -> RunRecord:
        if run not in self._records:
            self._records[run] = RunRecord(run)
        return self._records[run]

    @property
    def graded(self) -> str | None:
        """What the card grades, named beside the directory: one strategy of a multi-strategy run, or an
        experiment's team variant other than full (the median run of its first, with none named full)."""
        if self.run is not None and self.run.parent == self.root:
            return self.run.name
        return None if self.variant in (None, "full") else f"team variant {self.variant}: no variant 'full' ran"

    @property
    def team_runs(self) -> tuple[Path, ...]:
        """The team runs behind the card's analyst checks: the run's (or experiment's), else the windows'."""
        return (self.team,) if self.team is not None else self.windows

    @cached_property
    def broker(self) -> BrokerConfig:
        """The run's broker section, typed (a config of an older layout is one line saying so)."""
        section = self.config.get("broker") or {}
        if isinstance(section, dict) and any(k in section for k in FLAT_COST_KEYS):
            raise DataError(
                f"{self.root}: written by an older fincon (its config.yaml has the flat cost layout, before "
                "schema 3); re-run it with this fincon to grade it"
            )
        try:
            return BrokerConfig.model_validate(section)
        except ValidationError as exc:
            raise DataError(
                f"{self.root}: the run's broker section does not read "
                f"({format_validation_error('broker', exc, BrokerConfig)})"
            ) from None

    @cached_property
    def knowledge(self) -> dict[str, Any]:
        know = self.metrics.get("model_knowledge") or (self.results.get("model_knowledge") or {}).get("test") or {}
        if self.rolling is not None and not know:
            know = _rolling_knowledge(self.results)
        return know

    @cached_property
    def closes_only(self) -> bool:
        """The run's data is a dataset of close prices only (InvestorBench's): no next open, no volume
        (read once for the rows that need them; a dataset moved since the run reads as not)."""
        folder = (self.config.get("data") or {}).get("dir")
        try:
            return bool(folder) and open_dataset(folder).manifest.prices == "close"
        except FinconError:
            return False

    @cached_property
    def calibration(self) -> dict[str, Any] | None:
        """fincon.report.calibration of the team runs' decisions, each run's last one against the closes
        of the session after it its own files hold (:meth:`closes_after`)."""
        return calibration(*self.decisions, after=[self.closes_after(*r) for r in zip(self.team_runs, self.decisions)])

    def closes_after(self, run: Path, decisions: list[dict[str, Any]]) -> dict[str, float]:
        """Each ticker's close on the session after ``run``'s last decision, from the run's own files: its
        weight of the book's value over the shares held (positions.csv), or, for one ticker the book did not
        hold, its last close moved as its buy-and-hold did (benchmark_equity.csv, the same sign); {} when the
        files hold no session after it (a run that decided on its last day, a folder without its curve)."""
        last = decisions[-1] if decisions else {}
        c0 = (last.get("record") or {}).get("closes") or {}
        try:
            rec, day = self.record(run), pd.Timestamp(str(last.get("date")))
            later = rec.equity.index[rec.equity.index > day]
            if not c0 or not len(later):
                return {}
            nxt, value = later[0], float(rec.equity[later[0]])
            closes = {
                r["ticker"]: round(float(r["weight"]) * value / float(r["shares"]), 6)
                for r in read_csv_rows(run / POSITIONS)
                if r.get("date") == f"{nxt:%Y-%m-%d}" and r.get("ticker") in c0 and float(r.get("shares") or 0)
            }
            bench = rec.benchmark_equity
            if len(c0) == 1 and not closes and bench is not None and {day, nxt} <= set(bench.index) and bench[day]:
                closes = {t: c * float(bench[nxt] / bench[day]) for t, c in c0.items()}
        except (DataError, ValueError):
            return {}
        return closes

    @property
    def cost_bp(self) -> float:
        """What an order costs a side, in bp of its value: 100 shares at $100 on a $2 range ($1 is 1 bp)."""
        return self.broker.commission.fee(100, 100.0) + self.slippage_bp

    @property
    def slippage_bp(self) -> float:
        """The slippage model's cost a side, in bp, at $100 on a $2 range."""
        return 100 * self.broker.slippage.per_share(100.0, 101.0, 99.0)

    @cached_property
    def paid(self) -> tuple[float, float, float] | None:
        """(bp a side, commission and slippage $, value traded $) the run's own orders paid: their
        commission and the slippage their fills paid (metrics.json) over the value they traded (a per-share
        minimum is 1 bp of a $10,000 order and a fortieth of that of a $400,000 one; a folder without its
        metrics adds :attr:`slippage_bp`, the model's estimate); of a rolling evaluation, every window's team
        run together. None when they traded nothing."""
        commission = traded = slipped = 0.0
        estimated = False  # a run without its metrics' slippage paid: the model's estimate at $100 stands in
        for run in (self.run,) if self.run is not None else self.windows:
            try:
                rec = self.record(run)
                for r in rec.orders:
                    traded += abs(float(r.get("filled") or 0) * float(r.get("price") or 0))
                    commission += float(r.get("commission") or 0)
            except ValueError:
                raise DataError(f"{run / ORDERS}: a cell that is no number; not the orders.csv fincon wrote") from None
            paid = ((rec.metrics if (run / "metrics.json").is_file() else {}).get("costs") or {}).get("slippage_paid")
            if paid is None:
                estimated = True
            else:  # what the fills paid (a range model's 1 bp at $100 on a $2 range was 0.28 bp of KO's orders)
                slipped += float(paid)
        if not traded:
            return None
        return (
            1e4 * (commission + slipped) / traded + (self.slippage_bp if estimated else 0.0),
            commission + slipped,
            traded,
        )

    @cached_property
    def lookahead(self) -> str:
        """Why a graded run's decisions read data from after them ("" when none did): its data (a same-day
        dataset) or beliefs learned on its own window (--allow-overlap), of the run, the experiment's team
        run and every window's team run of a rolling evaluation (whose own folder holds no metrics)."""
        if look := self.metrics.get("data_lookahead"):  # the graded run's
            return str(look)
        for run in dict.fromkeys(r for r in (self.run, self.team, *self.windows) if r is not None):
            rec = self.record(run)
            metrics = rec.metrics if run != self.run and (run / "metrics.json").is_file() else {}
            if look := metrics.get("data_lookahead"):
                return f"{look} ({run.relative_to(self.root) if run.is_relative_to(self.root) else run})"
            if overlap := rec.strategy_summary.get("team_beliefs_overlap"):
                return str(overlap).removeprefix("WARNING: ")
        return ""

    @cached_property
    def shorts(self) -> tuple[int, int]:
        """(days the book held a short, days) of the graded run, or of every window's team run."""
        days = [
            d for run in ((self.run,) if self.run is not None else self.windows) for d in self.record(run).decisions
        ]
        short = sum(any(p.get("side") == "short" for p in (d.get("position") or {}).values()) for d in days)
        return short, len(days)


def evidence(root: Path, sealed: dict[str, Any] | None = None, ledger: Path | None = None) -> Evidence:
    """The :class:`Evidence` of the run, experiment or rolling directory ``root`` (``sealed``: what
    `fincon forward score` verified of a journal whose replay ``root`` is; ``ledger``: the trial ledger
    to read, by default the one a journal's registration sealed, on its page as in its score)."""
    root = Path(root)
    if ledger is None and sealed is not None and sealed.get("ledger"):
        ledger = Path(sealed["ledger"])
    if not root.is_dir():
        what = "is not a directory" if root.exists() else "does not exist"
        raise DataError(f"{root} {what}; give a run, experiment or rolling directory")
    for marker, what, hint in (
        ("train.json", "a belief training", f"its test is a backtest: fincon backtest --beliefs {root}"),
        ("paper.json", "the paper's comparison", "give one of its experiments (a folder inside it)"),
    ):
        if (root / marker).is_file():
            raise DataError(
                f"{root} is {what} ({marker}); the card grades a tested result (a backtest run, an experiment "
                f"or a rolling evaluation): {hint}"
            )
    rolling = _json(root / "rolling.json")
    if isinstance(rolling, dict) and (why := failure(rolling)):  # leftovers graded as a verdict (review)
        raise DataError(unfinished(root, "a rolling evaluation", why))
    state = _json(root / "experiment.json")  # before the run is sought: its baselines/ graded as its result (review)
    if isinstance(state, dict) and (why := failure(state)):
        raise DataError(unfinished(root, "an experiment", why))
    results = _json(root / "results.json") or {}
    # the experiment's (or the rolling evaluation's) config: the order of its team variants
    setup: dict[str, Any] = next(
        (s["config"] for s in (rolling, state) if isinstance(s, dict) and isinstance(s.get("config"), dict)), {}
    )
    team = _team_run(root, setup) if rolling is None else None
    if rolling is None and isinstance(state, dict) and (team is None or not (team / METRICS).is_file()):
        # never its baselines/: an experiment of --ablations no-beliefs was graded as buy-and-hold (review)
        why = "names no team variant's median run" if (root / "results.json").is_file() else "is missing"
        if team is not None:
            named = team.relative_to(root) if team.is_relative_to(root) else team
            why = f"names the team's median run {named}, which holds no {METRICS}"
        raise DataError(
            f"{root} is an experiment whose results.json {why}: the card grades its team, not its baselines"
        )
    run = _strategy_run(root, team) if rolling is None else None
    if rolling is None and run is None:
        raise DataError(
            journal_hint(root) or f"{root} holds no run fincon wrote (no metrics.json with its config.yaml)"
        )
    metrics, config, rec = {}, (rolling or {}).get("config", {}), None
    if run is not None:  # the graded run read whole, once: a damaged file is named, as the page names it
        rec = RunRecord(run)
        metrics, config, _, _ = rec.metrics, rec.config, rec.equity, rec.decisions
    # a rolling evaluation: each window is an experiment folder (UNIVERSE/kNN) with its team's median run
    windows = (
        tuple(t for r in sorted(root.glob("*/*/results.json")) if (t := _team_run(r.parent, setup))) if rolling else ()
    )
    decisions = [
        (rec if rec is not None and t == run else RunRecord(t)).decisions for t in ((team,) if team else windows)
    ]
    ev = Evidence(root, run, team, rolling, results, metrics, config or {}, decisions, sealed, windows, ledger)
    graded = [root / "results.json"] if rolling is None else sorted(root.glob("*/*/results.json"))[:1]
    ev.variant = next((team_variant(_json(p), setup) for p in graded), None) if team or windows else None
    if rec is not None and run is not None:
        ev._records[run] = rec  # the graded run, read whole above
    return ev
