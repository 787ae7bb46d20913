"""What masking (``--anonymize``) adds to a replayed team day (issue 31 item 5;
goal: under 5 %).

The team runs over the same window twice with the test kit's deterministic
stub model, once named and once masked, each recording its calls into its
own cache; then both runs are replayed from their caches, alternately, side
by side in one process, and the wall time per day is compared. A replay asks
no model, so what differs is the masking pass on every prompt, schema and
answer (fincon/llm/masking.py) and nothing else.

    python bench/masking.py                    # TSLA 2022-10-05..2022-11-30, 3 replays each
    python bench/masking.py --end 2022-10-31 --repeat 1
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path


def run(tmp: Path, masked: bool, mode: str, start: str, end: str) -> tuple[float, int]:
    from fincon.llm import CallCache, LLMClient, UsageLedger
    from fincon.llm.cache import CacheMode
    from fincon.llm.settings import LLMSettings
    from fincon.testing import TeamStub, run_team

    db = tmp / ("masked.sqlite" if masked else "named.sqlite")
    cache = CallCache(db, CacheMode.READ_WRITE if mode == "record" else CacheMode.REPLAY)
    client = LLMClient(TeamStub(), cache=cache, ledger=UsageLedger())
    out = tmp / f"{'masked' if masked else 'named'}-{mode}-{time.perf_counter_ns()}"
    t0 = time.perf_counter()
    res, _ = run_team(["TSLA"], start, end, out, client=client, settings=LLMSettings(anonymize=masked), brain="llm")
    wall = time.perf_counter() - t0
    cache.close()
    return wall, len(res.decisions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", default="2022-10-05")
    ap.add_argument("--end", default="2022-11-30")
    ap.add_argument("--repeat", type=int, default=3, help="replays of each run, alternating (default 3)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for masked in (False, True):
            run(tmp, masked, "record", a.start, a.end)
        times: dict[bool, list[float]] = {False: [], True: []}
        days = 0
        for _ in range(a.repeat):
            for masked in (False, True):
                wall, days = run(tmp, masked, "replay", a.start, a.end)
                times[masked].append(wall)
    named, masked = statistics.median(times[False]), statistics.median(times[True])
    print(f"replayed team, TSLA {a.start}..{a.end}, {days} days, median of {a.repeat} replays each:")
    print(f"  named   {named:7.2f} s  ({1000 * named / days:6.1f} ms a day)")
    print(f"  masked  {masked:7.2f} s  ({1000 * masked / days:6.1f} ms a day)")
    print(f"masking adds {100 * (masked / named - 1):+.1f} % to a replayed team day (goal: under 5 %)")


if __name__ == "__main__":
    main()
