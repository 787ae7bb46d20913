"""What masking (``--anonymize``) adds to a replayed team day (issue 31 item 5;
goal: under 5 %).

The team runs over the same window twice with the test kit's deterministic
stub model, once named and once masked, each recording its calls into its
own cache; then both runs are replayed from their caches, alternately, side
by side in one process, and the wall time per day is compared. A replay asks
no model, so what differs is the masking pass on every prompt, schema and
answer (fincon/llm/masking.py) and nothing else; the time spent inside that
pass is also measured directly (the whole-replay difference moves by several
points from one run of this script to the next on a 2-core machine).

    python bench/masking.py                    # TSLA 2022-10-05..2022-11-30, 9 replays each
    python bench/masking.py --end 2022-10-31 --repeat 1
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

#: seconds spent inside the masking pass (Masker.messages, schema, unmask) during the timed replays
INSIDE = {"s": 0.0}


def timed_masker() -> None:
    """Time the masker's public passes in place: the direct measure of what
    masking adds, beside the noisier difference of two whole replays."""
    from fincon.llm.masking import Masker

    for name in ("messages", "schema", "unmask"):
        fn = getattr(Masker, name)

        def wrap(*a, _fn=fn, **kw):
            t0 = time.perf_counter()
            try:
                return _fn(*a, **kw)
            finally:
                INSIDE["s"] += time.perf_counter() - t0

        setattr(Masker, name, wrap)


CALLS: dict[bool, int] = {}


def run(tmp: Path, masked: bool, mode: str, start: str, end: str) -> tuple[float, int]:
    from fincon.llm import CallCache, LLMClient, UsageLedger
    from fincon.llm.cache import CacheMode
    from fincon.llm.settings import LLMSettings
    from fincon.testing import TeamStub, run_team

    db = tmp / ("masked.sqlite" if masked else "named.sqlite")
    cache = CallCache(db, CacheMode.READ_WRITE if mode == "record" else CacheMode.REPLAY)
    ledger = UsageLedger()
    client = LLMClient(TeamStub(), cache=cache, ledger=ledger)
    out = tmp / f"{'masked' if masked else 'named'}-{mode}-{time.perf_counter_ns()}"
    t0 = time.perf_counter()
    res, _ = run_team(["TSLA"], start, end, out, client=client, settings=LLMSettings(anonymize=masked), brain="llm")
    wall = time.perf_counter() - t0
    cache.close()
    CALLS[masked] = sum(int(r.get("calls") or 0) for r in ledger.usage_rows())
    return wall, len(res.decisions)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--start", default="2022-10-05")
    ap.add_argument("--end", default="2022-11-30")
    ap.add_argument(
        "--repeat",
        type=int,
        default=9,
        help="replays of each run, alternating (default 9: 3 left the median within noise of the goal)",
    )
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for masked in (False, True):
            run(tmp, masked, "record", a.start, a.end)
        timed_masker()
        INSIDE["s"] = 0.0
        times: dict[bool, list[float]] = {False: [], True: []}
        days = 0
        for _ in range(a.repeat):
            for masked in (False, True):
                wall, days = run(tmp, masked, "replay", a.start, a.end)
                times[masked].append(wall)
    named, masked = statistics.median(times[False]), statistics.median(times[True])
    print(f"replayed team, TSLA {a.start}..{a.end}, {days} days, median of {a.repeat} replays each:")
    print(f"  named   {named:7.2f} s  ({1000 * named / days:6.1f} ms a day, {CALLS[False]} calls)")
    print(f"  masked  {masked:7.2f} s  ({1000 * masked / days:6.1f} ms a day, {CALLS[True]} calls)")
    inside = INSIDE["s"] / a.repeat
    print(f"  inside the masking pass: {inside:.3f} s a masked replay ({100 * inside / named:.1f} % of a named one)")
    print(f"masking adds {100 * (masked / named - 1):+.1f} % to a replayed team day (goal: under 5 %)")


if __name__ == "__main__":
    main()
