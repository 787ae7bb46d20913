"""The time of a live call, split into time queued and time in the model
(issue 18, item 5): ``llm_runtime.csv`` has ``queued_s`` and ``model_s``
beside their sum ``latency_s``. The timings are in the runtime file, not in
``llm_usage.csv``: a replay has no live time, and llm_usage.csv stays
identical between a run and its replay."""

from __future__ import annotations

import csv
import threading
import time

from pydantic import BaseModel

from fincon.llm import LLMClient, UsageLedger, run_concurrently
from fincon.llm.types import Completion

WORK_S = 0.4


class Answer(BaseModel):
    n: int


class OneAtATime:
    """A model that serves one request at a time (as the local backend's
    lock does) and works WORK_S seconds on each."""

    name = "one-at-a-time"
    model_id = "slow-1"
    price_model = "slow-1"

    def __init__(self, report_model_time: bool = True):
        self.lock = threading.Lock()
        self.report = report_model_time

    def complete(self, messages, schema, params):
        with self.lock:
            t0 = time.perf_counter()
            time.sleep(WORK_S)
            model_s = time.perf_counter() - t0
        return Completion('{"n": 1}', prompt_tokens=10, completion_tokens=2, model_s=model_s if self.report else None)

    def close(self):
        pass


def _two_calls_at_once(backend, tmp_path):
    ledger = UsageLedger()
    client = LLMClient(backend, ledger=ledger)
    asks = [
        lambda i=i: client.ask([{"role": "user", "content": f"q{i}"}], Answer, agent="a", day="2024-01-02")
        for i in range(2)
    ]
    run_concurrently(asks, limit=2)
    ledger.write(tmp_path)
    with open(tmp_path / "llm_runtime.csv", newline="") as fh:
        (row,) = list(csv.DictReader(fh))
    return row, ledger.runtime_summary()


def test_a_call_waiting_for_the_model_counts_as_queued(tmp_path):
    row, summary = _two_calls_at_once(OneAtATime(), tmp_path)
    latency, queued, model = float(row["latency_s"]), float(row["queued_s"]), float(row["model_s"])
    assert row["live_calls"] == "2"
    # both calls worked WORK_S in the model; the second waited about WORK_S for the first
    assert 2 * WORK_S <= model < 2 * WORK_S + 0.15
    assert WORK_S - 0.05 <= queued < WORK_S + 0.3
    assert abs(latency - (queued + model)) < 2e-4  # the three columns are rounded to 0.1 ms
    assert summary["llm_model_s"] == round(model, 3) and summary["llm_queued_s"] == round(queued, 3)


def test_a_backend_that_does_not_measure_counts_everything_as_model_time(tmp_path):
    row, _ = _two_calls_at_once(OneAtATime(report_model_time=False), tmp_path)
    assert float(row["queued_s"]) == 0.0
    assert float(row["model_s"]) == float(row["latency_s"]) >= 3 * WORK_S - 0.05  # 0.4 + 0.8 s
