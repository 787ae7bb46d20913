"""The one decision interface every strategy and agent team implements.

A strategy sees the market only through a :class:`~fincon.data.view.MarketView`
(data up to and including the decision day) and answers with a
:class:`Decision`: target weights for the tickers it wants to change. The
engine turns weights into orders; strategies never talk to the broker, so an
LLM agent team plugs in exactly like a moving-average crossover.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Mapping, Protocol

from fincon.strategies import state

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from fincon.data.events.store import EventStore
    from fincon.data.view import MarketView

Action = Literal["buy", "sell", "hold"]


@dataclass(frozen=True)
class Decision:
    """Target portfolio weights chosen on one day.

    ``weights`` maps ticker -> target fraction of portfolio value (negative =
    short). Tickers left out keep their current position untouched (a
    "hold"). ``rationale`` and ``evidence`` (ids of the memories, events or
    LLM calls the decision relied on) go to the run's ``decisions.jsonl``.
    """

    weights: Mapping[str, float] = field(default_factory=dict)
    rationale: str = ""
    evidence: tuple[str, ...] = ()
    actions: Mapping[str, Action] = field(default_factory=dict)
    #: optional per-day record of how the decision was reached (an agent
    #: team's reports, citations and calls); written to decisions.jsonl as is
    record: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_action(
        cls,
        ticker: str,
        action: Action,
        size: float = 1.0,
        rationale: str = "",
        evidence: tuple[str, ...] = (),
    ) -> "Decision":
        """Single-ticker trading: buy = long ``size``, sell = short ``size``,
        hold = keep whatever is held now."""
        if action not in ("buy", "sell", "hold"):
            raise ValueError(f"action must be buy, sell or hold, not {action!r}")
        if not 0.0 <= size <= 1.0:
            raise ValueError(f"size must be within [0, 1], not {size}")
        weights = {} if action == "hold" else {ticker: size if action == "buy" else -size}
        return cls(weights=weights, rationale=rationale, evidence=tuple(evidence), actions={ticker: action})


class CostEstimate(Protocol):
    """What trading costs, as a strategy may ask before it decides
    (:class:`fincon.engine.costs.Costs` is the engine's answer)."""

    def unit_cost(self, price: float, high: float | None = None, low: float | None = None) -> float:
        """Trading one unit of the book, as a fraction of the value traded,
        for an order decided on a bar with this close and range."""
        ...


@dataclass(frozen=True)
class RunContext:
    """What a strategy may know about the run it is part of (not the market).

    ``run_dir`` is the (still temporary) run directory: a strategy that keeps
    artifacts of its own (LLM usage, audit logs) writes them there in
    :meth:`Strategy.finish`. ``start`` and ``end`` are the backtest window
    (None when a caller runs a strategy outside a configured run);
    ``costs`` are the run's cost models (None: trading is free); ``fill``
    the broker's fill timing.
    ``events`` is the event corpus the run opened for this strategy (None
    for one that reads no news), for checks made once at the start (which
    days it covers, where a call's audio lies): a day's events come from
    ``view.events``, cut at that day's decision time.
    """

    run_dir: Path
    tickers: tuple[str, ...]
    start: dt.date | None = None
    end: dt.date | None = None
    costs: CostEstimate | None = None
    events: "EventStore | None" = None
    #: when a decision fills: at its own close, or the next session's open (``next_open``)
    fill: str = "close"
    #: the run is an episode of ``fincon train`` (its own channel, not a parameter a user can set): an
    #: episode reads beliefs and reflections learned on its own window, which a test run may not
    episode: bool = False

    def unit_cost(self, price: float, high: float | None = None, low: float | None = None) -> float:
        """The run's cost of trading one unit of the book (0 without cost models)."""
        return 0.0 if self.costs is None else self.costs.unit_cost(price, high, low)


class Strategy:
    """Base class: subclasses set ``name`` and implement :meth:`decide`.

    ``warmup`` is the number of trading days of history the strategy wants
    *before* the first decision day; the engine loads them so day one of the
    backtest already has a full lookback window.
    """

    name: str = "strategy"
    warmup: int = 0
    #: the strategy reads news (its params name a corpus in ``events``): the
    #: runner opens that corpus (fincon.data.inputs) and serves it in the view
    reads_events: bool = False

    def check_inputs(self, tickers: tuple[str, ...], first: "pd.Timestamp", last: "pd.Timestamp") -> None:
        """Raise what :meth:`start` would refuse of these tickers and window (a ConfigError naming the
        setting), without loading a model or writing anything. The commands that make their folder
        before any run (train, experiment, rolling, ``forward init``, whose registration is sealed
        for good) call it first; a strategy's ``start`` makes the same check (the same code, on the
        corpus the run opened), so the two never disagree."""

    def start(self, ctx: RunContext) -> None:
        """Called once before the first day."""

    def resolved_params(self) -> dict[str, Any]:
        """The strategy's parameters with defaults filled in, as YAML-safe
        values, for the run's resolved ``config.yaml``. Strategies with a
        pydantic ``params`` attribute get this for free."""
        params = getattr(self, "params", None)
        dump = getattr(params, "model_dump", None)
        return dict(dump(mode="json")) if callable(dump) else {}

    def decide(self, view: "MarketView") -> Decision | None:
        """Return the day's decision, or ``None`` to keep every position."""
        raise NotImplementedError

    def progress(self) -> Mapping[str, Any]:
        """A few running figures for the progress bar (e.g. tokens, calls per
        day); asked after every day, so keep it cheap."""
        return {}

    def lookahead(self) -> str | None:
        """What this strategy sees early by design (a deliberate lookahead, kept to show what a
        convention is worth), or None: its run carries the label as a same-day dataset's does, so
        the card fails its point in time (it passed sentiment-same-day as "enforced by the engine")."""
        return None

    def llm_settings(self) -> Any | None:
        """The settings (an ``LLMSettings``) of the model this strategy calls,
        or None when it calls none: what the run labels its window against
        (the model's training-data cutoff, fincon.llm.knowledge)."""
        return None

    def spent_usd(self) -> float:
        """What the strategy's model calls have cost so far, in dollars (0 for a
        strategy that calls no model); asked after every day when the broker
        charges the LLM's spend (``broker.charge_llm``)."""
        return 0.0

    def live_objects(self) -> Mapping[str, Any]:
        """What :meth:`start` opened that is not the strategy's state (the run
        context, a model client, the event corpus, a trained model loaded from
        its cache), by name: a saved state names them and a loaded one gets
        the fresh run's in their place (fincon.strategies.state)."""
        return {"ctx": getattr(self, "ctx", None)}

    def save_state(self, folder: Path, live: Mapping[str, Any]) -> None:
        """Save the strategy as it stands after its last decision into
        ``folder`` (a forward step, after :meth:`finish`; ``live`` as
        :meth:`live_objects` gave it before ``finish``). By default every
        attribute is pickled; a strategy with files of its own copies them."""

        state.dump(vars(self), folder / state.STATE_FILE, live)

    def load_state(self, folder: Path, ctx: RunContext) -> None:
        """Take up the state :meth:`save_state` saved (after :meth:`start`
        with the fresh run's ``ctx``): the next decision is the one the
        saved strategy would have taken next."""

        vars(self).update(state.load(folder / state.STATE_FILE, self.live_objects()))

    def finish(self, ctx: RunContext) -> Mapping[str, Any]:
        """Called once after the last day (also after an early stop). The
        returned mapping is merged into the run summary (``summary.json``)."""
        return {}


class StopRun(Exception):
    """Raised by a strategy's ``decide`` to end the run cleanly before the
    current day (e.g. an exhausted token budget). Everything up to the last
    finished day is saved and the run is marked as stopped early with
    ``reason``."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason
