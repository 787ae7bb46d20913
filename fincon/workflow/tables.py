"""Result tables, one column list per result: what each column is headed, which field it reads and
how a cell is written. The CLI prints a table as text (:func:`text_table`), the report lays the same
table out as HTML (``report.parts.table``): a header or a rounding is written once.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

#: (header, field, how a cell is written, a text column)
Column = tuple[str, str, Callable[[Any], str], bool]
Table = tuple[list[str], list[list[str]], list[int]]


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def cell(v: Any, spec: str) -> str:
    """``v`` formatted by ``spec``; ``n/a`` for a missing value (None or NaN)."""
    return "n/a" if _missing(v) else spec.format(v)


def _cell(spec: str) -> Callable[[Any], str]:
    return lambda v: cell(v, spec)


def _share(v: Any) -> str:
    return "" if _missing(v) else f"{v:.0%}"


def _strategy(r: Mapping[str, Any]) -> str:
    """A strategy's name, marked when it sees more than the rest (a summary without the column: none does)."""
    return f"{r['strategy']}{' (lookahead)' if bool(r.get('lookahead')) else ''}"


def _knowledge(v: Any) -> str:
    """The windows' labels against the model's cutoff; blank for no model (or a summary from before)."""
    return v if isinstance(v, str) and not v.startswith("no-model") else ""


def _with(columns: Sequence[Column], column: Column, after: str) -> list[Column]:
    """``columns`` with ``column`` after the one headed ``after`` (a column shown only when it applies)."""
    at = [c[0] for c in columns].index(after) + 1
    return [*columns[:at], column, *columns[at:]]


def laid_out(columns: Sequence[Column], rows: Sequence[Mapping[str, Any]]) -> Table:
    """``rows`` under ``columns``: (headers, cells, the indices of the text columns); a column whose
    field is ``""`` is written from the whole row."""
    heads = [c[0] for c in columns]
    cells = [[fmt(r if key == "" else r.get(key)) for _, key, fmt, _ in columns] for r in rows]
    return heads, cells, [i for i, c in enumerate(columns) if c[3]]


def text_table(heads: list[str], cells: list[list[str]], text_cols: list[int]) -> list[str]:
    """A table as aligned text lines: text columns left, numbers right (the HTML twin: report.parts.table)."""
    rows = [heads, *cells]
    widths = [max(len(r[i]) for r in rows) for i in range(len(heads))]
    return [
        "  ".join(c.ljust(w) if i in text_cols else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))).rstrip()
        for r in rows
    ]


#: a rolling evaluation's summary (summary.csv, results.json's ``summary``): per universe and strategy
ROLLING_SUMMARY: list[Column] = [
    ("universe", "universe", str, True),
    ("strategy", "", _strategy, True),
    ("windows", "windows", lambda v: str(int(v)), False),
    ("median CR %", "median_cr_pct", _cell("{:.2f}"), False),
    ("median SR", "median_sharpe", _cell("{:.3f}"), False),
    ("median MDD %", "median_mdd_pct", _cell("{:.2f}"), False),
    ("mean excess CR (pp)", "mean_excess_cr_pct", _cell("{:+.2f}"), False),
    ("beats B&H", "share_beats_bh", _share, False),
    ("p vs B&H", "wilcoxon_p", _cell("{:.4f}"), False),
    ("median turnover", "median_turnover", _cell("{:.2f}"), False),
    ("LLM calls", "llm_calls", lambda v: f"{int(v or 0):,d}", False),
    ("LLM cost $", "llm_cost_usd", _cell("{:.4f}"), False),
    ("model knowledge", "model_knowledge", _knowledge, True),
]


#: what commission, slippage and the borrow fee took from a strategy, summed over its windows
ROLLING_COSTS: Column = ("trading costs $ (all windows)", "costs_paid", _cell("{:,.2f}"), False)


def _ci(r: Mapping[str, Any]) -> str:
    f = _cell("{:+.3f}")
    return f"{f(r.get('sharpe_daily'))} [{f(r.get('sharpe_ci_lo'))}, {f(r.get('sharpe_ci_hi'))}]"


def _dsr(r: Mapping[str, Any]) -> str:
    trials = r.get("dsr_trials")
    return f"{_cell('{:.2f}')(r.get('dsr'))} ({'n/a' if _missing(trials) else int(trials)})"


def _stepm(v: Any) -> str:
    return "" if _missing(v) else ("beats" if v else "-")


def _pbo(r: Mapping[str, Any]) -> str:
    sd = r.get("pbo_noise_sd")
    return _cell("{:.2f}")(r.get("pbo")) + ("" if _missing(sd) else f" ±{sd:.2f}")


#: each strategy's statistics over its daily returns (fincon.workflow.rolling_stats, experiment_stats): SIMPLE
#: returns, not annualised, no risk-free rate, where the headline Sharpe is of log returns less it: a run with CR
#: -1.7 % and Sharpe -0.145 read daily SR +0.013 unlabelled (docs/experiments.md says why the signs can differ)
SIGNIFICANCE: list[Column] = [
    ("universe", "universe", lambda v: "" if v is None else str(v), True),
    ("strategy", "", _strategy, True),
    ("days", "days", lambda v: "n/a" if _missing(v) else str(int(v)), False),
    ("daily SR (simple returns) [95% CI]", "", _ci, True),
    ("PSR", "psr", _cell("{:.2f}"), False),
    ("MinTRL d", "min_track_record_days", _cell("{:,.0f}"), False),
    ("DSR (trials)", "", _dsr, True),
    ("SPA p vs B&H", "spa_p_vs_bh", _cell("{:.3f}"), False),
    ("SPA p vs best", "spa_p_vs_best_baseline", _cell("{:.3f}"), False),
    ("StepM", "stepm_beats_bh", _stepm, True),
    ("PBO", "", _pbo, False),
    ("p Holm", "wilcoxon_p_holm", _cell("{:.4f}"), False),
    ("p BH", "wilcoxon_p_bh", _cell("{:.4f}"), False),
]


def rolling_summary(rows: Sequence[Mapping[str, Any]]) -> Table:
    """The summary's rows under :data:`ROLLING_SUMMARY`, with what the costs took over every window when
    the evaluation set a cost (an evaluation without costs prints the table it did)."""
    costed = any(not _missing(r.get("costs_paid")) for r in rows)
    return laid_out(_with(ROLLING_SUMMARY, ROLLING_COSTS, after="median turnover") if costed else ROLLING_SUMMARY, rows)


def significance(rows: Sequence[Mapping[str, Any]]) -> Table:
    """The rows that have statistics (a daily Sharpe ratio), under :data:`SIGNIFICANCE`."""
    return laid_out(SIGNIFICANCE, [r for r in rows if not _missing(r.get("sharpe_daily"))])


#: fewer daily returns than this and a Sharpe ratio's statistics (PSR, MinTRL, DSR, SPA, PBO) are noise
MIN_STAT_DAYS = 20


def too_few_returns(days: Sequence[int], what: str = "these statistics", window: str = "a test window") -> list[str]:
    """The flag of figures from fewer than :data:`MIN_STAT_DAYS` daily returns (``days``: each series' count),
    however they come out: an experiment's statistics, a journal's, a backtest's ratios."""
    if days and min(days) < MIN_STAT_DAYS:
        return [
            f"{min(days)} daily returns: too few for {what} to mean anything, whatever they show "
            f"({window} of {MIN_STAT_DAYS} sessions at the least; a year to settle a Sharpe ratio)"
        ]
    return []


def significance_flags(rows: Sequence[Mapping[str, Any]], window: str = "a test window") -> list[str]:
    """What the statistics cannot say: a window too short for them."""
    return too_few_returns(
        [int(r["days"]) for r in rows if not _missing(r.get("sharpe_daily")) and r.get("days") is not None],
        window=window,
    )


def _range(r: Mapping[str, Any]) -> str:
    return f"{cell(r.get('cr_pct_min'), '{:.2f}')} .. {cell(r.get('cr_pct_max'), '{:.2f}')}"


def _p(r: Mapping[str, Any]) -> str:
    w = r.get("wilcoxon") if isinstance(r.get("wilcoxon"), dict) else {}
    if w.get("p_value") is not None:
        return cell(w["p_value"], "{:.4f}")
    return "equal" if w.get("note") else "n/a"


def _differs(r: Mapping[str, Any]) -> str:
    if r.get("protocol", "fincon") == "fincon":
        return "-"
    d = r.get("differs_from_fincon")
    return cell(None if d is None else 100 * d, "{:.1f}")


def _team_only(fmt: Callable[[Any], str], key: str = "") -> Callable[[Any], str]:
    """A column of the team's rows only: blank on a baseline's."""
    return lambda r: "" if r.get("baseline") else fmt(r if key == "" else r.get(key))


#: an experiment's table (results.json): the median run of each protocol and ablation, then each
#: baseline (its team columns blank); the ``p vs`` header names the best baseline
EXPERIMENT: list[Column] = [
    ("run", "run", str, True),
    ("CR %", "cr_pct", _cell("{:.3f}"), False),
    ("Sharpe", "sharpe", _cell("{:.3f}"), False),
    ("AV %", "ann_vol_pct", _cell("{:.2f}"), False),
    ("MDD %", "mdd_pct", _cell("{:.3f}"), False),
    ("turnover", "turnover", _cell("{:.1f}x"), False),
    ("win rate", "win_rate", _cell("{:.2f}"), False),
    ("p vs {best}", "", _team_only(_p), False),
    ("CR % over repeats", "", _team_only(_range), False),
    ("calls/day", "", _team_only(_cell("{:.2f}"), "calls_per_day"), False),
    ("tokens/day", "", _team_only(_cell("{:,.0f}"), "tokens_per_day"), False),
    ("cost $", "", _team_only(_cell("{:.4f}"), "cost_usd"), False),
    ("fallbacks", "", _team_only(_cell("{:d}"), "fallbacks"), False),
    ("differs %", "", _team_only(_differs), False),
]


def experiment_rows(res: Mapping[str, Any]) -> list[dict[str, Any]]:
    """results.json's median runs and baselines as rows of :data:`EXPERIMENT` (``run``: the label)."""
    best = res.get("best_baseline")
    rows = []
    for v, m in (res.get("median") or {}).items():
        if isinstance(m, dict):
            label = f"{m.get('protocol', 'fincon')} {m.get('ablation', v)} (median: r{m.get('repeat', '?')})"
            rows.append({**m, "run": label})
    for b, m in (res.get("baselines") or {}).items():
        if isinstance(m, dict):
            said = " (lookahead)" if m.get("lookahead") else ""  # sees more than the team: never the best
            rows.append({**m, "run": f"{b}{' *' if b == best else ''}{said}", "baseline": True})
    return rows


#: what commission, slippage and the borrow fee took from each run: a column when the experiment set a cost
TRADING_COSTS: Column = ("trading costs $", "costs_paid", _cell("{:,.2f}"), False)


def experiment(res: Mapping[str, Any]) -> Table:
    rows = experiment_rows(res)
    costed = any("costs_paid" in r for r in rows)  # an experiment without costs prints the table it did
    heads, cells, text = laid_out(_with(EXPERIMENT, TRADING_COSTS, after="turnover") if costed else EXPERIMENT, rows)
    best = res.get("best_baseline")
    return [h.format(best=best or "-") for h in heads], cells, text


def _percent(v: Any) -> str:
    return cell(v, "{:.0%}")


#: an experiment's placebo runs (results.json ``placebo``): per placebo, its median run by CR (every figure
#: that one run's, as the real team's) beside the real run's; the flags are listed under the table
PLACEBO: list[Column] = [
    ("placebo", "placebo", str, True),
    ("CR %", "cr_pct_median", _cell("{:.3f}"), False),
    ("real CR %", "real_cr_pct", _cell("{:.3f}"), False),
    ("profit gap pp", "profit_gap_pct", _cell("{:+.3f}"), False),
    ("Sharpe", "sharpe_median", _cell("{:.3f}"), False),
    ("consistency", "prediction_consistency", _percent, False),
    ("input dependency", "input_dependency", _percent, False),
    ("over B&H pp", "excess_pct", _cell("{:+.3f}"), False),
    ("real over B&H pp", "real_excess_pct", _cell("{:+.3f}"), False),
]

#: which run each row of :data:`PLACEBO` is, as the terminal and the page head it
PLACEBO_RUN = "each its median run by CR; with an even count, the lower middle"

#: a rolling evaluation's placebo runs: per placebo and universe (then all windows), the medians over windows
ROLLING_PLACEBO: list[Column] = [
    ("placebo", "placebo", str, True),
    ("universe", "universe", str, True),
    ("CR %", "cr_pct_median", _cell("{:.2f}"), False),
    ("real CR %", "real_cr_pct", _cell("{:.2f}"), False),
    ("profit gap pp", "profit_gap_pct", _cell("{:+.2f}"), False),
    ("consistency", "prediction_consistency", _percent, False),
    ("windows flagged", "", lambda r: f"{r.get('windows_flagged', 0)} of {r.get('windows', 0)}", False),
]


def placebo(res: Mapping[str, Any]) -> Table:
    """results.json's ``placebo`` under :data:`PLACEBO` (a rolling evaluation's: :data:`ROLLING_PLACEBO`)."""
    runs = res.get("placebo") or {}
    if any("universes" in p for p in runs.values()):
        rows = [
            {**q, "placebo": kind, "universe": universe}
            for kind, p in runs.items()
            for universe, q in [*p["universes"].items(), ("all windows", p)]
        ]
        return laid_out(ROLLING_PLACEBO, rows)
    return laid_out(PLACEBO, [{**p, "placebo": kind} for kind, p in runs.items()])


#: fewer windows than this and a two-sided Wilcoxon test of their pairs cannot reach p < 0.05 (2 / 2^5 = 0.0625)
MIN_WILCOXON_PAIRS = 6


def rolling_flags(rows: Sequence[Mapping[str, Any]], windows: Sequence[Mapping[str, Any]] = ()) -> list[str]:
    """What the per-window test cannot say: too few windows for any p under 0.05, however they come out;
    windows (results.json's rows: universe, test_start, test_end) that share days, whose pairs it takes
    for independent ones."""
    flags = []
    n = [  # the pairs the test read (a window traded as buy-and-hold is none), of the windows
        (int(r["windows"] if _missing(r.get("wilcoxon_pairs")) else r["wilcoxon_pairs"]), int(r["windows"]))
        for r in rows
        if not _missing(r.get("wilcoxon_p")) and r.get("windows")
    ]
    if n and min(n)[0] < MIN_WILCOXON_PAIRS:
        pairs, of = min(n)
        said = f"{pairs} windows" if pairs == of else f"{pairs} of {of} windows differing from buy-and-hold"
        flags.append(
            f"{said}: a two-sided Wilcoxon test of {pairs} pairs cannot give a p under "
            f"{2 / 2**pairs:.4f}, whatever the windows show ({MIN_WILCOXON_PAIRS} windows at the least "
            "to reach 0.05)"
        )
    flags += traded_as_flags(windows)
    spans = {(w.get("universe"), w["test_start"], w["test_end"]) for w in windows}
    most = max((sum(u == v and a <= s <= b for v, a, b in spans) for u, s, _ in spans), default=0)
    if most > 1:
        flags.append(
            f"the test windows overlap (a day in up to {most} of them): the Wilcoxon p pairs windows that share "
            "days as if they were independent, and reads stronger than it is; the statistics take each day "
            "once, the mean of the windows trading it"
        )
    return flags


def traded_as_flags(windows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The windows where a strategy traded as buy-and-hold (its excess CR 0, counted as not beating it,
    the pair dropped by the Wilcoxon test) or two strategies traded identically (one result in two
    rows), counted per universe from windows.csv's ``traded_as``."""
    runs: dict[tuple[str, str], int] = {}
    twins: dict[tuple[str, str, str], int] = {}
    for w in windows:
        if "traded_as" not in w:
            continue
        key = (str(w.get("universe")), str(w["strategy"]))
        runs[key] = runs.get(key, 0) + 1
        names = w.get("traded_as") if isinstance(w.get("traded_as"), str) else ""  # NaN: a CSV's empty cell
        for other in filter(None, names.split("; ")):
            twins[(*key, other)] = twins.get((*key, other), 0) + 1
    out, said = [], set()
    for (universe, strategy, other), k in twins.items():
        n = runs[(universe, strategy)]
        pair = (universe, frozenset((strategy, other)))
        if strategy == "buy-and-hold" or pair in said:
            continue
        said.add(pair)
        out.append(
            f"{strategy} ({universe}) traded as buy-and-hold in {k} of {n} windows: their excess CR is 0, counted "
            "as not beating it, and the Wilcoxon test drops those pairs"
            if other == "buy-and-hold"
            else f"{strategy} and {other} ({universe}) traded identically in {k} of {n} windows: one result in two "
            "rows there"
        )
    return out


def placebo_flags(res: Mapping[str, Any]) -> list[str]:
    """Each placebo's flags, as ``kind: flag``."""
    return [f"{kind}: {flag}" for kind, p in (res.get("placebo") or {}).items() for flag in p.get("flags", [])]


def placebo_notes(res: Mapping[str, Any]) -> list[str]:
    """What each placebo corpus changed in the test window (its ``corpus``: placebo.json), as ``kind: note``."""
    out = []
    for kind, p in (res.get("placebo") or {}).items():
        c = p.get("corpus") or {}
        if "moved" in c:
            out.append(f"{kind}: {c['moved']} of the window's {c['items']} text items moved to a later day")
        if "toned" in c:
            note = f"{kind}: Loughran-McDonald tone reversed in {c['tone_reversed']} of {c['toned']} items with one"
            if "model_calls" in c:
                note += f"; the model rewrote {c['model_calls']} chunk(s), {c['model_fallbacks']} by the word list"
            out.append(note)
    return out


#: one block of the paper's comparison (``paper.json``'s blocks): a row per paper model, fincon's
#: figures for the strategy in its place (its book's CR and, for a stock, the paper's eq. 5 CR), then the
#: paper's as printed (workflow.paper.block_rows)
PAPER: list[Column] = [
    ("paper's model", "model", str, True),
    ("fincon strategy", "strategy", lambda v: v or "not in fincon", True),
    ("book CR %", "cr_pct", _cell("{:.3f}"), False),
    ("eq.5 CR %", "cr_paper_pct", _cell("{:.3f}"), False),
    ("SR", "sharpe", _cell("{:.3f}"), False),
    ("MDD %", "mdd_pct", _cell("{:.3f}"), False),
    ("paper CR %", "paper_cr_pct", _cell("{:.3f}"), False),
    ("paper SR", "paper_sharpe", _cell("{:.3f}"), False),
    ("paper MDD %", "paper_mdd_pct", _cell("{:.3f}"), False),
]


def paper_block(rows: Sequence[Mapping[str, Any]], eq5: bool = True) -> Table:
    """A block of the paper's comparison, its rows from ``workflow.paper.block_rows``; ``eq5`` False (a
    portfolio, which eq. 5's one price and direction do not describe): without the eq.5 CR column. The
    book's CR beside the paper's Table 2 CR compared two measures (found in review: 28.292 beside 82.871
    where the team's own eq. 5 CR was 106.197), so a stock's block shows both."""
    return laid_out(PAPER if eq5 else [c for c in PAPER if c[1] != "cr_paper_pct"], rows)


def optimizer_flags(summaries: dict[str, dict[str, Any]]) -> list[str]:
    """A team portfolio whose mean-variance step shaped nothing on most days: every traded asset at its
    bound before the scaling to gross 1, so the weights were 1/N by the manager's signs (the ``direction``
    form; ``summary.json`` counted it, and a run of 96 such days in 122 said nothing)."""
    out = []
    for name, s in summaries.items():
        days, bound = int(s.get("team_mv_days") or 0), int(s.get("team_mv_at_bounds") or 0)
        if days and bound and 2 * bound >= days:
            out.append(
                f"{name}: its portfolio weights were 1/N by the manager's signs on {bound} of {days} days (every "
                "traded asset at its mean-variance bound before the scaling to gross 1: the optimizer shaped "
                "nothing; --param fincon.portfolio_form=paper lets it)"
            )
        if short := int(s.get("team_short_history_days") or 0):
            out.append(f"{name}: held cash on {short} days it chose a direction (under 3 days of returns)")
        if zeroed := int(s.get("team_paper_zeroed") or 0):
            out.append(
                f"{name}: the paper form set {zeroed} of the manager's directions to weight 0 (the analysts' "
                "view pointed the other way, the optimizer's box held it at 0)"
            )
    return out


def median_optimizer_flags(results: dict[str, Any]) -> list[str]:
    """:func:`optimizer_flags` of an experiment's median team runs (``results.json``)."""
    return optimizer_flags(
        {f"fincon {v} (median: r{m.get('repeat')})": m for v, m in results.get("median", {}).items()}
    )


#: what an ablation takes away from the full team: said when the two traded identically
ABLATED = {"no-beliefs": "the beliefs its training learned", "no-cvar": "the CVaR alert"}


def identical_flags(res: Mapping[str, Any]) -> list[str]:
    """What the table cannot tell apart: runs that traded identically on the test window (results.json
    ``significance.identical``). Found on InvestorBench's MSFT with the rules brain: full and no-beliefs
    printed the same 2.970 % in every column and each variant's three repeats one CR, unsaid (the
    beliefs training moved each weight by under 0.002, which changed no decision)."""
    groups = ((res.get("significance") or {}).get("identical")) or []
    where = {name: i for i, g in enumerate(groups) for name in g}
    medians, runs = res.get("median") or {}, res.get("runs") or {}
    repeats, out = int(res.get("repeats") or 0), []
    label = {f"fincon-{v}-r{m.get('repeat')}": f"{m.get('protocol', 'fincon')} {m.get('ablation', v)}"
             for v, m in medians.items()}  # fmt: skip
    for v in medians:
        if repeats > 1 and len({where.get(f"fincon-{v}-r{r}", -r) for r in range(1, repeats + 1)}) == 1:
            last = [
                o[-1] for r in range(1, repeats + 1) if (o := (runs.get(f"{v}-r{r}") or {}).get("train_objectives"))
            ]
            apart = (
                f", though their trainings ended apart (last episode's CR % {min(last):.2f}..{max(last):.2f})"
                if last and max(last) - min(last) > 1e-9
                else ""
            )
            name = label[f"fincon-{v}-r{medians[v].get('repeat')}"]
            out.append(
                f"{name}: its {repeats} repeats traded identically on the test window{apart}: "
                "'CR % over repeats' measures no spread"
            )
    label.update({b: b for b in res.get("baselines") or {}})
    for g in groups:
        same = [label[n] for n in g if n in label]
        if len(same) < 2:
            continue
        why = [
            f"; {what} changed no decision"
            for ablation, what in ABLATED.items()
            for name in same
            if name.endswith(" full") and name.removesuffix(" full") + f" {ablation}" in same
        ]
        out.append(
            f"{', '.join(same[:-1])} and {same[-1]} (the rows above): the same daily returns on the test window"
            f"{''.join(why)}; "
            "the table's differences between them measure nothing"
        )
    return out
