"""Whisper transcription of earnings calls (openai-whisper, then faster-whisper)."""

from fincon.data.transcription.transcriber import BACKENDS, EMBEDDED, Transcriber, Transcript, word_error_rate

__all__ = ["BACKENDS", "EMBEDDED", "Transcriber", "Transcript", "word_error_rate"]
