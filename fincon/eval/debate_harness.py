"""The harness of the debate protocol's evaluations: ``fincon eval debate``
on the sample's earnings calls (:mod:`fincon.eval.debate`) and on the
filings of imported datasets (:mod:`fincon.eval.debate_filings`) debate
their documents and score the direction calls the same way, so that part
is written once, here.

A document is debated on the first trading day at whose close it is
visible (as the backtest reads it), by the code the backtest runs
(:class:`~fincon.agents.protocols.debate.DebateProtocol`, bound to a memory
of its own: :func:`protocol`, :func:`debated`). The realised return over h
sessions is ``close[d + h] / close[d] - 1`` from that day's close
(:func:`realised`), used only for scoring; a document with fewer than h
later sessions is left out of that column. A direction call scores when its
sign is the return's; a neutral call does not count (:func:`hits`).

What stays with each evaluation: its documents, its rows (which direction
each row reads, its baselines) and its result's fields.
"""

from __future__ import annotations

import tempfile
from contextlib import nullcontext
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Callable, ContextManager, Iterable, Iterator, Mapping, Sequence

import pandas as pd

from fincon import agents, data as fincon_data, memory as fincon_memory
from fincon.data.events.model import visible_day
from fincon.eval.progress import each
from fincon.memory.store import MemoryStore

HORIZONS = (1, 5, 20)


def close_series(raw: pd.DataFrame, ticker: str, origin: str) -> pd.Series:
    """The adjusted close by date, checked as every price file is (fincon.data.validate_bars: a duplicate
    day, a missing column or a price that is not a number is one line naming the file, never a return
    computed from it)."""
    return fincon_data.validate_bars(raw, ticker, origin)["close"]


def workspace(workdir: str | Path | None, prefix: str) -> ContextManager[str | Path]:
    """``workdir``, or a temporary directory removed afterwards: where the
    debate's memories are written."""
    return nullcontext(workdir) if workdir is not None else tempfile.TemporaryDirectory(prefix=prefix)


def protocol(brain_name: str, memory: Path, events: Any, **params: Any) -> Any:
    """The debate protocol (``params``: its settings) bound to ``events`` and
    a memory store at ``memory``: the offline hashing embedder for the rules
    brain, MiniLM for the model."""

    store = MemoryStore(
        memory, fincon_memory.HashingEmbedder() if brain_name == "rules" else fincon_memory.MiniLMEmbedder()
    )
    proto = agents.DebateProtocol(**params)
    proto.bind(SimpleNamespace(memory=store, events=events))
    return proto


def debated(
    proto: Any, brain: Any, events: Sequence[Any], closes: pd.Series, progress: bool = False, what: str = "debate"
) -> Iterator[tuple[Any, int, Any, int, int]]:
    """Each event debated on its first visible trading day of ``closes``
    (events visible after the last are skipped): the event, that day's
    position in ``closes``, the debate, its model calls and fallbacks
    (``progress``: a bar named ``what`` of the events, on stderr)."""

    dates = closes.index
    for e in each(events, what, progress, unit="event"):
        i = int(dates.searchsorted(visible_day(e.published_at)))
        if i >= len(dates):
            continue
        d, calls, fallbacks, _ = proto.debate(brain, e, str(dates[i].date()))
        yield e, i, d, calls, fallbacks


def realised(closes: pd.Series, i: int, horizons: Iterable[int]) -> dict[int, float]:
    """The return from the close at ``i`` over each horizon that has a close."""
    return {h: float(closes.iloc[i + h] / closes.iloc[i] - 1.0) for h in horizons if i + h < len(closes)}


def _hit(direction: str, ret: float) -> bool | None:
    if direction == "neutral":
        return None
    return (ret > 0) if direction == "bullish" else (ret < 0)


def hits(results: Iterable[Any], direction: Callable[[Any], str], horizon: Callable[[Any], int]) -> list[bool]:
    """Whether each directional call (``direction(r)``) had the sign of the
    return over ``horizon(r)``, for the results whose return is known."""
    out = []
    for r in results:
        h = horizon(r)
        if h in r.returns and (hit := _hit(direction(r), r.returns[h])) is not None:
            out.append(hit)
    return out


def share(hits: Sequence[bool]) -> float | None:
    """The share of hits, to 4 decimals (None for no call)."""
    return round(sum(hits) / len(hits), 4) if hits else None


def table(
    results: Sequence[Any],
    rows: Mapping[str, Callable[[Any], str]],
    own: Callable[[str, list[bool]], dict[str, Any]],
) -> dict[str, dict[str, Any]]:
    """Per row (its direction of a result), accuracy and scored calls at
    each of :data:`HORIZONS` (``acc_1d``, ``n_1d``, ...), then the cells
    ``own(row, hits)`` makes of its hits at each call's own horizon."""
    out: dict[str, dict[str, Any]] = {}
    for row, direction in rows.items():
        cells: dict[str, Any] = {}
        for h in HORIZONS:
            at_h = hits(results, direction, lambda r, h=h: h)
            cells[f"acc_{h}d"] = share(at_h)
            cells[f"n_{h}d"] = len(at_h)
        out[row] = {**cells, **own(row, hits(results, direction, lambda r: r.horizon))}
    return out


def paired(
    results: Sequence[Any],
    rows: Mapping[str, Callable[[Any], str]],
    baselines: Sequence[str],
    own: Callable[[Sequence[Any]], Callable[[str, list[bool]], dict[str, Any]]],
    of: str = "report",
) -> dict[str, dict[str, Any]]:
    """Each baseline scored on the documents row ``of`` called (not neutral), as rows named
    "BASELINE (report's calls)": a row that abstains on some documents is compared with the
    baselines on the same documents, not on a set it skipped part of (``own(documents)``:
    the evaluation's own cells over those documents)."""
    called = [r for r in results if rows[of](r) != "neutral"]
    scored = table(called, {b: rows[b] for b in baselines}, own(called))
    return {f"{b} ({of}'s calls)": row for b, row in scored.items()}


def same_calls(results: Sequence[Any], rows: Mapping[str, Callable[[Any], str]]) -> list[list[str]]:
    """Groups of two or more rows that made the same call on every document: one result
    under several names, whose differences in the table measure nothing."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for row, direction in rows.items():
        groups.setdefault(tuple(direction(r) for r in results), []).append(row)
    return [g for g in groups.values() if len(g) > 1]


def flag_lines(groups: Sequence[Sequence[str]], what: str) -> list[str]:
    """A FLAG line per group of :func:`same_calls` (``what``: the documents, "filing", "call")."""
    out = []
    for g in groups:
        names = f"{', '.join(g[:-1])} and {g[-1]}"
        out.append(f"FLAG: {names} made the same direction call on every {what}: their accuracies are one result")
    return out


def _cell(c: Mapping[str, Any], key: str) -> str:
    """A share with its count ("69.2% 9/13"): over a few documents, a percentage alone hides
    how few (an ``n_`` key beside it; the own-horizon share of a row without one: no count)."""
    x, n = c[f"acc_{key}"], c.get(f"n_{key}")
    if x is None:
        return "-"
    return f"{x * 100:.1f}%" + (f" {round(x * n)}/{n}" if n is not None else "")


def format_rows(table: Mapping[str, Mapping[str, Any]], conf: bool = False) -> list[str]:
    """The table's header and rows as text, each share with its count; ``conf``: with the mean
    confidence column."""
    w = max(22, *(len(row) for row in table))
    lines = [
        f"{'':{w}s} {'1d':>13s} {'5d':>13s} {'20d':>13s} {'own h':>13s} {'called':>7s}"
        + (f" {'conf':>6s}" if conf else "")
    ]
    for row, c in table.items():
        cells = " ".join(f"{_cell(c, k):>13s}" for k in ("1d", "5d", "20d", "own_h"))
        line = f"{row:{w}s} {cells} {c['directional']:7d}"
        if conf:
            line += " " + ("    - " if c.get("mean_conf") is None else f"{c['mean_conf']:6.2f}")
        lines.append(line)
    return lines
