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
    j.append({"kind": "register", "plan": {"strategies": ["buy-and-hold"], "tickers": ["TSLA"]}})
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
    for s in ("2022-10-05", "2022-10-06"):
        j.append({"kind": "session", "session": s, "inputs": {"path": "inputs/2022-10-05", "sha256": tree_hash(inputs)},
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
        ("edit", "entry 1 (seq 1, session 2022-10-05): its contents do not match its hash"),
        ("remove", "entry 1 (seq 2, session 2022-10-06): it does not follow the entry before it"),
        ("reorder", "entry 1 (seq 2, session 2022-10-06): it does not follow the entry before it"),
        ("resign", "entry 2 (seq 2, session 2022-10-06): it does not follow the entry before it"),
        ("inputs", "entry 1 (seq 1, session 2022-10-05): its frozen inputs inputs/2022-10-05 were changed"),
        ("answer", "entry 1 (seq 1, session 2022-10-05): the answer of call k1 (manager) was changed"),
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
