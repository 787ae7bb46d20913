"""Alpaca paper trading for a live forward journal (``fincon forward init --broker alpaca``).

The journal decides as it always does (the backtest's engine, next-open
fills through the run's cost models: the book a verifier replays). Alpaca is
where the decision is *also* placed, on the same order path: after a
session's entry is sealed, the strategy's target weights become whole-share
market orders for the next open (time in force ``opg``), sized from the
account's equity and the session's close. The journal's entry holds the
positions Alpaca must show once those orders fill; the next step reads
Alpaca's positions before deciding and stops, naming the ticker, when they
drift from that (an order that did not fill, a trade made by hand), so a
record never goes on over a book it does not describe.

Through the official client, ``alpaca-py`` (the optional ``alpaca`` extra);
keys from ``ALPACA_API_KEY`` and ``ALPACA_SECRET_KEY``. An Alpaca account is
one book: a journal with this broker runs one strategy.
"""

from __future__ import annotations

import math
import os
from typing import Any, Mapping

from fincon.errors import FinconError

KEY_ENV, SECRET_ENV = "ALPACA_API_KEY", "ALPACA_SECRET_KEY"
#: shares within this of each other are the same position (Alpaca reports fractional quantities as text)
TOLERANCE = 1e-6


class BrokerError(FinconError):
    """The broker cannot be reached, refuses an order, or holds another book than the journal's."""

    exit_code = 1


def check_available() -> None:
    """Refused at ``init``, before the journal exists: no client installed, or no keys."""
    try:
        import alpaca.trading  # noqa: F401
    except ImportError:
        raise BrokerError("--broker alpaca needs alpaca-py: pip install 'fincon[alpaca]' (or make install)") from None
    missing = [k for k in (KEY_ENV, SECRET_ENV) if not os.environ.get(k)]
    if missing:
        raise BrokerError(
            f"--broker alpaca reads the paper account's keys from {' and '.join(missing)}: set them "
            "(Alpaca dashboard, paper trading, API keys)"
        )


class AlpacaPaper:
    """One Alpaca paper account: its positions and equity, orders for the next open."""

    def __init__(self, client: Any = None):
        if client is None:
            check_available()
            from alpaca.trading.client import TradingClient

            client = TradingClient(os.environ[KEY_ENV], os.environ[SECRET_ENV], paper=True)
        self.client = client

    def _call(self, what: str, fn, *args):
        try:
            return fn(*args)
        except Exception as exc:  # the client's APIError, requests' ConnectionError: one line either way
            raise BrokerError(f"Alpaca: {what} failed ({' '.join(str(exc).split())[:200]})") from None

    def positions(self) -> dict[str, float]:
        """Shares held per symbol (short: negative)."""
        rows = self._call("reading the positions", self.client.get_all_positions)
        return {str(p.symbol): float(p.qty) for p in rows}

    def equity(self) -> float:
        return float(self._call("reading the account", self.client.get_account).equity)

    def reconcile(self, expected: Mapping[str, float]) -> dict[str, float]:
        """Alpaca's positions, or an error naming the first ticker whose shares are not the journal's."""
        have = self.positions()
        for t in sorted(set(have) | set(expected)):
            if abs(have.get(t, 0.0) - float(expected.get(t, 0.0))) > TOLERANCE:
                raise BrokerError(
                    f"{t}: Alpaca holds {have.get(t, 0.0):g} shares, the journal's book {float(expected.get(t, 0.0)):g}: "
                    "the account drifted from the record (an order that did not fill, a trade by hand); "
                    "nothing decided. Bring the account back to the book, or start a new journal"
                )
        return have

    @staticmethod
    def orders_for(
        weights: Mapping[str, float], closes: Mapping[str, float], equity: float, positions: Mapping[str, float]
    ) -> list[dict[str, Any]]:
        """Whole-share orders taking ``positions`` to ``weights`` of ``equity`` at ``closes``. A ticker the
        weights leave out keeps its shares, as in the backtest (fincon.strategies.Decision: a hold, "no
        order", names nothing; closing what it left out sold the whole account on every hold while the
        journal's book stayed long); a weight of 0 closes."""
        out = []
        for t in sorted(weights):
            w = float(weights.get(t, 0.0))
            target = math.trunc(w * equity / closes[t]) if w else 0
            delta = target - float(positions.get(t, 0.0))
            if abs(delta) > TOLERANCE:
                out.append({"symbol": t, "side": "buy" if delta > 0 else "sell", "qty": abs(delta)})
        return out

    def submit(self, orders: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Each order as a market order for the next open; what Alpaca answered (its id and status)."""
        from alpaca.trading.enums import OrderSide, TimeInForce
        from alpaca.trading.requests import MarketOrderRequest

        placed = []
        for o in orders:
            req = MarketOrderRequest(
                symbol=o["symbol"],
                qty=o["qty"],
                side=OrderSide.BUY if o["side"] == "buy" else OrderSide.SELL,
                time_in_force=TimeInForce.OPG,
            )
            got = self._call(f"placing {o['side']} {o['qty']:g} {o['symbol']}", self.client.submit_order, req)
            placed.append({**o, "id": str(got.id), "status": str(getattr(got.status, "value", got.status))})
        return placed


def expected_after(positions: Mapping[str, float], orders: list[dict[str, Any]]) -> dict[str, float]:
    """The positions once ``orders`` fill: what the next step reconciles against."""
    out = {t: float(n) for t, n in positions.items()}
    for o in orders:
        out[o["symbol"]] = out.get(o["symbol"], 0.0) + (o["qty"] if o["side"] == "buy" else -o["qty"])
    return {t: n for t, n in sorted(out.items()) if abs(n) > TOLERANCE}
