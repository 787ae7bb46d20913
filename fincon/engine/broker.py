"""Broker settings and order sizing.

backtrader's broker refuses an order whose execution would leave cash below
zero, and sizes ``order_target_*`` in whole shares. We size in fractional
shares ourselves, sells before buys, and shrink the day's buys just enough
to fit the cash the sells free up (net of the run's commission and
slippage), so "100% invested" is exactly reachable without a margin
rejection from floating-point dust.

What a trade costs is the run's cost models (:mod:`fincon.engine.costs`:
commission, slippage, participation cap); this module only asks them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Mapping

from fincon.engine.costs import Costs

Fill = Literal["close", "next_open"]

# Fraction of portfolio value kept as cash to absorb rounding when buys use
# every last dollar (1e-9 of $1M is a tenth of a cent).
ROUNDING_SLACK = 1e-9


@dataclass(frozen=True)
class BrokerSettings:
    """The engine's broker: starting cash, fill timing, a cash buffer, the
    cost models, and whether the strategy's model spend is charged."""

    cash: float = 1_000_000.0
    fill: Fill = "close"
    cash_buffer: float = 0.0  # fraction of value never invested
    costs: Costs = field(default_factory=Costs)
    charge_llm: bool = False  # the strategy's model spend is taken from the cash each day


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
    sell_caps: Mapping[str, float] | None = None,
) -> SizedOrders:
    """Orders that move ``shares`` to ``targets`` (weights of ``value``).

    Tickers not in ``targets`` are left alone. Sells come first. Buys are
    scaled by a common factor when their cost would exceed the cash left
    after the sells (the factor is reported so the engine can log it).
    """
    costs = settings.costs
    commission, slippage = costs.commission.linear_rate(), costs.slippage.linear_fraction()
    caps = sell_caps or {}
    if not costs.linear or commission is None or slippage is None:
        return _size_general(targets, shares, prices, value, cash, settings, slip_per_share or {}, caps)
    # backtrader slips the price first and charges commission on the slipped
    # value, so the costs compound: buy at p(1+s)(1+c), sell at p(1-s)(1-c)
    buy_factor = (1.0 + slippage) * (1.0 + commission)
    sell_factor = (1.0 - slippage) * (1.0 - commission)
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
    freed = sum(_sold(o, caps) * prices[o.ticker] * sell_factor for o in sells)
    budget = cash + freed - ROUNDING_SLACK * value

    def need(orders: list[Order]) -> float:
        return sum(o.size * prices[o.ticker] * buy_factor for o in orders)

    return _scaled(sells, buys, shares, budget, need, linear=True)


def _sold(order: Order, caps: Mapping[str, float]) -> float:
    """The shares a sell will fill: a participation cap known when it is sized (close fills: the decision
    day's volume) fills less, and buys budgeted on the whole sale were refused whole for margin (an NVDA
    buy of $237M where $124M would have fit, the XOM sale capped to 6 %)."""
    return min(-order.size, caps.get(order.ticker, float("inf")))


def _covers(buys: list[Order], shares: Mapping[str, float]) -> tuple[list[Order], list[Order]]:
    """Each buy as the short it covers and the long it opens or adds to."""
    cover = [Order(o.ticker, min(o.size, -shares.get(o.ticker, 0.0))) for o in buys if shares.get(o.ticker, 0.0) < 0]
    held = {o.ticker: o.size for o in cover}
    longs = [Order(o.ticker, o.size - held.get(o.ticker, 0.0)) for o in buys]
    return cover, [o for o in longs if o.size > 0]


def _scaled(sells, buys, shares, budget: float, need, linear: bool = False) -> SizedOrders:
    """The buys shrunk by one factor to fit ``budget`` (``need(orders)``: what they cost), covers last:
    a cover shrunk with the rest left a short where the target was flat (found in review: -2 shares of
    TSLA kept for two months, paying its borrow fee, orders.csv saying filled)."""
    cover, longs = _covers(buys, shares)
    total = need(buys)
    if total <= 0 or total <= budget:
        return SizedOrders(orders=tuple(sells + buys), buy_scale=1.0)
    left = budget - need(cover)
    if left < 0:  # not even the covers fit: all shrink alike
        cover, longs, left = [], buys, budget
    scale = 1.0
    for _ in range(1 if linear else 50):  # a minimum fee is not linear: a few passes
        cost = need([Order(o.ticker, o.size * scale) for o in longs])
        if cost <= left or cost <= 0:
            break
        scale *= max(0.0, left / cost) * (1.0 if linear else 1.0 - 1e-12)
    sized: dict[str, float] = {o.ticker: o.size for o in cover}
    for o in longs:
        sized[o.ticker] = sized.get(o.ticker, 0.0) + o.size * scale
    return SizedOrders(orders=tuple(sells + [Order(t, q) for t, q in sorted(sized.items())]), buy_scale=scale)


def _size_general(
    targets, shares, prices, value, cash, settings: BrokerSettings, slip_per_share: Mapping[str, float], caps
) -> SizedOrders:
    """size_orders for every other cost model (per-share or zero commission,
    bps or range slippage): each order's cost computed as the broker will
    charge it, the buys shrunk until they fit (a few passes: a minimum fee is
    not linear). ``slip_per_share``: dollars a share of a slippage that is no
    fraction of price (the range model's, from the decision day's bar)."""
    frac = settings.costs.slippage.linear_fraction() or 0.0
    fee = settings.costs.commission.fee
    investable = value * (1.0 - settings.cash_buffer)
    sells: list[Order] = []
    buys: list[Order] = []

    def fill_price(o: Order) -> float:
        p = prices[o.ticker]
        slip = p * frac + slip_per_share.get(o.ticker, 0.0)
        return p + slip if o.size > 0 else p - slip

    def worth_its_fee(o: Order) -> bool:
        """An order that moves more than the fee it pays (a minimum fee over a few cents of stock: a sell
        the cash could not pay was refused, a dust buy paid a whole minimum; found in review)."""
        return abs(o.size) * fill_price(o) > fee(abs(o.size), fill_price(o)) and abs(o.size) * prices[
            o.ticker
        ] >= 1e-6 * max(value, 1.0)

    for ticker in sorted(targets):
        delta = targets[ticker] * investable / prices[ticker] - shares.get(ticker, 0.0)
        if worth_its_fee(order := Order(ticker, delta)):
            (buys if delta > 0 else sells).append(order)

    freed = sum(_sold(o, caps) * fill_price(o) - fee(-_sold(o, caps), fill_price(o)) for o in sells)
    budget = cash + freed - ROUNDING_SLACK * value

    def need(orders: list[Order]) -> float:
        return sum(o.size * fill_price(o) + fee(o.size, fill_price(o)) for o in orders)

    sized = _scaled(sells, buys, shares, budget, need)
    kept = tuple(o for o in sized.orders if o.size < 0 or worth_its_fee(o))  # buys shrunk to dust: dropped
    return sized if len(kept) == len(sized.orders) else SizedOrders(orders=kept, buy_scale=sized.buy_scale)


def carried_targets(
    carry: Mapping[str, tuple[float, str]], shares: Mapping[str, float], prices: Mapping[str, float], value: float,
    settings: BrokerSettings,
) -> dict[str, float]:  # fmt: skip
    """The weights that move each ticker by its carried rest (shares), for
    :func:`size_orders`: a rest placed again whole at its first size was
    refused whole for margin when its price had risen (a PFE rest of $170k
    against $166k of cash, of which the cap would have filled $28k); sized as
    new orders, sells come first and buys shrink to the cash left."""
    investable = value * (1.0 - settings.cash_buffer)
    return {t: (shares.get(t, 0.0) + size) * prices[t] / investable for t, (size, _) in carry.items()}
