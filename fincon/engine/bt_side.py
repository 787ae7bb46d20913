"""backtrader's side of the cost models (fincon.engine.costs): the commission
schemes and brokers each model installs. The models are typed settings read
by the config, the sizing and metrics.json; what backtrader runs is here, built
on first use (backtrader loads when a broker is built, not when a config is
read)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    import backtrader as bt


@functools.cache
def marked(base: type) -> type:
    """backtrader's commission scheme ``base`` with its credit interest (the borrow fee) on the shares'
    value at the last close before the day charged, as a broker marks a short each day: backtrader's
    own prices the shares at their entry price for as long as they are held (a short of TSLA held
    eight months while its closes averaged 25 % below the entry paid 1.34x what it owed). The last close before ``dt0`` is the bar's previous one
    when the broker charges on a session's bar, its current one when a strategy estimates the next
    session's fee (:meth:`Costs.borrow_due`): both read the same close, never one after the day."""

    def _get_credit_interest(self, data, size, price, days, dt0, dt1):
        if self.deferred:  # a close-fill broker charges after the fills (_charged_after_fills)
            return 0.0
        mark = data.close[0] if data.datetime.date(0) < dt0 else data.close[-1]
        return days * self._creditrate * abs(size) * mark

    return type(f"Marked{base.__name__}", (base,), {"_get_credit_interest": _get_credit_interest, "deferred": False})


@functools.cache
def charged_after_fills(base: type) -> type:
    """backtrader's broker ``base`` charging the borrow fee after the orders of the last close have
    filled, on the book held over the nights since that close: with close fills backtrader fills a
    close's orders in the next bar, and charged its credit interest first, on the book before them (a
    short opened at a Friday close and covered at Monday's paid for one night, Monday to Tuesday, where
    it owed three; a strategy short on weekends only paid 32 % of what its shorts owed)."""

    class ChargedAfterFills(base):
        def next(self):
            infos = list(self.comminfo.values())
            for info in infos:
                info.deferred = True
            try:
                super().next()
            finally:
                for info in infos:
                    info.deferred = False
            credit = 0.0
            for data, pos in self.positions.items():
                info = self.getcommissioninfo(data)
                if not pos or len(data) < 2 or (pos.size > 0 and not info.p.interest_long):
                    continue
                dt0, dt1 = data.datetime.date(0), data.datetime.date(-1)
                due = info._get_credit_interest(data, pos.size, pos.price, (dt0 - dt1).days, dt0, dt1)
                self.d_credit[data] += due
                credit += due
            if credit:
                self.cash -= credit
                self._get_value()

    return ChargedAfterFills


def set_percent(broker: bt.brokers.BackBroker, rate: float, borrow: float) -> None:
    """``broker.setcommission(commission=rate, interest=borrow)`` with the borrow fee marked (:func:`marked`)."""
    import backtrader as bt

    broker.addcommissioninfo(marked(bt.CommInfoBase)(commission=rate, percabs=True, interest=borrow))


@functools.cache
def per_share_comm_info(fee: Callable[[float, float, float, float, float], float]) -> type:
    """backtrader's side of :class:`~fincon.engine.costs.PerShareCommission`
    (``fee``: its formula, of size, price, per share, minimum and maximum). The
    parts of one fill (:func:`one_fee_per_fill`) are charged so that they sum to
    the one fee of the whole fill."""
    import backtrader as bt

    class PerShareCommInfo(bt.CommInfoBase):
        params = (
            ("stocklike", True),
            ("commtype", bt.CommInfoBase.COMM_FIXED),
            ("percabs", True),
            ("per_share", 0.005),
            ("minimum", 1.0),
            ("maximum", 0.01),
        )
        #: inside one fill: the shares and the fee charged for it so far (None outside a fill)
        charged: list[float] | None = None

        def _getcommission(self, size, price, pseudoexec):
            p = self.p
            if self.charged is None:
                return fee(size, price, p.per_share, p.minimum, p.maximum)
            shares, paid = self.charged
            whole = fee(shares + abs(size), price, p.per_share, p.minimum, p.maximum)
            self.charged = [shares + abs(size), whole]
            return whole - paid

    return marked(PerShareCommInfo)


@functools.cache
def one_fee_per_fill(base: type) -> type:
    """backtrader's broker ``base`` charging one commission a fill: an order
    that crosses zero (covers a short and opens a long) is charged in two
    parts, the closing and the opening, and a per-order minimum came twice
    (five reversals of sma-cross charged $11 where one $1 minimum an order
    gives $6; the sizing budgets one fee an order)."""

    class OneFeePerFill(base):
        def _execute(self, order, *args, **kwargs):
            info = self.getcommissioninfo(order.data)
            info.charged = [0.0, 0.0]
            try:
                return super()._execute(order, *args, **kwargs)
            finally:
                info.charged = None

    return OneFeePerFill


@functools.cache
def range_slippage_broker() -> type:
    """backtrader's broker, slipping each order by a fraction of the decision
    day's high-low range (the bar before the one it executes in: known when
    the order was decided) through backtrader's own fixed-slippage path."""
    import backtrader as bt

    class RangeSlippageBroker(bt.brokers.BackBroker):
        params = (("slip_range", 0.0),)

        def _try_exec(self, order):
            data = order.data
            self.p.slip_fixed = self.p.slip_range * max(0.0, float(data.high[-1]) - float(data.low[-1]))
            return super()._try_exec(order)

    return RangeSlippageBroker
