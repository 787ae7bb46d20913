"""``fincon eval debate --dataset DIR``: the debate's direction calls on real
filings, scored against the return over the horizon the call states.

The set: every 10-Q and 10-K of the imported datasets (``fincon data import
investorbench ...``: the filings' summaries become ``10-K``/``10-Q`` events,
visible from the next session). Each filing is debated on the first trading
day at whose close it is visible, by the same code the backtest runs
(:class:`~fincon.agents.protocols.debate.DebateProtocol` with
``sources=("10-K", "10-Q")``): five specialists read the filing's chunks,
the synthesis writes the report, the safe debate refines it.

Scored: ``sign(direction) == sign(close[d + h] / close[d] - 1)`` over h =
1, 5, 20 sessions and over the call's own stated horizon (``own h``), for
directional calls only. Rows: the report before the debate, the safe final
report, the Leader's raw direction (as if the safety check were off), and
two baselines any reviewer asks for: **always bullish** and the **sentiment
tags** (the majority of the news items' ``sentiment`` tags, positive vs
negative, visible in the :data:`SENTIMENT_DAYS` calendar days up to the
decision time; a tie or no tag: neutral). The **flip rate**: share of
debated filings whose Leader reversed the report (the safe debate keeps the
report: flips prevented).

Point in time: a filing is read on its first visible day; the sentiment
baseline reads only news visible by that day's decision time; returns are
the realised ones after it, used only for scoring.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

import pandas as pd

HORIZONS = (1, 5, 20)
SOURCES = ("10-K", "10-Q")
SENTIMENT_DAYS = 7
ROWS = ("report", "debate (safe)", "debate (leader raw)", "sentiment tags", "always bullish")


@dataclass
class FilingResult:
    ticker: str
    event_id: str
    source: str
    day: str
    report: str
    final: str
    leader: str
    sentiment: str
    horizon: int
    confidence: float
    debated: bool
    flip_prevented: bool
    returns: dict[int, float]


def dataset_closes(dataset: Path, ticker: str) -> pd.Series:
    df = pd.read_csv(Path(dataset) / "prices" / f"{ticker}.csv")
    col = "Adj Close" if "Adj Close" in df.columns else "Close"
    return pd.Series(df[col].to_numpy(dtype=float), index=pd.to_datetime(df["Date"])).sort_index()


def sentiment_call(news: Sequence, day: pd.Timestamp) -> str:
    """The sentiment-tag baseline: majority of the tags visible in the last
    SENTIMENT_DAYS calendar days at ``day``'s decision time."""
    from fincon.data.events.model import decision_cutoff

    cut = decision_cutoff(day)
    lo = cut - pd.Timedelta(days=SENTIMENT_DAYS)
    tags = [str(e.metadata.get("sentiment", "")).lower() for e in news if lo <= e.published_at < cut]
    pos, neg = tags.count("positive"), tags.count("negative")
    return "bullish" if pos > neg else "bearish" if neg > pos else "neutral"


def run(
    datasets: Sequence[str | Path],
    brain_name: str = "rules",
    client=None,
    retrieval_model: str | None = None,
    workdir: str | Path | None = None,
) -> dict[str, Any]:
    from fincon.agents.brains import LLMBrain, RulesBrain
    from fincon.agents.protocols.debate import DebateProtocol
    from fincon.agents.team import load_events
    from fincon.data.events.model import visible_day
    from fincon.memory.embedders import HashingEmbedder, MiniLMEmbedder
    from fincon.memory.store import MemoryStore

    brain = LLMBrain(client) if brain_name == "llm" else RulesBrain()
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="fincon-eval-filings-")
        workdir = tmp.name
    results: list[FilingResult] = []
    calls = fallbacks = 0
    tickers: list[str] = []
    try:
        for n, ds in enumerate(datasets):
            ds = Path(ds)
            found = sorted(p.name.split(".")[0] for p in (ds / "events").glob("*.jsonl*"))
            events = load_events(str(ds / "events"), tuple(found))
            embedder = HashingEmbedder() if brain_name == "rules" else MiniLMEmbedder()
            memory = MemoryStore(Path(workdir) / f"memory{n}", embedder)
            proto = DebateProtocol(transcripts="text", sources=SOURCES, retrieval_model=retrieval_model)
            proto.bind(SimpleNamespace(memory=memory, events=events))
            for t in found:
                tickers.append(t)
                closes = dataset_closes(ds, t)
                dates = closes.index
                evs = [e for e in events.all_events() if e.ticker == t]
                news = [e for e in evs if e.source == "news" and e.metadata.get("sentiment")]
                for e in sorted((e for e in evs if e.source in SOURCES), key=lambda e: (e.published_at, e.id)):
                    i = int(dates.searchsorted(visible_day(e.published_at)))
                    if i >= len(dates):
                        continue
                    day = dates[i]
                    d, c, f, _ = proto.debate(brain, e, str(day.date()))
                    calls, fallbacks = calls + c, fallbacks + f
                    rets = {h: float(closes.iloc[i + h] / closes.iloc[i] - 1.0) for h in HORIZONS if i + h < len(dates)}
                    if d.report.horizon not in rets and i + d.report.horizon < len(dates):
                        rets[d.report.horizon] = float(closes.iloc[i + d.report.horizon] / closes.iloc[i] - 1.0)
                    results.append(
                        FilingResult(
                            t,
                            e.id,
                            e.source,
                            str(day.date()),
                            d.report.direction,
                            d.final.direction,
                            d.leader_direction,
                            sentiment_call(news, day),
                            d.final.horizon,
                            d.final.confidence,
                            d.debated,
                            d.flip_prevented,
                            rets,
                        )
                    )
    finally:
        if tmp is not None:
            tmp.cleanup()
    debated = [r for r in results if r.debated]
    return {
        "brain": brain_name,
        "tickers": tickers,
        "filings": len(results),
        "model_calls": calls,
        "fallbacks": fallbacks,
        "debated": len(debated),
        "flips_prevented": sum(r.flip_prevented for r in debated),
        "flip_rate": round(sum(r.flip_prevented for r in debated) / len(debated), 4) if debated else None,
        "table": table(results),
        "results": results,
    }


def _hit(direction: str, ret: float) -> bool | None:
    if direction == "neutral":
        return None
    return (ret > 0) if direction == "bullish" else (ret < 0)


def table(results: Sequence[FilingResult]) -> dict[str, dict[str, Any]]:
    pick = {
        "report": lambda r: r.report,
        "debate (safe)": lambda r: r.final,
        "debate (leader raw)": lambda r: r.leader,
        "sentiment tags": lambda r: r.sentiment,
        "always bullish": lambda r: "bullish",
    }
    out: dict[str, dict[str, Any]] = {}
    for row in ROWS:
        cells: dict[str, Any] = {}
        for h in HORIZONS:
            hits = [x for x in (_hit(pick[row](r), r.returns[h]) for r in results if h in r.returns) if x is not None]
            cells[f"acc_{h}d"] = round(sum(hits) / len(hits), 4) if hits else None
            cells[f"n_{h}d"] = len(hits)
        own = [
            x
            for x in (_hit(pick[row](r), r.returns[r.horizon]) for r in results if r.horizon in r.returns)
            if x is not None
        ]
        cells["acc_own_h"] = round(sum(own) / len(own), 4) if own else None
        cells["n_own_h"] = len(own)
        cells["directional"] = sum(pick[row](r) != "neutral" for r in results)
        out[row] = cells
    return out


def report(res: dict[str, Any]) -> str:
    def f(x):
        return "   -  " if x is None else f"{x * 100:5.1f}%"

    lines = [
        f"debate on filings, brain {res['brain']}: {res['filings']} 10-Q/10-K of {', '.join(res['tickers'])}; "
        "direction accuracy vs the realised return (own h: the final call's stated horizon, "
        "baselines scored at the same horizon)",
        f"{'':22s} {'1d':>7s} {'5d':>7s} {'20d':>7s} {'own h':>7s} {'called':>7s}",
    ]
    for row, c in res["table"].items():
        lines.append(
            f"{row:22s} {f(c['acc_1d']):>7s} {f(c['acc_5d']):>7s} {f(c['acc_20d']):>7s} "
            f"{f(c['acc_own_h']):>7s} {c['directional']:7d}"
        )
    lines.append(
        f"debated {res['debated']} of {res['filings']} (a neutral report is not debated); flips prevented "
        f"{res['flips_prevented']} (flip rate {res['flip_rate'] if res['flip_rate'] is not None else '-'}); "
        f"model calls {res['model_calls']}, fallbacks {res['fallbacks']}"
    )
    return "\n".join(lines)
