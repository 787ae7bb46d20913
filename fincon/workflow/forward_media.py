"""What a forward journal's decisions read besides bars and items, kept with the journal: a call's
audio and the Whisper transcript a strategy read of it (frozen with the session's inputs, under
``DIR/inputs/SESSION/``), and the learned beliefs a strategy starts from (sealed in the plan at
``init``, before the first session). Every replay reads them from there. Found in review: the replay
read them where the plan named them, so a transcript edited in the cache was read by ``verify``
without a word, a beliefs file rewritten after ``init`` was traded unsealed, and a copy of the journal
could not replay on another machine (its items named the author's audio paths)."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Sequence

from fincon.agents.beliefs import Beliefs
from fincon.config import RunConfig
from fincon.data.events.model import Event
from fincon.data.transcription import Transcriber
from fincon.data.transcription.transcriber import sha256_file
from fincon.strategies.registry import params_model
from fincon.workflow.journal import ForwardError
from fincon.workflow.provenance import whisper_caches

#: the folders of a session's frozen inputs that hold a call's audio (under ``events/``) and each
#: strategy's transcripts of it
AUDIO, TRANSCRIPTS = "audio", "transcripts"


def sealed_beliefs(cfg: RunConfig) -> dict[str, str]:
    """Each strategy's ``beliefs`` as its text (a `fincon train` folder read as its beliefs.json), checked
    as the strategy reads it: ``init`` seals them in the plan."""
    out = {}
    for name in cfg.strategies:
        given = (cfg.params(name) or {}).get("beliefs")
        if "beliefs" not in params_model(name).model_fields or not given:
            continue
        out[name] = Beliefs.read(given)[1].decode("utf-8")  # checked as the strategy reads it: one line if not
    return out


def freeze_audio(folder: Path, items: Sequence[Event]) -> list[Event]:
    """``items`` with each audio copied into ``folder/audio/`` under its content's hash, the item naming the
    copy (relative: the store reads it against the events' folder)."""
    out = []
    for e in items:
        if not e.audio:
            out.append(e)
            continue
        src = Path(e.audio)  # the store resolved it against its corpus
        if not src.is_file():
            raise ForwardError(f"{e.ticker}: item {e.id} names audio {src}, which is not there; nothing decided")
        name = f"{AUDIO}/{sha256_file(src)}{src.suffix.lower()}"
        if not (folder / name).is_file():
            (folder / AUDIO).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, folder / name)
        out.append(dataclasses.replace(e, audio=name))
    return out


def freeze_transcripts(session: Path, cfg: RunConfig) -> None:
    """The transcript each Whisper strategy reads of every audio frozen in ``session/events/audio/``
    (from its cache, transcribed first where the cache has none), kept in ``session/transcripts/NAME/``."""
    audio = sorted((session / "events" / AUDIO).glob("*")) if (session / "events" / AUDIO).is_dir() else []
    for name, cache in whisper_caches(cfg).items() if audio else ():
        transcriber = Transcriber(cache_dir=cache)
        for f in audio:
            entry = transcriber.cache_file(f)
            (session / TRANSCRIPTS / name).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(entry, session / TRANSCRIPTS / name / entry.name)


def join(sessions: Sequence[Path], joined: Path, cfg: RunConfig, beliefs: dict[str, str]) -> RunConfig:
    """The frozen audio, transcripts and the plan's beliefs of ``sessions`` gathered under ``joined`` (a
    replay's inputs), and ``cfg`` reading them there alone."""
    for s in sessions:
        for f in sorted((s / "events" / AUDIO).glob("*")) if (s / "events" / AUDIO).is_dir() else ():
            (joined / "events" / AUDIO).mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, joined / "events" / AUDIO / f.name)
        for f in sorted((s / TRANSCRIPTS).glob("*/*.json")) if (s / TRANSCRIPTS).is_dir() else ():
            (joined / TRANSCRIPTS / f.parent.name / "transcripts").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, joined / TRANSCRIPTS / f.parent.name / "transcripts" / f.name)
    # a journal frozen before its audio was kept reads the caches it named; one that keeps it, its own
    # transcripts alone (a miss is transcribed into the replay's folder, never the user's cache)
    for name in whisper_caches(cfg) if (joined / "events" / AUDIO).is_dir() else ():
        cfg = cfg.with_params(name, {**cfg.params(name), "transcript_cache": str(joined / TRANSCRIPTS / name)})
    for name, text in beliefs.items():
        (joined / "beliefs").mkdir(exist_ok=True)
        (joined / "beliefs" / f"{name}.json").write_text(text, encoding="utf-8")
        cfg = cfg.with_params(name, {**cfg.params(name), "beliefs": str(joined / "beliefs" / f"{name}.json")})
    return cfg
