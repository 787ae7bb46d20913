"""The calibration of the analysts' calls scores each run's last decision too (fincon.report.calibration,
fincon.report.evidence.Evidence.closes_after): against the close of the session after it that the run's own
files hold, and says so where they hold none."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from fincon.cli.main import main
from fincon.report.calibration import calibration
from fincon.report.card import calibration_point, run_card
from fincon.report.evidence import Evidence

DAYS = ["2022-10-03", "2022-10-04", "2022-10-05"]


def _run(folder: Path, closes: dict[str, list[float]], shares: dict[str, list[float]], decided: int = 2) -> Path:
    """A team run as the card reads it: equity.csv (cash 1,000 plus what the book holds), positions.csv
    (each ticker's shares and weight at each close) and ``decided`` decisions, a bullish news call and a
    bearish 10-q call on each ticker each day (a run decides on every session but its last)."""
    folder.mkdir()
    values = [1000.0 + sum(shares[t][i] * closes[t][i] for t in closes) for i in range(len(DAYS))]
    pd.DataFrame({"date": DAYS, "value": values}).to_csv(folder / "equity.csv", index=False, float_format="%.6f")
    rows = [(d, t, shares[t][i], shares[t][i] * closes[t][i] / values[i]) for i, d in enumerate(DAYS) for t in closes]
    pd.DataFrame(rows, columns=["date", "ticker", "shares", "weight"]).to_csv(
        folder / "positions.csv", index=False, float_format="%.10g"
    )
    calls = [
        {"agent": f"{kind}/{t}", "direction": way, "confidence": 0.6, "via": "model"}
        for t in closes
        for kind, way in (("news", "bullish"), ("10-q", "bearish"))
    ]
    decisions = [
        {"date": d, "record": {"closes": {t: closes[t][i] for t in closes}, "agents": calls}}
        for i, d in enumerate(DAYS[:decided])
    ]
    (folder / "decisions.jsonl").write_text("".join(json.dumps(d) + "\n" for d in decisions))
    return folder


def _ev(run: Path) -> Evidence:
    decisions = [json.loads(x) for x in (run / "decisions.jsonl").read_text().splitlines()]
    return Evidence(run, None, run, None, {}, {}, {}, [decisions])


def test_a_runs_last_decision_is_scored_against_the_next_close_its_positions_hold(tmp_path):
    """Found in review: each decision was paired with the next record, so each run's last decision day was
    never scored (TSLA's team over 61 sessions: 354 calls on 59 days where 360 on 60 were there). The
    close after the last decision is in the run's positions.csv: the weight of the book over the shares."""
    # up, then down: the news analyst (bullish) hits on day 1 and misses on day 2; the 10-q one the reverse
    run = _run(tmp_path / "held", {"T": [100.0, 101.5, 99.25]}, {"T": [10.0, 10.0, 10.0]})
    cal = _ev(run).calibration
    assert (cal["calls"], cal["days"], cal["last_unscored"]) == (4, 2, 0)
    assert cal["by_analyst"]["news"] == {"n": 2, "hits": 1, "hit_rate": 0.5, "chance": 0.5, "judgements": 2}
    assert cal["by_analyst"]["10-q"]["hits"] == 1
    assert cal["base_rate"] == 0.5  # one rise (day 1), one fall (day 2): the last day's close read, 99.25
    assert cal["brier"] == pytest.approx(((0.8 - 1) ** 2 + (0.2 - 1) ** 2 + 0.8**2 + 0.2**2) / 4)
    assert _ev(run).closes_after(run, _ev(run).decisions[0]) == {"T": 99.25}


def test_a_last_day_out_of_the_book_reads_its_buy_and_hold_or_is_left_out_and_said(tmp_path):
    """A ticker the book did not hold after its last decision has no price in positions.csv: one ticker's
    close moved as the run's buy-and-hold did (benchmark_equity.csv); without it the last day's calls are
    left out, and the card's row says so."""
    flat = _run(tmp_path / "flat", {"T": [100.0, 101.5, 99.25]}, {"T": [10.0, 10.0, 0.0]})
    left = _ev(flat).calibration
    assert (left["calls"], left["days"], left["last_unscored"]) == (2, 1, 1)
    assert calibration_point(_ev(flat))[1].endswith(
        "; the last decision day of 1 run(s) not scored: no close after it in the run's files"
    )
    # its buy-and-hold fell after the last decision, as the close did: scored as a fall
    bench = pd.DataFrame({"date": DAYS, "value": [1000.0, 1015.0, 992.5]})
    bench.to_csv(flat / "benchmark_equity.csv", index=False)
    cal = _ev(flat).calibration
    assert (cal["calls"], cal["days"], cal["last_unscored"], cal["base_rate"]) == (4, 2, 0, 0.5)
    assert "not scored" not in calibration_point(_ev(flat))[1]
    # two tickers, one held, one not: the held one's last calls scored, the other's left out (no benchmark of one)
    two = _run(
        tmp_path / "two", {"A": [50.0, 51.0, 52.0], "B": [20.0, 19.0, 18.0]}, {"A": [5.0] * 3, "B": [3.0, 3.0, 0]}
    )
    (two / "benchmark_equity.csv").write_text(bench.to_csv(index=False))
    cal = _ev(two).calibration
    assert (cal["calls"], cal["days"], cal["last_unscored"]) == (4 + 2, 2, 1)
    # a run that decided on its last session too: no close after it in its files
    every = _run(tmp_path / "every", {"T": [100.0, 101.5, 99.25]}, {"T": [10.0] * 3}, decided=3)
    assert (_ev(every).calibration["calls"], _ev(every).calibration["last_unscored"]) == (4, 1)


@pytest.mark.slow  # a backtest of the rules team, about 10 s on 2 cores
def test_a_backtests_card_scores_every_day_the_team_decided_on(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["backtest", "--ticker", "TSLA", "--strategy", "fincon", "--brain", "rules", "--start", "2022-10-05",
                 "--end", "2022-11-15", "--no-progress", "--out", "t", "--ledger", "off"]) == 0  # fmt: skip
    decisions = [json.loads(x) for x in (tmp_path / "t" / "decisions.jsonl").read_text().splitlines()]
    equity = pd.read_csv(tmp_path / "t" / "equity.csv")
    assert len(decisions) == len(equity) - 1 == 29  # a decision a session but the last
    cal = run_card(tmp_path / "t")["calibration"]
    calls = sum(a.get("via") != "empty" for d in decisions for a in d["record"]["agents"])
    assert (cal["days"], cal["calls"], cal["last_unscored"]) == (29, calls, 0)  # 28 days before


def _ticks(n: int, rises: int) -> list[bool]:
    """``n`` sessions, of which the first ``rises`` of each ten (in turn) are followed by a rise."""
    return [i % 10 < rises for i in range(n)]


def _calls(tickers: dict[str, tuple[str, list[bool]]]) -> list[dict]:
    """One run's decisions: each ticker's 10-k analyst says the same thing every day (``tickers``: its direction
    and whether each next close rose), its last record the closes after the last call."""
    closes = {t: 100.0 for t in tickers}
    days = []
    for i in range(max(len(up) for _, up in tickers.values())):
        agents = [{"agent": f"10-k/{t}", "direction": way, "confidence": 0.5, "via": "rules"}
                  for t, (way, up) in tickers.items() if i < len(up)]  # fmt: skip
        days.append({"date": f"d{i:03d}", "record": {"closes": dict(closes), "agents": agents}})
        closes = {t: c * (1.01 if i >= len(tickers[t][1]) or tickers[t][1][i] else 0.99) for t, c in closes.items()}
    return [*days, {"date": "end", "record": {"closes": closes}}]


def test_chance_is_each_tickers_own_mix_weighted_by_its_calls_never_pooled_over_tickers():
    """Found in review: a 10-k analyst bullish every day on the ticker that rose on 70 % of its days and
    bearish every day on the one that fell on 70 % read informative (hit 70 % against a pooled chance of
    50 %: half its calls bullish, half the days rises); each ticker's calls alone are no call. Chance is
    each (run, analyst with its ticker)'s b u + (1 - b)(1 - u), weighted by its calls."""
    from fincon.report.card import FAIL, disaggregation

    both = _calls({"UP": ("bullish", _ticks(200, 7)), "DN": ("bearish", _ticks(120, 3))})
    k = calibration(both)["by_analyst"]["10-k"]
    assert (k["n"], k["hits"], k["hit_rate"]) == (320, 224, 0.7)
    # UP: 200 calls, b 1, u 0.7 -> 0.7; DN: 120 calls, b 0, u 0.3 -> 0.7 (pooled: b 0.625, u 0.55625 -> 0.5141)
    assert k["chance"] == pytest.approx(round((200 * 0.7 + 120 * 0.7) / 320, 4))
    verdict, said = disaggregation(Evidence(Path("x"), None, None, None, {}, {}, {}, [both]))
    assert verdict == FAIL and "10-k 70% [" in said and "by chance 70% (n=320)" in said, said
    # weighted by the calls: UP bullish on a 70 % riser (0.7, 200 calls), DN bullish on a 30 % one (0.3, 120)
    mixed = calibration(_calls({"UP": ("bullish", _ticks(200, 7)), "DN": ("bullish", _ticks(120, 3))}))
    assert mixed["by_analyst"]["10-k"]["chance"] == pytest.approx(round((200 * 0.7 + 120 * 0.3) / 320, 4))
    # and each run apart: bullish through a run of rises, bearish through a run of falls (pooled: 0.5)
    runs = calibration(_calls({"T": ("bullish", _ticks(100, 10))}), _calls({"T": ("bearish", _ticks(100, 0))}))
    assert runs["by_analyst"]["10-k"]["chance"] == 1.0 and runs["by_analyst"]["10-k"]["hit_rate"] == 1.0


def test_one_tickers_chance_is_its_calls_mix_as_before():
    """One ticker in one run is one group: chance is b u + (1 - b)(1 - u) of all its calls, unchanged."""
    days = _calls({"T": ("bullish", _ticks(97, 6))})
    for i, d in enumerate(days[:-1]):  # a mix: bearish on every third day
        d["record"]["agents"][0]["direction"] = "bearish" if i % 3 == 0 else "bullish"
    k = calibration(days)["by_analyst"]["10-k"]
    up = sum(_ticks(97, 6)) / 97
    bullish = sum(i % 3 != 0 for i in range(97)) / 97
    assert k["chance"] == round(bullish * up + (1 - bullish) * (1 - up), 4)


def test_the_calibration_row_prints_its_bounds_on_the_side_of_the_bar_its_verdict_read():
    """Found in review: an upper bound of 0.2496 printed "0.250" beside a pass under 0.25, an excess of
    -0.0004 "-0.000" beside a pass under 0: digits enough to show each on its side of its bar."""
    from fincon.report.card import FAIL, PASS

    def row(upper, over):
        ev = Evidence(Path("x"), None, None, None, {}, {}, {}, [])
        ev.__dict__["calibration"] = {
            "calls": 80, "directional": 80, "brier": 0.2, "days": 40, "brier_upper_95": upper, "base_rate": 0.5,
            "brier_base": 0.25, "over_base_upper_95": over, "by_confidence": {}, "by_analyst": {},
            "last_unscored": 0,
        }  # fmt: skip
        return calibration_point(ev)

    verdict, said = row(0.2496, -0.0004)
    assert verdict == PASS and "95 % upper bound 0.2496," in said and "excess over it at most -0.0004;" in said, said
    verdict, said = row(0.2504, 0.0004)  # on the fail side already at 3 decimals: as before
    assert verdict == FAIL and "95 % upper bound 0.250," in said and "at most +0.000;" in said, said
    verdict, said = row(0.2412, -0.0213)
    assert verdict == PASS and "upper bound 0.241," in said and "at most -0.021;" in said, said


def test_an_interval_just_above_chance_is_printed_on_its_side_of_it():
    """Found in review 2026-12-02: whole percents printed a lower end of 50.1 % as "[50%, ...] by chance
    50%" beside "informative". 532 hits of 1,000: Wilson 95 % (one analyst, no Bonferroni) by hand:
    centre (0.532 + 1.96²/2000) / (1 + 1.96²/1000) = 0.53188, half-width 1.96 sqrt(0.532 * 0.468 / 1000 +
    1.96² / 4e6) / (1 + 1.96²/1000) = 0.03088: [0.50100, 0.56276]; printed to a decimal."""
    from fincon.report.card import PASS, disaggregation

    class Ev(Evidence):
        calibration = {"by_analyst": {"news": {"n": 1000, "hits": 532, "hit_rate": 0.532, "chance": 0.5}}}

    verdict, said = disaggregation(Ev(Path("x"), None, None, None, {}, {}, {}, []))
    assert verdict == PASS and "news 53.2% [50.1%, 56.3%] by chance 50.0% (n=1000)" in said, said
    # a bound under chance in whole percents stays in whole percents
    Ev.calibration["by_analyst"]["news"].update(hits=510, hit_rate=0.51)
    assert "news 51% [48%, 54%] by chance 50%" in disaggregation(Ev(Path("x"), None, None, None, {}, {}, {}, []))[1]
