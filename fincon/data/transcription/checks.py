"""Cheap checks of an audio path before a decoder sees it, so the user gets
one line instead of ffmpeg's banner or a "does not exist" for a folder."""

from __future__ import annotations

from pathlib import Path

from fincon.errors import DataError


def check_audio_file(path: Path) -> None:
    if path.is_dir():
        raise DataError(f"{path} is a directory; pass one audio file (e.g. {path}/CALL.ogg)")
    if not path.exists():
        raise DataError(f"audio file {path} does not exist")
    if not path.is_file():
        raise DataError(f"{path} is not a regular file; pass an audio file")
    if path.stat().st_size == 0:
        raise DataError(f"audio file {path} is empty (0 bytes)")
