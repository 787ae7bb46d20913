"""Whisper transcription of the bundled (synthetic, espeak-ng) earnings calls."""

from __future__ import annotations

import os
import shutil
import time

import pytest

from fincon.data.events import sample_store
from fincon.data.transcription import Transcriber, word_error_rate
from fincon.errors import ConfigError, DataError, SourceUnavailable


@pytest.fixture(scope="session")
def call():
    store = sample_store(["MSFT"])
    ev = [e for e in store.all_events() if e.source == "earnings_call"][2]
    return ev, store.audio_path(ev)


@pytest.fixture(scope="session")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("fincon-cache")


def need_ffmpeg():
    """openai-whisper reads files through the ffmpeg binary. Outside CI a
    missing binary skips; in CI (make install-info-extras ran) it must fail."""
    if not shutil.which("ffmpeg"):
        if os.environ.get("CI"):
            pytest.fail("ffmpeg binary missing in CI: make install-info-extras should have installed it")
        pytest.skip("ffmpeg binary missing (make install-info-extras)")


@pytest.fixture(scope="session")
def openai_tr(cache):
    need_ffmpeg()
    return Transcriber(backend="openai-whisper", cache_dir=cache)


@pytest.fixture(scope="session")
def faster_tr(cache):
    return Transcriber(backend="faster-whisper", cache_dir=cache)


@pytest.mark.slow
def test_openai_whisper_on_converted_embedded_model(openai_tr, call):
    ev, path = call
    tr = openai_tr.transcribe(path)
    assert tr.backend == "openai-whisper" and not tr.cached
    wer = word_error_rate(ev.text, tr.text)
    assert wer <= 0.15, (wer, tr.text)
    assert 15 < tr.audio_seconds < 60
    assert (openai_tr.cache_dir / "models").glob("tiny.en-ct2-*.pt")


@pytest.mark.slow
def test_faster_whisper_matches(faster_tr, openai_tr, call):
    ev, path = call
    tr = faster_tr.transcribe(path)
    assert tr.backend == "faster-whisper"
    assert word_error_rate(ev.text, tr.text) <= 0.15
    assert word_error_rate(openai_tr.transcribe(path).text, tr.text) <= 0.05  # same weights, same beam


@pytest.mark.slow
def test_transcripts_are_cached_by_audio_hash(faster_tr, call, tmp_path):
    _, path = call
    first = faster_tr.transcribe(path)
    copy = tmp_path / "renamed.ogg"
    shutil.copy(path, copy)
    t0 = time.perf_counter()
    again = faster_tr.transcribe(copy)
    assert again.cached and again.text == first.text and again.audio_sha256 == first.audio_sha256
    assert time.perf_counter() - t0 < 0.5


def test_named_model_download_fails_fast_offline(cache, monkeypatch, tmp_path):
    need_ffmpeg()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no whisper download cache
    tr = Transcriber(backend="openai-whisper", model="base.en", cache_dir=cache)
    audio = next(p for p in sample_store(["GM"]).root.glob("audio/GM-*.ogg"))
    t0 = time.perf_counter()
    with pytest.raises(SourceUnavailable, match="embedded default"):
        tr.transcribe(audio)
    assert time.perf_counter() - t0 < 10


def test_bad_input(cache, tmp_path):
    with pytest.raises(ConfigError):
        Transcriber(backend="vosk")
    with pytest.raises(DataError, match="does not exist"):
        Transcriber(backend="faster-whisper", cache_dir=cache).transcribe(tmp_path / "missing.ogg")
    junk = tmp_path / "junk.ogg"
    junk.write_bytes(b"not audio at all")
    with pytest.raises(DataError, match="cannot transcribe"):
        Transcriber(backend="faster-whisper", cache_dir=cache).transcribe(junk)


@pytest.mark.slow
def test_auto_falls_back_to_faster_whisper_and_counts_it(call, tmp_path, monkeypatch, caplog):
    import fincon.data.transcription.transcriber as T

    ev, path = call
    real_which = shutil.which
    monkeypatch.setattr(T.shutil, "which", lambda name: None if name == "ffmpeg" else real_which(name))
    tr = Transcriber(backend="auto", cache_dir=tmp_path)
    out = tr.transcribe(path)
    assert out.backend == "faster-whisper" and tr.fallbacks == 1
    assert "falling back to faster-whisper" in caplog.text
    assert word_error_rate(ev.text, out.text) <= 0.15
    with pytest.raises(ConfigError, match="ffmpeg"):
        Transcriber(backend="openai-whisper", cache_dir=tmp_path / "x").transcribe(path)


@pytest.mark.slow
def test_a_model_name_is_checked_against_whispers_own_list_without_importing_it():
    """The names a typo is told of are read from openai-whisper's source
    (importing it loads torch): the same list as ``whisper.available_models()``,
    and torch is still unloaded after a name is refused."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from fincon.data.transcription.transcriber import Transcriber, _whisper_models\n"
        "from fincon.errors import ConfigError\n"
        "try:\n    Transcriber(model='tiny.xx')\nexcept ConfigError as e:\n    print(e)\n"
        "print('torch' in sys.modules, 'whisper' in sys.modules)\n"
        "import whisper\n"
        "print(_whisper_models() == whisper.available_models(), len(_whisper_models()))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0].startswith("unknown Whisper model 'tiny.xx'") and "large-v3" in out[0]
    assert out[1:] == ["False False", "True 14"]


class _Decoder:
    """faster-whisper's side: the words it hears, and the options it was given."""

    def __init__(self, words: list[str], seconds: float):
        self.words, self.seconds, self.options = words, seconds, {}

    def transcribe(self, path, **options):
        import types

        self.options = options
        return iter([types.SimpleNamespace(text=w) for w in self.words]), types.SimpleNamespace(duration=self.seconds)


def test_an_empty_transcript_is_refused_not_cached_and_decoding_is_greedy(call, tmp_path):
    """Found in review: no words from 30 minutes of audio (silence, music, another language) was returned,
    cached for ever and read as a neutral call. And faster-whisper sampled (its default schedule of
    temperatures when a segment fails, unseeded) where openai-whisper decodes greedily."""
    _, path = call
    tr = Transcriber(backend="faster-whisper", cache_dir=tmp_path)
    tr._impl = ("faster-whisper", _Decoder([], 1800.0))
    with pytest.raises(DataError, match=r"0 words from 30.0 minutes of audio .*nothing cached"):
        tr.transcribe(path)
    assert tr._impl[1].options["temperature"] == 0.0
    assert not list((tmp_path / "transcripts").glob("*.json"))
    # a later review: Whisper on 90 s of silence wrote "You You You", which one word a minute let through,
    # cached and read as a call; speech holds 120-160 words a minute, a transcript at least 20
    tr._impl = ("faster-whisper", _Decoder(["You", "You", "You"], 90.0))
    with pytest.raises(DataError, match=r"3 words from 1.5 minutes of audio"):
        tr.transcribe(path)
    said = "Revenue grew in every region and margins widened, the chief financial officer said."
    tr._impl = ("faster-whisper", _Decoder(said.split(), 30.0))
    assert tr.transcribe(path).text == said


def test_a_checkpoint_file_is_cached_by_its_contents(tmp_path):
    """A model given as a file was keyed by its path: another checkpoint at the same path reused the
    first one's transcripts."""
    model = tmp_path / "mine.pt"
    model.write_bytes(b"model A")
    a = Transcriber(backend="openai-whisper", model=str(model), cache_dir=tmp_path)._key("d", "openai-whisper")
    model.write_bytes(b"model B, another checkpoint")
    b = Transcriber(backend="openai-whisper", model=str(model), cache_dir=tmp_path)._key("d", "openai-whisper")
    assert a != b
    embedded = Transcriber(backend="openai-whisper", cache_dir=tmp_path)._key("d", "openai-whisper")
    assert embedded.name == "d-7a1a681a8870.json"  # the recorded transcripts' key, as before


def test_a_file_that_is_no_whisper_checkpoint_is_one_line(tmp_path, call):
    """Found in review: --model pointing at a text file or an empty file was a KeyError / EOFError
    traceback from torch's unpickling."""
    need_ffmpeg()
    _, path = call
    for name, body in (("fake.pt", b"not a model"), ("empty.pt", b"")):
        (tmp_path / name).write_bytes(body)
        with pytest.raises(ConfigError, match=rf"{name}: not a Whisper checkpoint openai-whisper can load"):
            Transcriber(backend="openai-whisper", model=str(tmp_path / name), cache_dir=tmp_path).transcribe(path)


@pytest.mark.slow
def test_a_damaged_conversion_of_the_embedded_model_is_made_again(openai_tr, call, tmp_path, caplog):
    """Found in review: the default model's converted checkpoint cut short in the cache (a stop, a full
    disk) was a PytorchStreamReader traceback on every later call; it is converted again, once, said."""
    openai_tr._backend()  # the session's cache holds the conversion
    (done,) = (openai_tr.cache_dir / "models").glob("tiny.en-ct2-*.pt")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / done.name).write_bytes(done.read_bytes()[:3_000_000])
    tr = Transcriber(backend="openai-whisper", cache_dir=tmp_path)
    assert tr._backend()[0] == "openai-whisper" and "is damaged" in caplog.text
    assert (tmp_path / "models" / done.name).stat().st_size == done.stat().st_size


def test_a_cache_entry_that_is_not_this_audios_transcript_is_not_read(call, tmp_path, caplog):
    """Found in review: the entry of another call copied under this audio's key was read as this call's
    (`fincon transcribe` printed the other audio's hash and text, cached: true), a null text was a
    traceback mid-run and an empty one read as a quiet call. Such an entry is transcribed again, said."""
    import json
    import logging

    from fincon.data.transcription.transcriber import sha256_file

    _, path = call
    said = "Revenue grew in every region and margins widened, the chief financial officer said."
    tr = Transcriber(backend="faster-whisper", cache_dir=tmp_path)
    entry = tr._key(sha256_file(path), "faster-whisper")
    entry.parent.mkdir(parents=True)
    other = {"audio_sha256": "0" * 64, "audio_seconds": 30.0, "backend": "faster-whisper", "cached": False,
             "compute_seconds": 1.0, "model": "tiny.en", "text": "Another call's words entirely."}  # fmt: skip
    silence = {**other, "audio_sha256": sha256_file(path), "audio_seconds": 90.0, "text": "You You You"}
    for bad in (other, {**other, "audio_sha256": sha256_file(path), "text": None}, silence):
        entry.write_text(json.dumps(bad))
        tr._impl = ("faster-whisper", _Decoder(said.split(), 30.0))
        with caplog.at_level(logging.WARNING):
            assert tr.transcribe(path).text == said
        assert "is not this audio's transcript" in caplog.text
        caplog.clear()
    assert tr.transcribe(path).cached  # the entry written again is this audio's: read


def test_a_cache_folder_that_cannot_be_written_stops_before_any_model_is_loaded(call, tmp_path, monkeypatch):
    """Found in review: a read-only cache folder (it exists, so the mkdir passed) failed only after the
    decoding (45 s of a 30 s call), and first sent openai-whisper's conversion into a fallback to
    faster-whisper. A file is written there first: one line, no model loaded."""
    import errno

    import fincon.data.transcription.transcriber as module

    _, path = call
    (tmp_path / "transcripts").mkdir()

    def read_only(*a, **k):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(module.tempfile, "TemporaryFile", read_only)
    tr = Transcriber(backend="auto", cache_dir=tmp_path)
    monkeypatch.setattr(tr, "_backend", lambda: pytest.fail("a model was loaded"))
    with pytest.raises(ConfigError, match="cannot write the transcript cache in .*Read-only file system"):
        tr.transcribe(path)
