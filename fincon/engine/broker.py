"""Broker settings and order sizing.

backtrader's broker refuses an order whose execution would leave cash below
zero, and sizes ``order_target_*`` in whole shares. We size in fractional
shares ourselves, sells before buys, and shrink the day's buys just enough
to fit the cash the sells free up (net of the configured commission and
slippage), so "100% invested" is exactly reachable without a margin
rejection from floating-point dust.

Costs and fills a trader would trust (docs/engine.md, Costs): commission as
a percent of value (the default), per share with a minimum and a maximum per
order (Interactive Brokers' fixed style: $0.005 a share, at least $1, at most
1 % of the order's value), or zero (:class:`PerShareCommission`, a
backtrader ``CommInfoBase``); slippage as a percent, in basis points, or as
a fraction of the decision day's high-low range (:class:`RangeSlippageBroker`,
backtrader's fixed slippage set per order); and a participation cap
(:class:`DayVolumeCap`, backtrader's filler hook) that fills at most a share
of the day's volume.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

import backtrader as bt

Fill = Literal["close", "next_open"]
CommissionModel = Literal["percent", "per-share", "zero"]
SlippageModel = Literal["percent", "bps", "range"]

# Fraction of portfolio value kept as cash to absorb rounding when buys use
# every last dollar (1e-9 of $1M is a tenth of a cent).
ROUNDING_SLACK = 1e-9


@dataclass(frozen=True)
class BrokerSettings:
    cash: float = 1_000_000.0
    commission: float = 0.0  # fraction of traded value
    slippage: float = 0.0  # fraction of price, against the trader
    fill: Fill = "close"
    cash_buffer: float = 0.0  # fraction of value never invested
    commission_model: CommissionModel = "percent"
    commission_per_share: float = 0.005  # per-share: dollars a share
    commission_min: float = 1.0  # per-share: dollars an order at least
    commission_max: float = 0.01  # per-share: fraction of the order's value at most
    slippage_model: SlippageModel = "percent"  # percent: slippage is a fraction; bps: basis points; range: of high-low
    participation: float | None = None  # fraction of the day's volume an order may fill
    participation_rest: Literal["cancel", "carry"] = "cancel"
    charge_llm: bool = False  # the strategy's model spend is taken from the cash each day

    @property
    def slip_fraction(self) -> float:
        """Slippage as a fraction of price (0 for the range model, which the broker applies per order)."""
        if self.slippage_model == "bps":
            return self.slippage / 1e4
        return self.slippage if self.slippage_model == "percent" else 0.0


def per_share_commission(size: float, price: float, per_share: float, minimum: float, maximum: float) -> float:
    """One order's commission: ``per_share`` a share, at least ``minimum``, at
    most ``maximum`` times its value (the cap wins over the minimum, as at IB)."""
    shares = abs(size)
    if shares == 0:
        return 0.0
    fee = max(shares * per_share, minimum)
    return min(fee, maximum * shares * price) if maximum > 0 else fee


class PerShareCommission(bt.CommInfoBase):
    """backtrader commission scheme: per share, with a minimum and a maximum per order."""

    params = (
        ("stocklike", True),
        ("commtype", bt.CommInfoBase.COMM_FIXED),
        ("percabs", True),
        ("per_share", 0.005),
        ("minimum", 1.0),
        ("maximum", 0.01),
    )

    def _getcommission(self, size, price, pseudoexec):
        return per_share_commission(size, price, self.p.per_share, self.p.minimum, self.p.maximum)


class RangeSlippageBroker(bt.brokers.BackBroker):
    """backtrader's broker, slipping each order by a fraction of the decision
    day's high-low range (the bar before the one it executes in: known when
    the order was decided) through backtrader's own fixed-slippage path."""

    params = (("slip_range", 0.0),)

    def _try_exec(self, order):
        data = order.data
        self.p.slip_fixed = self.p.slip_range * max(0.0, float(data.high[-1]) - float(data.low[-1]))
        return super()._try_exec(order)


class DayVolumeCap:
    """backtrader filler: an order fills at most ``perc`` of a day's volume
    (the fill day's: with close fills the decision day, bar -1 when the order
    executes; with next-open fills the day it executes in)."""

    def __init__(self, perc: float, close_fill: bool):
        self.perc = perc
        self.ago = -1 if close_fill else 0

    def day_volume(self, order) -> float:
        return float(order.data.volume[self.ago])

    def __call__(self, order, price, ago):
        return min(max(0.0, self.day_volume(order) * self.perc), abs(order.executed.remsize))


@dataclass(frozen=True)
class Order:
    ticker: str
    size: float  # shares; > 0 buy, < 0 sell


@dataclass(frozen=True)
class SizedOrders:
    orders: tuple[Order, ...]
    buy_scale: float  # 1.0 unless buys had to shrink to fit the cash


def size_orders(
    targets: Mapping[str, float],
    shares: Mapping[str, float],
    prices: Mapping[str, float],
    value: float,
    cash: float,
    settings: BrokerSettings,
    slip_per_share: Mapping[str, float] | None = None,
) -> SizedOrders:
    """Orders that move ``shares`` to ``targets`` (weights of ``value``).

    Tickers not in ``targets`` are left alone. Sells come first. Buys are
    scaled by a common factor when their cost would exceed the cash left
    after the sells (the factor is reported so the engine can log it).
    """
    if settings.commission_model != "percent" or settings.slippage_model != "percent":
        return _size_general(targets, shares, prices, value, cash, settings, slip_per_share or {})
    # backtrader slips the price first and charges commission on the slipped
    # value, so the costs compound: buy at p(1+s)(1+c), sell at p(1-s)(1-c)
    buy_factor = (1.0 + settings.slippage) * (1.0 + settings.commission)
    sell_factor = (1.0 - settings.slippage) * (1.0 - settings.commission)
    investable = value * (1.0 - settings.cash_buffer)
    sells: list[Order] = []
    buys: list[Order] = []
    for ticker in sorted(targets):
        price = prices[ticker]
        target_shares = targets[ticker] * investable / price
        delta = target_shares - shares.get(ticker, 0.0)
        if abs(delta) * price < 1e-6 * max(value, 1.0):
            continue
        (buys if delta > 0 else sells).append(Order(ticker, delta))
    freed = sum(-o.size * prices[o.ticker] * sell_factor for o in sells)
    need = sum(o.size * prices[o.ticker] * buy_factor for o in buys)
    budget = cash + freed - ROUNDING_SLACK * value
    scale = 1.0
    if need > 0 and need > budget:
        scale = max(0.0, budget / need)
        buys = [Order(o.ticker, o.size * scale) for o in buys]
    return SizedOrders(orders=tuple(sells + buys), buy_scale=scale)


def order_cost(size: float, price: float, settings: BrokerSettings) -> float:
    """Commission of one order at ``price`` under ``settings``."""
    if settings.commission_model == "zero":
        return 0.0
    if settings.commission_model == "per-share":
        return per_share_commission(
            size, price, settings.commission_per_share, settings.commission_min, settings.commission_max
        )
    return abs(size) * price * settings.commission


def _size_general(
    targets, shares, prices, value, cash, settings: BrokerSettings, slip_per_share: Mapping[str, float]
) -> SizedOrders:
    """size_orders for the per-share and zero commissions and the bps and range
    slippages: each order's cost computed as the broker will charge it, the
    buys shrunk until they fit (a few passes: a minimum fee is not linear)."""
    frac = settings.slip_fraction
    investable = value * (1.0 - settings.cash_buffer)
    sells: list[Order] = []
    buys: list[Order] = []
    for ticker in sorted(targets):
        price = prices[ticker]
        delta = targets[ticker] * investable / price - shares.get(ticker, 0.0)
        if abs(delta) * price < 1e-6 * max(value, 1.0):
            continue
        (buys if delta > 0 else sells).append(Order(ticker, delta))

    def fill_price(o: Order) -> float:
        p = prices[o.ticker]
        slip = p * frac + slip_per_share.get(o.ticker, 0.0)
        return p + slip if o.size > 0 else p - slip

    freed = sum(-o.size * fill_price(o) - order_cost(o.size, fill_price(o), settings) for o in sells)
    budget = cash + freed - ROUNDING_SLACK * value

    def need(orders: list[Order]) -> float:
        return sum(o.size * fill_price(o) + order_cost(o.size, fill_price(o), settings) for o in orders)

    scale = 1.0
    total = need(buys)
    for _ in range(50):
        if total <= budget or total <= 0:
            break
        scale *= max(0.0, budget / total) * (1.0 - 1e-12)
        total = need([Order(o.ticker, o.size * scale) for o in buys])
    if scale < 1.0:
        buys = [Order(o.ticker, o.size * scale) for o in buys]
    return SizedOrders(orders=tuple(sells + buys), buy_scale=scale)
