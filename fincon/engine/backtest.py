"""The daily loop: a backtrader ``Cerebro`` run that asks a strategy once a day.

One data feed per ticker (adjusted bars, so every return is an Adj Close
return), a broker with commission and percentage slippage, long and short
allowed, fractional shares. ``BrokerSettings.fill`` sets execution timing:

* ``close`` (default, as in the FinCon paper): decide at the close of day t
  and fill at that same close (backtrader's cheat-on-close);
* ``next_open``: decide at the close of t, fill at the open of t+1. The
  orders are sized at that open (backtrader's cheat-on-open hook
  ``next_open``), so a gap cannot turn a fully invested target into a
  margin rejection.

The one place a day happens is :meth:`_Loop.on_bar`: snapshot the book, hand
the strategy a point-in-time :class:`~fincon.data.view.MarketView`, size and
submit the orders of its :class:`~fincon.strategies.base.Decision`. No
decision is asked on the last day: nothing after it could fill.
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import sys
from typing import Any, Mapping

import backtrader as bt
import numpy as np
import pandas as pd
from tqdm import tqdm

from fincon import stopping
from fincon.data.view import MarketData, PortfolioSnapshot
from fincon.engine.artifacts import round_trips
from fincon.engine.broker import BrokerSettings, carried_targets, size_orders
from fincon.engine.feed import make_feed
from fincon.engine.result import BacktestResult, orders_frame, position, positions_frame
from fincon.engine.resume import Book, Resume, StateError, recorded_decision
from fincon.errors import ConfigError, FinconError
from fincon.risk.metrics import compute_metrics
from fincon.strategies.base import Decision, RunContext, StopRun, Strategy

log = logging.getLogger(__name__)


class _Bridge(bt.Strategy):
    """backtrader strategy that forwards every event to a :class:`_Loop`."""

    params = (("loop", None),)

    def next(self):
        self.p.loop.on_bar(self)

    def next_open(self):
        self.p.loop.on_open_carry(self)
        self.p.loop.on_open(self)

    def notify_order(self, order):
        self.p.loop.on_order(order)


class _Loop:
    """State of one run: the records the bridge fills in bar by bar."""

    def __init__(
        self,
        market: MarketData,
        strategy: Strategy,
        settings: BrokerSettings,
        progress: bool,
        decide_last: bool,
        resume: Resume,
    ):
        self.market = market
        self.recorded = resume.decisions  # a resumed forward step: the sessions decided before, as recorded
        self.missed = resume.missed  # a forward journal's sessions no step ran: nothing asked, nothing traded
        self.decide_last = decide_last  # a forward step: the last session's decision is its own order
        self.strategy = strategy
        self.settings = settings
        n = market.n_days
        self.values = np.full(n, np.nan)
        self.observed_shares = np.zeros((n, len(market.tickers)))
        self.decisions: list[dict[str, Any]] = []
        self.fills: list[dict[str, Any]] = []
        self.rejected = 0
        self.scaled_days = 0
        self.stopped: str | None = None
        self.pending: Decision | None = None  # next_open mode: sized at the next open
        self.orders: dict[int, dict[str, Any]] = {}  # order ref -> its orders.csv row
        self.alive: dict[int, bt.Order] = {}  # orders not yet completed, cancelled or rejected
        self.carry: dict[str, tuple[float, str]] = {}  # participation carry: ticker -> (shares, from date)
        self.capped: set[int] = set()  # refs cancelled by the participation cap
        self.broker: Any = None  # the run's backtrader broker (to cancel a capped order's rest)
        self.llm_cost = np.zeros(n)  # charge_llm: the model spend charged on each day
        self.charged = 0.0
        self.days_done = 0
        self.bar = tqdm(total=n, unit="day", delay=2.0, disable=not progress, file=sys.stderr, desc=strategy.name,
                        leave=False, dynamic_ncols=True)  # fmt: skip

    # -- one trading day -------------------------------------------------
    def on_bar(self, bts: _Bridge) -> None:
        if self.stopped:
            return
        stopping.check()  # a stop lost on its way out (fincon.stopping) ends the run here
        i = len(bts) - 1
        datas = bts.datas
        broker = bts.broker
        if self.settings.costs.participation is not None:
            for ref, order in list(self.alive.items()):  # a capped order that filled nothing (no volume)
                self.capped.add(ref)
                broker.cancel(order)
        value = broker.getvalue()
        cash = broker.getcash()
        shares = {d._name: bts.getposition(d).size for d in datas}
        self.values[i] = value
        self.observed_shares[i] = [shares[t] for t in self.market.tickers]
        last = i == self.market.n_days - 1
        if last and not self.decide_last:
            self.days_done = i + 1
            self.bar.update(1)
            return
        t = self.market.first_index + i
        prices = {d._name: d.close[0] for d in datas}
        weights = {k: shares[k] * prices[k] / value for k in shares} if value else {}
        view = self.market.view_at(t, PortfolioSnapshot(value, cash, shares, weights))
        try:
            if len(self.decisions) < len(self.recorded):
                entry = self.recorded[len(self.decisions)]
                if entry["date"] != view.date.strftime("%Y-%m-%d"):
                    raise ConfigError(
                        f"{self.strategy.name}: the recorded decisions reach {entry['date']} where the window has "
                        f"{view.date.date()}: they are not this window's"
                    )
                decision = recorded_decision(entry)
            elif view.date.date() in self.missed:
                decision = None
            else:
                decision = self.strategy.decide(view)
        except (StopRun, FinconError) as stop:
            stopping.check()  # a failure a stop caused is the stop
            # A user-actionable failure mid-run (a dead LLM server, a spent budget) ends the run
            # cleanly, stopped_early: the decisions up to the previous day, and this day's close,
            # which holds their fills (trades.csv kept them, the final value did not); a first day
            # that fails keeps nothing.
            self.stopped = stop.reason if isinstance(stop, StopRun) else str(stop)
            if i == 0:
                self.values[i] = np.nan
            else:
                self.days_done = i + 1
            bts.env.runstop()
            return
        self._record_decision(view.date, decision, weights, view.date.date() in self.missed)
        if self.settings.charge_llm:
            spent = float(self.strategy.spent_usd())
            if spent > self.charged:  # charged at this close: the cash is lower from the next bar on
                charge = spent - self.charged
                broker.add_cash(-charge)
                self.llm_cost[i] = charge
                self.charged = spent
                cash -= charge  # today's orders are sized on the cash left after the charge
                value -= charge
        if self.carry:
            if decision is not None and decision.weights:
                self.carry.clear()  # the new targets supersede the unfilled rest
            elif self.settings.fill == "close":
                self._submit_carry(bts, shares, prices, value, cash)
        if decision is not None and decision.weights:
            self._check_tickers(decision, shares)
            if self.settings.fill == "close" and not last:  # they fill before the borrow fee is charged
                self._submit(bts, decision, shares, prices, value, cash)
            else:  # next_open: sized at the next open; the last session's: left for the session after the window
                self.pending = decision
        self.days_done = i + 1
        postfix = self.strategy.progress()
        if postfix:
            self.bar.set_postfix(postfix, refresh=False)
        self.bar.update(1)

    def _record_decision(self, date: pd.Timestamp, decision: Decision | None, held: Mapping[str, float], missed: bool):
        entry: dict[str, Any] = {"date": date.strftime("%Y-%m-%d"), **({"missed": True} if missed else {})}
        # the book the decision leaves (its target weights, the rest kept as held), apart from the
        # decision itself: a "hold" keeps a long, a "sell" may open a short
        targets = {**held, **(decision.weights if decision is not None else {})}
        entry["position"] = {t: position(w) for t, w in sorted(targets.items())}
        if decision is None:
            entry["decision"] = None
        else:
            entry["weights"] = {k: float(v) for k, v in sorted(decision.weights.items())}
            if decision.actions:
                entry["actions"] = dict(sorted(decision.actions.items()))
            entry["rationale"] = decision.rationale
            entry["evidence"] = list(decision.evidence)
            if decision.record:
                entry["record"] = dict(decision.record)
        self.decisions.append(entry)

    def on_open(self, bts: _Bridge) -> None:
        """next_open mode: size yesterday's decision at today's open prices."""
        if self.pending is None or self.stopped:
            return
        decision, self.pending = self.pending, None
        self._submit(bts, decision, *self._open_book(bts))

    def on_open_carry(self, bts: _Bridge) -> None:
        """next_open mode: a carried rest goes in at the open when no new decision supersedes it."""
        if self.carry and self.pending is None and not self.stopped:
            self._submit_carry(bts, *self._open_book(bts))

    def _open_book(self, bts: _Bridge) -> tuple[dict[str, float], dict[str, float], float, float]:
        """Shares, open prices, value and cash (after the night's borrow fee) at today's open."""
        shares = {d._name: bts.getposition(d).size for d in bts.datas}
        prices = {d._name: d.open[0] for d in bts.datas}
        fee = self.settings.costs.borrow_due(bts.broker, bts.datas, bts.datas[0].datetime.datetime(0))
        # the spend charged at the last close (--charge-llm) waits in backtrader's queue until after the open's
        # fills: sized without it, the book ran on negative cash and orders were refused (found in review)
        queued = float(sum(getattr(bts.broker, "_cash_addition", ())))
        cash = bts.broker.getcash() + queued - fee
        return shares, prices, cash + sum(shares[k] * prices[k] for k in shares), cash

    def _check_tickers(self, decision: Decision, shares) -> None:
        unknown = set(decision.weights) - set(shares)
        if unknown:
            raise ValueError(f"{self.strategy.name} returned weights for unknown tickers {sorted(unknown)}")

    def _submit(self, bts, decision: Decision, shares, prices, value, cash, notes: Mapping[str, str] = {}) -> None:
        caps = self.settings.costs.sell_caps(bts.datas, self.settings.fill == "close")
        sized = size_orders(decision.weights, shares, prices, value, cash, self.settings, self._day_ranges(bts), caps)
        if sized.buy_scale < 0.999:
            self.scaled_days += 1
            log.info("buys scaled by %.4f to fit cash on %s", sized.buy_scale, bts.datas[0].datetime.date(0))
        by_name = {d._name: d for d in bts.datas}
        day = bt.num2date(bts.datas[0].datetime[0]).strftime("%Y-%m-%d")
        for order in sized.orders:
            self._place(bts, by_name[order.ticker], order.size, day, notes.get(order.ticker, ""))

    def _day_ranges(self, bts) -> dict[str, float] | None:
        """A slippage that is no fraction of price (the range model): each
        ticker's dollars a share, from the decision day's bar."""
        slippage = self.settings.costs.slippage
        if slippage.linear_fraction() is not None:
            return None
        ago = 0 if self.settings.fill == "close" else -1  # next_open sizes at t+1's open: day t is bar -1
        return {
            d._name: slippage.per_share(float(d.close[ago]), float(d.high[ago]), float(d.low[ago])) for d in bts.datas
        }

    def _place(self, bts, data, size: float, day: str, note: str) -> None:
        o = bts.buy(data=data, size=size) if size > 0 else bts.sell(data=data, size=-size)
        if o is None:
            return
        self.alive[o.ref] = o
        self.orders[o.ref] = {
            "date": day,
            "ticker": data._name,
            "side": "buy" if size > 0 else "sell",
            "requested": float(abs(size)),
            "filled": 0.0,
            "price": None,
            "commission": 0.0,
            "status": "submitted",
            "reason": note,
        }

    def _submit_carry(self, bts, shares, prices, value, cash) -> None:
        """The rests carried, sized as new orders are (broker.carried_targets)."""
        carry, self.carry = self.carry, {}
        rest = Decision(weights=carried_targets(carry, shares, prices, value, self.settings))
        notes = {t: f"rest carried from {s}" for t, (_, s) in carry.items()}
        self._submit(bts, rest, shares, prices, value, cash, notes)

    # -- broker events ---------------------------------------------------
    def on_order(self, order: bt.Order) -> None:
        row = self.orders.get(order.ref)
        ex = order.executed
        if order.status == order.Partial and self.settings.costs.participation is not None:
            # the cap bound: the rest is cancelled now (and, with carry, placed again on this bar's decision)
            self.capped.add(order.ref)
            self._record_fill(order, row)
            self._cap_note(order, row, abs(ex.size))
            self.broker.cancel(order)
            return
        if order.status in (order.Submitted, order.Accepted, order.Partial):
            return
        self.alive.pop(order.ref, None)
        if order.ref not in self.capped:
            self._record_fill(order, row)
        if order.status == order.Completed:
            if row is not None:
                row["status"] = "filled"
            return
        capped = order.ref in self.capped and order.status == order.Canceled
        if row is not None:
            row["status"] = "partial" if ex.size else "rejected"
            if capped:
                if "participation cap" not in row["reason"]:  # nothing filled: no Partial came first
                    self._cap_note(order, row, 0.0)
            else:
                row["reason"] = "; ".join(
                    x
                    for x in (
                        row["reason"],
                        f"{order.getstatusname().lower()}: not enough cash at the fill price"
                        if order.status == order.Margin
                        else order.getstatusname().lower(),
                    )
                    if x
                )
        if not capped:
            self.rejected += 1
            log.warning(
                "%s order for %.4f %s was %s (not enough cash at the fill price?)",
                "buy" if order.isbuy() else "sell",
                order.created.size,
                order.data._name,
                order.getstatusname().lower(),
            )

    def _record_fill(self, order: bt.Order, row: dict[str, Any] | None) -> None:
        """trades.csv gets what the order executed (a capped order: when the cap binds)."""
        ex = order.executed
        if ex.size:
            # the price it slipped from: the decision close (backtrader's cheat-on-close keeps it on the
            # order) or, with next-open fills, the open of the bar it filled in
            ref = float(order.created.pclose) if self.settings.fill == "close" else float(order.data.open[0])
            self.fills.append(
                {
                    "date": bt.num2date(ex.dt).strftime("%Y-%m-%d"),
                    "ticker": order.data._name,
                    "side": "buy" if ex.size > 0 else "sell",
                    "size": float(ex.size),
                    "price": float(ex.price),
                    "value": float(abs(ex.size) * ex.price),
                    "commission": float(ex.comm),
                    # against the trader, > 0 either side; none set: 0 (an order that crosses zero
                    # fills at an average price a rounding away from the close)
                    "slippage": float((ex.price - ref) * ex.size) if self.settings.costs.slips else 0.0,
                }
            )
        if row is not None:
            row.update(
                filled=float(abs(ex.size)), price=float(ex.price) if ex.size else None, commission=float(ex.comm)
            )

    def _cap_note(self, order: bt.Order, row: dict[str, Any] | None, filled: float) -> None:
        """Why a capped order stopped short, and its rest carried when the setting says so."""
        if row is None:
            return
        cap = self.settings.costs.participation
        if cap is None:
            return
        rest = row["requested"] - filled
        carry = cap.rest == "carry" and rest > 1e-12
        note = (
            f"participation cap {cap.participation * 100:.4g}% of the day's volume: {rest:.4f} shares not "
            f"filled, {'carried to the next day' if carry else 'cancelled'}"
        )
        row["reason"] = "; ".join(x for x in (row["reason"], note) if x)
        if carry:
            prev = self.carry.get(order.data._name, (0.0, row["date"]))
            self.carry[order.data._name] = (prev[0] + (rest if order.isbuy() else -rest), prev[1])


def _held_at_close(loop: _Loop, settings: BrokerSettings, n: int) -> np.ndarray:
    """Shares held at the close of each day, after that day's trades.

    With close fills, the orders of day t fill at t's close but backtrader
    books them when it processes day t+1, so the book seen on t+1 is the
    book held at the close of t."""
    obs = loop.observed_shares[:n]
    return np.vstack([obs[1:], obs[-1:]]) if settings.fill == "close" else obs


def run_backtest(
    market: MarketData,
    strategy: Strategy,
    settings: BrokerSettings,
    ctx: RunContext,
    *,
    alpha: float = 0.05,
    risk_free: float = 0.0,
    progress: bool = True,
    days_per_year: int = 252,
    decide_last: bool = False,
    resume: Resume | None = None,
) -> BacktestResult:
    """Run ``strategy`` over the backtest window of ``market``; ``days_per_year``
    annualises the metrics (the data's trading calendar: 252 or 365).
    ``decide_last``: ask a decision on the window's last session too (a
    forward step: it is the order for the session after the window, kept as
    the result's ``pending``; a backtest asks none there, nothing could fill).
    A strategy that reads news gets ``market``'s event corpus in its
    context (``ctx.events``) for its start-time checks; each day's events
    reach it in the view. ``resume``: a forward step that takes up a saved strategy (:class:`Resume`)."""
    if getattr(strategy, "reads_events", False):
        if market.events is None:
            raise ConfigError(
                f"strategy {strategy.name} reads news and the market has no event corpus: open the run's inputs "
                "with fincon.data.inputs.open_inputs and give the market its events (MarketData.with_events)"
            )
        ctx = dataclasses.replace(ctx, events=market.events)
    next_open = settings.fill == "next_open"
    cerebro = bt.Cerebro(stdstats=False, preload=True, cheat_on_open=next_open)
    for ticker in market.tickers:
        cerebro.adddata(make_feed(market.frame(ticker), ticker), name=ticker)
    cerebro.setbroker(settings.costs.broker(close_fill=not next_open))
    broker = cerebro.broker
    broker.setcash(settings.cash)
    settings.costs.install(broker, close_fill=not next_open)
    broker.set_coc(not next_open)
    broker.set_coo(next_open)
    broker.set_shortcash(True)
    cerebro.addanalyzer(bt.analyzers.TimeReturn, _name="timereturn", timeframe=bt.TimeFrame.Days)
    cerebro.addanalyzer(bt.analyzers.DrawDown, _name="drawdown")
    resume = resume or Resume()
    if resume.decisions and settings.charge_llm:
        raise ConfigError("a resumed run cannot charge the model's spend (broker.charge_llm): ask every session")
    loop = _Loop(market, strategy, settings, progress, decide_last, resume)
    loop.broker = broker
    cerebro.addstrategy(_Bridge, loop=loop)
    strategy.start(ctx)
    if resume.state is not None:
        try:
            strategy.load_state(resume.state, ctx)
        except Exception as exc:  # a cache that cannot be read (cut short, another version's): said, not fatal
            raise StateError(f"{strategy.name}: its saved state in {resume.state} cannot be loaded ({exc})") from exc
    try:
        (bts,) = cerebro.run()
    finally:
        loop.bar.close()
    live = strategy.live_objects() if resume.save is not None else {}  # before finish, which may close them
    strategy_summary = dict(strategy.finish(ctx) or {})
    if resume.save is not None and not loop.stopped:
        try:
            strategy.save_state(resume.save, live)
        except Exception as exc:  # a cache: without it the next step asks every session again, said
            shutil.rmtree(resume.save, ignore_errors=True)
            log.warning("%s: its state could not be saved (%s); the next step asks it from the first session",
                        strategy.name, " ".join(str(exc).split())[:200])  # fmt: skip

    n = loop.days_done
    dates = market.dates[market.first_index : market.first_index + n]
    values = loop.values[:n]
    held = _held_at_close(loop, settings, n)
    closes = market._arrays["close"][market.first_index : market.first_index + n]
    positions = positions_frame(dates, market.tickers, held, closes, values)
    fills = [f for f in loop.fills if f["date"] <= dates[-1].strftime("%Y-%m-%d")] if n else []
    trades = pd.DataFrame(fills, columns=["date", "ticker", "side", "size", "price", "value", "commission"])
    traded = trades.groupby("date")["value"].sum() if len(trades) else pd.Series(dtype=float)
    traded_value = np.array([traded.get(d.strftime("%Y-%m-%d"), 0.0) for d in dates])
    last_close = {tk: closes[-1, j] for j, tk in enumerate(market.tickers)} if n else {}
    # the win rate's round trips are round_trips.csv's (fills matched first in, first out; open lots
    # marked at the last close), not backtrader's trades (a position from open to flat): one definition
    trips = round_trips(trades, last_close, dates[-1].strftime("%Y-%m-%d")) if n else None
    single = len(market.tickers) == 1
    metrics = compute_metrics(
        values,
        alpha=alpha,
        risk_free=risk_free,
        initial=settings.cash,
        prices=closes[:, 0] if single else None,
        directions=np.sign(held[:, 0]) if single else None,
        traded_value=traded_value,
        n_trades=len(trades),
        trade_pnls=trips["pnl"].to_numpy() if trips is not None else None,
        days_per_year=days_per_year,
    )
    analyzers = {
        "timereturn": dict(bts.analyzers.timereturn.get_analysis()),
        "drawdown_max_pct": float(bts.analyzers.drawdown.get_analysis()["max"]["drawdown"]),
    }
    if loop.stopped:
        log.info("run stopped early after %s: %s", dates[-1].date() if n else "no day", loop.stopped)
    return BacktestResult(
        strategy=strategy.name,
        tickers=market.tickers,
        dates=dates,
        values=values,
        positions=positions,
        trades=trades,
        decisions=loop.decisions[:n],
        metrics=metrics,
        stopped=loop.stopped,
        rejected_orders=loop.rejected,
        orders=orders_frame(loop.orders.values()),
        round_trips=trips,
        scaled_days=loop.scaled_days,
        llm_cost=loop.llm_cost[:n] if settings.charge_llm else None,
        borrow_paid=float(sum(bts.broker.d_credit.values())),
        slippage_paid=float(sum(f["slippage"] for f in fills)),
        strategy_summary=strategy_summary,
        analyzers=analyzers,
        book=Book(
            cash=float(bts.broker.getcash()),
            shares={d._name: float(bts.getposition(d).size) for d in bts.datas},
            pending=dict(loop.pending.weights) if decide_last and loop.pending is not None else None,
            basis={d._name: float(bts.getposition(d).price) for d in bts.datas},
        ),
    )
