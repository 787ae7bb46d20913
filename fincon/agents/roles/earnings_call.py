"""Earnings-call analyst: listens to the call through Whisper.

The call's audio goes through the information layer's ``Transcriber``
(openai-whisper, then faster-whisper; transcripts cached on disk by the
SHA-256 of the audio), via ``LexiconSummariser(prefer_audio=True)``: the
analyst reads what Whisper heard, never the script the sample generator
spoke. An event with no audio is read from its text (a corpus that ships
transcripts). ``transcripts="text"`` skips Whisper and reads the event's
text even when audio exists: fast, for tests and smoke runs only (on the
bundled corpus that text is the generator's script).
"""

from __future__ import annotations

from typing import Any

from fincon.agents.roles.base import HERE, EventRole, Profile, make_transcriber
from fincon.memory.working import LexiconSummariser


class EarningsCallAnalyst(EventRole):
    name = "earnings-call"
    sources = ("earnings_call",)
    weight = 0.10
    template = HERE / "earnings_call.txt"
    profile = Profile(
        role="earnings-call analyst of an equity trading team",
        responsibilities="listen to the company's quarterly earnings calls (as transcripts): reported revenue and margin, management's tone and outlook.",
        target="tell the manager whether the latest call sounds bullish, bearish or neutral, citing the calls.",
    )

    def lexicon(self, events, options: dict[str, Any]):
        """The distilled transcript (whole sentences within the call's budget), not the title."""

        if options.get("transcripts", "whisper") == "text":
            return LexiconSummariser(distiller=options.get("distiller"), resolve=events.audio_path)
        return LexiconSummariser(
            distiller=options.get("distiller"),
            transcribe=make_transcriber(options),
            resolve=events.audio_path,
            prefer_audio=True,
        )


ROLE = EarningsCallAnalyst()
