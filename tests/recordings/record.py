"""Re-record the Whisper transcripts in transcripts/ (see README.md here).

    .venv/bin/python tests/recordings/record.py      # ~2 minutes on 2 cores

Transcribes, with the team's default transcriber, every bundled earnings
call of CALLS that tests replay instead of hearing live, into
transcripts/ (the transcript cache layout: keyed by audio hash and
transcriber options). Earlier recordings are replaced.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
TRANSCRIPTS = HERE / "transcripts"
#: (ticker, calls published up to this date): the calls the team hears in
#: tests/test_explain.py (TSLA, MSFT to 2022-11-04) and tests/test_team_live.py (TSLA)
CALLS = (("TSLA", "2022-11-04"), ("MSFT", "2022-11-04"))


def calls():
    """(event id, audio path) of every call to record."""
    import pandas as pd

    from fincon.data.events import sample_store

    out = []
    for ticker, until in CALLS:
        store = sample_store([ticker])
        for ev in store.all_events():
            if (
                ev.source == "earnings_call"
                and ev.audio
                and ev.published_at <= pd.Timestamp(until, tz="America/New_York")
            ):
                out.append((ev.id, store.audio_path(ev)))
    return out


def main() -> None:
    from fincon.data.transcription import Transcriber

    with tempfile.TemporaryDirectory() as tmp:
        tr = Transcriber(cache_dir=tmp)  # the team's default: backend auto, the embedded model
        for ev_id, path in calls():
            t = tr.transcribe(path)
            print(f"{ev_id}: {t.backend}, {t.audio_seconds:.0f} s of audio in {t.compute_seconds:.1f} s", flush=True)
        shutil.rmtree(TRANSCRIPTS, ignore_errors=True)
        shutil.copytree(Path(tmp) / "transcripts", TRANSCRIPTS)
    print(f"{len(list(TRANSCRIPTS.glob('*.json')))} transcripts in {TRANSCRIPTS}")


if __name__ == "__main__":
    sys.exit(main())
