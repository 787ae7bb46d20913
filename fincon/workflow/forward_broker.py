"""A forward step's Alpaca side (``--broker alpaca``): the positions the account must hold before a
step decides, the closes its orders are sized at, and the sealed orders placed. Apart from
fincon.workflow.forward, which seals them first, so that an order placed is always on the record."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pandas as pd

from fincon.files import json_text, write_atomic
from fincon.workflow.alpaca import BrokerError
from fincon.workflow.journal import BOOKS


def place(root: Path, broker: Any, entry: dict[str, Any]) -> None:
    """A sealed entry's orders placed on the broker; its answers kept beside the journal (``books/alpaca.json``)."""

    planned = entry["orders"]["alpaca"]["orders"]
    try:
        answers = broker.submit(planned)
    except BrokerError as exc:
        raise BrokerError(
            f"{exc}; the session {entry['decided']} is sealed with its orders, which did not all reach Alpaca: "
            "the next step reports the drift (place them by hand, or start a new journal)"
        ) from None
    write_atomic(root / BOOKS / "alpaca.json", json_text({"session": entry["decided"], "placed": answers}))


def expected_positions(entries: list[dict[str, Any]]) -> dict[str, float]:
    """The positions the broker holds once the last sealed session's orders fill (none before the first)."""
    for e in reversed(entries):
        if e.get("kind") == "session":
            return dict(e["orders"].get("alpaca", {}).get("expected", {}))
    return {}


def closes(root: Path, tickers: list[str], day: dt.date) -> dict[str, float]:
    """Each ticker's close on ``day`` from the frozen inputs: what an order is sized at."""
    out = {}
    for t in tickers:
        frame = pd.read_csv(root / ".replay-inputs" / "prices" / f"{t}.csv").set_index("Date")
        out[t] = float(frame.loc[str(day), "Close"])
    return out
