"""``fincon data``: import public corpora, describe datasets, regenerate the
synthetic event sample, show what an agent sees on one day."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Annotated, Literal

from fincon.data.importers import read_corpus

if TYPE_CHECKING:  # pandas is imported by the commands, not by `fincon --help`
    import pandas as pd

from pydantic import Field

from fincon import data as fincon_data, memory
from fincon.cli.flags import Args, action
from fincon.data.importers import IMPORTERS, formats_help  # the registry only: no pandas before a command runs
from fincon.errors import ConfigError, DataError
from fincon.files import json_text
from fincon.flag import Flag
from fincon.llm.settings import LLMSettings, attach
from fincon.validation import once, symbol

SAMPLE_HELP = """\
Write the project's synthetic event corpus (news, 10-Q/10-K MD&A, analyst
notes, earnings calls with espeak-ng audio) for the given tickers. Every item
is labelled SYNTHETIC. Tone follows the bundled real prices, using only what
was known when each item was published. --planted SOURCE:STRENGTH makes one
source carry a noisy hint of the next day's return (for testing that agents
can find an informative source); it is never the default. --out must be a
new or empty folder, or an earlier sample corpus with --replace (replaced
whole, never mixed with the new one).
"""

SAMPLE_EXAMPLES = """\
examples:
  fincon data sample --tickers TSLA,MSFT --out runs/events-sample
  fincon data sample --tickers TSLA --planted news:0.3 --out runs/events-planted
  fincon data sample --out fincon/data/sample/events --replace   # refresh the bundled corpus
"""

SHOW_HELP = """\
Show what an agent could see on one day at the decision time (16:00
America/New_York): events new that day, the latest filing/call/note, and the
top memories of an analyst's procedural memory with their FinCon A.13 scores
(relevancy + importance, each scaled to [0, 1]). The memory is rebuilt in a
temporary store by running the working-memory step over every trading day of
the corpus up to the date.
"""


# {formats}: the registered formats and their lines (fincon.data.importers.IMPORTERS)
IMPORT_HELP = """\
Import a public research corpus as it is published into one dataset
directory: DIR/prices/TICKER.csv, DIR/events/TICKER.jsonl.gz and
DIR/dataset.json (format, source files and their sha256, tickers, date span,
item counts per source, calendar, close-only or OHLCV prices, and the
point-in-time rule applied). Every command then takes --data DIR as it is.

formats:
{formats}

point in time: an item with a full timestamp is visible at the first
decision (16:00 New York) after it; an item with a date only is visible from
the NEXT trading day's decision. --same-day applies the benchmarks' own
convention instead (a day's items visible at that day's close): one day of
look-ahead for after-close items, labelled as such in dataset.json, for
reproducing a published number. See docs/data.md.
"""

IMPORT_EXAMPLES = """\
examples:
  fincon data import investorbench ~/investorbench/msft.json.gz --out data/ib-msft
  fincon data import investorbench msft.json jnj.json hon.json --out data/ib-stocks --start 2020-07-01
  fincon data import investorbench msft.json --out data/ib-msft-sameday --same-day
  fincon data import finsaber ~/finsaber-data --tickers AAPL,MSFT --start 2015-01-01 --out data/fs
  fincon data import csv news.csv --prices my_prices/ --out data/mine
  fincon data info data/ib-msft
  fincon backtest --ticker MSFT --strategy fincon --brain rules --data data/ib-msft --start 2020-10-01 --end 2021-05-06
"""


class ImportArgs(Args):
    format: Annotated[str, Flag("format", required=True, choices=IMPORTERS, help="the corpus' published format")]
    sources: Annotated[
        list[Path],
        Flag("sources", required=True, metavar="SOURCE",
             help="input files (investorbench, csv) or the layout's root folder (finsaber)"),
    ]  # fmt: skip
    out: Annotated[Path, Flag(required=True, metavar="DIR", help="dataset directory to write (must be new)")]
    tickers: Annotated[
        str | None,
        Flag("--tickers", "--ticker", metavar="T[,T...]",
             help="import only these tickers (default: every ticker the source holds)"),
    ] = None  # fmt: skip
    start: Annotated[dt.date | None, Flag(help="first day to import, YYYY-MM-DD (default: the source's first)")] = None
    end: Annotated[dt.date | None, Flag(help="last day to import, YYYY-MM-DD (default: the source's last)")] = None
    same_day: Annotated[
        bool,
        Flag(
            help="BENCHMARK CONVENTION, one day of look-ahead: date-only items visible at that day's close "
            "(default: from the next trading day)"
        ),
    ] = False
    keep_sentiment: Annotated[
        bool, Flag(help="investorbench: keep the '(Sentiment: ...)' tag in the news text (default: metadata only)")
    ] = False
    prices: Annotated[Path | None, Flag(metavar="DIR", help="csv: folder of TICKER.csv price files")] = None
    replace: Annotated[bool, Flag(help="overwrite --out if it holds an earlier dataset")] = False


class InfoArgs(Args):
    dir: Annotated[Path, Flag("dir", required=True, metavar="DIR", help="a directory written by `fincon data import`")]
    as_json: Annotated[bool, Flag("--json", help="print dataset.json as it is")] = False


class SampleArgs(Args):
    tickers: Annotated[
        str | None,
        Flag("--tickers", "--ticker", metavar="T[,T...]",
             help="comma-separated tickers with bundled prices (default: the 11 FinCon tickers)"),
    ] = None  # fmt: skip
    start: Annotated[dt.date | None, Flag(help="first day, YYYY-MM-DD (default 2022-01-03)")] = None
    end: Annotated[dt.date | None, Flag(help="last day, YYYY-MM-DD (default 2023-06-09)")] = None
    planted: Annotated[
        str | None, Flag(metavar="SOURCE:STRENGTH", help="e.g. news:0.3 (look-ahead test corpus; never the default)")
    ] = None
    out: Annotated[Path, Flag(help="output directory (default ./{default})")] = Path("events-sample")
    no_audio: Annotated[bool, Flag(help="skip rendering earnings-call audio (no espeak-ng/ffmpeg needed)")] = False
    bitrate: Annotated[str, Flag(help="Opus bitrate of the call audio (default {default})")] = "12k"
    replace: Annotated[bool, Flag(help="overwrite --out if it holds an earlier sample corpus")] = False


class ShowArgs(Args):
    ticker: Annotated[str, Flag(required=True, metavar="T", help="the ticker")]
    date: Annotated[dt.date, Flag(required=True, help="decision day, YYYY-MM-DD")]
    data: Annotated[
        Path | None,
        Flag(metavar="DIR", help="a dataset directory (`fincon data import`): its events and trading days"),
    ] = None
    events: Annotated[
        Path | None,
        Flag(
            metavar="DIR", help="event directory (default: the dataset's events with --data, else the bundled sample)"
        ),
    ] = None
    embedder: Annotated[Literal["minilm", "hashing"], Flag(help="the memory's embedder (default {default})")] = "minilm"
    agent: Annotated[str, Flag(help="agent profile used in the memory query (default {default})")] = "analyst"
    k: Annotated[
        int,
        Flag(
            help="memories to show (default {default}; 0 skips rebuilding the memory, which on a large real corpus "
            "takes minutes with the minilm embedder)"
        ),
    ] = Field(5, ge=0, le=100)
    anonymize: Annotated[
        bool,
        Flag(help="show the day through the mask of a run with --anonymize (its pseudonym, dates as recency, "
             "percentages as buckets): what a masked model reads"),
    ] = False  # fmt: skip
    as_json: Annotated[bool, Flag("--json", help="print JSON instead of text")] = False


COMMAND = "data"
SUMMARY = "import corpora, describe datasets, sample corpus, point-in-time views"
HELP = """\
Datasets and the event corpus an agent reads.

  fincon data import   a public research corpus, as published, into a dataset
  fincon data info     what a dataset holds (tickers, spans, items per source)
  fincon data sample   the synthetic sample corpus (a planted hint if asked)
  fincon data show     what an agent could see on one day at the decision time

See docs/information.md.
"""
EXAMPLES = None


def register(p: argparse.ArgumentParser) -> None:
    dsub = p.add_subparsers(dest="data_command", metavar="ACTION")

    action(
        dsub,
        "import",
        ImportArgs,
        cmd_import,
        help="import a public corpus into a dataset directory",
        description=IMPORT_HELP.format(formats=formats_help()),
        epilog=IMPORT_EXAMPLES,
    )
    action(
        dsub,
        "info",
        InfoArgs,
        cmd_info,
        help="describe a dataset directory (its dataset.json)",
        epilog="examples:\n  fincon data info data/ib-msft\n  fincon data info data/ib-msft --json\n",
    )
    action(
        dsub,
        "sample",
        SampleArgs,
        cmd_sample,
        help="regenerate the synthetic event corpus",
        description=SAMPLE_HELP,
        epilog=SAMPLE_EXAMPLES,
    )
    action(
        dsub,
        "show",
        ShowArgs,
        cmd_show,
        help="what an agent could see on one day",
        description=SHOW_HELP,
        epilog="examples:\n  fincon data show --ticker TSLA --date 2022-11-01\n"
        "  fincon data show --data data/ib-msft --ticker MSFT --date 2021-01-27\n"
        "  fincon data show --ticker NIO --date 2023-03-02 --embedder hashing --json\n",
    )
    p.set_defaults(func=lambda a: (p.print_help(), 2)[1])


def _tickers(arg: str | None):
    if arg is None:  # not given ("" is given empty: an unset shell variable, refused below)
        return fincon_data.DEFAULT_TICKERS
    if not arg.strip(", "):
        raise ConfigError("--tickers is empty; give e.g. TSLA,MSFT")
    try:  # as a run's --tickers says it (fincon.config)
        ts = tuple(symbol(t) for t in arg.split(",") if t.strip())
        once(list(ts))
    except ValueError as exc:
        raise ConfigError(f"--tickers: {exc}") from None
    return ts


def _date(s: str, flag: str) -> pd.Timestamp:
    import pandas as pd

    try:
        return pd.Timestamp(s).normalize()
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"{flag} {s!r} is not a date; use YYYY-MM-DD") from exc


def check_bitrate(text: str) -> int:
    """``--bitrate`` as bits per second, within what libopus encodes (500 .. 512k).
    Checked before anything is written: ffmpeg refusing it later left a
    0-byte audio file that a corpus reader then took for a call."""

    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kK]?)", str(text).strip())
    bits = float(m.group(1)) * (1000 if m.group(2) else 1) if m else None
    if bits is None or not 500 <= bits <= 512_000:
        raise ConfigError(f"--bitrate {text!r} is not an Opus bitrate: give bits per second from 500 to 512k, e.g. 12k")
    return int(bits)


def cmd_import(args: argparse.Namespace) -> int:
    start = dt.date.fromisoformat(args.start) if args.start else None
    end = dt.date.fromisoformat(args.end) if args.end else None
    if start and end and start > end:
        raise ConfigError(f"--start {start} is after --end {end}")
    tickers = _tickers(args.tickers) if args.tickers is not None else None
    if args.format == "csv" and args.prices is None:
        raise ConfigError("csv: give the price files with --prices DIR (TICKER.csv per ticker)")
    if args.format != "csv" and args.prices is not None:
        raise ConfigError(f"--prices is for the csv format; {args.format} brings its own prices")
    if args.keep_sentiment and args.format != "investorbench":
        raise ConfigError("--keep-sentiment is for the investorbench format (its news carry sentiment tags)")

    fincon_data.check_out(args.out, args.replace)  # before reading anything large
    opts = fincon_data.ImportOptions(
        tickers=tickers,
        start=start,
        end=end,
        visibility="same-day" if args.same_day else "next-session",
        keep_sentiment=args.keep_sentiment,
        prices=args.prices,
    )
    t0 = time.perf_counter()
    corpus = read_corpus(args.format, args.sources, opts)
    manifest = fincon_data.write_dataset(corpus, args.out, replace=args.replace)
    took = time.perf_counter() - t0
    print(f"wrote dataset {args.out} ({args.format}, {took:.1f} s)")
    for label, value in fincon_data.summary_rows(manifest):
        print(f"  {label:<16} {value}")
    print()
    for line in fincon_data.item_table(manifest):
        print(f"  {line}")
    if args.same_day:
        print(
            "WARNING: --same-day: date-only items are visible at that day's own close (the benchmarks' "
            "convention, one day of look-ahead for after-close items); results on this dataset are not point in time",
            file=sys.stderr,
        )
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    ds = fincon_data.open_dataset(args.dir)
    if args.json:
        print(json_text(fincon_data.manifest_dict(ds.manifest), indent=2, ensure_ascii=False), end="")
        return 0
    print(f"dataset {ds.root}")
    for label, value in fincon_data.summary_rows(ds.manifest):
        print(f"  {label:<16} {value}")
    print()
    for line in fincon_data.item_table(ds.manifest):
        print(f"  {line}")
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    fincon_data.check_sample_out(args.out, args.replace)  # before any work
    if not args.no_audio:
        check_bitrate(args.bitrate)
        fincon_data.require_binary("espeak-ng", "espeak-ng")  # now, not after the JSONL files are written
        fincon_data.require_binary("ffmpeg", "ffmpeg")
    start = str(_date(args.start, "--start").date()) if args.start else fincon_data.DEFAULT_START
    end = str(_date(args.end, "--end").date()) if args.end else fincon_data.DEFAULT_END
    cfg = fincon_data.GeneratorConfig(
        tickers=_tickers(args.tickers),
        start=start,
        end=end,
        planted=fincon_data.Planted.parse(args.planted),
        audio_dir=None if args.no_audio else "audio",
    )
    res = fincon_data.write_corpus(
        fincon_data.generate(cfg), args.out, cfg, audio=not args.no_audio, bitrate=args.bitrate, replace=args.replace
    )
    counts = ", ".join(f"{k} {v}" for k, v in sorted(res["counts"].items()))
    planted = f"; PLANTED look-ahead in {args.planted}" if cfg.planted else ""
    print(f"wrote SYNTHETIC corpus to {args.out}: {counts}; {res['audio']} audio files{planted}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    ticker = args.ticker.strip().upper()
    date = _date(args.date, "--date")
    if args.events is not None and not args.events.is_dir():
        what = "is a file" if args.events.exists() else "does not exist"
        raise ConfigError(
            f"--events {args.events} {what}; pass the folder of an event corpus (one written by "
            "`fincon data sample --out DIR`), or leave --events out for the bundled sample"
        )
    if args.k < 0:
        raise ConfigError("--k must be 0 (no memories) or more")
    events_dir, prices_dir = args.events, None
    if args.data is not None:
        ds = fincon_data.open_dataset(args.data)
        prices_dir = ds.prices_dir
        if events_dir is None:
            if not ds.has_events:
                raise DataError(f"{args.data} holds prices but no items; give an event corpus with --events DIR")
            events_dir = ds.events_dir

    def progress(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="fincon-show-") as tmp:
        out = memory.build_view(
            ticker, date, events_dir, args.embedder, args.agent, args.k, Path(tmp) / "memory", prices_dir, progress
        )
    if args.anonymize:
        out = _masked(out, ticker, events_dir)
    if args.json:
        print(json_text(out, indent=2), end="")
        return 0
    label = "SYNTHETIC sample corpus" if out["synthetic"] else "event corpus"
    when = "masked as a run's prompts read it" if args.anonymize else f"decision time {out['decision_time']}"
    seen = "" if out["visible_events"] is None else f"; {out['visible_events']} events visible"
    print(f"{out['ticker']} on {out['date']}, {when} ({label}{seen})")
    if out["visible_by_source"] is not None:
        print("visible by source: " + ", ".join(f"{s} {n}" for s, n in out["visible_by_source"].items()))
    print(f"\nnew since the previous decision ({len(out['new_today'])}), by source:")
    for source in sorted(
        {e["source"] for e in out["new_today"]}, key=lambda s: [e["source"] for e in out["new_today"]].index(s)
    ):
        rows = [e for e in out["new_today"] if e["source"] == source]
        print(f"  {source} ({len(rows)}):")
        for e in rows:
            tag = f"  [{e['sentiment']}]" if e.get("sentiment") else ""
            print(f"    {e['published']}  {e['title']}{tag}")
    print("\nlatest by source:")
    for s, e in out["latest"].items():
        print(
            f"  {s:<13} "
            + (f"{e['published']}  {e['title']}" + (f"  [audio {e['audio']}]" if e["audio"] else "") if e else "-")
        )
    if out["query"] is None:
        return 0
    print(
        f"\ntop {len(out['memories'])} memories (score = relevancy + importance, each in [0,1]; embedder {out['embedder']}):"
    )
    print(f"  query: {out['query']}")
    for m in out["memories"]:
        print(
            f"  {m['score']:.3f} = {m['relevancy']:.3f} + {m['importance']:.3f}  age {m['age_days']:>3}d  {m['source']:<13} {m['text'][:110]}"
        )
    return 0


def _masked(view: dict, ticker: str, events_dir: Path | None) -> dict:
    """``view`` as a masked run's prompts read it: the mask a run on ``ticker`` builds
    (fincon.llm.settings.attach: the bundled names, the corpus' own mined before the day, the
    default seed's secret) over each memory listed as a prompt lists it (``[E1] Oct 31: text``: read
    as its tone word alone, at any length), each event's title and the query; ids and audio
    paths, which name the firm, left out."""
    holder = SimpleNamespace(masker=None)
    day = view["date"]
    today = dt.date.fromisoformat(day)
    corpus = str(events_dir) if events_dir is not None else "sample"
    attach(holder, LLMSettings(anonymize=True), [ticker], corpus, today)
    mask = holder.masker

    def listed(n: int, date: str, text: str) -> tuple[str, str]:
        """(the date, the text) of ``text`` listed as item ``n`` of a prompt, masked."""
        when, _, what = mask.text(f"[E{n}] {date}: {text}", day).partition(": ")
        return when.removeprefix(f"[E{n}] "), what

    def row(n: int, e: dict | None) -> dict | None:
        if e is None:
            return None
        when, what = listed(n, e["published"][:10], e["title"])
        return {k: e[k] for k in ("source", "sentiment", "synthetic") if k in e} | {
            "published": when, "title": what, "audio": None}  # fmt: skip

    memories = [
        {k: v for k, v in m.items() if k != "id"}
        | {"text": listed(n, str(today - dt.timedelta(days=m["age_days"])), m["text"])[1]}
        for n, m in enumerate(view["memories"], 1)
    ]
    return view | {
        "ticker": mask.pseudonym[ticker],
        "date": "the decision day",
        "decision_time": None,
        "masked": True,
        # the running counts of items so far map to one trading day (92 % of JNJ's values): no prompt says them
        "visible_events": None,
        "visible_by_source": None,
        "new_today": [row(n, e) for n, e in enumerate(view["new_today"], 1)],
        "latest": {s: row(n, e) for n, (s, e) in enumerate(view["latest"].items(), 1)},
        "query": mask.text(view["query"], day) if view["query"] else None,
        "memories": memories,
    }
