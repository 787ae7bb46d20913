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
the realised ones after it, used only for scoring. The debating and the
scoring are the harness shared with the calls evaluation
(:mod:`fincon.eval.debate_harness`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from fincon.data.events.model import decision_cutoff
from fincon.data.inputs import open_events
from fincon.data.sources import make_source
from fincon.eval import debate_harness as harness
from fincon.eval.debate_harness import HORIZONS
from fincon.eval.scoring import make_brain

SOURCES = ("10-K", "10-Q")
SENTIMENT_DAYS = 7
BASELINES = ("sentiment tags", "always bullish")
#: each row's direction of a filing (the rows in this order)
PICK = {
    "report": lambda r: r.report,
    "debate (safe)": lambda r: r.final,
    "debate (leader raw)": lambda r: r.leader,
    "sentiment tags": lambda r: r.sentiment,
    "always bullish": lambda r: "bullish",
}


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
    source = make_source("csv", Path(dataset) / "prices")  # read as a backtest reads it: one line on a bad file
    raw = source.load(ticker, pd.Timestamp("1900-01-01"), pd.Timestamp("2100-01-01"))
    return harness.close_series(raw, ticker, source.describe(ticker))


def sentiment_call(news: Sequence, day: pd.Timestamp) -> str:
    """The sentiment-tag baseline: majority of the tags visible in the last
    SENTIMENT_DAYS calendar days at ``day``'s decision time."""

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
    progress: bool = False,
) -> dict[str, Any]:
    brain = make_brain(brain_name, client)
    results: list[FilingResult] = []
    calls = fallbacks = 0
    tickers: list[str] = []
    without: list[str] = []  # tickers whose datasets hold no filing (a coin)
    with harness.workspace(workdir, "fincon-eval-filings-") as wd:
        for n, ds in enumerate(datasets):
            ds = Path(ds)
            found = sorted(p.name.split(".")[0] for p in (ds / "events").glob("*.jsonl*"))
            events = open_events(str(ds / "events"), tuple(found))
            proto = harness.protocol(
                brain_name,
                Path(wd) / f"memory{n}",
                events,
                transcripts="text",
                sources=SOURCES,
                retrieval_model=retrieval_model,
            )
            for t in found:
                closes = dataset_closes(ds, t)
                evs = [e for e in events.all_events() if e.ticker == t]
                news = [e for e in evs if e.source == "news" and e.metadata.get("sentiment")]
                filings = sorted((e for e in evs if e.source in SOURCES), key=lambda e: (e.published_at, e.id))
                (tickers if filings else without).append(t)
                for e, i, d, c, f in harness.debated(proto, brain, filings, closes, progress, f"debate {t}"):
                    calls, fallbacks = calls + c, fallbacks + f
                    day = closes.index[i]
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
                            # the report's own horizon too, beside the table's
                            harness.realised(closes, i, (*HORIZONS, d.report.horizon)),
                        )
                    )
    debated = [r for r in results if r.debated]
    return {
        "brain": brain_name,
        "tickers": tickers,
        "without_filings": without,
        "filings": len(results),
        "model_calls": calls,
        "fallbacks": fallbacks,
        "debated": len(debated),
        "flips_prevented": sum(r.flip_prevented for r in debated),
        "flip_rate": round(sum(r.flip_prevented for r in debated) / len(debated), 4) if debated else None,
        "table": table(results),
        "results": results,
    }


def table(results: Sequence[FilingResult]) -> dict[str, dict[str, Any]]:
    """The shared accuracy columns, then ``acc_own_h`` and ``n_own_h`` (the
    final call's stated horizon, baselines at the same horizon) and
    ``directional``; then each baseline on the filings the report called."""

    def own(docs: Sequence[FilingResult]):
        def cells(row: str, hits: list[bool]) -> dict[str, Any]:
            return {
                "acc_own_h": harness.share(hits),
                "n_own_h": len(hits),
                "directional": sum(PICK[row](r) != "neutral" for r in docs),
            }

        return cells

    return {
        **harness.table(results, PICK, own(results)),
        **harness.paired(results, PICK, BASELINES, own),
    }


def report(res: dict[str, Any]) -> str:
    none = f" (none of {', '.join(res['without_filings'])})" if res["without_filings"] else ""
    lines = [
        f"debate on filings, brain {res['brain']}: {res['filings']} 10-Q/10-K of {', '.join(res['tickers'])}{none}; "
        "direction accuracy vs the realised return, with the hits and the scored calls (own h: the final "
        "call's stated horizon, baselines scored at the same horizon; \"(report's calls)\": on the filings "
        "the report called, not neutral)",
        *harness.format_rows(res["table"]),
        *harness.flag_lines(harness.same_calls(res["results"], PICK), "filing"),
    ]
    lines.append(
        f"debated {res['debated']} of {res['filings']} (a neutral report is not debated); flips prevented "
        f"{res['flips_prevented']} (flip rate {res['flip_rate'] if res['flip_rate'] is not None else '-'}); "
        f"model calls {res['model_calls']}, fallbacks {res['fallbacks']}"
    )
    return "\n".join(lines)
