"""Writing a synthetic sample corpus to its folder (``fincon data sample``).

A corpus folder is written whole: to a staging folder beside ``--out``,
renamed into place at the end. It never adds its files to a folder it did
not make: writing TSLA into a folder that held a planted MSFT corpus would
leave a README that describes TSLA only, beside a MSFT whose look-ahead it no
longer names. An earlier sample corpus is replaced only with ``--replace``
and only when it holds nothing but what ``fincon data sample`` wrote.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fincon import stopping
from fincon.data.events.audio import render_call_audio
from fincon.data.events.generator import LABEL, GeneratorConfig
from fincon.data.events.loaders.directory import write_jsonl_gz
from fincon.data.events.model import Event
from fincon.ownership import OwnedFolder

README = "README.md"
TITLE = "# Synthetic event corpus"
TICKERS_LINE = "- tickers: "
AUDIO = "audio"


def _own_files(out: Path) -> set[str] | None:
    """The files the ``fincon data sample`` that wrote ``out`` made (its
    README, each ticker's items and call audio), or None when ``out``'s
    README is not one it wrote."""
    try:
        lines = (out / README).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    if lines[:3] != [TITLE, "", LABEL]:
        return None
    tickers = next((ln[len(TICKERS_LINE) :].split(", ") for ln in lines if ln.startswith(TICKERS_LINE)), [])
    audio = out / AUDIO
    calls = {f"{AUDIO}/{p.name}" for p in audio.glob("*.ogg")} if audio.is_dir() and not audio.is_symlink() else set()
    ticker_calls = {c for c in calls if any(c.startswith(f"{AUDIO}/{t}-") for t in tickers if t)}
    return {README, *(f"{t}.jsonl.gz" for t in tickers if t)} | ticker_calls


#: a sample corpus folder: new, or an earlier one replaced whole with --replace
SAMPLE_CORPUS = OwnedFolder("sample corpus", README, "`fincon data sample`", _own_files)


def check_sample_out(out: Path, replace: bool) -> None:
    """``--out`` must be new or empty, or an earlier sample corpus with ``--replace``."""
    SAMPLE_CORPUS.check_out(Path(out), replace)


def write_corpus(
    events: dict[str, list[Event]],
    out_dir: Path,
    cfg: GeneratorConfig,
    audio: bool = True,
    bitrate: str = "12k",
    *,
    replace: bool = False,
) -> dict:
    """Write ``TICKER.jsonl.gz`` files (+ audio) and a README to ``out_dir``,
    which must be new or empty (or an earlier sample corpus, with
    ``replace``); returns counts."""

    out_dir = Path(out_dir)
    SAMPLE_CORPUS.check_out(out_dir, replace)
    staging = SAMPLE_CORPUS.staging(out_dir)
    try:
        res = _write(events, staging, cfg, audio, bitrate)
        SAMPLE_CORPUS.swap_in(staging, out_dir, replace)
    except BaseException:
        with stopping.held():  # a second stop must not end the removal half way
            shutil.rmtree(staging, ignore_errors=True)
        raise
    return res


def _write(events: dict[str, list[Event]], out_dir: Path, cfg: GeneratorConfig, audio: bool, bitrate: str) -> dict:
    counts: dict[str, int] = {}
    n_audio = 0
    for t, evs in sorted(events.items()):
        write_jsonl_gz(out_dir / f"{t}.jsonl.gz", evs)
        for e in evs:
            counts[e.source] = counts.get(e.source, 0) + 1
            if audio and e.audio:
                render_call_audio(e.text or "", out_dir / e.audio, bitrate=bitrate)
                n_audio += 1
    planted = f"{cfg.planted.source}:{cfg.planted.strength:g}" if cfg.planted else "none"
    (out_dir / README).write_text(
        f"{TITLE}\n\n{LABEL}\n\n"
        "Written by `fincon.data.events.generator` (`fincon data sample`) from the project's own templates; "
        "tone follows the bundled real prices using only what was known when each item was published.\n\n"
        f"{TICKERS_LINE}{', '.join(sorted(events))}\n- window: {cfg.start} .. {cfg.end}\n"
        f"- planted look-ahead source: {planted}\n"
        + "".join(f"- {k}: {v} events\n" for k, v in sorted(counts.items()))
        + f"- audio files: {n_audio} (espeak-ng speech, Opus in Ogg)\n",
        encoding="utf-8",
    )
    return {"counts": counts, "audio": n_audio}
