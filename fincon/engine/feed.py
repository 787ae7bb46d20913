"""A backtrader data feed that reads preloaded numpy arrays.

backtrader's ``PandasData`` fetches every field of every bar through
``DataFrame.iloc`` (five pandas indexing calls a bar), which is about a third
of a single-ticker run's time. The engine already holds validated arrays,
so this feed hands them over directly.
"""

from __future__ import annotations

import backtrader as bt
import pandas as pd


class ArrayFeed(bt.feed.DataBase):
    """Daily bars from a frame with columns open/high/low/close/volume."""

    def __init__(self, frame: pd.DataFrame | None = None, **kwargs):
        super().__init__()
        self._frame = frame

    def start(self):
        super().start()
        f = self._frame
        if f is None:
            raise ValueError("ArrayFeed needs a frame of bars (ArrayFeed(frame=...))")
        # Bars are stamped at the end of the session, as backtrader's own
        # daily feeds do, so ``datetime.date(0)`` is the trading day.
        self._dt = [bt.date2num(d.to_pydatetime()) for d in f.index]
        self._cols = [f[c].to_numpy(dtype=float).tolist() for c in ("open", "high", "low", "close", "volume")]
        self._i = 0

    def _load(self):
        i = self._i
        if i >= len(self._dt):
            return False
        lines = self.lines
        lines.datetime[0] = self._dt[i]
        o, h, low, c, v = self._cols
        lines.open[0] = o[i]
        lines.high[0] = h[i]
        lines.low[0] = low[i]
        lines.close[0] = c[i]
        lines.volume[0] = v[i]
        lines.openinterest[0] = 0.0
        self._i = i + 1
        return True


def make_feed(frame: pd.DataFrame, name: str) -> ArrayFeed:
    feed = ArrayFeed(frame=frame)
    feed._name = name
    return feed


__all__ = ["ArrayFeed", "make_feed"]
