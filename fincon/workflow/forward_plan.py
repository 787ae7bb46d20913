"""What a forward journal decides from: the plan ``init`` sealed, and each session's inputs frozen
into ``DIR/inputs/SESSION/`` (the bars up to its close, the items visible by then) and joined for a
step's replay, so that later revisions of a source change no past decision."""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import shutil
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pandas as pd
import yaml

from fincon import stopping, workflow
from fincon.agents.team.corpus import COVERAGE
from fincon.config import RunConfig, load_config
from fincon.data.events.loaders.directory import write_jsonl_gz
from fincon.data.events.model import decision_cutoff
from fincon.data.prices import validate_bars
from fincon.engine.costs import COMMISSIONS, SLIPPAGES
from fincon.errors import ConfigError, SourceUnavailable
from fincon.files import json_text
from fincon.flag import absolute
from fincon.llm.bundled import BUNDLED, file_sha256
from fincon.llm.masking_terms import TERMS, mined_terms
from fincon.strategies.registry import make_strategy, params_model
from fincon.workflow import forward_media
from fincon.workflow.forward_clock import EXCHANGE, sessions
from fincon.workflow.journal import INPUTS, PLAN_FILE, STATE, ForwardError, Journal, StaleSource, tree_hash
from fincon.workflow.model_checks import knowledge


@dataclass(frozen=True)
class Plan:
    """What ``init`` registers: the run config (its end is the last decided session), the first session,
    and whether the clock is simulated."""

    config: RunConfig
    first: dt.date
    simulated: bool
    #: where decisions are also placed: "paper" (the built-in paper broker alone) or "alpaca" (fincon.workflow.alpaca)
    broker: str = "paper"
    #: each strategy's learned beliefs as text (fincon.workflow.forward_media): sealed with the plan
    beliefs: dict[str, str] = field(default_factory=dict)

    def to_yaml(self) -> str:
        tree = yaml.safe_load(self.config.to_yaml())
        data = {"config": tree, "first": str(self.first), "simulated": self.simulated}
        if self.broker != "paper":  # the key a journal on the paper broker never had
            data["broker"] = self.broker
        if self.beliefs:  # the key a journal without beliefs never had
            data["beliefs"] = dict(self.beliefs)
        return yaml.safe_dump(data, sort_keys=True)

    @classmethod
    def load(cls, root: Path) -> "Plan":
        try:
            data = yaml.safe_load((root / PLAN_FILE).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
            if (root / PLAN_FILE).is_file() and not isinstance(exc, OSError):  # init would refuse the folder
                raise ConfigError(
                    f"{root / PLAN_FILE}: not YAML fincon wrote (edited?); the journal does not verify"
                ) from None
            raise ConfigError(
                f"{root}: no forward journal here (no readable {PLAN_FILE}); start one with fincon forward init DIR"
            ) from None
        if not isinstance(data, dict):
            raise ConfigError(f"{root / PLAN_FILE}: not a plan fincon wrote (edited?); the journal does not verify")
        try:
            cfg = load_config(None, _flatten(_sealed_layout(data["config"])))
            beliefs = data.get("beliefs") or {}
            if not all(isinstance(v, str) for v in beliefs.values()):
                raise TypeError("beliefs: not text")
            first = dt.date.fromisoformat(data["first"])
            return cls(cfg, first, bool(data["simulated"]), data.get("broker", "paper"), dict(beliefs))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # a plan edited by hand: a traceback
            raise ConfigError(
                f"{root / PLAN_FILE}: not a plan fincon wrote ({type(exc).__name__}: {exc}); it was edited after "
                "init, and the journal does not verify"
            ) from None


#: the broker's flat cost keys of a plan sealed before schema 3, and the model field each one set
_FLAT_COMMISSION = {"commission": "rate", "commission_per_share": "per_share", "commission_min": "minimum",
                    "commission_max": "maximum"}  # fmt: skip


def _sealed_layout(tree: dict[str, Any]) -> dict[str, Any]:
    """A plan as sealed: one written before schema 3 has the broker's cost models in the flat layout
    (``commission_model: percent``, ``commission: 0.0``, ``slippage_model``, ...). A sealed journal is
    read as it was written, never edited (its hash is in the register entry), so its broker is read
    into the models' mappings here; every other config refuses the flat keys. Likewise markowitz's
    ``directions`` beside its long-only form, refused since 2026-12-02 and never read before: the
    journal traded without them, and is replayed so."""
    params = tree.get("strategy_params")
    if isinstance(params, dict):
        unread = {n: {k: v for k, v in p.items() if k != "directions"} for n, p in params.items()
                  if n.partition("@")[0] == "markowitz" and isinstance(p, dict) and "directions" in p
                  and p.get("form", "long_only") != "signed"}  # fmt: skip
        tree = {**tree, "strategy_params": {**params, **unread}}
    broker = tree.get("broker")
    if not isinstance(broker, dict) or "commission_model" not in broker:
        return tree
    b = dict(broker)
    model = b.pop("commission_model")
    flat = {k: b.pop(k) for k in list(_FLAT_COMMISSION) if k in b}
    fields = COMMISSIONS[model].model_fields
    b["commission"] = {
        "model": model,
        **{_FLAT_COMMISSION[k]: v for k, v in flat.items() if _FLAT_COMMISSION[k] in fields},
    }
    slip = b.pop("slippage_model", "percent")
    b["slippage"] = {"model": slip, SLIPPAGES[slip].number: b.pop("slippage", 0.0)}
    return {**tree, "broker": b}


def _flatten(tree: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A config tree as the dotted overrides load_config takes (strategy params and llm kept whole)."""
    out: dict[str, Any] = {}
    for k, v in tree.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and k not in ("strategy_params", "llm") and prefix == "":
            out.update(_flatten(v, f"{key}."))
        else:
            out[key] = v
    return out


def a_hole(plan: Plan, stale: StaleSource, until: dt.date) -> bool:
    """Whether the source lacks ``stale``'s session but has a bar after it by ``until``: a hole in its
    data (a halt, a vendor's gap) that no retry fills, where a source that ends before the session is
    stale and may catch up."""
    source = workflow.inputs_for(plan.config).source
    day = pd.Timestamp(stale.day)
    try:
        raw = source.load(stale.ticker, day + pd.Timedelta(days=1), pd.Timestamp(until))
    except SourceUnavailable:
        return False
    bars = validate_bars(raw, stale.ticker, source.describe(stale.ticker))
    return bool((bars.index > day).any())  # a source may hand over its history before the start too


def check_sessions(ticker: str, dates: pd.DatetimeIndex, first: dt.date, day: dt.date) -> None:
    """Refuse bars from ``first`` to ``day`` on a day that is no session of the exchange: a journal
    decides and fills on its sessions, and a replay over such a bar would decide on it, or fill on
    it, with nothing sealed (a stock file's stray weekend bar; a coin's data, which init refuses)."""
    held = dates[(dates >= pd.Timestamp(first)) & (dates <= pd.Timestamp(day))]
    extra = held.difference(pd.DatetimeIndex(sessions(first, day)))
    if len(extra):
        more = f" and {len(extra) - 1} other day(s)" if len(extra) > 1 else ""
        raise ForwardError(
            f"{ticker}: the source has a bar on {extra[0].date()}{more}, no session of {EXCHANGE}: a journal decides "
            "and fills on the exchange's sessions only, and a replay over that bar would trade a day it never "
            "sealed; drop the bar from the prices (or backtest them); nothing decided"
        )


def cache_from_anywhere(cfg: RunConfig) -> RunConfig:
    """The plan's call caches as absolute paths: a step runs from any directory (cron starts it in
    $HOME), and a cache path read from there would start an empty cache beside it, asking the model
    again for every session a lost state makes it replay."""
    cfg = cfg.model_copy(update={"llm": cfg.llm.model_copy(update={"cache_path": Path(absolute(cfg.llm.cache_path))})})
    for name in cfg.strategies:
        own = (cfg.params(name) or {}).get("llm") or {}
        if own.get("cache_path"):
            cfg = cfg.with_params(name, {**cfg.params(name), "llm": {**own, "cache_path": absolute(own["cache_path"])}})
    return cfg


def freeze(root: Path, plan: Plan, day: dt.date) -> dict[str, Any]:
    """The inputs the decision at ``day``'s close reads, new since the last freeze, written into
    ``DIR/inputs/DAY/`` (prices: the bars up to ``day``; events: the items visible by its close)."""

    folder = root / INPUTS / str(day)
    if folder.is_dir():
        shutil.rmtree(folder)  # a step stopped before sealing: its inputs are taken again
    staging = folder.with_name(f".{day}.partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "prices").mkdir(parents=True)
    cfg = plan.config
    inputs = workflow.inputs_for(cfg)
    previous = _frozen_days(root)
    since = previous[-1] if previous else None
    adjustments: dict[str, dict[str, Any]] = {}

    for t in cfg.tickers:
        try:
            raw = inputs.source.load(t, pd.Timestamp("1900-01-01"), pd.Timestamp(day))
        except SourceUnavailable as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise ForwardError(f"{t}: the source is down ({exc}); nothing decided, the next step retries") from None
        bars = validate_bars(raw, t, inputs.source.describe(t)).loc[: pd.Timestamp(day)]
        try:
            check_sessions(t, bars.index, plan.first, day)
        except ForwardError:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if bars.empty or bars.index[-1].date() < day:
            shutil.rmtree(staging, ignore_errors=True)
            raise StaleSource(
                f"{t}: the last bar the source has is {bars.index[-1].date() if len(bars) else 'none'}, older than "
                f"the session {day}: stale data, nothing decided; the next step retries",
                t,
                str(day),
            )
        if since is not None:
            try:
                factor, against, corrected = _rebased(root, previous, t, bars)
            except ForwardError:
                shutil.rmtree(staging, ignore_errors=True)
                raise
            bars = bars.loc[pd.Timestamp(since) + pd.Timedelta(days=1) :]
            if factor != 1.0:  # a split or a dividend rewrote the vendor's history: the new bars in the frozen basis
                bars = bars.assign(**{c: bars[c] * factor for c in ("open", "high", "low", "close")},
                                   volume=bars["volume"] / factor)  # fmt: skip
            if factor != 1.0 or corrected:  # a correction of a frozen bar: said, the frozen bar kept
                adjustments[t] = {"against": against, "factor": factor} | (
                    {"corrected": corrected} if corrected else {}
                )
        frame = pd.DataFrame({"Date": bars.index.strftime("%Y-%m-%d"), "Open": bars["open"], "High": bars["high"],
                              "Low": bars["low"], "Close": bars["close"], "Adj Close": bars["close"],
                              "Volume": bars["volume"]})  # fmt: skip
        frame.to_csv(staging / "prices" / f"{t}.csv", index=False, float_format="%.10g")
    spec = _events_spec(workflow.with_events(cfg, inputs))
    if spec is not None:
        cut = decision_cutoff(day)
        lo = decision_cutoff(since) if since is not None else None
        store = inputs.events(spec, tuple(cfg.tickers))
        for t in cfg.tickers:
            items = [e for e in store.all_events() if e.ticker == t and e.published_at < cut
                     and (lo is None or e.published_at >= lo)]  # fmt: skip
            write_jsonl_gz(staging / "events" / f"{t}.jsonl.gz", forward_media.freeze_audio(staging / "events", items))
        forward_media.freeze_transcripts(staging, cfg)
        if since is None and _masks(cfg):
            # the mask's names and terms are mined from every firm of the source before the first session
            # (a firm's words tell from the others'): frozen now, as a backtest of the window mines them
            names, vocabulary = mined_terms(spec, tuple(sorted(cfg.tickers)), plan.first)
            (staging / "events" / TERMS).write_text(json_text({"before": str(plan.first), "names": names,
                                                               "vocabulary": vocabulary}))  # fmt: skip
    if adjustments:
        (staging / ADJUSTMENTS).write_text(json_text(adjustments))
    staging.rename(folder)
    return {"path": f"{INPUTS}/{day}", "sha256": tree_hash(folder)}


#: the ratios a freeze rescaled its new bars by, per ticker (a split or a dividend since the last freeze)
ADJUSTMENTS = "adjustments.json"


#: the frozen bars a step compares with the source's to read the vendor's rebasing, and the relative gap
#: under which two ratios are one: a vendor's adjusted closes carry float32's seven digits (at 1e-7, 15 %
#: of dividend steps listed a correction that never was; found in review)
REBASE_BARS, REBASE_TOL = 5, 1e-6


def _rebased(root: Path, frozen_days: list[dt.date], ticker: str, bars: pd.DataFrame) -> tuple[float, str, list[str]]:
    """The journal's price basis against the source's today, the session it is read on, and the frozen
    sessions the vendor corrected since: 1.0 while the vendor's history stands as frozen; after a 3-for-1
    split, 3.0 (adjusted prices are rewritten back in time, the frozen ones are not). Read on the last
    :data:`REBASE_BARS` frozen bars, the ratio most of them share (a split or a dividend rewrites every bar
    by one ratio, a vendor's correction only the bar it corrects: read on one bar, a correction of it
    rescaled the next session's prices, found in review); no ratio most share is one line. 1.0 where the
    source lacks the bars (a hole: nothing to compare)."""
    rows = [
        pd.read_csv(f)
        for d in frozen_days[-REBASE_BARS:]
        if (f := root / INPUTS / str(d) / "prices" / f"{ticker}.csv").is_file()
    ]
    frozen = pd.concat(rows).tail(REBASE_BARS) if rows else pd.DataFrame()
    seen = [(str(r["Date"]), float(r["Close"]) / float(bars.loc[pd.Timestamp(r["Date"]), "close"]))
            for _, r in frozen.iterrows() if pd.Timestamp(r["Date"]) in bars.index]  # fmt: skip
    if not seen:
        return 1.0, "", []
    groups: list[list[tuple[str, float]]] = []  # the bars by the ratio they share (a frozen price: 10 digits)
    for d, x in seen:
        g = next(
            (g for g in groups if abs(x / g[0][1] - 1.0) < REBASE_TOL), None
        )  # float32's digits (1e-7: false corrections)
        groups.append([(d, x)]) if g is None else g.append((d, x))
    most = max(len(g) for g in groups)
    top = [g for g in groups if len(g) == most]
    if len(top) > 1:  # a tie: no change, where one side is none
        top = [g for g in top if abs(g[0][1] - 1.0) < REBASE_TOL]
        if not top:
            raise ForwardError(
                f"{ticker}: the source's history differs from the frozen bars by no one ratio (not a split or a "
                f"dividend: {', '.join(f'{d} x{x:.6f}' for d, x in seen)}); nothing decided: check the source"
            )
    ratio, kept = top[0][0][1], {d for d, _ in top[0]}
    return (1.0 if abs(ratio - 1.0) < REBASE_TOL else ratio), top[0][-1][0], [d for d, _ in seen if d not in kept]


def _masks(cfg: RunConfig) -> bool:
    """Does a strategy of ``cfg`` mask its prompts (``llm.anonymize``, the run's or its own)?"""
    return bool(cfg.llm.anonymize) or any(
        bool(((cfg.params(name) or {}).get("llm") or {}).get("anonymize")) for name in cfg.strategies
    )


def _events_spec(cfg: RunConfig) -> str | None:
    for name in cfg.strategies:
        spec = (cfg.params(name) or {}).get("events")
        if spec:
            return str(spec)
    return None


@contextmanager
def frozen_inputs(root: Path, plan: Plan, day: dt.date, journal: Journal) -> Iterator[dict[str, Any]]:
    """:func:`freeze`, its folder removed again unless an entry of ``journal`` came to name it (a decision
    too late, a strategy that could not decide, a stop): a later step's freeze starts after the last
    folder, and a replay and a score read every one, so one left would be read unsealed."""
    frozen = freeze(root, plan, day)
    try:
        yield frozen
    except BaseException:
        if not any((e.get("inputs") or {}).get("path") == frozen["path"] for e in journal.entries()):
            with stopping.held():
                shutil.rmtree(root / frozen["path"], ignore_errors=True)
        raise


def _frozen_days(root: Path) -> list[dt.date]:
    base = root / INPUTS
    return (
        sorted(dt.date.fromisoformat(p.name) for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))
        if base.is_dir()
        else []
    )


def _frozen_config(
    root: Path, plan: Plan, day: dt.date, keep_state: bool = False, joined: Path | None = None
) -> RunConfig:
    """The plan's config over the first session .. ``day``, reading the frozen inputs alone (every
    freeze's prices and items joined into ``joined``, by default ``DIR/.replay-inputs``, which the replay
    kept in ``DIR/replay`` names: a verify that keeps no replay joins them in its own temporary folder, as
    one into ``DIR/.replay-inputs`` removed the calls a score's replay names there, found in review).
    ``keep_state`` (a step, not verify): an RL agent trained once is kept in ``DIR/state/NAME`` and loaded
    by the next step's replay."""

    joined = joined or root / ".replay-inputs"
    shutil.rmtree(joined, ignore_errors=True)
    (joined / "prices").mkdir(parents=True)
    frames: dict[str, list[pd.DataFrame]] = {}
    events: dict[str, list[str]] = {}
    for d in _frozen_days(root):
        if d > day:
            break
        for f in sorted((root / INPUTS / str(d) / "prices").glob("*.csv")):
            frames.setdefault(f.stem, []).append(pd.read_csv(f))
        for f in sorted((root / INPUTS / str(d) / "events").glob("*.jsonl.gz")):
            events.setdefault(f.name, []).append(gzip.decompress(f.read_bytes()).decode("utf-8"))
    for t, parts in frames.items():
        pd.concat(parts).to_csv(joined / "prices" / f"{t}.csv", index=False, float_format="%.10g")
    cfg = plan.config.model_copy(update={"end": day, "data": plan.config.data.model_copy(
        update={"source": "csv", "dir": joined / "prices"})})  # fmt: skip
    if events:
        (joined / "events").mkdir()
        for name, parts in events.items():
            buf = io.BytesIO()
            with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as gz:
                gz.write("".join(parts).encode("utf-8"))
            (joined / "events" / name).write_bytes(buf.getvalue())
        # it covers every session it was read at, a quiet one too (no item that day): said, so the
        # team's coverage check does not end the journal at the last day that had news
        span = [str(plan.config.start), str(day)]
        (joined / "events" / COVERAGE).write_text(json.dumps({t: span for t in plan.config.tickers}))
        terms = root / INPUTS / str(_frozen_days(root)[0]) / "events" / TERMS  # frozen by the first freeze
        if terms.is_file():
            shutil.copyfile(terms, joined / "events" / TERMS)
        for name in cfg.strategies:  # every strategy that reads a corpus reads the frozen one
            if "events" in params_model(name).model_fields:
                cfg = cfg.with_params(name, {**cfg.params(name), "events": str(joined / "events")})
    cfg = forward_media.join([root / INPUTS / str(d) for d in _frozen_days(root) if d <= day], joined, cfg,
                             plan.beliefs)  # fmt: skip
    if keep_state:  # every strategy that can keep a trained model keeps it in DIR/state/NAME
        for name in cfg.strategies:
            if "model_cache" in params_model(name).model_fields and cfg.params(name).get("model_cache") is None:
                cfg = cfg.with_params(name, {**cfg.params(name), "model_cache": str(root / STATE / name)})
    return cfg


def _weights(strategies: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Each local model and its weights' sha256: a bundled model's pinned hash (its parts are checked
    against it when assembled), a GGUF of the user's hashed in full (a size-and-mtime stamp is fooled by a
    copy with its mtime set back)."""
    out = {}
    for name, s in strategies.items():
        settings = s.llm_settings()
        if settings is not None and settings.backend == "local":
            model = settings.resolved_model()
            out[name] = (model, BUNDLED[model].sha256 if model in BUNDLED else file_sha256(Path(model), force=True))
    return out


def models(cfg: RunConfig) -> dict[str, Any]:
    """Each strategy's model as the register entry seals it: name, knowledge cutoff and, for a local
    model, the sha256 of its weights."""
    strategies = {n: make_strategy(n, cfg.strategy_params.get(n), cfg.llm) for n in cfg.strategies}
    blocks, weights = knowledge(cfg, strategies), _weights(strategies)
    return {n: {**blocks[n], **({"weights_sha256": weights[n][1]} if n in weights else {})} for n in strategies}


def same_weights(cfg: RunConfig, register: dict[str, Any]) -> None:
    """A step decides with the weights its journal registered, or not at all (a swapped GGUF would decide
    under the registered name, and verify, answered from the journal's calls, cannot tell)."""
    sealed = {n: m["weights_sha256"] for n, m in (register.get("models") or {}).items() if m.get("weights_sha256")}
    if not sealed:
        return
    now = _weights({n: make_strategy(n, cfg.strategy_params.get(n), cfg.llm) for n in sealed})
    for name, sha in sealed.items():
        model, got = now.get(name, ("no local model", ""))
        if got != sha:
            raise ForwardError(
                f"{name}: the weights of {model} (sha256 {got[:16] or 'none'}) differ from the ones registered "
                f"(sha256 {sha[:16]}): a journal decides with the model it registered; put those weights back, "
                "or start a new journal"
            )
