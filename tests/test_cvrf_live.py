"""The verbal CVRF proven with the model (issue 20 item 3): a recorded
training on the planted corpus (news carries the next day's return): rules
episodes, the belief update written by the bundled 1.5B model
(``--cvrf-brain llm``), replayed byte for byte. The update compares the
better and the worse episode with the model, edits the text of at most two
perspectives, and the edited beliefs name the informative source.

Re-record after changing a team, reflection or CVRF prompt:
``.venv/bin/python tests/recordings/record_cvrf.py`` (~5 minutes on 2 cores).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "recordings"
spec = importlib.util.spec_from_file_location("record_cvrf", HERE / "record_cvrf.py")
record = importlib.util.module_from_spec(spec)
spec.loader.exec_module(record)


def test_the_recorded_cvrf_update_replays_and_names_the_informative_source(tmp_path):
    assert record.CACHE.is_file(), "the recording is missing: run tests/recordings/record_cvrf.py"
    events = record.planted_corpus(tmp_path / "planted")
    rep = record.train(events, tmp_path / "train", "replay")
    assert record.fingerprint(rep.out) == json.loads(record.FINGERPRINT.read_text())
    updates = [r["update"] for r in rep.rows[1:]]
    assert all(0 < r["tau"] < 1 for r in rep.rows[1:])  # the episodes differ: something to compare
    upd = next((u for u in updates if u["text_changed"]), updates[-1])
    print(json.dumps(upd, indent=1, default=str))
    assert upd["via"] == "llm" and upd["calls"] >= 1  # the model's update, not the rules fallback
    assert 1 <= len(upd["text_changed"]) <= 2  # at most the perspectives the meta-prompt named
    # exactly whose prompts changed: the edited perspectives' analysts and the manager
    assert upd["prompts_changed"] == [f"{p} analysts" for p in upd["text_changed"] if p != "risk"] + ["manager"]
    edited = " ".join(rep.beliefs.perspectives[p].text for p in upd["text_changed"]).lower()
    assert "news" in edited, edited
    # nothing else was edited: the other perspectives keep their text
    v0 = json.loads((rep.out / "beliefs" / "v0.json").read_text())["perspectives"]
    for p, q in rep.beliefs.perspectives.items():
        if p not in upd["text_changed"]:
            assert q.text == v0[p]["text"]


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
