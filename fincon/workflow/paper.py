"""The FinCon paper's published comparison, as facts to lay fincon's beside.

Table 2 (single-asset trading, eight stocks) and Table 3 (portfolio
management, two portfolios) of "FinCon: A Synthesized LLM Multi-Agent
System with Conceptual Verbal Reinforcement for Enhanced Financial Decision
Making" (arXiv 2407.06567v3, section 4.2; ``../shared/papers/fincon.md``),
copied as printed: CR % and SR up, MDD % down, the median of five repeats,
test window 2022-10-05..2023-06-10, every LLM agent on GPT-4-Turbo at
temperature 0.3, FinCon trained 2022-01-03..2022-10-04 and the DRL agents
2018-01-01..2022-10-04. They are the paper's numbers, not fincon's: a
table shows them in a column labelled so, beside fincon's own run.

:data:`STRATEGY` maps each of the paper's rows to the fincon strategy that
plays its part (None where fincon has none: the paper's Generative Agents
and FinAgent).
"""

from __future__ import annotations

from typing import Any, Mapping

from fincon.workflow.tables import paper_block, text_table

#: (CR %, SR, MDD %) as printed; None where the paper has no figure (its DRL agents on COIN)
Figures = tuple[float, float, float] | None

PAPER = "FinCon (arXiv 2407.06567v3), Tables 2 and 3"
TEST_WINDOW = ("2022-10-05", "2023-06-10")
TRAIN_WINDOW = ("2022-01-03", "2022-10-04")
DRL_TRAIN_WINDOW = ("2018-01-01", "2022-10-04")
MODEL = "GPT-4-Turbo, temperature 0.3"

#: paper row -> the fincon strategy in its place (None: not in fincon)
STRATEGY: dict[str, str | None] = {
    "B&H": "buy-and-hold",
    "FinCon": "fincon",
    "GA": None,
    "FinGPT": "finsent",
    "FinMem": "finmem",
    "FinAgent": None,
    "A2C": "a2c",
    "PPO": "ppo",
    "DQN": "dqn",
    "Markowitz MV": "markowitz",
    "FinRL-A2C": "finrl-a2c",
    "Equal-Weighted ETF": "equal-weight",
}

_T2 = {
    # model: TSLA, AMZN, NIO, MSFT, AAPL, GOOG, NFLX, COIN (each CR %, SR, MDD %)
    "B&H": [(6.425, 0.145, 58.150), (2.030, 0.072, 34.241), (-77.210, -1.449, 63.975), (27.856, 1.230, 15.010),
            (22.315, 1.107, 20.659), (22.420, 0.891, 21.191), (57.338, 1.794, 20.926), (-21.756, -0.311, 60.187)],
    "FinCon": [(82.871, 1.972, 29.727), (24.848, 0.904, 25.889), (17.461, 0.335, 40.647), (31.625, 1.538, 15.010),
               (27.352, 1.597, 15.266), (25.077, 1.052, 17.530), (69.239, 2.370, 20.792), (57.045, 0.825, 42.679)],
    "GA": [(16.535, 0.391, 54.131), (-5.631, -0.199, 37.213), (-3.176, -1.574, 3.155), (-31.821, -1.414, 39.808),
           (5.694, 0.372, 14.161), (-1.515, -0.192, 8.210), (41.770, 1.485, 20.926), (19.271, 0.277, 67.532)],
    "FinGPT": [(1.549, 0.044, 42.400), (-29.811, -1.810, 29.671), (-4.959, -0.121, 37.344), (21.535, 1.315, 16.503),
               (20.321, 1.161, 16.759), (0.242, 0.011, 26.984), (11.925, 0.472, 20.201), (-99.553, -1.807, 74.967)],
    "FinMem": [(34.624, 1.552, 15.674), (-18.011, -0.773, 36.825), (-48.437, -1.180, 64.144), (-22.036, -1.247, 29.435),
               (12.397, 0.994, 11.268), (0.311, 0.018, 21.503), (-10.306, -0.478, 27.692), (0.811, 0.017, 50.390)],
    "FinAgent": [(11.960, 0.271, 55.734), (-24.588, -1.493, 33.074), (0.933, 0.051, 19.181), (-27.534, -1.247, 39.544),
                 (20.757, 1.041, 19.896), (-7.440, -1.024, 10.360), (61.303, 1.960, 20.926), (-5.971, -0.106, 56.882)],
    "A2C": [(-35.644, -0.805, 61.502), (-12.560, -0.444, 37.106), (-91.910, -1.728, 68.911), (21.397, 0.962, 21.458),
            (13.781, 0.683, 14.226), (8.562, 0.340, 21.191), (-8.176, -0.258, 49.579), None],
    "PPO": [(1.409, 0.032, 49.740), (3.863, 0.138, 28.085), (-72.119, -1.352, 62.093), (-4.761, -0.214, 30.950),
            (14.041, 0.704, 22.785), (2.434, 0.097, 25.202), (-33.144, -1.049, 33.377), None],
    "DQN": [(-1.296, -0.029, 58.150), (11.171, 0.398, 31.174), (-35.419, -0.662, 56.905), (27.021, 1.216, 21.458),
            (21.125, 1.048, 16.131), (20.690, 0.822, 21.191), (21.753, 0.687, 39.733), None],
}  # fmt: skip
SINGLE_TICKERS = ("TSLA", "AMZN", "NIO", "MSFT", "AAPL", "GOOG", "NFLX", "COIN")
#: Table 2: ticker -> paper row -> figures
SINGLE: dict[str, dict[str, Figures]] = {
    t: {m: rows[i] for m, rows in _T2.items()} for i, t in enumerate(SINGLE_TICKERS)
}

#: Table 3: portfolio -> paper row -> figures
PORTFOLIOS: dict[tuple[str, ...], dict[str, Figures]] = {
    ("TSLA", "MSFT", "PFE"): {
        "FinCon": (113.836, 3.269, 16.163),
        "Markowitz MV": (12.636, 0.614, 17.842),
        "FinRL-A2C": (19.461, 0.831, 26.917),
        "Equal-Weighted ETF": (9.344, 0.492, 21.223),
    },
    ("AMZN", "GM", "LLY"): {
        "FinCon": (32.922, 1.371, 21.502),
        "Markowitz MV": (10.289, 0.540, 25.099),
        "FinRL-A2C": (11.589, 0.649, 15.787),
        "Equal-Weighted ETF": (15.061, 0.867, 14.662),
    },
}


#: the figures of a paper row by name, as paper.json writes them
FIGURES = ("cr_pct", "sharpe", "mdd_pct")


def published(key: str | tuple[str, ...]) -> dict[str, dict[str, float] | None] | None:
    """The paper's figures for a stock (Table 2) or a portfolio (Table 3) by paper row, as
    paper.json writes them; None: the paper has no such stock or portfolio."""
    if isinstance(key, str):
        got = SINGLE.get(key)
    else:  # a portfolio is its tickers in any order (--tickers MSFT,TSLA,PFE is Table 3's first)
        got = next((v for k, v in PORTFOLIOS.items() if sorted(k) == sorted(key)), None)
    if got is None:
        return None
    return {m: None if f is None else dict(zip(FIGURES, f)) for m, f in got.items()}


def label(key: str | tuple[str, ...]) -> str:
    return key if isinstance(key, str) else "portfolio " + ", ".join(key)


def block_rows(
    key: str | tuple[str, ...],
    ours: Mapping[str, Mapping[str, Any]],
    paper: Mapping[str, Mapping[str, float] | None] | None,
) -> list[dict[str, Any]]:
    """The rows of one block (workflow.tables.PAPER): a row per paper model, fincon's CR % (its book's,
    and for a stock the paper's eq. 5 CR, ``cr_paper_pct``), SR and MDD % for the strategy in its place
    (``ours``: strategy -> metrics), then ``paper``'s figures
    (:func:`published`; None: a stock, portfolio or window the paper has no figures for, its
    column empty)."""
    models = list(_T2 if isinstance(key, str) else next(iter(PORTFOLIOS.values())))
    mine_keys = (*FIGURES, "cr_paper_pct") if isinstance(key, str) else FIGURES  # eq. 5: one ticker's
    rows = []
    for model in paper or models:
        name = STRATEGY.get(model)
        mine = (ours.get(name) if name else None) or {}
        theirs = (paper or {}).get(model) or {}
        rows.append(
            {"model": model, "strategy": name, **{f: mine.get(f) for f in mine_keys},
             **{f"paper_{f}": theirs.get(f) for f in FIGURES}}
        )  # fmt: skip
    return rows


def side_by_side(
    key: str | tuple[str, ...], ours: Mapping[str, Mapping[str, Any]], differs: str = "", papers_window: bool = True
) -> str:
    """One of the paper's blocks (a ticker of Table 2, a portfolio of Table 3) as text: its label,
    the table (workflow.tables.PAPER) and ``differs``, a line saying what differs from the paper's
    setting. ``papers_window`` False: fincon's figures are of another window than the paper's, whose
    column stays empty."""

    rows = block_rows(key, ours, published(key) if papers_window else None)
    lines = [f"{label(key)}: fincon beside the paper (published, {PAPER.split(',')[0]})"]
    lines += text_table(*paper_block(rows, eq5=isinstance(key, str)))
    return "\n".join(lines + ([differs] if differs else []))
