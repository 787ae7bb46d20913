"""``fincon eval debate``: direction accuracy of the debate protocol's call
reports against the realised return, with and without the debate round.

The set: every earnings call of the bundled synthetic corpus (11 tickers,
2022-01-03..2023-06-09) for the chosen tickers. Each call is read on the
first trading day at whose close it is visible (as the backtest reads it):
the five specialists retrieve their chunks, write the report, and the safe
debate refines it (:class:`fincon.agents.protocols.debate.DebateProtocol`,
the same code the backtest runs). The realised return over h trading days is
close[d + h] / close[d] - 1 from that day's close (the sample's adjusted
closes; a call with fewer than h later sessions is left out of that column).

Rows:

* ``report``: the specialists' synthesised report, before any debate;
* ``debate (safe)``: the final report (a flipped direction keeps the report);
* ``debate (leader raw)``: the Leader's own direction, as if the safety
  check were off: what the check prevents;
* ``always bullish``: the share of calls followed by a rise (the base rate).

Accuracy = calls whose direction has the sign of the return / directional
(non-neutral) calls; ``own h``: each report at its own horizon; ``conf``:
mean confidence of the directional calls. The debating and the scoring are
the harness shared with the filings evaluation (:mod:`fincon.eval.debate_harness`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from fincon.data.events.generator import SAMPLE_DIR
from fincon.data.inputs import open_events
from fincon.data.sources import make_source
from fincon.eval import debate_harness as harness
from fincon.eval.debate_harness import HORIZONS
from fincon.eval.scoring import make_brain

BASELINES = ("always bullish",)
#: each row's (direction, confidence) of a call (the rows in this order)
PICK = {
    "report": lambda r: (r.report, r.confidence_report),
    "debate (safe)": lambda r: (r.final, r.confidence_final),
    "debate (leader raw)": lambda r: (r.leader, r.confidence_final),
    "always bullish": lambda r: ("bullish", 1.0),
}
#: each row's direction of a call
DIRECTION = {row: (lambda r, row=row: PICK[row](r)[0]) for row in PICK}


@dataclass
class CallResult:
    ticker: str
    event_id: str
    day: str
    report: str
    final: str
    leader: str
    horizon: int
    confidence_report: float
    confidence_final: float
    flip_prevented: bool
    returns: dict[int, float]


def _closes(ticker: str) -> pd.Series:
    source = make_source("sample")
    raw = source.load(ticker, pd.Timestamp("2018-01-01"), pd.Timestamp("2030-01-01"))
    return harness.close_series(raw, ticker, source.describe(ticker))


def sample_tickers() -> list[str]:
    return sorted(p.name.split(".")[0] for p in Path(SAMPLE_DIR).glob("*.jsonl.gz"))


def run(
    brain_name: str = "rules",
    tickers: Sequence[str] | None = None,
    client=None,
    transcripts: str = "text",
    workdir: str | Path | None = None,
    progress: bool = False,
) -> dict[str, Any]:
    tickers = [t.upper() for t in (tickers or sample_tickers())]
    brain = make_brain(brain_name, client)
    events = open_events("sample", tuple(tickers))
    results: list[CallResult] = []
    calls = fallbacks = 0
    with harness.workspace(workdir, "fincon-eval-debate-") as wd:
        proto = harness.protocol(brain_name, Path(wd) / "memory", events, transcripts=transcripts)
        for t in tickers:
            closes = _closes(t)
            earnings = [e for e in events.all_events() if e.ticker == t and e.source == "earnings_call"]
            for e, i, d, c, f in harness.debated(proto, brain, earnings, closes, progress, f"debate {t}"):
                calls, fallbacks = calls + c, fallbacks + f
                results.append(
                    CallResult(
                        t,
                        e.id,
                        str(closes.index[i].date()),
                        d.report.direction,
                        d.final.direction,
                        d.leader_direction,
                        d.report.horizon,
                        d.report.confidence,
                        d.final.confidence,
                        d.flip_prevented,
                        harness.realised(closes, i, HORIZONS),
                    )
                )
    return {
        "brain": brain_name,
        "tickers": tickers,
        "calls_scored": len(results),
        "model_calls": calls,
        "fallbacks": fallbacks,  # answers the rules brain gave where the model's was invalid
        "flips_prevented": sum(r.flip_prevented for r in results),
        "table": table(results),
        "results": results,
    }


def table(results: Sequence[CallResult]) -> dict[str, dict[str, Any]]:
    """The shared accuracy columns, then ``acc_own_h`` and ``n_own_h`` (each
    report at its own horizon), ``directional`` and ``mean_conf`` (of the
    directional calls); the always-bullish row has no horizon or confidence
    of its own. Then always bullish on the calls the report called."""

    def own(docs: Sequence[CallResult]):
        def cells(row: str, hits: list[bool]) -> dict[str, Any]:
            baseline = row == "always bullish"
            confs = [conf for direction, conf in map(PICK[row], docs) if direction != "neutral"]
            return {
                "acc_own_h": None if baseline else harness.share(hits),
                "n_own_h": None if baseline else len(hits),
                "directional": len(confs),
                "mean_conf": round(sum(confs) / len(confs), 4) if confs and not baseline else None,
            }

        return cells

    return {**harness.table(results, DIRECTION, own(results)), **harness.paired(results, DIRECTION, BASELINES, own)}


def report(res: dict[str, Any]) -> str:
    lines = [
        f"debate eval, brain {res['brain']}: {res['calls_scored']} earnings calls of {len(res['tickers'])} "
        f"tickers ({', '.join(res['tickers'])}); direction accuracy vs realised return, with the hits and the "
        'scored calls ("(report\'s calls)": on the calls the report made, not neutral)',
        *harness.format_rows(res["table"], conf=True),
        *harness.flag_lines(harness.same_calls(res["results"], DIRECTION), "earnings call"),
    ]
    n = res["table"]["report"]
    lines.append(
        f"scored calls per horizon: 1d {n['n_1d']}, 5d {n['n_5d']}, 20d {n['n_20d']} (directional); "
        f"flips prevented {res['flips_prevented']}; model calls {res['model_calls']}, fallbacks {res['fallbacks']}"
    )
    return "\n".join(lines)
