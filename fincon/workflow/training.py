"""``fincon train``: K episodes of the team on one window, CVRF between them.

The training run directory::

    train.json           status (running / complete), the config and options
    config.yaml          the episodes' run config (before per-episode beliefs)
    episodes/ep-01/ ...  each episode: a normal fincon run directory
    beliefs/v0.json      the beliefs each episode started from (v0 untrained)
    episodes.jsonl       one row per finished episode: objective, tau, the
                         risk-control agent's insights, meta-prompt, edits
    beliefs.json         the learned beliefs + the last episode's reflections
    beliefs.png          belief evolution: weights, tau and objective per episode

Algorithm 1 of the paper: episode k runs the team with the current beliefs;
from the second episode on, the risk-control agent compares episodes k-1 and
k (objective, sustained stretches, conceptual insights), tau is the share of
days with the same action, and the beliefs take one step with learning rate
``1 - tau``. The rules brain is deterministic, so its episodes k >= 2 explore:
their rules weights carry seeded log-normal noise (``explore``); the step
starts from the untrained weights, not from the noise. With the llm brain
the manager explores through sampling in episodes 2..K (its own seed per
episode; temperature 0.7 unless the config sets one above 0), while the
analysts keep the run's sampling so the cache answers every analyst whose
inputs and beliefs did not change (belief generation runs at temperature 0).

Resumable: an episode is finished once its run directory is committed and
its row is in ``episodes.jsonl`` (written atomically). Running the same
command again skips finished episodes, re-does the belief step of an episode
whose run finished but whose row is missing, and ends with the same files.
With the LLM cache, a rerun to a fresh directory makes no live model call.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Collection

from pydantic import ValidationError

from fincon import engine, workflow
from fincon.agents.beliefs import Beliefs, Reflection, TrainingWindow
from fincon.agents.risk_control import Episode, RiskControl
from fincon.agents.roles import ANALYSTS
from fincon.agents.team import make_fincon_team
from fincon.config import RunConfig
from fincon.engine.record import METRICS, RunRecord, read_json
from fincon.engine.rundir import check_out_path
from fincon.errors import ConfigError, DataError, FinconError
from fincon.files import corpus_hash, write_atomic
from fincon.llm.endpoint import check_server
from fincon.llm.knowledge import model_knowledge
from fincon.llm.settings import attach, build_client, layered
from fincon.risk.cvrf import RULES_LR, Trajectory, overlap
from fincon.workflow.model_checks import check_knowledge, warn_other_brain
from fincon.workflow.provenance import planted_line
from fincon.workflow.status import stopped_early, versioned
from fincon.workflow.study import Study, inputs_state, run_phases

TEAM = "fincon"
#: reflections of the last episode that travel with the learned beliefs
KEEP_REFLECTIONS = 20
#: TrainOptions.seed moves every episode's seed by this much (a repeat of an experiment)
SEED_STRIDE = 1000
#: the ranges of the training options (the experiment config uses the same)
MAX_EPISODES, MAX_LR, MAX_SEED = 100, 100.0, 10_000_000


@dataclass(frozen=True)
class TrainOptions:
    episodes: int = 4
    learn: bool = True  # False: --no-beliefs (the ablation: beliefs stay untrained)
    explore: float = 0.3  # rules brain: weight noise of episodes 2..K
    lr: float = RULES_LR  # rules brain: weight step, times 1 - tau
    temperature: float = 0.7  # llm brain: the manager's temperature in episodes 2..K (unless configured)
    seed: int = 0  # offsets every episode's seed (explore_seed, llm seed) by 1000 * seed: one per repeat
    #: who writes the belief update: "team" (the team's brain) or "llm" (the model, also for rules episodes)
    cvrf_brain: str = "team"

    def __post_init__(self):
        # NaN compares false with everything, so each range is checked as "inside", never as "not outside"
        if not 1 <= self.episodes <= MAX_EPISODES:
            raise ConfigError(f"--episodes {self.episodes} is out of range [1, {MAX_EPISODES}]")
        if not (math.isfinite(self.explore) and 0 <= self.explore <= 2):
            raise ConfigError(f"--explore {self.explore} is out of range [0, 2]")
        if not (math.isfinite(self.lr) and 0 <= self.lr <= MAX_LR):
            raise ConfigError(f"--lr {self.lr} is out of range [0, {MAX_LR:g}]")
        if not (math.isfinite(self.temperature) and 0 < self.temperature <= 2):
            raise ConfigError(f"the training temperature {self.temperature} is out of range (0, 2]")
        if self.cvrf_brain not in ("team", "llm"):
            raise ConfigError(f"--cvrf-brain {self.cvrf_brain!r}: choose team or llm")
        if not 0 <= self.seed <= MAX_SEED:
            raise ConfigError(f"the training seed {self.seed} is out of range [0, {MAX_SEED}]")

    def state(self) -> dict[str, Any]:
        """The options as saved in train.json and hashed into the default dir."""
        return asdict(self)


@dataclass
class TrainReport:
    out: Path
    rows: list[dict[str, Any]]
    beliefs: Beliefs
    resumed_from: int = 0  # episodes found finished when the command started
    ran: list[int] = field(default_factory=list)
    #: episodes a former command left unfinished (stopped early), run again from their first day: why
    rerun: dict[int, str] = field(default_factory=dict)


def default_train_out(cfg: RunConfig, opts: TrainOptions, root: Path = Path("runs")) -> Path:
    key = json.dumps(versioned({"config": cfg.model_dump(mode="json"), "options": opts.state()}), sort_keys=True)
    return (
        root
        / f"train_{'-'.join(cfg.tickers)[:60]}_{cfg.start}_{cfg.end}_{hashlib.sha256(key.encode()).hexdigest()[:8]}"
    )


def _team_params(cfg: RunConfig) -> dict[str, Any]:
    return cfg.params(TEAM)


def _read_rows(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    rows = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        raise DataError(
            f"{path} is damaged (not the text fincon wrote); delete the training directory or pick another --out"
        ) from None
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            row = None
        if not isinstance(row, dict) or not isinstance(row.get("episode"), int):
            raise DataError(
                f"{path}:{n}: not an episode row written by fincon train; delete the training "
                "directory or pick another --out"
            )
        rows.append(row)
    return rows


#: what a training sets for each episode, and the flag that sets it instead
TRAINING_SETS = {"beliefs": None, "carried_reflections": None, "episode": None, "explore": "--explore",
                 "explore_seed": None, "manager_temperature": "--llm-temperature",
                 "manager_seed": "--llm-seed"}  # fmt: skip


def _check_config(cfg: RunConfig) -> RunConfig:
    if list(cfg.strategies) != [TEAM]:
        raise ConfigError(f"fincon train trains the agent team: strategies must be [{TEAM}], not {cfg.strategies}")
    # what each episode sets: a --param of these was replaced without a word (and seeding beliefs
    # learned on another window relabelled them as this window's, past the test stage's lookahead check)
    for key, flag in TRAINING_SETS.items():
        if key in _team_params(cfg):
            do = f"give {flag}" if flag else "leave it out (a training starts from the initial beliefs)"
            raise ConfigError(f"--param {TEAM}.{key} is set by fincon train for each episode; {do}")

    # the corpus the team reads, resolved once (a dataset's own events): the beliefs' data hash names it
    return workflow.with_events(cfg, workflow.inputs_for(cfg)).model_copy(update={"benchmark": False})


def _model_settings(cfg: RunConfig, opts: TrainOptions, team=None):
    """The settings of the model a training calls (the team's, or the CVRF
    update's with --cvrf-brain llm), or None when it calls none (``team``: the
    training's team, when the caller has made it)."""

    team = team or make_fincon_team(_team_params(cfg), cfg.llm)
    if team.params.brain != "llm" and opts.cvrf_brain != "llm":
        return None

    # the rules team has no LLM settings of its own: the run's llm section, with the team's context size
    return team.settings or layered(cfg.llm, {"n_ctx": 4096}, team.params.llm)


def _risk_control(cfg: RunConfig, opts: TrainOptions, perspectives: tuple[str, ...]):
    team = make_fincon_team(_team_params(cfg), cfg.llm)
    settings = _model_settings(cfg, opts, team)
    if settings is None:
        return RiskControl(perspectives, None, opts.lr)
    client = build_client(settings)
    # it reads the episodes' tickers, dates and the analysts' words: a masked training masks them as the
    # team's own prompts are (the same pseudonyms), or the model under test is told firm and window here
    attach(client, settings, cfg.tickers, team.params.events, cfg.start)
    return RiskControl(perspectives, client, opts.lr)


def training_knowledge(cfg: RunConfig, opts: TrainOptions) -> dict[str, Any]:
    """The training window against its model's cutoff: the label the learned beliefs carry."""

    return model_knowledge(_model_settings(cfg, opts), cfg.start, cfg.end)


def _episode_config(cfg: RunConfig, beliefs_path: Path, k: int, opts: TrainOptions, brain: str) -> RunConfig:
    params = _team_params(cfg)
    previous = beliefs_path.parent.parent / "episodes" / f"ep-{k - 1:02d}" / "reflections.json"
    if k >= 2 and previous.is_file():  # the manager's episodic memory carries across episodes
        params["carried_reflections"] = str(previous.absolute())
    params.update(
        {
            "beliefs": str(beliefs_path.absolute()),
            "explore": opts.explore if (k >= 2 and brain == "rules" and opts.learn) else 0.0,
            "explore_seed": k + SEED_STRIDE * opts.seed,
            "episode": k,
        }
    )
    if brain == "llm" and k >= 2 and opts.learn:
        # the manager explores through sampling: a temperature above 0 (unless
        # the config sets one) and one seed per episode; the analysts keep the
        # run's sampling, so an analyst whose inputs and beliefs did not change
        # is answered by the cache (belief generation runs at temperature 0)
        llm = {**cfg.llm.model_dump(mode="json", exclude_unset=True), **(params.get("llm") or {})}
        params["manager_temperature"] = float(llm.get("temperature") or opts.temperature)
        params["manager_seed"] = int(llm.get("seed", 0)) + k + SEED_STRIDE * opts.seed
    return cfg.with_params(TEAM, params)


def _episode_row(k: int, run: Path, traj: Trajectory, insights, calls: int) -> dict[str, Any]:
    rec = RunRecord(run)
    metrics, summary = rec.metrics, rec.strategy_summary
    return {
        "episode": k,
        "objective": round(traj.objective, 6),
        "cr_pct": metrics.get("cr_pct"),
        "sharpe": metrics.get("sharpe"),
        "mdd_pct": metrics.get("mdd_pct"),
        "days": metrics.get("n_days"),
        "alerts": summary.get("team_alerts", 0),
        "team_model_calls": summary.get("team_model_calls", 0),
        "llm_tokens": summary.get("llm_tokens", 0),
        "llm_cost_usd": summary.get("llm_cost_usd", 0.0),
        "weights_in_force": summary.get("team_weights", {}),
        "beliefs_version": summary.get("team_beliefs_version"),
        "insights": insights,
        "risk_control_calls": calls,
    }


def train(
    cfg: RunConfig,
    out: Path | None,
    opts: TrainOptions,
    progress: bool = True,
    *,
    require_after_cutoff: bool = False,
    warn_knowledge: bool = True,
    given: Collection[str] = (),
) -> TrainReport:
    """Run (or resume) a training; see the module docstring. A training
    window the model may remember is said in one line (refused with
    ``require_after_cutoff``), before anything is written; so is each option
    the user ``given`` that the training's brain ignores (``explore``)."""

    cfg = _check_config(cfg)
    team = make_fincon_team(_team_params(cfg), cfg.llm)  # validates the team's params now
    brain = team.params.brain
    knowledge = {"training": training_knowledge(cfg, opts)}
    check_knowledge(knowledge, require=require_after_cutoff, warn=False)  # refused before anything else
    out = check_out_path(out) if out is not None else default_train_out(cfg, opts)
    inputs = partial(inputs_state, workflow.inputs_for(cfg), cfg.tickers, (cfg.start, cfg.end), team.params.events,
                     every_item=cfg.llm.anonymize)  # fmt: skip
    state = {"config": cfg.model_dump(mode="json"), "options": opts.state(), "inputs": inputs()}
    study = Study(out, "train.json", state, "training", _finished_episodes, TRAINING_LAYOUT, disposable=_nothing_kept,
                  early=TRAINING_EARLY, inputs_now=inputs)  # fmt: skip

    def checks() -> None:  # every check before the first file: the data, the corpus, the beliefs, the server
        workflow.preflight(cfg)

        if warn_knowledge:  # an --explore the llm brain would ignore
            warn_other_brain(brain, given)
        # a server that is down, or a replay's missing recording: said now, before the training's folder
        check_server(_model_settings(cfg, opts))
        check_knowledge(knowledge, warn=warn_knowledge)  # the inputs are good: the window's label, once
        if warn_knowledge and (planted := planted_line(_team_params(cfg).get("events"), cfg.tickers)):
            print(f"fincon: warning: {planted}", file=sys.stderr)

    return study.run(lambda: _train(cfg, out, opts, team, brain, progress), preflight=checks)


#: the top-level names a training writes (status.claim removes a failed training's leftovers only then)
TRAINING_LAYOUT = frozenset(
    {"train.json", "config.yaml", "episodes", "beliefs", "episodes.jsonl", "beliefs.json", "beliefs.png",
     "llm_usage.csv", "llm_runtime.csv", "llm_audit.jsonl", "llm_calls.csv", "report.html"}
)  # fmt: skip


def _finished_episodes(out: Path) -> int:
    return len([r for r in _read_rows_lenient(out / "episodes.jsonl")])


def _read_rows_lenient(path: Path) -> list[dict[str, Any]]:
    try:
        return _read_rows(path)
    except (OSError, ValueError):
        return []


TRAINING_EARLY = ("train.json", "config.yaml", "beliefs/v0.json")  # before its first episode (status.strays)


def _nothing_kept(out: Path) -> bool:
    """A training that failed before it wrote more than its status files leaves nothing behind (the
    status file alone would block the corrected rerun's --out for nothing)."""
    leftovers = {p.name for p in out.iterdir()} if out.is_dir() else set()
    episodes = out / "episodes"
    return not (leftovers - {"train.json", "config.yaml", "episodes", "beliefs"}) and not (
        episodes.is_dir() and any(episodes.iterdir())
    )


def episode_state(run_dir: Path) -> tuple[str | None, str]:
    """(status, detail) of an episode's run directory: ``complete`` only when
    the run covered its whole window (metrics say complete); ``stopped_early``
    with how far it got; None when there is no readable run."""
    try:
        metrics = read_json(run_dir / METRICS)
    except DataError:
        return None, "no finished run"
    if not isinstance(metrics, dict):
        return None, "metrics.json is damaged"
    status = metrics.get("status")
    try:
        summary = RunRecord(run_dir).summary
    except DataError:
        summary = {}
    reason = summary.get("stop_reason") if isinstance(summary, dict) else None
    days = metrics.get("n_days")
    last = summary.get("last_day") if isinstance(summary, dict) else None
    detail = f"stopped early after {days} days (last day {last}){f': {reason}' if reason else ''}"
    return status, (detail if status != "complete" else "complete")


def _train(cfg: RunConfig, out: Path, opts: TrainOptions, team, brain: str, progress: bool) -> TrainReport:
    (out / "config.yaml").write_text(cfg.to_yaml())
    (out / "episodes").mkdir(exist_ok=True)
    (out / "beliefs").mkdir(exist_ok=True)

    names = tuple(r.name for r in (ANALYSTS[a] for a in (team.params.analysts or list(ANALYSTS))))
    initial = Beliefs.initial({ANALYSTS[n].name: ANALYSTS[n].weight for n in (team.params.analysts or list(ANALYSTS))})
    v0 = out / "beliefs" / "v0.json"
    if not v0.is_file():
        write_atomic(v0, initial.dump())

    rows_path = out / "episodes.jsonl"
    rows = _read_rows(rows_path)[: opts.episodes]
    resumed = len(rows)
    rc = _risk_control(cfg, opts, names)
    beliefs = _saved_beliefs(out / "beliefs" / f"v{rows[-1].get('beliefs_after')}.json") if rows else initial
    episodes: dict[int, Episode] = {}
    ran: list[int] = []
    rerun: dict[int, str] = {}

    def episode(k: int) -> Episode:
        if k not in episodes:
            row = rows[k - 1] if k <= len(rows) else None
            try:
                rec = RunRecord(out / "episodes" / f"ep-{k:02d}")
                traj = Trajectory.of(rec.decisions, rec.equity, rec.metrics, rec.strategy_summary)
                if len(traj.dates) != int(rec.strategy_summary["team_days"]):  # a cut decisions file
                    raise ValueError(f"{len(traj.dates)} decisions of {rec.strategy_summary['team_days']} days")
            except (OSError, ValueError, KeyError, TypeError, AttributeError, DataError) as exc:  # a former run's files
                raise DataError(
                    f"{out / 'episodes' / f'ep-{k:02d}'} is damaged ({type(exc).__name__}); the "
                    "training cannot resume from it (delete the training directory to start over, "
                    "or pick another --out)"
                ) from None
            episodes[k] = Episode(k, traj, row["insights"] if row else [])
        return episodes[k]

    def run_episodes(todo: list[int], finished) -> None:
        """Episodes one after the other: each starts from the beliefs the one before learned."""
        nonlocal beliefs
        for i, k in enumerate(todo):
            run_dir = out / "episodes" / f"ep-{k:02d}"
            start_path = out / "beliefs" / f"v{beliefs.version}.json"
            status, detail = episode_state(run_dir)
            if status != "complete":
                if status is not None:  # a former command's episode that did not cover its window
                    rerun[k] = detail
                ecfg = _episode_config(cfg, start_path, k, opts, brain)
                # a trial in the ledger (a score on the window: the card deflated by 1 where 2 were tried)
                with stopped_early(k > 1, f"rerun the same command to run episode {k} again from its first day"):
                    report = workflow.run_config(ecfg, run_dir, progress=progress, replace=True,
                                                 warn_knowledge=False, episode=True)  # fmt: skip
                if not report.complete:
                    days = len(report.results[TEAM].dates) if TEAM in report.results else 0
                    err = FinconError(
                        f"episode {k} stopped early after {days} days "
                        f"({report.results[TEAM].stopped if TEAM in report.results else 'no day'}); "
                        f"rerun the same command to run episode {k} again from its first day"
                    )
                    err.exit_code = 3
                    raise err
                ran.append(k)
            ep = episode(k)
            insights, calls = rc.summarise(ep)
            ep.insights = insights
            row = _episode_row(k, run_dir, ep.traj, insights, calls)
            row["beliefs_before"] = beliefs.version
            if k >= 2:
                prev = episode(k - 1)
                try:
                    tau = overlap(prev.traj, ep.traj)
                except ValueError as exc:
                    raise DataError(
                        f"episodes {k - 1} and {k} of {out}: {exc}; delete the training directory to start over"
                    ) from None
                row["tau"] = round(tau, 6)
                if opts.learn:
                    upd = rc.update(beliefs, prev, ep, tau)
                    row["update"] = upd.row()
                    beliefs = upd.beliefs
            # every learned version names the window it learned on (a test run given beliefs/v2.json
            # passed the lookahead check with no window to check)
            window = training_window(cfg).model_copy(
                update={"tickers": list(cfg.tickers), "episodes_done": k, "episodes_planned": opts.episodes}
            )  # what a test run checks its own against (its tickers; a training that did not finish)
            learned_on = {"window": window, "model_knowledge": training_knowledge(cfg, opts)}
            path = out / "beliefs" / f"v{beliefs.version}.json"
            if not path.is_file():
                write_atomic(path, beliefs.model_copy(update=learned_on).dump())
            row["beliefs_after"] = beliefs.version
            # the learned beliefs before the row that says the episode is done: stopped between the
            # two, a resume skipped the episode and kept the beliefs of the one before as learned
            write_atomic(out / "beliefs.json", _with_reflections(beliefs, run_dir).model_copy(update=learned_on).dump())
            rows.append(row)
            write_atomic(rows_path, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
            if rc.client is not None:
                rc.client.ledger.write(out)
            finished(i, row)

    def note(_name: str, row: dict[str, Any]) -> dict[str, Any]:
        return {
            "objective": f"{row['objective']:+.2f}%",
            "tau": row.get("tau", "-"),
            "tokens": f"{sum(int(r.get('llm_tokens') or 0) for r in rows):,}",
            "cost": f"${sum(float(r.get('llm_cost_usd') or 0.0) for r in rows):.4f}",
        }

    # one phase: the episodes in order, those with a row skipped (a training resumes after its last row)
    phase = [(f"ep-{k:02d}", k) for k in range(1, opts.episodes + 1)]
    bar = {"unit": "episode", "desc": "training", "disable": not progress, "position": 0}
    try:
        run_phases([phase], lambda k: k <= resumed, run_episodes, bar=bar, note=note)
    finally:
        if rc.client is not None:
            rc.client.close()

    engine.plot_beliefs(rows, out / "beliefs.png")
    learned = Beliefs.model_validate_json((out / "beliefs.json").read_text())
    return TrainReport(out, rows, learned, resumed, ran, rerun)


def _saved_beliefs(path: Path) -> Beliefs:
    """A beliefs version a former command saved; a missing or damaged one is one line naming it."""

    try:
        return Beliefs.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValidationError):
        raise DataError(
            f"{path} is missing or damaged; the training cannot resume from it (delete the training "
            "directory to start over, or pick another --out)"
        ) from None


def training_window(cfg: RunConfig):
    """The window and a hash of the data the beliefs are learned on
    (``--beliefs`` refuses them for a run that does not start after it)."""
    events = str(_team_params(cfg).get("events") or "sample")
    seen: dict[str, Any] = {"data": cfg.data.model_dump(mode="json", exclude={"cache_dir"}), "events": events}
    ds = workflow.inputs_for(cfg).dataset
    if ds is not None:  # a dataset directory: its manifest (it hashes every file) stands for the data
        seen["manifest"] = (ds.root / "dataset.json").read_text(encoding="utf-8")
        seen["data"] = {k: v for k, v in seen["data"].items() if k != "dir"}
        if events != "sample" and Path(events).resolve() == ds.events_dir.resolve():
            seen["events"] = "dataset"  # the dataset's own events: no machine-specific path in the hash
    if seen["events"] not in ("sample", "dataset") and Path(events).expanduser().is_dir():
        # an event directory enters by its files' contents, not by where it lives
        files = [p for p in Path(events).expanduser().rglob("*") if p.is_file()]
        seen["events"] = corpus_hash(files)
    digest = hashlib.sha256(json.dumps(seen, sort_keys=True).encode()).hexdigest()
    return TrainingWindow(start=str(cfg.start), end=str(cfg.end), data_hash=digest)


def _with_reflections(beliefs: Beliefs, run_dir: Path) -> Beliefs:
    """The learned beliefs plus the last episode's reflections, for the test stage."""
    path = run_dir / "reflections.json"
    refl = json.loads(path.read_text()) if path.is_file() else []
    return beliefs.model_copy(update={"reflections": [Reflection(**r) for r in refl[-KEEP_REFLECTIONS:]]})
