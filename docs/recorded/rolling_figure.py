"""The figure of docs/results.md's rolling evaluation, from a rolling
directory's windows.csv: for each universe, a heatmap of every strategy's CR
minus buy-and-hold's on the same window and tickers (windows across,
strategies down), the number written in each cell.

    python docs/recorded/rolling_figure.py RUNS/rolling docs/recorded/rolling-2019-2024

copies windows.csv, summary.csv and windows.json of the rolling directory
into the second folder and draws rolling.png there. (``fincon report DIR``
renders the same tables as an interactive page.)
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def main(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("windows.csv", "summary.csv", "windows.json"):
        shutil.copyfile(src / name, dst / name)
    df = pd.read_csv(src / "windows.csv")
    universes = list(dict.fromkeys(df.universe))
    strategies = [s for s in dict.fromkeys(df.strategy) if s != "buy-and-hold"]
    fig, axes = plt.subplots(len(universes), 1, figsize=(10, 2.3 * len(universes) + 0.8), squeeze=False)
    fig.subplots_adjust(hspace=0.45)
    lim = float(np.nanpercentile(np.abs(df.excess_cr_pct), 95))
    for ax, u in zip(axes[:, 0], universes):
        g = df[df.universe == u]
        starts = list(dict.fromkeys(g.test_start))
        grid = g.pivot(index="strategy", columns="test_start", values="excess_cr_pct").reindex(strategies)[starts]
        im = ax.imshow(grid.to_numpy(), cmap="RdYlGn", vmin=-lim, vmax=lim, aspect="auto")
        for (r, c), v in np.ndenumerate(grid.to_numpy()):
            ax.text(c, r, f"{v:+.0f}", ha="center", va="center", fontsize=7)
        ax.set_yticks(range(len(strategies)), strategies, fontsize=8)
        ax.set_xticks(range(len(starts)), [s[:7] for s in starts], fontsize=7)
        ax.set_title(f"universe {u}", fontsize=9, loc="left")
    fig.suptitle("CR minus buy-and-hold's on the same 1-year test window and tickers (percentage points)", fontsize=10)
    fig.colorbar(im, ax=axes[:, 0].tolist(), shrink=0.6, label="excess CR (pts)")
    fig.savefig(dst / "rolling.png", dpi=110, bbox_inches="tight")
    print(f"wrote {dst / 'rolling.png'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
