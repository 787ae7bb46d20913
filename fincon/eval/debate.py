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
mean confidence of the directional calls.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

import pandas as pd

HORIZONS = (1, 5, 20)
ROWS = ("report", "debate (safe)", "debate (leader raw)", "always bullish")


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
    from fincon.data.sources import make_source

    df = make_source("sample").load(ticker, pd.Timestamp("2018-01-01"), pd.Timestamp("2030-01-01"))
    col = "Adj Close" if "Adj Close" in df.columns else "Close"
    return pd.Series(df[col].to_numpy(dtype=float), index=pd.to_datetime(df["Date"])).sort_index()


def sample_tickers() -> list[str]:
    from fincon.data.events.generator import SAMPLE_DIR

    return sorted(p.name.split(".")[0] for p in Path(SAMPLE_DIR).glob("*.jsonl.gz"))


def run(
    brain_name: str = "rules",
    tickers: Sequence[str] | None = None,
    client=None,
    transcripts: str = "text",
    workdir: str | Path | None = None,
) -> dict[str, Any]:
    from fincon.agents.brains import LLMBrain, RulesBrain
    from fincon.agents.protocols.debate import DebateProtocol
    from fincon.agents.team import load_events
    from fincon.data.events.model import visible_day
    from fincon.memory.embedders import HashingEmbedder, MiniLMEmbedder
    from fincon.memory.store import MemoryStore

    tickers = [t.upper() for t in (tickers or sample_tickers())]
    brain = LLMBrain(client) if brain_name == "llm" else RulesBrain()
    events = load_events("sample", tuple(tickers))
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="fincon-eval-debate-")
        workdir = tmp.name
    try:
        memory = MemoryStore(Path(workdir) / "memory", HashingEmbedder() if brain_name == "rules" else MiniLMEmbedder())
        proto = DebateProtocol(transcripts=transcripts)
        proto.bind(SimpleNamespace(memory=memory, events=events))
        results: list[CallResult] = []
        calls = 0
        for t in tickers:
            closes = _closes(t)
            dates = closes.index
            for e in events.all_events():
                if e.ticker != t or e.source != "earnings_call":
                    continue
                i = int(dates.searchsorted(visible_day(e.published_at)))
                if i >= len(dates):
                    continue
                day = str(dates[i].date())
                d, c, _, _ = proto.debate(brain, e, day)
                calls += c
                rets = {h: float(closes.iloc[i + h] / closes.iloc[i] - 1.0) for h in HORIZONS if i + h < len(dates)}
                results.append(
                    CallResult(
                        t,
                        e.id,
                        day,
                        d.report.direction,
                        d.final.direction,
                        d.leader_direction,
                        d.report.horizon,
                        d.report.confidence,
                        d.final.confidence,
                        d.flip_prevented,
                        rets,
                    )
                )
    finally:
        if tmp is not None:
            tmp.cleanup()
    return {
        "brain": brain_name,
        "tickers": tickers,
        "calls_scored": len(results),
        "model_calls": calls,
        "flips_prevented": sum(r.flip_prevented for r in results),
        "table": table(results),
        "results": results,
    }


def _hit(direction: str, ret: float) -> bool | None:
    if direction == "neutral":
        return None
    return (ret > 0) if direction == "bullish" else (ret < 0)


def table(results: Sequence[CallResult]) -> dict[str, dict[str, Any]]:
    pick = {
        "report": lambda r: (r.report, r.confidence_report),
        "debate (safe)": lambda r: (r.final, r.confidence_final),
        "debate (leader raw)": lambda r: (r.leader, r.confidence_final),
        "always bullish": lambda r: ("bullish", 1.0),
    }
    out: dict[str, dict[str, Any]] = {}
    for row in ROWS:
        cells: dict[str, Any] = {}
        for h in HORIZONS:
            hits = [_hit(pick[row](r)[0], r.returns[h]) for r in results if h in r.returns]
            hits = [x for x in hits if x is not None]
            cells[f"acc_{h}d"] = round(sum(hits) / len(hits), 4) if hits else None
            cells[f"n_{h}d"] = len(hits)
        own = [_hit(pick[row](r)[0], r.returns[r.horizon]) for r in results if r.horizon in r.returns]
        own = [x for x in own if x is not None]
        cells["acc_own_h"] = round(sum(own) / len(own), 4) if own and row != "always bullish" else None
        confs = [pick[row](r)[1] for r in results if pick[row](r)[0] != "neutral"]
        cells["directional"] = len(confs)
        cells["mean_conf"] = round(sum(confs) / len(confs), 4) if confs and row != "always bullish" else None
        out[row] = cells
    return out


def report(res: dict[str, Any]) -> str:
    def f(x):
        return "   -  " if x is None else f"{x * 100:5.1f}%"

    lines = [
        f"debate eval, brain {res['brain']}: {res['calls_scored']} earnings calls of {len(res['tickers'])} "
        f"tickers ({', '.join(res['tickers'])}); direction accuracy vs realised return",
        f"{'':22s} {'1d':>7s} {'5d':>7s} {'20d':>7s} {'own h':>7s} {'called':>7s} {'conf':>6s}",
    ]
    for row, c in res["table"].items():
        conf = "    - " if c["mean_conf"] is None else f"{c['mean_conf']:6.2f}"
        lines.append(
            f"{row:22s} {f(c['acc_1d']):>7s} {f(c['acc_5d']):>7s} {f(c['acc_20d']):>7s} "
            f"{f(c['acc_own_h']):>7s} {c['directional']:7d} {conf}"
        )
    n = res["table"]["report"]
    lines.append(
        f"scored calls per horizon: 1d {n['n_1d']}, 5d {n['n_5d']}, 20d {n['n_20d']} (directional); "
        f"flips prevented {res['flips_prevented']}; model calls {res['model_calls']}"
    )
    return "\n".join(lines)
