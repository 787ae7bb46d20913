"""The leakage audit's log reader (fincon.agents.replayed_sessions): a run's prompts read together,
session after session. Found in review 2026-12-02: five sessions in a row of masked InvestorBench runs
named firm and window where each prompt alone read inconclusive; the audit counts it now."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from types import SimpleNamespace

import pandas as pd

from fincon.agents.replayed_sessions import fits, read_together
from fincon.llm import leakage_report
from fincon.llm.leakage_inputs import Prompt, RunInfo

X = "the decision day: an item (tone positive)"
Y = "this week: an item (tone negative)"
DAYS = [dt.date(2020, 1, 6) + dt.timedelta(days=i) for i in range(5)]  # Monday to Friday


def _reader(runs: list[str], masked: bool = True):
    """Two firms of five sessions each; A's news analyst has new lines on sessions 1 (X) and 3 (Y), B's
    on 1 (X) and 4 (Y)."""
    news = {(X,): [("A", DAYS[1]), ("B", DAYS[1])], (Y,): [("A", DAYS[3]), ("B", DAYS[4])]}
    closes = {f: pd.Series(1.0, index=pd.DatetimeIndex(DAYS)) for f in ("A", "B")}
    k = SimpleNamespace(events=[SimpleNamespace(ticker=f) for f in closes], closes=closes)
    info = {
        r: RunInfo(
            path=Path(r),
            strategy="fincon",
            tickers=("A",),
            start=DAYS[0],
            end=DAYS[-1],
            masked=masked,
            cache=Path("x"),
            data={},
            events="e",
        )  # fmt: skip
        for r in runs
    }
    return SimpleNamespace(k=k, runs=info, items=lambda run, source: news, prices=lambda run: {})


def _asked(run: str, decided: int = 5, beliefs: str = "") -> list[Prompt]:
    """A's news analyst asked on sessions 1 and 3, the manager on the first ``decided`` sessions (every
    session a run decides; none on a run's last, where nothing is left to trade)."""
    news = [
        Prompt(run, "news/A", str(DAYS[i]), f"k{i}", f"{beliefs}News:\n[E1] {line}\n", ("A",))
        for i, line in ((1, X), (3, Y))
    ]
    return news + [Prompt(run, "manager", str(DAYS[i]), f"m{i}", "Decide.", ("A",)) for i in range(decided)]


def test_stretches_of_sessions_name_a_window_no_session_names_alone():
    """By hand (each firm-session scores a point per observation it fits; not asked fits a session with
    no new line): one session never names A's (session 1's X is B's too, session 3's Y is B's session
    4's, a session not asked fits most); three in a row from session 1 score A 3 where B's best is 2,
    from session 2 A 3 against 2, from session 0 A 3 and B 3 (a tie names nothing); all five, A 5
    against B 4. A second run asking the same (a training's next episode) is read once."""
    got = read_together(_reader(["ep-01", "ep-02"]), _asked("ep-01") + _asked("ep-02"))
    counts = {n: (x["k"], x["n"]) for n, x in got["lengths"].items()}
    assert counts == {"1": (0, 5), "3": (2, 3), "5": (1, 1), "10": (0, 0)}
    assert got["windows"] == {"1": 10, "3": 6, "5": 2, "10": 0}
    assert read_together(_reader(["ep-01"], masked=False), _asked("ep-01")) == {}  # named: no line to print
    line = leakage_report.together(got)
    assert line.endswith("among up to 10 windows: 1 session: 0 of 5, 3 sessions: 2 of 3, 5 sessions: 1 of 1")


def test_only_the_sessions_the_log_shows_decided_are_read_and_the_same_observations_once():
    """Found in review 2026-12-03. The reader took a run's sessions from its window, so every run's last
    session (no call: nothing left to trade) and the sessions after a run stopped were read as sessions of
    analysts "not asked": a masked sample run read 37 of 38 five-session stretches named where its log
    holds 37 of 37. And it keyed a stretch by its prompts' whole text, so a training's next episode,
    sending the same lines under one more line of beliefs, was counted again (52 of 54 for 26 of 27).
    By hand, with the manager deciding sessions 0-3 only: three in a row from session 0 tie (A 3, B 3),
    from session 1 name A (3 against 2); no stretch of five."""
    got = read_together(_reader(["r"]), _asked("r", decided=4))
    assert {n: (x["k"], x["n"]) for n, x in got["lengths"].items()} == {"1": (0, 4), "3": (1, 2), "5": (0, 0),
                                                                        "10": (0, 0)}  # fmt: skip
    episodes = _asked("ep-01") + _asked("ep-02", beliefs="Team beliefs: weight 0.375 (was 0.300)\n")
    got = read_together(_reader(["ep-01", "ep-02"]), episodes)
    assert {n: (x["k"], x["n"]) for n, x in got["lengths"].items()} == {"1": (0, 5), "3": (2, 3), "5": (1, 1),
                                                                        "10": (0, 0)}  # fmt: skip
    assert read_together(_reader(["r"]), _asked("r", decided=0)) == {}  # no session decided: nothing to read


def test_an_observation_fits_the_sessions_whose_new_lines_begin_it():
    """Asked: every firm-session whose new lines are a prefix of the prompt's (older memories may follow
    them); not asked: None, read as every session without a new line."""
    table = {(X,): [("A", DAYS[1])], (X, Y): [("B", DAYS[2])], (Y,): [("B", DAYS[4])]}
    assert fits(table, (X, Y)) == [("A", DAYS[1]), ("B", DAYS[2])]
    assert fits(table, (Y, X)) == [("B", DAYS[4])]
    assert fits(table, ()) == [] and fits(table, None) is None


def test_runs_of_one_name_in_two_folders_are_two_runs(tmp_path):
    """Found in review 2026-12-02: a prompt named its run by the folder's last name, so an experiment's two
    trainings' ``ep-01`` were one run to the audit: the replay read one's settings for both, the linker
    joined their days, and the log reader read one's sessions over the other's. A run is its folder."""
    import json
    import sqlite3

    from fincon.agents.replayed_prompts import Replayed
    from fincon.llm.leakage_inputs import prompts_of

    cache = tmp_path / "calls.sqlite"
    with sqlite3.connect(cache) as conn:
        conn.execute("CREATE TABLE calls (key TEXT, messages TEXT)")
        conn.execute("INSERT INTO calls VALUES ('k1', ?)", (json.dumps([{"role": "user", "content": "News: x"}]),))
    runs = []
    for repeat, memory_k in (("full-r1", 5), ("full-r2", 3)):
        path = tmp_path / repeat / "episodes" / "ep-01"
        path.mkdir(parents=True)
        (path / "llm_calls.csv").write_text("day,agent,key\n2020-01-06,news/A,k1\n")
        runs.append(RunInfo(path=path, strategy="fincon", tickers=("A",), start=DAYS[0], end=DAYS[-1], masked=True,
                            cache=cache, data={}, events="e", params={"memory_k": memory_k}))  # fmt: skip
    prompts = [p for r in runs for p in prompts_of(r)]
    replayed = Replayed(runs, None)  # type: ignore[arg-type]  # its knowledge is read only when a prompt is placed
    assert [replayed.runs[p.run].params["memory_k"] for p in prompts] == [5, 3]
