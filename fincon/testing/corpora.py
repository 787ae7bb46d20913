"""Tiny event corpora written to a directory the team reads with
``events=<dir>``: the bundled sample's events (optionally edited), their
future perturbed, or a generated corpus with a planted signal."""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pandas as pd

from fincon.data.events.generator import SAMPLE_DIR, GeneratorConfig, Planted, generate
from fincon.data.events.loaders.directory import DirectoryLoader, write_jsonl_gz
from fincon.data.events.model import Event, decision_cutoff
from fincon.data.events.sample_folder import write_corpus

_ROOT = Path(__file__).resolve().parents[2]


def _shared_investorbench() -> Path:
    """``../shared/data/investorbench`` beside the main checkout (a git worktree's too):
    InvestorBench's files are third-party text, read from there and never copied in."""

    got = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=_ROOT, capture_output=True, text=True
    )
    main = Path(got.stdout.strip()).parent if got.returncode == 0 and got.stdout.strip() else _ROOT
    return main.parent / "shared" / "data" / "investorbench"


#: InvestorBench's files (MIT), read where they live; tests that need them skip without them
INVESTORBENCH = _shared_investorbench()
#: the live recordings made on them, committed beside InvestorBench's licence so every clone has them
IB_RECORDINGS = _ROOT / "tests" / "recordings" / "investorbench"


def corpus(tmp: Path, tickers, events: list[Event] | None = None) -> Path:
    """A directory corpus: the bundled events of ``tickers`` (or ``events``).
    Audio paths are made absolute so the directory can live anywhere."""
    tmp.mkdir(parents=True, exist_ok=True)
    evs = events if events is not None else DirectoryLoader(SAMPLE_DIR).load(tickers)
    evs = [
        dataclasses.replace(e, audio=str(SAMPLE_DIR / e.audio)) if e.audio and not Path(e.audio).is_absolute() else e
        for e in evs
    ]
    write_jsonl_gz(tmp / "events.jsonl.gz", sorted(evs, key=lambda e: (e.published_at, e.id)))
    return tmp


def perturb_events(events: list[Event], cut: pd.Timestamp) -> list[Event]:
    """Delete every other event after ``cut``'s decision time, rewrite the
    rest, and insert new ones: the future of the corpus changes, its past
    does not."""
    cutoff = decision_cutoff(cut)
    out, n = [], 0
    for e in events:
        if e.published_at < cutoff:
            out.append(e)
            continue
        n += 1
        if n % 2:
            continue
        flipped = {**e.metadata, "sentiment": "negative"} if "sentiment" in e.metadata else e.metadata
        out.append(
            dataclasses.replace(e, text=f"Rewritten: catastrophic losses and fraud. {e.text or ''}", metadata=flipped)
        )
    for k in range(5):
        out.append(
            Event(
                id=f"inserted-{k}",
                ticker=events[0].ticker,
                source="news",
                published_at=cutoff + pd.Timedelta(hours=2 + 24 * k),
                text="Inserted: record profits, strong demand, excellent results.",
                metadata={"sentiment": "positive"},
            )
        )
    return out


def generated_corpus(out: Path, tickers, start: str, end: str, planted: Planted | None = None) -> Path:
    """A corpus from the event generator (no audio), with ``planted`` (a
    source whose tone predicts the next return) if given."""
    cfg = GeneratorConfig(tickers=list(tickers), start=start, end=end, planted=planted, audio_dir=None)
    write_corpus(generate(cfg), out, cfg, audio=False)
    return out


def training_corpus(out: Path, planted: Planted | None = None) -> Path:
    """The training tests' corpus: TSLA over 2022 from the event generator,
    with ``planted`` (e.g. ``Planted("news", 0.3)``) if given."""
    return generated_corpus(out, ["TSLA"], "2022-01-03", "2022-12-30", planted)
