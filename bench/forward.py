"""What forward testing costs (issue 44 item 8), measured side by side in one run:

* a rules-team ``fincon forward step`` on one ticker against a one-session
  backtest of the same (goal: within 1.5x), at the journal's 1st, 10th, 30th
  and last session: a step takes up the team's saved state and replays only
  the book (the recorded decisions through the broker), so the ratio should
  stay flat as the journal grows;
* ``verify`` of a 1,000-entry journal by its hashes alone (goal: under 2 s);
* a replay-verify of a team journal against its replayed backtest (goal:
  within 1.5x).

    python bench/forward.py                   # sessions 1, 10, 30; a 30-session replay-verify
    python bench/forward.py --sessions 60     # the issue's 60-session replay-verify
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import tempfile
import time
from pathlib import Path

TEAM = ["--ticker", "TSLA", "--strategy", "fincon", "--brain", "rules", "--param", "fincon.transcripts=text",
        "--param", "fincon.embedder=hashing", "--no-benchmark"]  # fmt: skip
START = "2022-10-05"


def timed(argv: list[str]) -> float:
    from fincon.cli.main import main

    t0 = time.perf_counter()
    code = main(argv)
    if code != 0:
        raise SystemExit(f"{' '.join(argv[:3])} exited {code}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=30, help="the journal's length for the replay-verify (default 30)")
    a = ap.parse_args()
    from fincon.workflow.forward_clock import sessions
    from fincon.workflow.journal import Journal, verify_chain

    days = sessions(dt.date.fromisoformat(START), dt.date(2023, 6, 9))
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        os.environ["FINCON_LEDGER"] = str(Path(d) / "trials.sqlite")
        timed(["forward", "init", "fw", *TEAM, "--simulate-from", START])
        # warm-up: the first command in a process pays every import (about 2 s: the embedders, matplotlib);
        # without it the first step pays them and the backtest after it does not
        timed(["backtest", *TEAM, "--start", str(days[0]), "--end", str(days[1]), "--no-progress", "--out", "warm",
               "--ledger", "off", "--fill", "next-open"])  # fmt: skip
        print("rules team on TSLA: one forward step against a one-session backtest of the same (the backtest "
              "draws equity.png, a step draws none: score does)")  # fmt: skip
        done = 0
        for k in sorted({k for k in (1, 10, 30, a.sessions) if k <= a.sessions}):
            if k > done + 1:
                timed(["forward", "step", "fw", "--until", str(days[k - 2]), "--no-progress"])
            step = timed(["forward", "step", "fw", "--no-progress"])
            one = timed(["backtest", *TEAM, "--start", str(days[k - 1]), "--end", str(days[k]), "--no-progress",
                         "--out", f"bt{k}", "--ledger", "off", "--fill", "next-open"])  # fmt: skip
            done = k
            print(f"  session {k:>3}: step {step:6.2f} s, one-session backtest {one:6.2f} s: {step / one:5.2f}x "
                  "(goal: within 1.5x)")  # fmt: skip
        t_verify = timed(["forward", "verify", "fw"])
        t_bt = timed(["backtest", *TEAM, "--start", START, "--end", str(days[a.sessions - 1]), "--no-progress",
                      "--out", "bt-all", "--ledger", "off", "--fill", "next-open"])  # fmt: skip
        print(f"replay-verify of the {a.sessions}-session journal: {t_verify:.2f} s against its backtest {t_bt:.2f} s: "
              f"{t_verify / t_bt:.2f}x (goal: within 1.5x)")  # fmt: skip
        j = Journal(Path(d) / "big")
        j.append({"kind": "register", "plan": {}})
        j.append_all([{"kind": "missed", "session": f"s{i}", "reason": "bench"} for i in range(999)])
        t0 = time.perf_counter()
        problems = list(verify_chain(j.entries(), j.root))
        t_hash = time.perf_counter() - t0
        print(f"verify by hashes of a 1,000-entry journal: {t_hash:.3f} s ({'ok' if not problems else problems[0]}; "
              "goal: under 2 s)")  # fmt: skip


if __name__ == "__main__":
    main()
