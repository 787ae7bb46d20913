"""Ways to cheat a forward journal found in review 81, each refused: a registration re-signed to say
simulated over a live plan (every late-seal check switched off), an edited file in a step's saved state
taken up unchecked (a mask.json quoting the firm), and an answer forged in the user's call cache sealed
as the model's."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import yaml
from test_forward import _Always, _replayed, _resign

from fincon.cli.main import main

START = "2022-10-05"


def _entries(root: Path) -> list[dict]:
    return [json.loads(x) for x in (root / "journal.jsonl").read_text().splitlines()]


def test_the_late_seal_check_reads_the_plans_clock_not_an_entrys_own_flag():
    """``must_precede`` switched itself off for any entry that said simulated: it reads the clock given."""
    from fincon.workflow.journal import must_precede

    entry = {"kind": "session", "trades": "2022-10-06", "simulated": True}
    bound = must_precede(entry, False)
    assert bound is not None and bound[0].isoformat() == "2022-10-06"
    assert must_precede({**entry, "simulated": False}, True) is None


@pytest.mark.slow  # a simulated sma-cross journal of 3 sessions, verified four times
def test_a_registration_re_signed_as_simulated_over_a_live_plan_is_refused(tmp_path, monkeypatch, capsys):
    """Review 81 (F1): plan.yaml set live, the registration re-signed with its plan_sha256 and plan, every
    ``simulated`` flag left True: verify replayed 3 decisions sealed years after their open and passed the
    journal as verified and live (score said "(live)"). The registration is held to plan.yaml's clock,
    first session and plan, and the late checks read the plan's clock."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINCON_LEDGER", "off")
    assert main(["forward", "init", "fw", "--ticker", "TSLA", "--strategy", "sma-cross", "--no-benchmark",
                 "--param", "sma-cross.fast=2", "--param", "sma-cross.slow=4", "--simulate-from", START]) == 0  # fmt: skip
    assert main(["forward", "step", "fw", "--until", "2022-10-07", "--no-progress"]) == 0
    root = tmp_path / "fw"
    original = {p: (root / p).read_bytes() for p in ("plan.yaml", "journal.jsonl")}
    plan = root / "plan.yaml"
    plan.write_text(plan.read_text().replace("simulated: true\n", "simulated: false\n"))

    def live_plan(entries):  # the registration's plan hash and plan re-signed; every flag as it was (True)
        entries[0]["plan_sha256"] = hashlib.sha256(plan.read_bytes()).hexdigest()
        entries[0]["plan"] = yaml.safe_load(plan.read_text())
        return entries

    _resign(root, live_plan)
    capsys.readouterr()
    assert main(["forward", "verify", "fw"]) == 1
    assert capsys.readouterr().err.strip() == (
        "fincon: verify: entry 0 (seq 0, register): it says simulated=True, and plan.yaml's clock is "
        "simulated=False: a registration not of its plan"
    )
    before = (root / "journal.jsonl").read_bytes()
    assert main(["forward", "step", "fw", "--no-progress"]) == 1  # no step is taken on it either
    assert "it says simulated=True, and plan.yaml's clock is simulated=False" in capsys.readouterr().err
    assert (root / "journal.jsonl").read_bytes() == before

    def every_flag_live(entries):  # the flags honest: the late checks name the registration sealed late
        return [{**e, "simulated": False} if "simulated" in e else e for e in live_plan(entries)]

    _resign(root, every_flag_live)
    assert main(["forward", "verify", "fw"]) == 1
    assert "a registration sealed after the open of its session settles nothing" in capsys.readouterr().err

    # the registration's sealed plan, re-signed as another (its hash left as plan.yaml's): named too
    for p, data in original.items():
        (root / p).write_bytes(data)
    assert main(["forward", "verify", "fw"]) == 0

    def other_plan(entries):
        entries[0]["plan"]["config"]["strategy_params"]["sma-cross"]["slow"] = 5
        return entries

    _resign(root, other_plan)
    capsys.readouterr()
    assert main(["forward", "verify", "fw"]) == 1
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("entry 0 (seq 0, register): the plan it seals is not plan.yaml (re-signed with another plan)")
    )


def _masked_trader(url: str) -> list[str]:
    return ["--ticker", "TSLA", "--strategy", "llm-trader", "--no-benchmark", "--llm-backend", "openai",
            "--llm-base-url", url, "--llm-model", "stub", "--anonymize", "--llm-cache-path", "calls.sqlite"]  # fmt: skip


@pytest.mark.slow  # the masked single-agent baseline through the OpenAI path against the model double, 3 sessions
def test_a_saved_state_with_an_edited_mask_is_not_taken_up(tmp_path, monkeypatch, caplog):
    """Review 81 (F3): a step hashed only strategy.pkl of the state it takes up; a mask.json edited in it
    (in review the masked team's, every sentence it rewords set to quote "Tesla TSLA" and the price index's
    base to 1.0) was taken up, its prompts sent and sealed, and only verify refused the journal, for ever.
    Every file of the saved state is hashed (but its meta.json): one not the step's is not taken up,
    every session asked again (here the masked single-agent baseline's mask.json)."""
    from fincon.testing.server import DoubleServer

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINCON_LEDGER", "off")
    with DoubleServer(_Always("buy")) as url:
        assert main(["forward", "init", "fw", *_masked_trader(url), "--simulate-from", START]) == 0
        assert main(["forward", "step", "fw", "--until", "2022-10-06", "--no-progress"]) == 0
        saved = tmp_path / "fw" / "state" / "llm-trader" / "resume"
        mask = json.loads((saved / "mask.json").read_text())
        (saved / "mask.json").write_text(json.dumps({**mask, "start_prices": {"TSLA": 1.0}}))
        replayed = _replayed(monkeypatch)
        assert main(["forward", "step", "fw", "--no-progress"]) == 0
        assert replayed == [] and "its saved state in" in caplog.text and "is not the one its step wrote" in caplog.text
        # the state that step saved is its own: taken up by the next
        assert main(["forward", "step", "fw", "--no-progress"]) == 0
        assert replayed == ["2022-10-05", "2022-10-06", "2022-10-07"]
    assert main(["forward", "verify", "fw"]) == 0


def _trader(url: str, cache: Path) -> list[str]:
    return ["--ticker", "TSLA", "--strategy", "llm-trader", "--no-benchmark", "--llm-backend", "openai",
            "--llm-base-url", url, "--llm-model", "stub", "--llm-cache-path", str(cache)]  # fmt: skip


@pytest.mark.slow  # the single-agent baseline through the OpenAI path against the model double, two journals
def test_an_answer_forged_in_the_users_call_cache_is_not_sealed_as_the_models(tmp_path, monkeypatch):
    """Review 81 (F2): the step read the user's call cache for the session it decided, so a row put there
    for the next session's prompt, its keyed answer hash recomputed, was sealed as the registered model's
    answer (verify passed: a forged "buy" where the model said "sell"), with no model even reachable. The
    session being decided asks the model; past sessions answer from the calls the journal sealed."""
    from fincon.llm.cache import answer_hash
    from fincon.testing.server import DoubleServer

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINCON_LEDGER", "off")
    cache = tmp_path / "c.sqlite"
    with DoubleServer(_Always("sell")) as url:
        assert main(["forward", "init", "fw", *_trader(url, cache), "--simulate-from", START]) == 0
        assert main(["forward", "step", "fw", "--until", "2022-10-06", "--no-progress"]) == 0
        shutil.copytree("fw", "honest")  # a copy stepped once more: the model's own answer for the 7th
        assert main(["forward", "step", "honest", "--no-progress"]) == 0
    (call,) = _entries(tmp_path / "honest")[-1]["calls"]
    with sqlite3.connect(cache) as db:  # the author's forgery, in the user's cache the plan names
        (answer,) = db.execute("SELECT answer FROM calls WHERE key = ?", (call["key"],)).fetchone()
        assert hashlib.sha256(answer.encode()).hexdigest() == call["answer_sha256"]
        honest = json.loads(answer)
        assert honest["action"] == "sell"
        forged = json.dumps({**honest, "action": "buy"})
        db.execute("UPDATE calls SET answer = ?, answer_sha256 = ? WHERE key = ?",
                   (forged, answer_hash(call["key"], forged), call["key"]))  # fmt: skip
    # no model reachable: the session cannot be decided (the forged row was sealed, exit 0)
    assert main(["forward", "step", "fw", "--no-progress"]) == 1
    assert _entries(tmp_path / "fw")[-1]["kind"] == "failed"
    with DoubleServer(_Always("sell"), port=int(url.rsplit(":", 1)[1].split("/")[0])):
        assert main(["forward", "step", "fw", "--no-progress"]) == 0
    sealed = _entries(tmp_path / "fw")[-1]
    assert sealed["decided"] == "2022-10-07" and sealed["calls"] == [call]  # the model's answer, not the row
    assert sealed["decision"] == _entries(tmp_path / "honest")[-1]["decision"] and sealed["decision"]["actions"]
    assert main(["forward", "verify", "fw"]) == 0


@pytest.mark.slow  # one session of the replayed 1.5B, re-signed as live, verified
def test_a_live_journal_answered_from_a_recording_does_not_verify(tmp_path, monkeypatch, capsys):
    """A plan that replays a recording (``--llm-cache replay``) reads every answer from a file, whoever
    wrote it: a simulated journal's business (the recorded arenas), never a live one's, whose decisions
    the model it names must make. `init` refuses it live; a live journal written so by hand (its plan,
    registration and flags re-signed as live, every seal before its open) does not verify."""
    from test_forward_books import RECORDED

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINCON_LEDGER", "off")
    shutil.copyfile(RECORDED, tmp_path / "trader.sqlite")
    assert main(["forward", "init", "fw", "--ticker", "TSLA", "--strategy", "llm-trader", "--no-benchmark",
                 "--llm-model", "qwen2.5-coder-1.5b", "--llm-cache", "replay", "--llm-cache-path", "trader.sqlite",
                 "--llm-concurrency", "1", "--simulate-from", START]) == 0  # fmt: skip
    assert main(["forward", "step", "fw", "--no-progress"]) == 0
    root = tmp_path / "fw"
    plan = root / "plan.yaml"
    plan.write_text(plan.read_text().replace("simulated: true\n", "simulated: false\n"))

    def live(entries):
        entries[0] |= {"plan_sha256": hashlib.sha256(plan.read_bytes()).hexdigest(),
                       "plan": yaml.safe_load(plan.read_text()), "sealed_at": "2022-10-04T20:00:00+00:00"}  # fmt: skip
        entries[1]["sealed_at"] = "2022-10-05T21:00:00+00:00"
        return [{**e, "simulated": False} for e in entries]

    _resign(root, live)
    capsys.readouterr()
    assert main(["forward", "verify", "fw"]) == 1
    assert capsys.readouterr().err.strip() == (
        "fincon: verify: plan.yaml: llm-trader: --llm-cache replay answers from a recording, and a live journal "
        "asks its model each session; keep --llm-cache read-write (the default)"
    )


@pytest.mark.slow  # the single-agent baseline through the OpenAI path against the model double, 2 sessions
def test_a_single_agent_baseline_with_its_own_call_cache_steps_and_seals(tmp_path, monkeypatch):
    """Diff review 81: llm-trader's own settings are its parameters (not an ``llm`` section), so its own
    cache_path was never seen: the step asked the model into it and found no call to seal (exit 1, the
    arena recorder's first step). Its calls are asked into the step's cache, sealed, and then written to
    its own cache; the next step answers the past from the sealed calls (one call a session)."""
    from fincon.testing.server import DoubleServer

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINCON_LEDGER", "off")
    own = tmp_path / "own.sqlite"
    server = DoubleServer(_Always("buy"))
    with server as url:
        flags = ["--ticker", "TSLA", "--strategy", "llm-trader", "--no-benchmark", "--llm-backend", "openai",
                 "--llm-base-url", url, "--llm-model", "stub", "--param", f"llm-trader.cache_path={own}"]  # fmt: skip
        assert main(["forward", "init", "fw", *flags, "--simulate-from", START]) == 0
        assert main(["forward", "step", "fw", "--until", "2022-10-06", "--no-progress"]) == 0
    assert server.calls == 2  # the second session's step answered the first from its sealed call
    sealed = [e for e in _entries(tmp_path / "fw") if e.get("kind") == "session"]
    assert [e["decided"] for e in sealed] == ["2022-10-05", "2022-10-06"] and all(len(e["calls"]) == 1 for e in sealed)
    with sqlite3.connect(own) as db:
        kept = {k for (k,) in db.execute("SELECT key FROM calls")}
    assert kept == {e["calls"][0]["key"] for e in sealed}
    assert main(["forward", "verify", "fw"]) == 0
