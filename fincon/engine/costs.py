"""Trading costs as models: commission, slippage and a fill (participation) cap.

Why classes and not a string switched on: every place that needs a cost
(the broker backtrader runs, the engine's order sizing, the run's
``metrics.json``, a strategy's estimate of what a trade costs) used to
re-derive it from ``commission_model`` / ``slippage_model`` strings, and one
of them got it wrong (the agent team added the raw ``slippage`` number to a
percent commission, so 5 bps read as 500 %). Here each model is one typed
class that answers every question about itself, as zipline's
``finance/commission.py`` and ``slippage.py`` and nautilus_trader's
``FeeModel`` / ``FillModel`` do:

* ``fee(size, price)``: the commission of one order (commission models);
* ``per_share(price, high, low)``: dollars a share against the trader, for an
  order decided on a bar with that close, high and low (slippage models);
* ``estimate(...)``: the cost of trading one unit of the book, as a fraction
  of the value traded: what a strategy reads before it decides to trade;
* ``install(broker)``: the model's side of backtrader's broker;
* ``columns``: the bar columns it needs besides the close;
* ``summary()``: its settings as ``metrics.json`` shows them.

A new cost model is one class here, one line in its registry
(:data:`COMMISSIONS`, :data:`SLIPPAGES`), one test and one row in
docs/engine.md (CONTRIBUTING.md, "Adding a cost model").
"""

from __future__ import annotations

import datetime
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, Mapping, Union

from pydantic import ConfigDict, Field

from fincon.engine import bt_side
from fincon.validation import Settings

if TYPE_CHECKING:  # backtrader loads when a broker is built, not when a config is read (fincon --help)
    import backtrader as bt


class _CostModel(Settings, ABC):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False, populate_by_name=True)
    #: the name the config (``model:``) and metrics.json use
    name: ClassVar[str]
    #: bar columns the model reads besides the close
    columns: ClassVar[tuple[str, ...]] = ()

    def summary(self) -> dict[str, Any]:
        return {}


# -- commission -----------------------------------------------------------------------------


class Commission(_CostModel):
    """What the broker charges per order."""

    def linear_rate(self) -> float | None:
        """The fraction of value charged on every order when the fee is
        proportional to value (sized in closed form by the engine), else None."""
        return None

    @abstractmethod
    def fee(self, size: float, price: float) -> float:
        """The commission of an order of ``size`` shares at ``price``."""

    @abstractmethod
    def estimate(self, price: float) -> float:
        """A unit of the book traded at ``price``: commission as a fraction of value."""

    @abstractmethod
    def install(self, broker: bt.brokers.BackBroker, borrow: float = 0.0) -> None:
        """Set the commission on backtrader's broker, with ``borrow`` as its credit interest: a yearly
        fee on short positions' value (shares x the last close before the day x rate / 365 a calendar
        day, :func:`fincon.engine.bt_side.marked`)."""


class PercentCommission(Commission):
    """A fraction of the value traded (the default)."""

    name = "percent"
    model: Literal["percent"] = "percent"
    rate: float = Field(0.0, ge=0, lt=0.1, description="fraction of traded value")

    def linear_rate(self) -> float:
        return self.rate

    def fee(self, size: float, price: float) -> float:
        return abs(size) * price * self.rate

    def estimate(self, price: float) -> float:
        return self.rate

    def install(self, broker: bt.brokers.BackBroker, borrow: float = 0.0) -> None:
        bt_side.set_percent(broker, self.rate, borrow)

    def summary(self) -> dict[str, Any]:
        return {"commission": self.rate}


def per_share_commission(size: float, price: float, per_share: float, minimum: float, maximum: float) -> float:
    """One order's commission: ``per_share`` a share, at least ``minimum``, at
    most ``maximum`` times its value (the cap wins over the minimum, as at IB)."""
    shares = abs(size)
    if shares == 0:
        return 0.0
    fee = max(shares * per_share, minimum)
    return min(fee, maximum * shares * price) if maximum > 0 else fee


class PerShareCommission(Commission):
    """Dollars a share with a minimum and a maximum per order (Interactive
    Brokers' fixed style: $0.005 a share, at least $1, at most 1 % of value)."""

    name = "per-share"
    model: Literal["per-share"] = "per-share"
    per_share: float = Field(0.005, ge=0, lt=10, description="dollars a share")
    minimum: float = Field(1.0, ge=0, lt=1000, alias="min", description="dollars an order at least")
    maximum: float = Field(0.01, ge=0, lt=1, alias="max", description="fraction of the order's value at most (0: none)")

    def fee(self, size: float, price: float) -> float:
        return per_share_commission(size, price, self.per_share, self.minimum, self.maximum)

    def estimate(self, price: float) -> float:
        """``per_share`` over the price, capped by ``maximum``: the rate of an
        order large enough that the minimum does not bind (a book's unit is)."""
        if price <= 0:
            return 0.0
        rate = self.per_share / price
        return min(rate, self.maximum) if self.maximum > 0 else rate

    def install(self, broker: bt.brokers.BackBroker, borrow: float = 0.0) -> None:
        broker.addcommissioninfo(
            bt_side.per_share_comm_info(per_share_commission)(
                per_share=self.per_share, minimum=self.minimum, maximum=self.maximum, interest=borrow
            )
        )

    def summary(self) -> dict[str, Any]:
        return {"commission_per_share": self.per_share, "commission_min": self.minimum, "commission_max": self.maximum}


class ZeroCommission(Commission):
    """No commission (a broker that earns on the spread or the order flow)."""

    name = "zero"
    model: Literal["zero"] = "zero"

    def fee(self, size: float, price: float) -> float:
        return 0.0

    def estimate(self, price: float) -> float:
        return 0.0

    def install(self, broker: bt.brokers.BackBroker, borrow: float = 0.0) -> None:
        bt_side.set_percent(broker, 0.0, borrow)


# -- slippage -------------------------------------------------------------------------------


class Slippage(_CostModel):
    """How far from the bar's price an order fills, against the trader."""

    #: the field of the model's one number (what ``--slippage`` sets)
    number: ClassVar[str] = "fraction"

    def linear_fraction(self) -> float | None:
        """The fraction of price every order slips when that is all there is
        to it (backtrader's percent slippage), else None."""
        return None

    @abstractmethod
    def per_share(self, price: float, high: float | None = None, low: float | None = None) -> float:
        """Dollars a share against the trader, for an order decided on a bar
        with close ``price`` and range ``high``..``low``."""

    def estimate(self, price: float, high: float | None = None, low: float | None = None) -> float:
        """The same as a fraction of price."""
        return self.per_share(price, high, low) / price if price > 0 else 0.0

    def broker_type(self) -> type:
        """The broker the model needs (backtrader's own by default) and its parameters."""
        import backtrader as bt

        return bt.brokers.BackBroker

    def broker_params(self) -> dict[str, Any]:
        return {}

    def install(self, broker: bt.brokers.BackBroker) -> None:
        """Set the slippage on backtrader's broker."""


class _FractionSlippage(Slippage):
    @abstractmethod
    def linear_fraction(self) -> float: ...

    def install(self, broker: bt.brokers.BackBroker) -> None:
        if self.linear_fraction():
            broker.set_slippage_perc(self.linear_fraction(), slip_open=True, slip_match=True, slip_out=True)

    def per_share(self, price: float, high: float | None = None, low: float | None = None) -> float:
        return price * self.linear_fraction()


class PercentSlippage(_FractionSlippage):
    """A fraction of the price (the default)."""

    name = "percent"
    model: Literal["percent"] = "percent"
    fraction: float = Field(0.0, ge=0, lt=0.1, description="fraction of price, against the trader")

    def linear_fraction(self) -> float:
        return self.fraction

    def summary(self) -> dict[str, Any]:
        return {"slippage": self.fraction}


class BpsSlippage(_FractionSlippage):
    """Basis points of the price (5 bps = 0.0005)."""

    name = "bps"
    number = "bps"
    model: Literal["bps"] = "bps"
    bps: float = Field(0.0, ge=0, lt=1000, description="basis points of price, against the trader")

    def linear_fraction(self) -> float:
        return self.bps / 1e4

    def summary(self) -> dict[str, Any]:
        return {"slippage": self.bps}


class RangeSlippage(Slippage):
    """A fraction of the decision day's high-low range (wide days cost more)."""

    name = "range"
    model: Literal["range"] = "range"
    columns = ("high", "low")
    fraction: float = Field(0.0, ge=0, lt=1, description="fraction of the decision day's high-low range")

    def per_share(self, price: float, high: float | None = None, low: float | None = None) -> float:
        if high is None or low is None:
            return 0.0
        return self.fraction * max(0.0, float(high) - float(low))

    def broker_type(self) -> type:
        return bt_side.range_slippage_broker()

    def broker_params(self) -> dict[str, Any]:
        return {"slip_range": self.fraction, "slip_open": True, "slip_match": True, "slip_out": True}

    def summary(self) -> dict[str, Any]:
        return {"slippage": self.fraction}


# -- fills ----------------------------------------------------------------------------------


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


class Participation(_CostModel):
    """An order fills at most a share of the day's volume; the rest is
    cancelled or placed again the next day."""

    name = "participation"
    columns = ("volume",)
    participation: float = Field(gt=0, le=1, description="fraction of the day's volume an order may fill")
    rest: Literal["cancel", "carry"] = Field("cancel", description="the unfilled rest: cancelled or carried")

    def install(self, broker: bt.brokers.BackBroker, close_fill: bool) -> None:
        broker.set_filler(DayVolumeCap(self.participation, close_fill=close_fill))

    def summary(self) -> dict[str, Any]:
        return {"participation": self.participation, "participation_rest": self.rest}


#: every commission and slippage model by its config name: a new model is one line here
COMMISSIONS: dict[str, type[Commission]] = {m.name: m for m in (PercentCommission, PerShareCommission, ZeroCommission)}
SLIPPAGES: dict[str, type[Slippage]] = {m.name: m for m in (PercentSlippage, BpsSlippage, RangeSlippage)}

#: the config's ``commission:`` and ``slippage:``: one of the registered models, told apart by ``model``
CommissionModel = Annotated[Union[tuple(COMMISSIONS.values())], Field(discriminator="model")]  # type: ignore[valid-type]
SlippageModel = Annotated[Union[tuple(SLIPPAGES.values())], Field(discriminator="model")]  # type: ignore[valid-type]


@dataclass(frozen=True)
class Costs:
    """The cost models of one run, as the engine applies them and a strategy estimates them."""

    commission: Commission = field(default_factory=lambda: PercentCommission(rate=0.0))
    slippage: Slippage = field(default_factory=lambda: PercentSlippage(fraction=0.0))
    participation: Participation | None = None
    #: a yearly fee on the value of short positions (backtrader's credit interest), kept out of the
    #: commission: the broker leaves it in its credit account (int2pnl off), read as ``borrow_paid``
    borrow: float = 0.0

    @property
    def linear(self) -> bool:
        """Commission and slippage both proportional to value (sized in closed form)."""
        return isinstance(self.commission, PercentCommission) and isinstance(self.slippage, PercentSlippage)

    @property
    def default(self) -> bool:
        """No cost model set (a run without costs): what the files written before a cost existed assume."""
        return self.summary() == Costs().summary()

    @property
    def slips(self) -> bool:
        """Whether the slippage model moves a price at all (its one number above 0)."""
        return bool(getattr(self.slippage, self.slippage.number))

    @property
    def columns(self) -> tuple[str, ...]:
        """The bar columns the models read besides the close."""
        cols = [*self.commission.columns, *self.slippage.columns]
        if self.participation is not None:
            cols += self.participation.columns
        return tuple(dict.fromkeys(cols))

    def unit_cost(self, price: float, high: float | None = None, low: float | None = None) -> float:
        """What trading one unit of the book costs, as a fraction of the value
        traded, for an order decided on a bar with this close and range."""
        return self.commission.estimate(price) + self.slippage.estimate(price, high, low)

    def borrow_due(self, broker: bt.brokers.BackBroker, datas: Any, day: datetime.datetime) -> float:
        """The borrow fee ``broker`` takes from the cash on ``day`` before next-open orders fill:
        backtrader charges its credit interest first in its day, so a book that flips from short to
        long on every dollar, sized on the cash before the fee, had its last buy refused for margin
        (the rules team on MSFT and JNJ, 2020-10-15: half the book out for a day over $8 of fee).
        Orders are sized on what is left. (Close fills fill before the fee: :func:`fincon.engine.bt_side.charged_after_fills`.)"""
        if not self.borrow:
            return 0.0
        held = [(d, broker.getposition(d)) for d in datas]
        return float(sum(broker.getcommissioninfo(d).get_credit_interest(d, p, day) for d, p in held if p.size))

    def broker(self, close_fill: bool) -> bt.brokers.BackBroker:
        """The broker these costs need: the slippage model's, charging the borrow fee after a close's
        fills when orders fill at the close (:func:`fincon.engine.bt_side.charged_after_fills`)."""
        base = self.slippage.broker_type()
        kind = bt_side.charged_after_fills(base) if close_fill and self.borrow else base
        return bt_side.one_fee_per_fill(kind)(**self.slippage.broker_params())

    def sell_caps(self, datas: Any, close_fill: bool) -> dict[str, float] | None:
        """The shares each order may fill under the participation cap, when it is known as the orders
        are sized: a close fill's is this bar's volume (a next-open fill's is the next day's)."""
        cap = self.participation
        if cap is None or not close_fill:
            return None
        return {d._name: cap.participation * float(d.volume[0]) for d in datas}

    def install(self, broker: bt.brokers.BackBroker, close_fill: bool) -> None:
        self.commission.install(broker, self.borrow)
        broker.set_int2pnl(False)  # the borrow fee stays out of the orders' commission
        self.slippage.install(broker)
        if self.participation is not None:
            self.participation.install(broker, close_fill)

    def summary(self) -> dict[str, Any]:
        """The settings in force, as metrics.json's ``costs`` block names them."""
        out: dict[str, Any] = {
            "commission_model": self.commission.name,
            "slippage_model": self.slippage.name,
            **self.slippage.summary(),
            "participation": None if self.participation is None else self.participation.participation,
            **self.commission.summary(),
        }
        if self.participation is not None:
            out["participation_rest"] = self.participation.rest
        if self.borrow:
            out["borrow"] = self.borrow
        return out


#: what a ``costs`` block says each cost took, summed as the terminal's ``costs paid`` row sums them
PAID = ("commission_paid", "slippage_paid", "borrow_paid")


def total_paid(costs: Mapping[str, Any]) -> float:
    """Fees, slippage and the borrow fee a ``costs`` block says were paid (the model spend charged apart)."""
    return float(sum(costs.get(k) or 0.0 for k in PAID))
