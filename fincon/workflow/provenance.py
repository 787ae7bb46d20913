"""What a run read of its calls besides the corpus's own files, for ``run_manifest.json``: each call's
audio by its contents (a corpus may name audio outside its folder, by an absolute path or through a
linked ``audio/``, which the corpus hash never reads), and the cached Whisper transcript each strategy
read of it (an entry edited in the cache changed a run's numbers under a byte-identical manifest;
found in review)."""

from __future__ import annotations

from typing import Any, Sequence

from fincon.config import RunConfig
from fincon.data.events.model import decision_cutoff
from fincon.data.inputs import open_events, planted_said
from fincon.data.transcription import Transcriber
from fincon.data.transcription.transcriber import sha256_file
from fincon.strategies.registry import base_name, params_model, strategy_names


def whisper_caches(cfg: RunConfig) -> dict[str, Any]:
    """The strategies that read a call through Whisper, each with its transcript cache (None: the default)."""
    out = {}
    for name in [n for n in cfg.strategies if base_name(n) in strategy_names()]:  # a test kit's own: none
        fields = params_model(name).model_fields
        if "transcript_cache" not in fields:
            continue
        params = cfg.params(name) or {}
        if params.get("transcripts", fields["transcripts"].default) == "whisper":
            out[name] = params.get("transcript_cache")
    return out


def planted_line(spec: Any, tickers: Sequence[str]) -> str | None:
    """What a training or an experiment says, once, of a corpus with a planted look-ahead (each of its runs
    says it in its metrics; the command said nothing: found in review)."""
    return planted_said(open_events(str(spec), tuple(tickers)), spec) if spec and spec != "sample" else None


def beliefs_read(summaries: dict[str, dict[str, Any]]) -> dict[str, str]:
    """Each strategy's beliefs as the sha256 of the bytes it parsed, from its summary (its config names a
    path, which two files of one name share; hashed again at the run's end, a file replaced during the
    run named beliefs it never read: found in review)."""
    return {f"{n}.beliefs": sha for n, s in sorted(summaries.items()) if (sha := s.get("team_beliefs_sha256"))}


def calls_read(cfg: RunConfig, inputs: Any, tickers: Sequence[str]) -> dict[str, Any]:
    """``audio_sha256`` (call id -> its audio's sha256) of every call out by the run's last decision, and
    ``transcripts_sha256`` (strategy -> call id -> the sha256 of the cache entry its transcriber reads, or
    None: none cached); {} when the run read no audio."""
    audio: dict[str, str] = {}
    transcripts: dict[str, dict[str, str | None]] = {}
    whisper, cut = whisper_caches(cfg), decision_cutoff(cfg.end)
    for name in [n for n in cfg.strategies if base_name(n) in strategy_names()]:
        spec = (cfg.params(name) or {}).get("events")
        if not isinstance(spec, str) or "transcript_cache" not in params_model(name).model_fields:
            continue
        store = inputs.events(spec, tuple(tickers))
        reader = Transcriber(cache_dir=whisper[name]) if name in whisper else None
        for e in store.all_events():
            path = store.audio_path(e) if e.audio and e.published_at < cut else None
            if path is None or not path.is_file():
                continue
            audio[e.id] = digest = audio.get(e.id) or sha256_file(path)
            if reader is not None:
                entry = reader.cached(digest)
                transcripts.setdefault(name, {})[e.id] = sha256_file(entry) if entry is not None else None
    if not audio:
        return {}
    return {"audio_sha256": dict(sorted(audio.items()))} | (
        {"transcripts_sha256": {n: dict(sorted(t.items())) for n, t in sorted(transcripts.items())}}
        if transcripts
        else {}
    )
