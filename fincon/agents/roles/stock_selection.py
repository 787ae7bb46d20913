"""Stock selection: picks the traded pool from a candidate list.

Portfolios only (``candidates``). From the daily returns visible on the
first decision day it builds the correlation matrix of the candidates,
clusters them (average-linkage agglomerative clustering on the correlation
distance sqrt((1 - rho) / 2), scikit-learn) into ``pool_size`` groups of
assets that move together, and takes from each group the member with the
best Sharpe ratio over the lookback: one asset per risk cluster, so the pool
diversifies. Everything is computed in code and is deterministic (ties broken
by ticker); the report says which clusters it found and why each pick won,
citing the per-cluster evidence items. Both brains use this same
computation: a choice over numbers needs no language model.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from fincon.agents.reports import AnalystReport, Citation, Insight
from fincon.agents.roles.base import HERE, Profile, Role


class StockSelector(Role):
    name = "stock-selection"
    sources = None
    weight = 0.0
    template = HERE / "stock_selection.txt"
    profile = Profile(
        role="stock-selection analyst of an equity trading team",
        responsibilities="choose which of the candidate stocks the team trades, from their return correlations and risk.",
        target="a pool of weakly correlated stocks, each the best risk-adjusted performer of its group.",
    )

    def select(self, returns: pd.DataFrame, pool_size: int, day: str) -> tuple[list[str], AnalystReport]:
        """(pool, report) from a days x candidates frame of simple returns."""
        r = returns.dropna(axis=0, how="any")
        tickers = sorted(r.columns)
        r = r[tickers]
        x = r.to_numpy(dtype=float)
        sd = x.std(axis=0, ddof=1)
        sharpe = np.where(sd > 0, x.mean(axis=0) / np.where(sd > 0, sd, 1.0) * math.sqrt(252), 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            corr = np.corrcoef(x, rowvar=False) if len(tickers) > 1 else np.ones((1, 1))
        # a price that never moved (a halted stock, a close-only file filled forward) has no correlation:
        # read as none (0), it sits apart, where its NaN was a clustering traceback (found in review)
        corr = np.where(np.isnan(corr), np.eye(len(tickers)), corr)
        k = max(1, min(pool_size, len(tickers)))
        if k == len(tickers):
            labels = np.arange(len(tickers))
        else:
            from sklearn.cluster import AgglomerativeClustering

            dist = np.sqrt(np.clip((1.0 - corr) / 2.0, 0.0, 1.0))
            labels = AgglomerativeClustering(n_clusters=k, metric="precomputed", linkage="average").fit_predict(dist)
        groups: dict[int, list[int]] = {}
        for i, lab in enumerate(labels):
            groups.setdefault(int(lab), []).append(i)
        # clusters in a stable order: by their alphabetically first member
        ordered = sorted(groups.values(), key=lambda g: tickers[g[0]])
        pool, insights = [], []
        for n, g in enumerate(ordered, 1):
            best = max(g, key=lambda i: (round(float(sharpe[i]), 6), -i))
            pool.append(tickers[best])
            members = ", ".join(f"{tickers[i]} (Sharpe {sharpe[i]:+.2f})" for i in g)
            inner = [corr[i, j] for i in g for j in g if i < j]
            mean_in = f"mean correlation {np.mean(inner):.2f}" if inner else "a single stock"
            text = (
                f"Group {n}: {members}; {mean_in}. Picked {tickers[best]}: best Sharpe in its group over {len(x)} days."
            )
            insights.append(
                Insight(text=text[:400], citations=[Citation(id=f"sel-group-{n}", date=day, source="prices")])
            )
        pool = sorted(pool)
        if len(pool) > 1:
            pi = [tickers.index(t) for t in pool]
            cross = [corr[i, j] for i in pi for j in pi if i < j]
            insights = insights[:4] + [
                Insight(
                    text=f"Pool {', '.join(pool)}: mean pairwise correlation "
                    f"{np.mean(cross):.2f} vs {np.mean(corr[np.triu_indices(len(tickers), 1)]):.2f} "
                    f"over all candidates."
                )
            ]
        report = AnalystReport(
            role=self.name, ticker=",".join(tickers), insights=insights[:5], direction="neutral", confidence=0.0
        )
        return pool, report


ROLE = StockSelector()
