"""What a killed step leaves after the journal's last sealed session (review 79, second pass): the inputs it
froze (SIGKILL after the decision was drawn: removed unsealed, the decision was drawn again with no trace),
a torn line (its bytes named a session sealed already, and the failed entry then failed verify for ever),
and the order of a step's checks (the cut ran before them, and a step they refused had rewritten the
journal)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from fincon.cli.main import main

HOLD = ["--ticker", "TSLA", "--strategy", "buy-and-hold", "--no-benchmark", "--simulate-from", "2022-10-05"]
ARENA = ["--ticker", "TSLA", "--strategy", "buy-and-hold,sma-cross", "--param", "sma-cross.fast=2",
         "--param", "sma-cross.slow=4", "--no-benchmark", "--simulate-from", "2022-10-05"]  # fmt: skip


def _entries(root: Path) -> list[dict]:
    return [json.loads(x) for x in (root / "journal.jsonl").read_text().splitlines()]


def _journal(tmp_path, monkeypatch, args, until: str, anchor: bool = False) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FINCON_LEDGER", str(tmp_path / "trials.sqlite"))
    assert main(["forward", "init", "fw", *args, *(["--anchor", "git"] if anchor else [])]) == 0
    assert main(["forward", "step", "fw", "--until", until, "--no-progress"]) == 0
    return tmp_path / "fw"


def _killed_after_freeze(root: Path, day: str) -> str:
    """What a step SIGKILLed once it froze ``day``'s inputs leaves (no handler ran): the folder alone; its hash."""
    import datetime as dt

    from fincon.workflow.forward_plan import Plan, freeze

    return freeze(root, Plan.load(root), dt.date.fromisoformat(day))["sha256"]


@pytest.mark.slow  # an anchored journal of four sessions, stepped twice and verified: ~3 s on 2 cores
def test_a_step_killed_after_its_freeze_is_sealed_failed_by_the_next_step(tmp_path, monkeypatch, capsys):
    """Before: the next step removed the leftover folder unsealed and drew the session again; verify said
    "anchored ... append-only" and no failed attempt."""
    from fincon.workflow.forward_score import verify

    root = _journal(tmp_path, monkeypatch, HOLD, "2022-10-07", anchor=True)
    sha = _killed_after_freeze(root, "2022-10-10")
    capsys.readouterr()
    assert main(["forward", "step", "fw", "--until", "2022-10-10", "--no-progress"]) == 0
    assert capsys.readouterr().err.splitlines()[0] == (
        "fincon: fw: a step was killed after it froze inputs/2022-10-10 (session 2022-10-10), before any seal: "
        "the attempt is sealed failed and its inputs removed"
    )
    entries = _entries(root)
    assert [(e["kind"], e.get("session") or e.get("decided")) for e in entries[-2:]] == [
        ("failed", "2022-10-10"), ("session", "2022-10-10")]  # fmt: skip
    assert entries[-2]["frozen"] == {"path": "inputs/2022-10-10", "sha256": sha}
    assert entries[-2]["reason"].startswith("a step stopped after its inputs were frozen, and no handler ran (SIGKILL")
    checked = verify(root)
    assert (checked["ok"], checked["replayed"], checked["failed"]) == (True, 4, {"2022-10-10": 1})
    assert checked["anchor"]["commits"] == 5 and not checked["anchor"]["late"]


@pytest.mark.slow  # a journal of six sessions, stepped three times: ~3 s on 2 cores
def test_a_torn_line_is_sealed_at_the_session_of_its_leftover_inputs_never_at_one_its_bytes_name(
    tmp_path, monkeypatch, capsys
):
    """Before: the session was read from the torn bytes ("decided":"2022-10-05", decided already), the failed
    entry failed verify ("a failed attempt at the session 2022-10-05, sealed already") and no step went on;
    a line torn before "decided" was sealed at session null though inputs/DAY named it."""
    from fincon.workflow.forward_score import verify

    root = _journal(tmp_path, monkeypatch, HOLD, "2022-10-12")
    with open(root / "journal.jsonl", "ab") as fh:
        fh.write(b'{"book":{},"decided":"2022-10-05"')
    capsys.readouterr()
    assert main(["forward", "step", "fw", "--until", "2022-10-13", "--no-progress"]) == 0
    assert "a torn line of 33 bytes (session unknown) cut back" in capsys.readouterr().err
    entries = _entries(root)
    assert [(e["kind"], e.get("session") or e.get("decided")) for e in entries[-2:]] == [
        ("failed", None), ("session", "2022-10-13")]  # fmt: skip
    assert (root / "journal.torn").read_bytes() == b'{"book":{},"decided":"2022-10-05"\n'
    checked = verify(root)
    assert (checked["ok"], checked["replayed"], checked["failed"]) == (True, 7, {"unknown": 1})
    # torn before "decided", its inputs left: the session is theirs, in the one entry of the cut
    sha = _killed_after_freeze(root, "2022-10-14")
    with open(root / "journal.jsonl", "ab") as fh:
        fh.write(b'{"book":{"cash":1.0},"calls":[')
    assert main(["forward", "step", "fw", "--until", "2022-10-14", "--no-progress"]) == 0
    failed = _entries(root)[-2]
    assert (failed["session"], failed["frozen"], failed["cut"]["bytes"]) == (
        "2022-10-14", {"path": "inputs/2022-10-14", "sha256": sha}, 30)  # fmt: skip
    assert verify(root)["failed"] == {"unknown": 1, "2022-10-14": 1}


@pytest.mark.slow  # an anchored arena of three sessions, stepped and refused three times: ~4 s on 2 cores
def test_a_step_its_checks_refuse_has_cut_nothing(tmp_path, monkeypatch, capsys):
    """Before: the torn tail was cut (journal.torn written, a failed entry sealed) and only then was the step
    refused, saying "nothing was sealed"."""
    root = _journal(tmp_path, monkeypatch, ARENA, "2022-10-07", anchor=True)
    whole = (root / "journal.jsonl").read_bytes()
    shutil.copytree(root, tmp_path / "kept")
    # .git gone, a torn tail: refused by the anchor's check, the journal as it was
    shutil.rmtree(root / ".git")
    (root / "journal.jsonl").write_bytes(whole + b'{"kind":"session"')
    capsys.readouterr()
    assert main(["forward", "step", "fw", "--until", "2022-10-10", "--no-progress"]) == 1
    assert "holds no .git now" in capsys.readouterr().err
    assert (root / "journal.jsonl").read_bytes() == whole + b'{"kind":"session"'
    assert not (root / "journal.torn").exists()
    # a committed last line removed: the session is left sealed for one strategy, and no cut rewrites the anchor
    shutil.rmtree(root)
    shutil.copytree(tmp_path / "kept", root)
    cut = whole[: whole[:-1].rfind(b"\n") + 1]
    (root / "journal.jsonl").write_bytes(cut)
    assert main(["forward", "step", "fw", "--until", "2022-10-10", "--no-progress"]) == 1
    assert "differs from the journal's last commit" in capsys.readouterr().err
    assert (root / "journal.jsonl").read_bytes() == cut and not (root / "journal.torn").exists()
    # a torn tail a commit holds is no write cut short: a cut would rewrite the anchored history
    (root / "journal.jsonl").write_bytes(whole + b'{"kind":"session"')
    git = ["git", "-C", str(root), "-c", "user.name=x", "-c", "user.email=x@y"]
    subprocess.run([*git, "commit", "-qam", "torn"], check=True)
    assert main(["forward", "step", "fw", "--until", "2022-10-10", "--no-progress"]) == 1
    assert "the journal's last commit holds 8 lines, and a torn tail would cut it back to 7" in capsys.readouterr().err
    assert not (root / "journal.torn").exists()


@pytest.mark.slow  # a journal of four sessions, a killed step's folder, a step stopped: ~3 s on 2 cores
def test_a_stop_message_names_only_the_attempt_the_step_itself_made(tmp_path, monkeypatch, capsys):
    """Found reviewing this change: a step that began by sealing an earlier step's attempt (its leftover
    folder), decided that session, and was then stopped before it froze the next one said "its attempt
    at 2022-10-10 is sealed failed", blaming the stop for an attempt it did not make and had decided."""
    from fincon.workflow import forward_plan

    root = _journal(tmp_path, monkeypatch, HOLD, "2022-10-07")
    _killed_after_freeze(root, "2022-10-10")
    freeze, calls = forward_plan.freeze, []

    def stopped_at_the_second(*args, **kwargs):  # Ctrl-C before the next session's inputs are frozen
        calls.append(args[2])
        if len(calls) == 2:
            raise KeyboardInterrupt
        return freeze(*args, **kwargs)

    monkeypatch.setattr(forward_plan, "freeze", stopped_at_the_second)
    capsys.readouterr()
    assert main(["forward", "step", "fw", "--until", "2022-10-12", "--no-progress"]) == 130
    assert [(e["kind"], e.get("session") or e.get("decided")) for e in _entries(root)[-2:]] == [
        ("failed", "2022-10-10"), ("session", "2022-10-10")]  # fmt: skip
    assert capsys.readouterr().err.splitlines()[-1] == (
        "fincon: interrupted; the 1 session this step sealed is kept in fw: step again to go on"
    )


@pytest.mark.slow  # two anchored journals of three sessions, a step and a verify: ~4 s on 2 cores
def test_a_cut_that_keeps_the_entry_count_is_committed_all_the_same(tmp_path, monkeypatch, capsys):
    """A step killed mid-seal, before its commit, left a session sealed for one strategy and a torn line
    after it; the next step cut both back and sealed the cut as one failed entry: as many entries as
    before, and the anchor, which committed only when the count grew, left the journal uncommitted."""
    root = _journal(tmp_path, monkeypatch, ARENA, "2022-10-06", anchor=True)
    shutil.copytree(root, tmp_path / "later")
    monkeypatch.chdir(tmp_path / "later")
    assert main(["forward", "step", ".", "--until", "2022-10-07", "--no-progress"]) == 0
    monkeypatch.chdir(tmp_path)
    lines = (tmp_path / "later" / "journal.jsonl").read_bytes().splitlines(keepends=True)
    shutil.copytree(tmp_path / "later" / "inputs" / "2022-10-07", root / "inputs" / "2022-10-07")
    with open(root / "journal.jsonl", "ab") as fh:  # the kill: one strategy's entry whole, the next torn
        fh.write(lines[-2] + lines[-1][:40])
    before = len(lines) - 1  # whole entries: the torn line is none
    capsys.readouterr()
    assert main(["forward", "step", "fw", "--until", "2022-10-06", "--no-progress"]) == 0
    entries = _entries(root)
    assert len(entries) == before and entries[-1]["kind"] == "failed" and entries[-1]["session"] == "2022-10-07"
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "journal.jsonl"], capture_output=True,
                            text=True, check=True).stdout  # fmt: skip
    assert status == ""  # committed
    assert main(["forward", "verify", "fw"]) == 0
