"""A forward journal keeps what its decisions read besides bars and items: a call's audio and the
Whisper transcript the team read of it (frozen with the session's inputs), and the learned beliefs
the team starts from (sealed in the plan at init). Found in review: the replay read all three where
the plan named them, so a transcript edited in the cache or a beliefs file rewritten after init was
read by verify without a word, and a copy of the journal could not replay elsewhere."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
import yaml

from fincon.agents.beliefs import Beliefs, TrainingWindow
from fincon.agents.roles import ANALYSTS
from fincon.cli.main import main

SAMPLE = Path(__file__).resolve().parents[1] / "fincon" / "data" / "sample" / "events"
DEMO = Path(__file__).resolve().parents[1] / "fincon" / "data" / "demo"


@pytest.mark.slow  # the rules team over one session, Whisper's transcripts read from the demo's cache
def test_a_journal_replays_its_own_audio_transcripts_and_beliefs(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINCON_LEDGER", str(tmp_path / "trials.sqlite"))
    (tmp_path / "ev" / "audio").mkdir(parents=True)
    shutil.copyfile(SAMPLE / "TSLA.jsonl.gz", tmp_path / "ev" / "TSLA.jsonl.gz")
    for f in SAMPLE.glob("audio/TSLA-*"):
        shutil.copyfile(f, tmp_path / "ev" / "audio" / f.name)
    shutil.copytree(DEMO / "transcripts", tmp_path / "cache" / "transcripts")
    learned = Beliefs.initial({**{n: r.weight for n, r in ANALYSTS.items()}, "news": 1.5})
    beliefs = learned.model_copy(update={"window": TrainingWindow(start="2022-06-01", end="2022-09-30")}).dump()
    (tmp_path / "b.json").write_text(beliefs)
    team = ["--ticker", "TSLA", "--strategy", "fincon", "--brain", "rules", "--param", "fincon.embedder=hashing",
            "--param", f"fincon.events={tmp_path / 'ev'}", "--param", f"fincon.transcript_cache={tmp_path / 'cache'}",
            "--param", f"fincon.beliefs={tmp_path / 'b.json'}"]  # fmt: skip
    assert main(["forward", "init", "fw", *team, "--simulate-from", "2022-10-05"]) == 0
    assert yaml.safe_load(Path("fw/plan.yaml").read_text())["beliefs"] == {"fincon": beliefs}
    assert main(["forward", "step", "fw", "--until", "2022-10-05", "--no-progress"]) == 0

    # the three calls out before the first session: their audio and the team's transcripts frozen,
    # each item naming its copy (the author's path would not replay elsewhere)
    frozen = tmp_path / "fw" / "inputs" / "2022-10-05"
    items = [json.loads(x) for x in gzip.decompress((frozen / "events" / "TSLA.jsonl.gz").read_bytes()).splitlines()]
    audio = sorted(i["audio"] for i in items if i["audio"])
    assert len(audio) == 3 and all((frozen / "events" / a).is_file() for a in audio)
    kept = sorted(f.name.split("-")[0] for f in (frozen / "transcripts" / "fincon").glob("*.json"))
    assert kept == sorted(Path(a).stem for a in audio)
    replay = yaml.safe_load((tmp_path / "fw" / "replay" / "config.yaml").read_text())["strategy_params"]["fincon"]
    assert replay["transcript_cache"] == str(tmp_path / "fw" / ".replay-inputs" / "transcripts" / "fincon")
    assert Path(replay["beliefs"]).read_text() == beliefs

    # what the plan named, gone or rewritten after the step: the journal replays from what it kept
    shutil.copytree("fw", "copy")
    shutil.rmtree(tmp_path / "ev" / "audio")
    (tmp_path / "b.json").write_text("not beliefs")
    for f in (tmp_path / "cache" / "transcripts").glob("*.json"):
        f.write_text(json.dumps({**json.loads(f.read_text()), "text": "collapse, losses, decline. " * 40}))
    capsys.readouterr()
    assert main(["forward", "verify", "fw"]) == 0
    assert "1 decision replayed from the frozen inputs" in capsys.readouterr().out

    # a kept transcript edited: the session's frozen inputs no longer match their hash
    edited = next((tmp_path / "copy" / "inputs" / "2022-10-05" / "transcripts" / "fincon").glob("*.json"))
    edited.write_text(edited.read_text().replace("the ", "a ", 1))
    assert main(["forward", "verify", "copy"]) == 1
    assert "its frozen inputs inputs/2022-10-05 were changed or swapped" in capsys.readouterr().err


def test_a_plan_whose_beliefs_are_not_text_is_one_line(tmp_path, capsys):
    from fincon.errors import ConfigError
    from fincon.workflow.forward_plan import Plan

    assert main(["forward", "init", str(tmp_path / "fw"), "--ticker", "TSLA", "--strategy", "buy-and-hold",
                 "--simulate-from", "2022-10-05", "--ledger", "off"]) == 0  # fmt: skip
    plan = tmp_path / "fw" / "plan.yaml"
    plan.write_text(plan.read_text() + "beliefs:\n  fincon: [1, 2]\n")
    with pytest.raises(ConfigError, match="not a plan fincon wrote .*edited after init"):
        Plan.load(tmp_path / "fw")


def test_a_plan_sealed_with_directions_markowitz_never_read_still_loads(tmp_path):
    """Found in review of the day's diff: markowitz's directions beside its long-only form are refused now
    (they were dropped without a word), and a journal sealed before with them could no longer be stepped,
    verified or scored. Never read then, they are left out of the plan as it is read: it replays as it traded."""
    import yaml

    from fincon.workflow.forward_plan import Plan

    assert main(["forward", "init", str(tmp_path / "fw"), "--tickers", "MSFT,AAPL", "--strategy", "markowitz",
                 "--simulate-from", "2022-10-05", "--ledger", "off"]) == 0  # fmt: skip
    plan = tmp_path / "fw" / "plan.yaml"
    tree = yaml.safe_load(plan.read_text())
    sealed = tree["config"].setdefault("strategy_params", {}).setdefault("markowitz", {})
    sealed["directions"] = {"MSFT": "sell", "AAPL": "buy"}  # as a journal sealed them before
    plan.write_text(yaml.safe_dump(tree, sort_keys=True))
    params = Plan.load(tmp_path / "fw").config.params("markowitz")
    assert params.get("directions", "auto") == "auto" and params.get("form", "long_only") == "long_only"
