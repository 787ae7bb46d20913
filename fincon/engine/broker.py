"""Broker settings and order sizing.

backtrader's broker refuses an order whose execution would leave cash below
zero, and sizes ``order_target_*`` in whole shares. We size in fractional
shares ourselves, sells before buys, and shrink the day's buys just enough
to fit the cash the sells free up (net of the configured commission and
slippage), so "100% invested" is exactly reachable without a margin
rejection from floating-point dust.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

Fill = Literal["close", "next_open"]

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
) -> SizedOrders:
    """Orders that move ``shares`` to ``targets`` (weights of ``value``).

    Tickers not in ``targets`` are left alone. Sells come first. Buys are
    scaled by a common factor when their cost would exceed the cash left
    after the sells (the factor is reported so the engine can log it).
    """
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
