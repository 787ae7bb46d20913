"""A forward journal names the code that decided each session (fincon.workflow.forward_code): a step
run on other fincon code than the journal registered (an upgrade, an edit) once sealed its sessions
under the register's code, and verify on that other code passed without a word."""

from __future__ import annotations

import json

import pytest

from fincon.cli.main import main
from fincon.engine import artifacts
from fincon.workflow import forward_code

SMA = ["--param", "sma-cross.fast=2", "--param", "sma-cross.slow=4"]


def _entries(root) -> list[dict]:
    return [json.loads(line) for line in (root / "journal.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_sessions_decided_by_other_code_than_registered_are_named_by_step_verify_and_score(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    assert main(["forward", "init", "fw", "--ticker", "TSLA", "--strategy", "sma-cross,buy-and-hold",
                 "--simulate-from", "2022-10-05", "--ledger", "off", *SMA]) == 0  # fmt: skip
    assert main(["forward", "step", "fw", "--until", "2022-10-07", "--no-progress"]) == 0
    registered = _entries(tmp_path / "fw")[0]["code"]
    assert "other fincon code" not in capsys.readouterr().err  # the registered code: nothing to say
    # each session entry names the code that decided it: the registered one so far
    assert {json.dumps(e["code"]) for e in _entries(tmp_path / "fw")[1:]} == {json.dumps(registered)}
    assert main(["forward", "verify", "fw"]) == 0
    assert "fincon code" not in capsys.readouterr().out

    # an upgrade between steps: the past decisions come out again, so the step goes on, and says so
    monkeypatch.setattr(artifacts, "code_sha256", lambda: "b" * 64)
    assert main(["forward", "step", "fw", "--until", "2022-10-11", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert (
        "fincon: warning: fw: this step runs other fincon code (sha256 bbbbbbbbbbbb" in err
        and f"than the journal registered (sha256 {registered['sha256'][:12]}" in err
    )
    later = [e for e in _entries(tmp_path / "fw") if e.get("kind") == "session" and e["decided"] > "2022-10-07"]
    assert len(later) == 4 and {e["code"]["sha256"] for e in later} == {"b" * 64}  # 10-10, 10-11 x 2 strategies

    # verify on that code passes (the decisions reproduce) and names the sessions it decided
    assert main(["forward", "verify", "fw"]) == 0
    out = capsys.readouterr().out
    assert "2 sessions (2022-10-10..2022-10-11) decided by other fincon code (sha256 bbbbbbbbbbbb" in out
    assert "that sealed none of it" not in out
    # on code that sealed none of it: said too
    monkeypatch.setattr(artifacts, "code_sha256", lambda: "c" * 64)
    assert main(["forward", "verify", "fw"]) == 0
    out = capsys.readouterr().out
    assert "decided by other fincon code" in out
    assert "replayed by fincon code (sha256 cccccccccccc" in out and "that sealed none of it: the decisions" in out
    # the score flags a record of two codes
    assert main(["forward", "score", "fw"]) == 0
    out = capsys.readouterr().out
    flag = next(line for line in out.splitlines() if "decided by other fincon code" in line)
    assert flag.startswith("FLAG: 2 sessions (2022-10-10..2022-10-11)")
    assert flag.endswith("not the plan it registered carried out")


def test_a_failed_replay_names_the_code_of_the_entry_it_failed_at():
    session = {"kind": "session", "code": {"sha256": "d" * 64, "git_revision": "e" * 40, "git_dirty": False}}
    said = forward_code.hint(session)
    assert said.startswith("; this entry was sealed by other fincon code (sha256 dddddddddddd, commit eeeeeeeeeeee)")
    assert said.endswith("verify it with the code that sealed it (git checkout eeeeeeeeeeee)")
    assert forward_code.hint({"kind": "session"}) == ""  # an entry from before entries named their code


def test_packages_other_than_the_ones_that_sealed_an_entry_are_named(monkeypatch):
    """The same fincon files over another pandas can compute another decision: the hint names the
    package and both versions, and sends no one to a commit (the files are the same)."""
    now = forward_code.stamp()
    sealed = {**now, "packages": {**now["packages"], "pandas": "1.0.0"}}
    said = forward_code.hint({"kind": "session", "code": sealed})
    assert f"pandas 1.0.0, not {now['packages']['pandas']}" in said and "git checkout" not in said
    assert forward_code.hint({"kind": "session", "code": now}) == ""
    # a step on them warns as on other files
    warned = forward_code.other_than_registered({"code": sealed}, now)
    assert warned is not None and f"pandas {now['packages']['pandas']}, not 1.0.0" in warned
    assert forward_code.other_than_registered({"code": now}, now) is None
    assert {"python", "pandas", "numpy", "backtrader"} <= set(now["packages"])
    # score's flag is the whole phrase, packages and all (it was cut at the "; " between them)
    rec = {"registered": now, "others": [{**sealed, "sessions": ["2022-10-10"]}], "reader": now}
    (flag,) = forward_code.other_sessions(rec)
    assert flag.startswith("1 session (2022-10-10) decided by other fincon code (sha256 ")
    assert f"; pandas 1.0.0, not {now['packages']['pandas']}) than the journal registered" in flag
