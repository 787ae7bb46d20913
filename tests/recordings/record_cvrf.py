"""Record the verbal CVRF with the bundled model (issue 20 item 3).

    .venv/bin/python tests/recordings/record_cvrf.py      # ~5 minutes on 2 cores

Three training episodes of the rules team (all seven analysts; episodes 2
and 3 explore with noise on the rules weights) on the planted corpus, where
the news carries a real signal about the next day's return, and CVRF's
belief update written by the model (``--cvrf-brain llm``): each episode's
stretches summarised, the better and worse episode compared, the beliefs
text edited. The rules episodes trade, so the episodes differ and there is
something to compare; a first attempt with the 1.5B model as the whole team
(news and data analysts, 15 days) held every day in both episodes (its
analysts read the synthetic news as neutral), so tau was 1 and nothing was
learned. Every model call goes through the normal cache into
cvrf-planted.sqlite (our own synthetic corpus, so it may live in the
repository); tests/test_cvrf_live.py replays it byte for byte and checks
what the edited beliefs say.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = HERE / "cvrf-planted.sqlite"
FINGERPRINT = HERE / "cvrf-planted.json"
#: the training window of tests/test_training.py's rules training on the same corpus
START, END = "2022-01-03", "2022-06-30"
PLANTED_SPAN = ("2022-01-03", "2022-06-30")


def planted_corpus(root: Path) -> Path:
    from fincon.data.events.generator import GeneratorConfig, Planted, generate
    from fincon.data.events.sample_folder import write_corpus

    cfg = GeneratorConfig(
        tickers=["TSLA"], start=PLANTED_SPAN[0], end=PLANTED_SPAN[1], planted=Planted("news", 0.3), audio_dir=None
    )
    write_corpus(generate(cfg), root, cfg, audio=False)
    return root


def config(events: Path, mode: str):
    from fincon.config import load_config

    over = {
        "tickers": ["TSLA"],
        "start": START,
        "end": END,
        "strategies": ["fincon"],
        "benchmark": False,
        "llm.model": "qwen2.5-coder-1.5b",
        "llm.cache": mode,
        "llm.cache_path": str(CACHE),
    }
    team = {"brain": "rules", "embedder": "hashing", "transcripts": "text", "events": str(events)}
    over.update({f"strategy_params.fincon.{k}": v for k, v in team.items()})
    return load_config(None, over)


def fingerprint(out: Path) -> dict[str, str]:
    return {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in ("beliefs.json", "episodes.jsonl")}


def train(events: Path, out: Path, mode: str, progress: bool = False):
    from fincon.workflow.training import TrainOptions, train as run

    return run(config(events, mode), out, TrainOptions(episodes=3, cvrf_brain="llm"), progress=progress)


def main() -> int:
    CACHE.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        events = planted_corpus(Path(tmp) / "planted")
        rep = train(events, Path(tmp) / "train", "read-write", progress=True)
        import sqlite3

        conn = sqlite3.connect(CACHE)
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute("VACUUM")
        conn.close()
        FINGERPRINT.write_text(json.dumps(fingerprint(rep.out), indent=2, sort_keys=True) + "\n")
        update = rep.rows[-1].get("update", {})
        print(json.dumps({"update": update, "beliefs": rep.beliefs.perspectives}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
