"""Data-analysis analyst: indicators computed in code, then interpreted.

Momentum (5, 20 and 60 days), a moving-average trend, annualised
volatility, drawdown from the lookback high and the daily CVaR (FinCon
eq. 4, :mod:`fincon.risk.metrics`) are computed from the ``MarketView``
(rows up to the decision day only). Each indicator is a citable item with a
signal for the rules brain; risk indicators carry no direction and instead
lower the confidence. Indicators are stated as regimes (momentum as a
z-score band, volatility to 20 points, drawdown to 10, CVaR to 2) rather than
raw decimals: what the analyst interprets is the regime, and a day whose
regimes did not change hashes like the day before and reuses its report
with no model call.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fincon.agents.roles.base import HERE, Item, Profile, Role, RoleInputs
from fincon.data.calendar import infer_calendar
from fincon.risk.metrics import conditional_value_at_risk


def _r(x: float, step: float) -> float:
    """Round to ``step`` (keeps the reuse hash quiet on ordinary days)."""
    return round(round(x / step) * step, 2)


#: momentum regimes by z-score (return over its typical size sqrt(n) * daily vol)
_REGIMES = (
    (-1.5, "sharply down", -1.0),
    (-0.5, "down", -0.5),
    (0.5, "flat", 0.0),
    (1.5, "up", 0.5),
    (math.inf, "sharply up", 1.0),
)


def regime(z: float) -> tuple[str, float]:
    """(label, signal) of a momentum z-score."""
    for bound, label, signal in _REGIMES:
        if z <= bound:
            return label, signal
    return _REGIMES[-1][1], _REGIMES[-1][2]


class DataAnalyst(Role):
    name = "data-analysis"
    sources = None
    weight = 0.25
    template = HERE / "data_analysis.txt"
    dated_items = False  # every indicator is of today
    profile = Profile(
        role="quantitative data analyst of an equity trading team",
        responsibilities="interpret price indicators computed from the stock's history: momentum, trend, volatility, drawdown and tail risk (CVaR).",
        target="tell the manager whether the price action is bullish, bearish or neutral and how risky it is, citing the indicators.",
    )

    def indicators(
        self, closes: np.ndarray, day: str, window: int, alpha: float = 0.05, days_per_year: int = 252
    ) -> tuple[list[Item], float]:
        """(items, risk penalty in [0, 1)) from closes up to today; ``window``: the closes asked for. A
        history shorter than the window is said as such, never by its length: the count of closes since
        the data began is the day's session number (a masked prompt's "the 6-day high" dated it)."""
        c = np.asarray(closes, dtype=float)
        rets = c[1:] / c[:-1] - 1.0
        vol_d = float(np.std(rets[-20:], ddof=1)) if len(rets) >= 3 else 0.02
        vol_d = max(vol_d, 1e-4)
        items: list[Item] = []

        def mom(n: int, w: float) -> None:
            if len(c) > n:
                z = (c[-1] / c[-1 - n] - 1.0) / (vol_d * math.sqrt(n))
                label, signal = regime(z)
                items.append(
                    Item(
                        f"ind-momentum-{n}d",
                        day,
                        "prices",
                        f"{n}-day momentum: {label} against its usual range",
                        signal,
                        w,
                    )
                )

        mom(20, 0.5)
        mom(60, 0.3)
        if len(c) >= 30:
            up = float(np.mean(c[-10:])) > float(np.mean(c[-30:]))
            items.append(
                Item(
                    "ind-trend-sma10-30",
                    day,
                    "prices",
                    f"10-day average {'above' if up else 'below'} the 30-day average",
                    0.5 if up else -0.5,
                    0.3,
                )
            )
        vol_a = _r(100.0 * vol_d * math.sqrt(days_per_year), 20.0)
        items.append(Item("ind-volatility-20d", day, "prices", f"annualised volatility about {vol_a:.0f}%", None, 0.0))
        dd = _r(100.0 * (1.0 - c[-1] / float(np.max(c))), 10.0)
        high = f"the {len(c)}-day high" if len(c) >= window else "its highest close so far"
        items.append(Item(f"ind-drawdown-{len(c)}d", day, "prices", f"about {dd:.0f}% below {high}", None, 0.0))
        penalty = 0.0
        if len(rets) >= 20:
            cvar = _r(100.0 * conditional_value_at_risk(rets, alpha), 2.0)
            items.append(
                Item(
                    "ind-cvar-5pct",
                    day,
                    "prices",
                    f"daily CVaR at {alpha:.0%}: about {cvar:+.0f}% (mean of the worst days)",
                    None,
                    0.0,
                )
            )
            # a tail beyond -5% a day halves the conviction, beyond -10% cuts it to a third
            penalty = float(min(0.9, max(0.0, (-cvar - 2.0) / 6.0)))
        return items, penalty

    def gather(self, view, ticker: str, lookback: int, stance: str = "", beliefs: str = "") -> RoleInputs:
        closes = view.history(ticker, "close", lookback + 1)
        year = infer_calendar(view.dates(lookback + 1)).days_per_year  # a coin's 365: its days up to today
        closes = closes[np.isfinite(closes)]
        day = str(pd.Timestamp(view.date).date())
        items, penalty = (
            self.indicators(closes, day, lookback + 1, days_per_year=year) if len(closes) >= 6 else ([], 0.0)
        )
        return RoleInputs(
            self.name,
            self.agent(ticker),
            ticker,
            day,
            tuple(items),
            stance=stance,
            beliefs=beliefs,
            extra={"risk_penalty": penalty},
        )


ROLE = DataAnalyst()
