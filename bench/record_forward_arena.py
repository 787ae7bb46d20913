"""The simulated forward arena of docs/results.md (issue 44 item 9), run as a user would.

Sixty sessions of the bundled TSLA sample (2022-10-05..2022-12-29, the demo's
window less its last day), stepped one session at a time through
``fincon forward``: the team with the bundled 1.5B (its answers replayed from
the demo's recording, fincon/data/demo, copied so the shipped file is never
written: ``--llm-cache replay`` of its own), the team's rules brain (``fincon@rules``), a single-agent baseline
(``llm-trader``, the bundled 1.5B live: its calls are added to the copy) and
buy-and-hold. Then ``verify`` (must pass), ``score --json``, and ``verify`` of
a copy with one sealed decision edited by hand (must fail, naming it).

    python bench/record_forward_arena.py --out /tmp/arena     # ~30 min on 2 cores (the trader's live calls)

Prints one JSON summary (the figures docs/results.md quotes).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import time
from pathlib import Path

DEMO = Path(__file__).resolve().parents[1] / "fincon" / "data" / "demo"
START, UNTIL = "2022-10-05", "2022-12-29"


def arena_flags(cache: Path, demo: Path) -> list[str]:
    """The team answers from ``demo`` (a copy of the demo's recording, replayed: a step asks the model of a
    read-write cache for the session it decides, whatever the cache holds), llm-trader asks the 1.5B live
    and its calls go to ``cache``."""
    return ["--ticker", "TSLA", "--strategy", "fincon,fincon@rules,llm-trader,buy-and-hold", "--no-benchmark",
            "--param", "fincon.brain=llm", "--llm-model", "qwen2.5-coder-1.5b", "--llm-concurrency", "1",
            "--param", "fincon.llm.cache=replay", "--param", f"fincon.llm.cache_path={demo}",
            "--param", f"llm-trader.cache_path={cache}",
            "--param", "fincon.embedder=hashing", "--param", f"fincon.transcript_cache={DEMO}",
            "--param", "fincon@rules.brain=rules", "--param", "fincon@rules.embedder=hashing",
            "--param", f"fincon@rules.transcript_cache={DEMO}"]  # fmt: skip


def run(argv: list[str]) -> tuple[int, str, str, float]:
    from fincon.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue(), time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="a new folder: the journal goes in OUT/arena")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=False)
    os.environ["FINCON_LEDGER"] = str(a.out / "trials.sqlite")
    cache, demo = a.out / "calls-arena.sqlite", a.out / "calls-demo.sqlite"
    shutil.copyfile(DEMO / "llm-cache.sqlite", demo)
    journal = a.out / "arena"
    code, *_ = run(["forward", "init", str(journal), *arena_flags(cache, demo), "--simulate-from", START])
    assert code == 0
    code, _, err, t_step = run(["forward", "step", str(journal), "--until", UNTIL, "--no-progress"])
    assert code == 0, err
    code, out, err, t_verify = run(["forward", "verify", str(journal)])
    verified = out.strip() if code == 0 else err.strip()
    code_s, score, _, _ = run(["forward", "score", str(journal), "--json"])
    edited = a.out / "arena-edited"
    shutil.copytree(journal, edited)
    from fincon.workflow.journal import canonical

    lines = (edited / "journal.jsonl").read_text().splitlines()
    k = next(i for i, x in enumerate(lines) if '"strategy":"fincon"' in x and '"decided":"2022-11-15"' in x)
    entry = json.loads(lines[k])
    entry["decision"]["weights"] = {"TSLA": 1.0}  # by hand, as a forger would: the rest of the line as it was
    lines[k] = canonical(entry)
    (edited / "journal.jsonl").write_text("\n".join(lines) + "\n")
    code_e, _, err_e, _ = run(["forward", "verify", str(edited)])
    print(json.dumps({"step_s": round(t_step, 1), "verify": [code, verified], "verify_s": round(t_verify, 1),
                      "score": json.loads(score) if code_s == 0 else None,
                      "edited_verify": [code_e, err_e.strip()]}, indent=1, default=str))  # fmt: skip


if __name__ == "__main__":
    main()
