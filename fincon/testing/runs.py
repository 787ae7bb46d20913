"""Command lines of the small runs several test files share, and a reader
of what a run wrote. Shared here so one test file never imports another
(importing a test file collects its tests twice and couples the two)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fincon.config import load_config
from fincon.engine.record import RunRecord

#: ``fincon experiment`` on TSLA, rules brain, two-week train and test windows,
#: 2 repeats x 2 episodes: every ablation and baseline in well under a minute.
SMALL_EXPERIMENT = [
    "experiment",
    "--ticker",
    "TSLA",
    "--brain",
    "rules",
    "--events",
    "sample",
    "--param",
    "fincon.transcripts=text",
    "--train-start",
    "2022-04-18",
    "--train-end",
    "2022-04-29",
    "--test-start",
    "2022-05-02",
    "--test-end",
    "2022-05-13",
    "--repeats",
    "2",
    "--episodes",
    "2",
    "--bootstrap-reps",
    "1000",
    "--no-progress",
]

#: ``SMALL_EXPERIMENT`` with one repeat of two ablations: 5 units (the baselines,
#: 2 trainings, 2 tests), enough to compare executors (local, workers, Ray)
TINY_EXPERIMENT = [
    *SMALL_EXPERIMENT[: SMALL_EXPERIMENT.index("--repeats")],
    "--repeats",
    "1",
    "--episodes",
    "2",
    "--ablations",
    "full,no-cvar",
    "--bootstrap-reps",
    "1000",
    "--no-progress",
]

#: ``fincon backtest`` of the team (rules brain) on TSLA over two weeks that hold
#: a 10-Q and an earnings call (read as text: no Whisper).
SMALL_TEAM_RUN = [
    "backtest",
    "--ticker",
    "TSLA",
    "--strategy",
    "fincon",
    "--brain",
    "rules",
    "--events",
    "sample",
    "--start",
    "2022-10-05",
    "--end",
    "2022-10-20",
    "--param",
    "fincon.transcripts=text",
    "--no-progress",
]


def decisions_of(run: Path) -> list[dict]:
    """The days of a run directory's ``decisions.jsonl``, parsed."""
    return RunRecord(run).decisions


#: the rules team of the training tests: no model, hashing embeddings, call transcripts as text
TRAINING_TEAM = {"brain": "rules", "embedder": "hashing", "transcripts": "text"}
#: the training and test windows of the planted-corpus training tests
TRAIN_WINDOW = ("2022-01-03", "2022-06-30")
TEST_WINDOW = ("2022-07-01", "2022-12-30")


def team_config(start: str, end: str, out_llm: dict | None = None, **team):
    """A run config of the rules team alone on TSLA (``TRAINING_TEAM`` with
    ``team`` over it; ``out_llm`` sets the run's llm block)."""

    over = {"tickers": ["TSLA"], "start": start, "end": end, "strategies": ["fincon"], "benchmark": False}
    for k, v in {**TRAINING_TEAM, **team}.items():
        over[f"strategy_params.fincon.{k}"] = v
    for k, v in (out_llm or {}).items():
        over[f"llm.{k}"] = v
    return load_config(None, over)


def setting(argv: list[str], *pairs: str) -> list[str]:
    """``argv`` with each flag of ``pairs`` (flag, value, flag, value, ...) given that value: its value
    replaced where ``argv`` gives the flag, else the two added (fincon refuses a flag given twice)."""
    out = list(argv)
    for flag, value in zip(pairs[::2], pairs[1::2]):
        if flag in out:
            out[out.index(flag) + 1] = value
        else:
            out += [flag, value]
    return out


def copy_experiment(src: Path, dst: Path) -> Path:
    """A copy of experiment directory ``src`` at ``dst`` as if it had been
    run there: the absolute paths a run writes into its text files (the
    beliefs a test run reads, in config.yaml) name ``dst``."""
    shutil.copytree(src, dst)
    old, new = str(src.absolute()).encode(), str(dst.absolute()).encode()
    for p in dst.rglob("*"):
        if p.is_file() and p.suffix in (".yaml", ".json", ".jsonl", ".csv", ".md"):
            data = p.read_bytes()
            if old in data:
                p.write_bytes(data.replace(old, new))
    return dst


def strict_json(text: str):
    """``text`` read as a strict JSON reader reads it (jq, JavaScript's ``JSON.parse``): ``NaN`` and
    ``Infinity``, which Python writes and reads by default, are refused."""

    def refuse(constant: str):
        raise ValueError(f"{constant} is not JSON (a strict reader refuses it)")

    return json.loads(text, parse_constant=refuse)
