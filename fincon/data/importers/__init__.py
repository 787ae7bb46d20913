"""Importers of public research corpora into dataset directories.

One module per published format, each exposing ``read(sources, options)
-> ImportedCorpus`` (:class:`~fincon.data.dataset.ImportedCorpus`), and
registered in :data:`IMPORTERS`: the one place a format is added.
``fincon data import`` takes its format choices and the formats part of its
``--help`` from there, and :func:`read_corpus` reads through it;
:func:`fincon.data.dataset.write_dataset` then writes the dataset.

The rules every format applies the same way (the options, timing a
date-only item, duplicates, the tickers asked for) are in
:mod:`fincon.data.importers.common`. This module imports no format and no
pandas: the CLI reads the registry when it builds its parser.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from fincon.errors import ConfigError

if TYPE_CHECKING:
    from fincon.data.dataset import ImportedCorpus
    from fincon.data.importers.common import ImportOptions


@dataclass(frozen=True)
class Importer:
    """A published format: the module whose ``read(sources, options)`` reads
    it (imported only when used: pyarrow only for finsaber), and its lines in
    ``fincon data import --help``."""

    module: str
    help: tuple[str, ...]


#: format name -> its importer, in the order ``--help`` lists them
IMPORTERS: dict[str, Importer] = {
    "investorbench": Importer(
        "fincon.data.importers.investorbench",
        (
            "InvestorBench's per-asset JSON (msft.json[.gz], btc.json...; FILE=TICKER",
            "names the asset when the file name does not):",
            "close prices, news, 10-K and 10-Q summaries; the ticker is the",
            'file name; the "(Sentiment: ...)" tag goes into metadata',
        ),
    ),
    "finsaber": Importer(
        "fincon.data.importers.finsaber",
        (
            "the FINSABER-2 parquet layout: SOURCE is the folder holding",
            "price_daily/, news_items/, filingk/, filingq/",
        ),
    ),
    "csv": Importer(
        "fincon.data.importers.table",
        (
            "a news/filing table (.csv or .jsonl: ticker, published or",
            "date, source, title, text, url; FNSPID's columns accepted)",
            "plus --prices DIR of TICKER.csv (or .csv.gz)",
        ),
    ),
}


def formats_help(indent: int = 2, width: int = 15) -> str:
    """The formats as ``--help`` lists them: a name, then its lines beside it."""
    pad = " " * indent
    return "\n".join(
        pad + (f"{name:<{width}}" if n == 0 else " " * width) + line
        for name, imp in IMPORTERS.items()
        for n, line in enumerate(imp.help)
    )


def read_corpus(fmt: str, sources: Sequence[Path], options: ImportOptions) -> ImportedCorpus:
    """Read ``sources`` with the format's importer (imported here, lazily)."""
    if fmt not in IMPORTERS:
        raise ConfigError(f"unknown import format {fmt!r}; use one of {', '.join(IMPORTERS)}")
    return importlib.import_module(IMPORTERS[fmt].module).read(list(sources), options)
