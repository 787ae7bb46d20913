"""The leakage audit's adversaries that read a prompt's numbers (fincon.llm.leakage): precise returns
matched against every ticker's closes, and a count of closes that is the data's own session number."""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

from fincon.llm.leakage_inputs import Guess, Knowledge, Prompt

_PERCENT = re.compile(r"(?<![\w.])([+-]?\d{1,3}\.\d{2})\s?%")
#: the data analyst's drawdown line names the closes it read ("about 3-7% below the 61-day high")
_HISTORY = re.compile(r"\bbelow the (\d+)-day high\b")


def price_guess(text: str, k: Knowledge) -> Guess:
    """Three or more percentages written to two decimals, in a row in ``text``,
    that are one ticker's daily returns on consecutive sessions: the ticker
    and the last of those sessions. (Single precise returns are left alone: a
    value to two decimals is some ticker's return on some day hundreds of
    times over, so matching them one by one finds what is not there.)"""
    values = [f"{float(v):.2f}" for v in _PERCENT.findall(text)]
    if len(values) < 3 or not k.returns:
        return Guess()
    for i in range(len(values) - 2):
        for t, j, horizon in k.returns.get(values[i], ()):
            if horizon != 1:
                continue
            daily = k.daily[t]
            n = 1
            while i + n < len(values) and j + n < len(daily) and daily[j + n] == values[i + n]:
                n += 1
            if n >= 3:
                day = k.closes[t].index[j + n - 1].date()
                return Guess(firm=t, firm_cue="prices", day=day, exact=True, day_cue="prices")
    return Guess()


def history_caps(prompts: Sequence[Prompt]) -> dict[str, int]:
    """Each run's largest count of closes read (its window: lookback + 1), for :func:`history_guess`."""
    caps: dict[str, int] = {}
    for p in prompts:
        for m in _HISTORY.finditer(p.text):
            caps[p.run] = max(caps.get(p.run, 0), int(m.group(1)))
    return caps


def history_guess(text: str, k: Knowledge, cap: int | None, firm: str | None = None) -> Guess:
    """A count of closes under the run's window ``cap`` is every close the data had: the decision day is
    the data's n-th session: of ``firm``'s series when another cue named it, else the day most tickers'
    series give (prices that begin on one day give the day, not the firm). Runs written before
    2026-11-30 wrote the count ("the 6-day high"); the analyst now writes a short history as "its
    highest close so far"."""
    m = _HISTORY.search(text)
    n = int(m.group(1)) if m else 0
    if not m or cap is None or not 0 < n < cap:
        return Guess()
    series = [k.closes[firm]] if firm in k.closes else list(k.closes.values())
    days = Counter(s.index[n - 1].date() for s in series if len(s) >= n)
    return Guess(day=days.most_common(1)[0][0], exact=True, day_cue="history length") if days else Guess()
