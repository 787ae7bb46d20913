"""The days the team's event corpus covers (the runner opens the corpus).

A run refuses days its corpus does not cover (no silent empty memory), so
the coverage per ticker is computed once here at start. Checks made before
any run (``check_inputs``, for every window of a rolling evaluation) ask
:func:`corpus_coverage`, which reads each ticker once per process and reads
it again only when the corpus' files change.
May touch: the event store (read only); never the memory or the model.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas as pd

from fincon import data
from fincon.data.events.model import visible_day
from fincon.errors import ConfigError


def coverage(store, tickers) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """Per ticker: first and last day on which one of its events became visible."""

    out: dict[str, tuple[pd.Timestamp, pd.Timestamp]] = {}
    for e in store.all_events():
        if e.ticker in tickers:
            d = visible_day(e.published_at)
            lo, hi = out.get(e.ticker, (d, d))
            out[e.ticker] = (min(lo, d), max(hi, d))
    return out


#: a corpus folder may say which days it covers per ticker (``{"TSLA": ["2022-10-05", "2022-10-12"]}``):
#: a forward journal's frozen corpus covers every session it was read at, though a quiet day has no item
COVERAGE = "coverage.json"


def declared_coverage(spec: str) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """The days the corpus folder ``spec`` says it covers (its ``coverage.json``), or nothing."""
    path = Path(spec).expanduser() / COVERAGE if spec != "sample" else None
    if path is None or not path.is_file():
        return {}
    return {t: (pd.Timestamp(lo), pd.Timestamp(hi)) for t, (lo, hi) in json.loads(path.read_text()).items()}


def _stamp(spec: str) -> tuple:
    """What identifies a corpus' content cheaply: the files' names, sizes and mtimes."""
    if spec == "sample":
        return ()
    path = Path(spec).expanduser()
    if not path.is_dir():
        return ("missing",)
    return tuple(sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in path.iterdir() if p.is_file()))


@functools.lru_cache(maxsize=512)
def _ticker_coverage(spec: str, ticker: str, stamp: tuple) -> tuple[pd.Timestamp, pd.Timestamp] | None:
    store = data.open_events(spec, (ticker,), "strategy_params.fincon.events")
    return coverage(store, (ticker,)).get(ticker)


def corpus_coverage(spec: str, tickers) -> dict[str, tuple[pd.Timestamp, pd.Timestamp]]:
    """:func:`coverage` of the corpus ``spec`` for ``tickers``, one ticker
    at a time and remembered per (corpus, ticker, files' stamp): a rolling
    evaluation checks 36 windows of 5 tickers each against one corpus (3 min
    of re-reading, 20 s this way)."""
    stamp = _stamp(spec)
    out = {t: c for t, c in declared_coverage(spec).items() if t in tickers}
    for t in (t for t in tickers if t not in out):
        c = _ticker_coverage(spec, t, stamp)
        if c is not None:
            out[t] = c
    return out


def uncovered(spec: str, missing, tickers) -> ConfigError:
    """The error for tickers the corpus has no item of (``missing``, of the run's ``tickers``), with
    what to do: the bundled sample covers a few firms; `fincon data sample` writes one for any
    ticker with bundled prices."""
    them = ", ".join(missing[:8]) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
    if spec == "sample":
        return ConfigError(
            f"the bundled sample corpus has no events for {them} (it covers {', '.join(data.corpus_tickers('sample'))});"
            f" write one that does with `fincon data sample --tickers {','.join(tickers)} --out DIR` and give "
            "--events DIR"
        )
    return ConfigError(
        f"event corpus {spec!r} has no events for {them}; the team needs events for every ticker: give a corpus "
        "that covers them (`fincon data sample`, `fincon data import`) or leave them out"
    )


def refuse_audio_only(spec: str, tickers) -> None:
    """A call with audio and no text, in a corpus read as text (``transcripts=text``): refused before the
    run, one line (found in review: read as an empty call without a word, then found only on its day, a
    partial run and exit 3)."""
    store = data.open_events(spec, tuple(tickers), "strategy_params.fincon.events")
    mute = next((e.id for e in store.all_events() if e.audio and not e.text), None)
    if mute is not None:
        raise ConfigError(
            f"{mute} has audio and no text, and its calls are read as text (transcripts=text): give the call's "
            "text in the corpus, or hear it (--param fincon.transcripts=whisper)"
        )
