"""Universe rules of a rolling evaluation: which tickers a window trades,
chosen at the window's start from what was known then.

A rule is a string (``--universe RULE``):

* ``all``: every eligible ticker;
* ``random:N:SEED``: N eligible tickers drawn without replacement by a
  generator seeded with (SEED, the window's first day), so each window draws
  anew and the same command draws the same;
* ``top-volume:N``: the N with the largest mean dollar volume (close x
  volume) over the 3 months before the window (60 bars of a stock, 86 of a
  coin: each ticker's own sessions, read from its bars before the window);
* ``momentum:N``: the N with the largest total return over the 12 months
  before the window, close to close (252 bars of a stock, 365 of a coin: each
  ticker's own sessions, read from its bars before the window);
* ``AAPL,MSFT,...``: a fixed list (each must be eligible).

Eligible at a window's start: bars from the start of its training window
(the same length before it) and a bar in the last 7 calendar days before it.
Only bars dated before the window's first day are read, so a ticker that is
delisted later, or whose volume soars later, is picked as it would have been
then (point in time). Pure functions of the bars handed in: no I/O here.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from fincon.data.calendar import infer_calendar
from fincon.risk.metrics import TRADING_DAYS

VOLUME_DAYS = 60
MOMENTUM_DAYS = 252
TICKER = re.compile(r"^[A-Z0-9][A-Z0-9.\-^=]*$")


@dataclass(frozen=True)
class Rule:
    kind: str  # all, random, top-volume, momentum, fixed
    n: int = 0
    seed: int = 0
    tickers: tuple[str, ...] = ()

    @property
    def slug(self) -> str:
        """A directory name for the rule."""
        if self.kind == "all":
            return "all"
        if self.kind == "random":
            return f"random-{self.n}-s{self.seed}"
        if self.kind == "fixed":  # cut short, the name ends in a hash of the whole list: two lists sharing
            name = "-".join(self.tickers)  # their first 60 characters wrote into one directory
            return "list-" + (
                name if len(name) <= 60 else f"{name[:51]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
            )
        return f"{self.kind}-{self.n}"

    @property
    def canonical(self) -> tuple:
        """What the rule picks, whatever its spelling (msft and MSFT, a seed of 05 and 5, a list's order)."""
        return (self.kind, self.n, self.seed, tuple(sorted(self.tickers)))


def _count(text: str, rule: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"universe {rule!r}: N must be a whole number of at least 1")
    return int(text)


def parse_rule(rule: str) -> Rule:
    """The rule in ``rule``; ValueError (one line) when it is none of the forms."""
    text = rule.strip()
    parts = text.split(":")
    head = parts[0].lower()
    if text.lower() == "all":
        return Rule("all")
    if head == "random":
        if len(parts) != 3 or not parts[2].isdigit():
            raise ValueError(f"universe {rule!r}: write random:N:SEED, e.g. random:5:1")
        return Rule("random", _count(parts[1], rule), int(parts[2]))
    if head in ("top-volume", "momentum"):
        if len(parts) != 2:
            raise ValueError(f"universe {rule!r}: write {head}:N, e.g. {head}:5")
        return Rule(head, _count(parts[1], rule))
    tickers = tuple(dict.fromkeys(t.strip().upper() for t in text.split(",") if t.strip()))
    if ":" in text or not tickers or not all(TICKER.match(t) for t in tickers):
        raise ValueError(
            f"unknown universe rule {rule!r}; use all, random:N:SEED, top-volume:N, momentum:N "
            "or a comma-separated list of tickers"
        )
    return Rule("fixed", len(tickers), tickers=tickers)


def _before(bars: pd.DataFrame, day: dt.date) -> pd.DataFrame:
    return bars[bars.index < pd.Timestamp(day)]


def eligible(bars: Mapping[str, pd.DataFrame], history_from: dt.date, start: dt.date) -> list[str]:
    """Tickers with bars from ``history_from`` and a bar within 7 days before ``start``."""
    out = []
    for t in sorted(bars):
        past = _before(bars[t], start)
        if past.empty:
            continue
        if past.index[0] <= pd.Timestamp(history_from) + pd.Timedelta(days=4) and past.index[-1] >= pd.Timestamp(
            start
        ) - pd.Timedelta(days=7):
            out.append(t)
    return out


def select(rule: Rule, bars: Mapping[str, pd.DataFrame], history_from: dt.date, start: dt.date) -> list[str]:
    """The tickers ``rule`` picks for a window starting on ``start`` (sorted);
    ValueError when fewer than it asks for are eligible."""
    pool = eligible(bars, history_from, start)
    if rule.kind == "fixed":
        missing = [t for t in rule.tickers if t not in pool]
        if missing:
            raise ValueError(
                f"universe {','.join(rule.tickers)}: {', '.join(missing)} has no bars from "
                f"{history_from} up to {start} (needed before the window starting {start})"
            )
        return sorted(rule.tickers)
    if rule.kind == "all":
        picked = pool
    elif len(pool) < rule.n:
        raise ValueError(
            f"universe {rule.kind}:{rule.n}: only {len(pool)} ticker(s) have bars from {history_from} up to {start}"
        )
    elif rule.kind == "random":
        rng = np.random.default_rng([rule.seed, start.toordinal()])
        picked = [pool[i] for i in rng.choice(len(pool), size=rule.n, replace=False)]
    else:
        score = {}
        for t in pool:
            past = _before(bars[t], start)
            # its own sessions: 252 a year of a stock's, 365 of a coin's (its bars before the window)
            year = infer_calendar(past.index).days_per_year
            if rule.kind == "top-volume":
                w = past.iloc[-(VOLUME_DAYS * year // TRADING_DAYS) :]
                if not (w["volume"] > 0).any():  # close-only prices: no volume to rank by (not alphabetical)
                    raise ValueError(
                        f"universe top-volume:{rule.n}: {t} has no volume before {start} (close-only prices?); "
                        "rank by momentum:N or name the tickers"
                    )
                score[t] = float((w["close"] * w["volume"]).mean())
            else:
                w = past["close"].iloc[-(MOMENTUM_DAYS * year // TRADING_DAYS + 1) :]
                score[t] = float(w.iloc[-1] / w.iloc[0] - 1.0)
        picked = sorted(pool, key=lambda t: (-score[t], t))[: rule.n]
    if not picked:
        raise ValueError(f"universe all: no ticker has bars from {history_from} up to {start}")
    return sorted(picked)
