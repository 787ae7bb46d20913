"""Render a call script to small compressed speech (espeak-ng + ffmpeg).

The bundled earnings calls are spoken by espeak-ng and encoded by ffmpeg to
mono 16 kHz Opus in Ogg at a low bitrate, with ffmpeg's bit-exact flags so
the same script gives the same bytes (the Ogg serial number is otherwise
random).
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from fincon.errors import ConfigError, DataError


def require_binary(name: str, debian: str) -> str:
    path = shutil.which(name)
    if not path:
        raise ConfigError(f"`{name}` is not installed: apt-get install {debian} (or run `make install-info-extras`)")
    return path


def render_call_audio(script: str, target: Path, bitrate: str = "12k", voice: str = "en-us", wpm: int = 150) -> Path:
    espeak = require_binary("espeak-ng", "espeak-ng")
    ffmpeg = require_binary("ffmpeg", "ffmpeg")
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        wav = Path(tmp) / "speech.wav"
        tmp_ogg = Path(tmp) / "speech.ogg"
        r = subprocess.run(
            [espeak, "-v", voice, "-s", str(wpm), "-w", str(wav), script], capture_output=True, text=True
        )
        if r.returncode != 0 or not wav.exists():
            raise DataError(f"espeak-ng failed: {r.stderr.strip()[:200]}")
        r = subprocess.run(
            [
                ffmpeg,
                "-nostdin",
                "-loglevel",
                "error",
                "-y",
                "-i",
                str(wav),
                "-ac",
                "1",
                "-ar",
                "16000",
                "-c:a",
                "libopus",
                "-b:a",
                bitrate,
                "-application",
                "voip",
                "-fflags",
                "+bitexact",
                "-flags:a",
                "+bitexact",
                "-map_metadata",
                "-1",
                "-f",
                "ogg",
                str(tmp_ogg),
            ],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0 or not tmp_ogg.is_file() or tmp_ogg.stat().st_size == 0:
            raise DataError(f"ffmpeg failed to encode {target.name}: {r.stderr.strip()[:200] or 'no output'}")
        # renamed into place only when whole: a failed encode leaves no 0-byte call behind
        shutil.move(str(tmp_ogg), str(target))
    return target
