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
    check_audio_complete(path)


def check_audio_complete(path: Path) -> None:
    """Refuse an audio file whose container says it was cut short.

    A truncated Ogg (a download or copy that stopped) decodes without error
    to its first minutes, so its transcript would be a fragment with exit
    status 0. The container knows better: every Ogg page declares its length
    and the last one carries the end-of-stream flag; a WAV header declares
    its data size. Other formats are not checked here."""
    with open(path, "rb") as fh:
        head = fh.read(12)
        if head[:4] == b"OggS":
            _check_ogg(path, fh)
        elif head[:4] == b"RIFF" and head[8:12] == b"WAVE":
            declared = int.from_bytes(head[4:8], "little") + 8
            size = path.stat().st_size
            if declared != 0xFFFFFFFF + 8 and size < declared:  # 0xFFFFFFFF: a streamed WAV of unknown size
                raise DataError(
                    f"audio file {path} is truncated ({size} of the {declared} bytes its WAV header "
                    "declares); copy or render it again"
                )


def _check_ogg(path: Path, fh) -> None:
    size = path.stat().st_size
    pos, last_flags, pages = 0, 0, 0
    while pos < size:
        fh.seek(pos)
        header = fh.read(27)
        if len(header) < 27 or header[:4] != b"OggS":
            raise DataError(
                f"audio file {path} is damaged or truncated (no Ogg page at byte {pos} of {size}); "
                "copy or render it again"
            )
        table = fh.read(header[26])
        if len(table) < header[26]:
            break
        end = pos + 27 + header[26] + sum(table)
        if end > size:
            raise DataError(
                f"audio file {path} is truncated (its last Ogg page needs {end} bytes, the file has "
                f"{size}); copy or render it again"
            )
        last_flags, pages, pos = header[5], pages + 1, end
    if pos != size or not last_flags & 0x04:
        raise DataError(
            f"audio file {path} is truncated (its Ogg stream ends after {pages} pages without the "
            "end-of-stream page); copy or render it again"
        )
