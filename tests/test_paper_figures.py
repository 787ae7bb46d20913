"""The FinCon paper's published tables (issue 33 item 3): the figures are
the paper's as printed, and a block lays fincon's beside them, labelled."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fincon.workflow import paper

PAPER_TEXT = Path(__file__).resolve().parents[2] / "shared" / "papers" / "fincon.md"


def test_spot_figures_read_as_printed():
    assert paper.SINGLE["TSLA"]["FinCon"] == (82.871, 1.972, 29.727)
    assert paper.SINGLE["MSFT"]["B&H"] == (27.856, 1.230, 15.010)
    assert paper.SINGLE["NIO"]["A2C"] == (-91.910, -1.728, 68.911)
    assert paper.SINGLE["COIN"]["DQN"] is None and paper.SINGLE["COIN"]["FinMem"] == (0.811, 0.017, 50.390)
    assert paper.PORTFOLIOS[("TSLA", "MSFT", "PFE")]["FinCon"] == (113.836, 3.269, 16.163)
    assert paper.PORTFOLIOS[("AMZN", "GM", "LLY")]["Equal-Weighted ETF"] == (15.061, 0.867, 14.662)
    assert all(len(rows) == 9 for rows in paper.SINGLE.values())


@pytest.mark.skipif(not PAPER_TEXT.is_file(), reason="the paper's text is not beside the repository")
def test_every_figure_is_in_the_papers_text():
    """Each row of Table 2, its numbers joined as the paper's text prints them."""
    text = PAPER_TEXT.read_text(encoding="utf-8")
    for model in paper._T2:
        for half in (paper._T2[model][:4], paper._T2[model][4:]):
            numbers = [f"{x:.3f}" for fig in half if fig is not None for x in fig]
            pattern = r"\s*".join(re.escape(n) for n in numbers)
            assert re.search(pattern, text), (model, numbers[:3])
    for figs in paper.PORTFOLIOS.values():
        for model, fig in figs.items():
            assert f"{model} {fig[0]:.3f} {fig[1]:.3f} {fig[2]:.3f}" in text


def test_a_block_lays_fincons_figures_beside_the_papers():
    ours = {"fincon": {"cr_pct": -5.5, "cr_paper_pct": 3.25, "sharpe": -1.2, "mdd_pct": 9.77},
            "buy-and-hold": {"cr_pct": 16.654}}  # fmt: skip
    block = paper.side_by_side("MSFT", ours, "differs: the model (bundled 1.5B), the corpus (synthetic)")
    lines = block.splitlines()
    assert lines[0] == "MSFT: fincon beside the paper (published, FinCon (arXiv 2407.06567v3))"
    assert lines[1].split() == ["paper's", "model", "fincon", "strategy", "book", "CR", "%", "eq.5", "CR", "%", "SR",
                                "MDD", "%", "paper", "CR", "%", "paper", "SR", "paper", "MDD", "%"]  # fmt: skip
    fincon = next(x for x in lines if x.startswith("FinCon "))
    assert fincon.split() == ["FinCon", "fincon", "-5.500", "3.250", "-1.200", "9.770", "31.625", "1.538", "15.010"]
    assert next(x for x in lines if x.startswith("GA ")).split()[1:7] == ["not", "in", "fincon", "n/a", "n/a", "n/a"]
    assert next(x for x in lines if x.startswith("B&H ")).split()[2:6] == ["16.654", "n/a", "n/a", "n/a"]
    assert lines[-1].startswith("differs:")
    portfolio = paper.side_by_side(("TSLA", "MSFT", "PFE"), {})
    assert "portfolio TSLA, MSFT, PFE" in portfolio and "113.836" in portfolio and "finrl-a2c" in portfolio
