"""The forward journal's hash chain (issue 44 item 4): each kind of tampering
a referee worries about breaks verification at the first entry it touches."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import pytest

from fincon.workflow.journal import CALLS, Journal, entry_hash, tree_hash, verify_chain


def _journal(tmp_path):
    j = Journal(tmp_path)
    j.append({"kind": "register", "simulated": True, "plan": {"strategies": ["buy-and-hold"], "tickers": ["TSLA"]}})
    inputs = tmp_path / "inputs" / "2022-10-05"
    inputs.mkdir(parents=True)
    (inputs / "TSLA.csv").write_text("Date,Close\n2022-10-04,249.4\n2022-10-05,240.8\n")
    db = sqlite3.connect(tmp_path / CALLS)
    db.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, messages TEXT, answer TEXT)")
    db.execute('INSERT INTO calls VALUES (\'k1\', \'[{"role": "user"}]\', \'{"action": "buy"}\')')
    db.commit()
    db.close()
    call = {"key": "k1", "agent": "manager", "prompt_sha256": hashlib.sha256(b'[{"role": "user"}]').hexdigest(),
            "answer_sha256": hashlib.sha256(b'{"action": "buy"}').hexdigest()}  # fmt: skip
    for s, trades in (("2022-10-05", "2022-10-06"), ("2022-10-06", "2022-10-07")):
        j.append({"kind": "session", "strategy": "buy-and-hold", "decided": s, "trades": trades, "simulated": True,
                  "inputs": {"path": "inputs/2022-10-05", "sha256": tree_hash(inputs)},
                  "calls": [call], "decision": {"TSLA": 1.0}})  # fmt: skip
    return j


def _problems(j):
    return list(verify_chain(j.entries(), j.root))


def test_a_sealed_chain_verifies_and_each_line_hashes_itself(tmp_path):
    j = _journal(tmp_path)
    es = j.entries()
    assert _problems(j) == [] and [e["seq"] for e in es] == [0, 1, 2]
    assert es[1]["prev_hash"] == es[0]["hash"] and all(e["hash"] == entry_hash(e) for e in es)


@pytest.mark.parametrize(
    "tamper, why",
    [
        ("edit", "entry 1 (seq 1, session buy-and-hold 2022-10-05): its contents do not match its hash"),
        ("remove", "entry 1 (seq 2, session buy-and-hold 2022-10-06): it does not follow the entry before it"),
        ("reorder", "entry 1 (seq 2, session buy-and-hold 2022-10-06): it does not follow the entry before it"),
        ("resign", "entry 2 (seq 2, session buy-and-hold 2022-10-06): it does not follow the entry before it"),
        (
            "inputs",
            "entry 1 (seq 1, session buy-and-hold 2022-10-05): its frozen inputs inputs/2022-10-05 were changed",
        ),
        ("answer", "entry 1 (seq 1, session buy-and-hold 2022-10-05): the answer of call k1 (manager) was changed"),
    ],
)
def test_each_kind_of_tampering_is_named_at_its_first_entry(tmp_path, tamper, why):
    j = _journal(tmp_path)
    lines = j.path.read_text().splitlines()
    if tamper == "edit":  # a decision changed by hand
        lines[1] = lines[1].replace('"TSLA":1.0', '"TSLA":-1.0')
    elif tamper == "remove":
        del lines[1]
    elif tamper == "reorder":
        lines[1], lines[2] = lines[2], lines[1]
    elif tamper == "resign":  # an entry edited and its own hash recomputed: the next one no longer follows it
        e = json.loads(lines[1])
        e["decision"] = {"TSLA": -1.0}
        e["hash"] = entry_hash(e)
        lines[1] = json.dumps(e, sort_keys=True, separators=(",", ":"))
    elif tamper == "inputs":
        (tmp_path / "inputs" / "2022-10-05" / "TSLA.csv").write_text("Date,Close\n2022-10-05,300.0\n")
    elif tamper == "answer":
        db = sqlite3.connect(tmp_path / CALLS)
        db.execute('UPDATE calls SET answer = \'{"action": "sell"}\'')
        db.commit()
        db.close()
    j.path.write_text("\n".join(lines) + "\n")
    problems = _problems(j)
    assert problems and problems[0].startswith(why), problems


def test_a_line_a_stop_cut_short_was_never_sealed_and_is_written_over(tmp_path):
    """Issue 44 item 7: SIGTERM mid-write leaves a torn last line; it is no entry, and the next seal
    replaces it (the chain still verifies)."""
    j = _journal(tmp_path)
    whole = j.path.read_text()
    j.path.write_text(whole + '{"kind": "session", "decided": "2022-10-0')
    assert len(j.entries()) == 3 and _problems(j) == []
    j.append_all([{"kind": "missed", "session": "2022-10-07"}, {"kind": "missed", "session": "2022-10-10"}])
    es = j.entries()
    assert [e["seq"] for e in es] == [0, 1, 2, 3, 4] and _problems(j) == []
    assert j.path.read_text().startswith(whole) and j.path.read_text().endswith("}\n")


def test_a_journal_holding_bytes_that_are_not_utf8_does_not_verify_in_one_line(tmp_path):
    """Found in review: a journal with a Latin-1 byte in an entry was a UnicodeDecodeError traceback in
    `forward status` and `forward verify`."""
    from fincon.workflow.journal import JournalError

    j = _journal(tmp_path)
    lines = j.path.read_bytes().split(b"\n")
    lines[1] = lines[1].replace(b'"TSLA"', b'"TSL\xc4"')
    j.path.write_bytes(b"\n".join(lines))
    with pytest.raises(JournalError) as info:
        j.entries()
    assert str(info.value) == (
        f"{j.path}: line 2 is not the UTF-8 text fincon wrote (edited or damaged?); the journal does not verify"
    )
    assert info.value.exit_code == 1


def test_a_whole_last_entry_without_its_newline_is_kept_and_not_written_over(tmp_path):
    """Found in review: a copy that dropped the final newline lost the last sealed entry without a word
    (verify read 12 of 13), and the next step wrote over it, so the git anchor then read the history as
    rewritten. A last line whose hash holds is an entry; its newline is put back before the next one."""
    j = _journal(tmp_path)
    whole = j.path.read_text()
    j.path.write_text(whole[:-1])
    assert len(j.entries()) == 3 and _problems(j) == []
    j.append({"kind": "missed", "session": "2022-10-07"})
    assert [e["seq"] for e in j.entries()] == [0, 1, 2, 3] and _problems(j) == []
    assert j.path.read_text().startswith(whole)


def test_a_stop_after_the_whole_write_keeps_the_entry_a_reader_may_have_seen(tmp_path, monkeypatch):
    """CI failed once on the SIGTERM step test: it saw a third session's whole line in the journal, sent
    SIGTERM, and the journal then held two. The stop arrived while the write was synced, and the cleanup
    meant for a write cut short truncated a line already whole on disk: a sealed entry that a reader
    (`forward status`, a copy, a cron mail) had seen went away. A stop after the whole line is written keeps
    it, synced; a failed write (a full disk) still keeps nothing."""
    from fincon.workflow import journal as journal_mod

    j = _journal(tmp_path)
    before = j.path.read_text()
    real_fsync = journal_mod.os.fsync
    calls = []

    def stopped_fsync(fd):
        calls.append(fd)
        if len(calls) == 1:
            raise KeyboardInterrupt  # the stop, raised by the handler between the write and its sync
        real_fsync(fd)

    monkeypatch.setattr(journal_mod.os, "fsync", stopped_fsync)
    with pytest.raises(KeyboardInterrupt):
        j.append({"kind": "missed", "session": "2022-10-07"})
    assert len(calls) == 2  # synced after all
    es = j.entries()
    assert len(es) == 4 and es[-1]["session"] == "2022-10-07" and _problems(j) == []
    assert j.path.read_text().startswith(before)

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(journal_mod.os, "fsync", full_disk)
    with pytest.raises(OSError):
        j.append({"kind": "missed", "session": "2022-10-10"})
    assert len(j.entries()) == 4 and _problems(j) == []


@pytest.mark.parametrize("damage", ["garbage", "no table", "inputs unhashed", "bad decided"])
def test_a_damaged_cache_or_a_resigned_malformed_entry_is_one_line_naming_the_entry(tmp_path, damage):
    """Found in review: a calls.sqlite that was no database, or had lost its table, and entries re-signed
    with inputs without their hash, or a date that is none, were tracebacks in verify and step."""
    j = _journal(tmp_path)
    if damage == "garbage":
        (tmp_path / CALLS).write_bytes(b"not a database" * 100)
    elif damage == "no table":
        db = sqlite3.connect(tmp_path / CALLS)
        db.execute("DROP TABLE calls")
        db.commit()
        db.close()
    else:
        lines = j.path.read_text().splitlines()
        e = json.loads(lines[1])
        if damage == "inputs unhashed":
            e["inputs"] = {"path": "inputs/2022-10-05"}
        else:
            e["decided"] = "nope"
        e["hash"] = entry_hash(e)
        lines[1] = json.dumps(e, sort_keys=True, separators=(",", ":"))
        j.path.write_text("\n".join(lines) + "\n")
    problems = _problems(j)
    assert problems and problems[0].startswith("entry 1 (seq 1, session buy-and-hold"), problems


def test_a_plan_edited_out_of_shape_is_one_line(tmp_path):
    """Found in review: a plan.yaml without its first session, or with a date that is none, was a traceback."""
    from fincon.errors import ConfigError
    from fincon.workflow.forward_plan import Plan

    for text in ("config: {}\nsimulated: true\n", "config: {}\nfirst: someday\nsimulated: true\n", "- a list\n"):
        (tmp_path / "plan.yaml").write_text(text)
        with pytest.raises(ConfigError, match="not a plan fincon wrote"):
            Plan.load(tmp_path)
    # not YAML at all: said so, not "no forward journal here; start one with init" (init refuses the folder)
    (tmp_path / "plan.yaml").write_text("config: [unclosed\n")
    with pytest.raises(ConfigError, match="plan.yaml: not YAML fincon wrote"):
        Plan.load(tmp_path)
