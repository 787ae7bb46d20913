"""Import benchmark (issue 17): how long ``fincon data import`` takes and how
much memory it needs, each import in its own child process.

* InvestorBench: the five shared files (``../shared/data/investorbench``
  beside the repository, or ``--investorbench DIR``), one import per file;
  the goal is under 15 s in total on 2 cores. Skipped, and said so, when the
  folder is absent.
* FINSABER: a synthetic FINSABER-2 tree of 50 tickers x 5 years of prices
  and 200k news rows (plus one 10-K and three 10-Qs per ticker and year),
  built first (its time is reported apart, not counted), then imported;
  the goal is under 2 minutes and under 2 GB.

Each import is ``python -m fincon.cli.main data import ...`` in a fresh
process: "wall" is that whole command as a user runs it (interpreter start
and imports included), "import" the time the command itself reports
(reading and writing the dataset), "peak RSS" the child's maximum resident
set size (``os.wait4``'s rusage). Run: ``python bench/import.py``
(``--tickers 5 --news 20000`` for a quick look).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def peak_rss_mb(args: list[str]) -> tuple[dict, float]:
    """Run the import in a fresh grandchild and read its own max RSS with wait4."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "fincon.cli.main", "data", "import", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        text=True,
    )
    out = proc.stdout.read()  # stderr merged: one pipe, no deadlock
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"import failed ({proc.returncode}): {out.strip()}")
    m = re.search(r"wrote dataset .* \(\w+, ([\d.]+) s\)", out)
    items = re.search(r"items\s+([\d,]+)", out)
    rss_mb = usage.ru_maxrss / 1024  # kilobytes on Linux
    return (
        {
            "wall_s": wall,
            "import_s": float(m.group(1)) if m else float("nan"),
            "items": int(items.group(1).replace(",", "")) if items else 0,
        },
        rss_mb,
    )


def default_investorbench() -> Path:
    """``../shared/data/investorbench`` beside the repository; from a git
    worktree elsewhere, beside the main checkout."""
    candidates = [ROOT.parent / "shared" / "data" / "investorbench"]
    try:
        common = subprocess.run(
            ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        candidates.append(Path(common).parent.parent / "shared" / "data" / "investorbench")
    except (OSError, subprocess.CalledProcessError):
        pass
    return next((c for c in candidates if c.is_dir()), candidates[0])


def du_mb(path: Path) -> float:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20


def bench_investorbench(folder: Path, work: Path) -> dict | None:
    files = sorted(folder.glob("*.json.gz")) if folder.is_dir() else []
    if not files:
        print(f"InvestorBench: skipped ({folder} is absent or holds no *.json.gz)")
        return None
    rows = []
    for f in files:
        r, rss = peak_rss_mb(["investorbench", str(f), "--out", str(work / f"ib-{f.name.split('.')[0]}")])
        r["file"], r["rss_mb"] = f.name, rss
        rows.append(r)
    print(f"InvestorBench: {len(files)} files from {folder}, one import each")
    print(f"  {'file':<14} {'items':>7} {'wall s':>8} {'import s':>9} {'peak RSS MB':>12}")
    for r in rows:
        print(f"  {r['file']:<14} {r['items']:>7,} {r['wall_s']:>8.2f} {r['import_s']:>9.2f} {r['rss_mb']:>12.0f}")
    total = {
        "wall_s": sum(r["wall_s"] for r in rows),
        "import_s": sum(r["import_s"] for r in rows),
        "rss_mb": max(r["rss_mb"] for r in rows),
        "items": sum(r["items"] for r in rows),
    }
    print(
        f"  {'total':<14} {total['items']:>7,} {total['wall_s']:>8.2f} {total['import_s']:>9.2f} "
        f"{total['rss_mb']:>12.0f}   (goal: under 15 s)"
    )
    return {"files": rows, "total": total}


def bench_finsaber(work: Path, tickers: int, years: int, news: int) -> dict:
    from fincon.data.importers.synthetic import write_finsaber

    tree = work / "finsaber"
    first = 2019 - years + 1
    t0 = time.perf_counter()
    counts = write_finsaber(tree, tickers, tuple(range(first, first + years)), news_rows=news)
    build = time.perf_counter() - t0
    r, rss = peak_rss_mb(["finsaber", str(tree), "--out", str(work / "fs-dataset")])
    print(
        f"FINSABER fixture: {tickers} tickers x {years} years ({counts['price_rows']:,} price rows), "
        f"{news:,} news rows, {counts['10-K'] + counts['10-Q']:,} filings; {du_mb(tree):.1f} MB of parquet, "
        f"built in {build:.1f} s (not counted)"
    )
    print(
        f"  import: wall {r['wall_s']:.1f} s (command reports {r['import_s']:.1f} s), peak RSS {rss:.0f} MB, "
        f"{r['items']:,} items, dataset {du_mb(work / 'fs-dataset'):.1f} MB   (goal: under 120 s, under 2048 MB)"
    )
    return {"tickers": tickers, "years": years, "news_rows": news, "build_s": build, "rss_mb": rss, **r}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--investorbench",
        type=Path,
        default=None,
        help="folder of InvestorBench's *.json.gz (default ../shared/data/investorbench)",
    )
    ap.add_argument("--tickers", type=int, default=50)
    ap.add_argument("--years", type=int, default=5)
    ap.add_argument("--news", type=int, default=200_000)
    ap.add_argument("--skip", default="", help="comma-separated: investorbench, finsaber")
    ap.add_argument("--json", action="store_true", help="also print the results as JSON")
    a = ap.parse_args()
    skip = {s.strip() for s in a.skip.split(",") if s.strip()}
    print(f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}")
    work = Path(tempfile.mkdtemp(prefix="fincon-bench-import-"))
    try:
        res = {}
        if "investorbench" not in skip:
            res["investorbench"] = bench_investorbench((a.investorbench or default_investorbench()).resolve(), work)
        if "finsaber" not in skip:
            res["finsaber"] = bench_finsaber(work, a.tickers, a.years, a.news)
        if a.json:
            print(json.dumps(res, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
