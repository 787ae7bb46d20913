"""A run's inputs, opened once: the price source, the dataset and its events.

Why one home: ``--data DIR`` used to be resolved by about nine calls in seven
files (each CLI command, the runner, training, the sentiment baseline; the
price source sniffed ``dataset.json`` again), and each strategy that reads
news opened its own event store in ``start()``. Here one function,
:func:`open_inputs`, opens the data section of a run config; the runner
hands the result to the run, and a strategy's events reach it in the
:class:`~fincon.data.view.MarketView` (the one point-in-time cut).

Which corpus a strategy reads, in one rule (:meth:`RunInputs.events_spec`):
the corpus its parameters name (``--events DIR``, ``events: sample``), else
the dataset's own ``events/`` folder, else the bundled sample corpus. A
dataset without events is refused for a strategy that reads them: never the
bundled synthetic news beside a user's real prices.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from fincon.data.dataset import Dataset, resolve_dataset
from fincon.data.events.generator import DEFAULT_TICKERS
from fincon.data.events.sources import build_store
from fincon.data.events.store import EventStore
from fincon.data.sources import make_source
from fincon.errors import ConfigError, DataError
from fincon.files import name_before

#: the bundled synthetic corpus, as an events parameter names it
SAMPLE = "sample"


def open_events(spec: str, tickers: Sequence[str], what: str = "events") -> EventStore:
    """The event store of ``spec``: ``sample`` (the bundled corpus) or an
    event directory; ``what`` names the setting in the error."""

    if spec == SAMPLE:
        return build_store([{"type": "sample"}], tuple(tickers))
    path = Path(spec).expanduser()
    if not path.is_dir():
        is_not = "does not exist" if not path.exists() else "is neither 'sample' nor an event directory"
        raise ConfigError(f"{what}: {spec!r} {is_not} (give 'sample' or a directory of TICKER.jsonl files)")
    return build_store([{"type": "directory", "path": path}], tuple(tickers))


def corpus_tickers(spec: str) -> tuple[str, ...]:
    """Every ticker an event corpus holds items for (the sample's eleven, or
    an event directory's ``TICKER.jsonl*`` files)."""
    if spec == SAMPLE:
        return tuple(DEFAULT_TICKERS)
    path = Path(spec).expanduser()
    names = {name_before(p.name, (".jsonl", ".jsonl.gz")) for p in path.glob("*.jsonl*")}
    return tuple(sorted(names)) if path.is_dir() else ()


@dataclass(frozen=True)
class RunInputs:
    """What ``data:`` of a run config opens to: the price source, the dataset
    (manifest, calendar, events folder) when ``--data`` is one, and the
    event stores strategies read (opened on first use, once per corpus)."""

    source: Any
    dataset: Dataset | None = None
    data_dir: Path | None = None
    _stores: dict = field(default_factory=dict, compare=False, repr=False)

    def events_spec(self, given: str | None, reader: str = "the strategies that read news") -> str:
        """The corpus a strategy reads: ``given`` (its parameter) if set, else
        the dataset's events, else the sample corpus (module docstring);
        ``reader`` names who reads it in the error."""
        if given:
            return given if given == SAMPLE else str(Path(given).expanduser().absolute())
        if self.dataset is None:
            return SAMPLE
        if not self.dataset.has_events:
            raise ConfigError(
                f"--data {self.data_dir} holds prices but no items for {reader}; give an event corpus with --events DIR"
            )
        return str(self.dataset.events_dir.absolute())

    def events(self, spec: str, tickers: Sequence[str], what: str = "events") -> EventStore:
        """The store of ``spec`` for ``tickers`` (opened once per run)."""
        key = (spec, tuple(tickers))
        if key not in self._stores:
            self._stores[key] = open_events(spec, tickers, what)
        return self._stores[key]

    @property
    def lookahead(self) -> str | None:
        """What a ``--same-day`` dataset lets a run see early (None for the
        point-in-time rule): its label travels with every run made on it."""
        ds = self.dataset
        if ds is None or ds.manifest.visibility != "same-day":
            return None
        return (
            f"same-day dataset {Path(str(self.data_dir)).name}: items known only by their date are visible at "
            "that day's own decision (one day of look-ahead, the benchmark's convention), not from the next session"
        )


def open_inputs(
    source: str = "sample", data_dir: str | Path | None = None, cache_dir: str | Path | None = None
) -> RunInputs:
    """Open a run's data section (``source``, ``--data``, ``--cache-dir``) once."""
    dataset = resolve_dataset(data_dir) if source == "csv" and data_dir is not None else None
    price_dir = dataset.prices_dir if dataset is not None else data_dir
    if dataset is not None and not dataset.prices_dir.is_dir():
        raise DataError(f"--data {data_dir}: dataset without a prices/ folder; re-run the import")
    return RunInputs(make_source(source, price_dir, cache_dir), dataset, None if data_dir is None else Path(data_dir))


def sample_inputs() -> RunInputs:
    """The bundled sample (prices and events): what helpers and tests run on."""
    return open_inputs()


def planted_said(store: EventStore | None, spec: Any = None) -> str | None:
    """The look-ahead planted in a corpus (a generated one's ``--planted``: its items say so), said as a
    same-day dataset's is: a run that reads it is no test of point in time (found in review: a team on a
    planted corpus was graded "temporal integrity: pass" and set beside the paper's figures)."""
    planted = store.planted if store is not None else ()
    if not planted:
        return None
    name = Path(str(spec)).name if spec else "sample"  # the corpus as its strategy names it
    return (
        f"corpus {name} has a PLANTED look-ahead ({', '.join(planted)}): its items carry the next day's return "
        "by design (fincon data sample --planted), a test of the pipeline and never evidence of skill"
    )
