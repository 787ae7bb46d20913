"""Re-record the live protocol days in this folder (see README.md here).

.venv/bin/python docs/recorded/record.py            # both, ~5 minutes on 2 cores
.venv/bin/python docs/recorded/record.py scm        # one
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: name -> (protocol, first day, the next trading day): one decision day each
DAYS = {"scm": ("scm", "2022-10-24", "2022-10-25"), "debate": ("debate", "2022-11-01", "2022-11-02")}
FILES = ("decisions.jsonl", "metrics.json")


def cache(name: str) -> Path:
    return HERE / f"{name}-TSLA-{DAYS[name][1]}.sqlite"


def args(name: str, mode: str, out: Path) -> list[str]:
    protocol, start, end = DAYS[name]
    return [
        "backtest",
        "--ticker",
        "TSLA",
        "--strategy",
        "fincon",
        "--brain",
        "llm",
        "--protocol",
        protocol,
        "--start",
        start,
        "--end",
        end,
        "--no-benchmark",
        "--no-progress",
        "--param",
        f"fincon.transcript_cache={HERE}",
        "--llm-cache",
        mode,
        "--llm-cache-path",
        str(cache(name)),
        "--out",
        str(out),
    ]


def seal(db: Path) -> None:
    """Rollback journal and compacted, as the demo's cache: a read-only replay
    of a WAL database would leave -wal/-shm files beside it in the checkout."""
    import sqlite3

    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("VACUUM")
    conn.close()


def fingerprint(run: Path) -> dict[str, str]:
    return {f: hashlib.sha256((run / f).read_bytes()).hexdigest() for f in FILES}


def main(names: list[str]) -> None:
    from fincon.cli.main import main as fincon

    manifest = HERE / "recorded.json"
    recorded = json.loads(manifest.read_text()) if manifest.is_file() else {}
    for name in names or list(DAYS):
        cache(name).unlink(missing_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / name
            if fincon(args(name, "read-write", out)) != 0:
                raise SystemExit(f"recording {name} failed")
            recorded[name] = fingerprint(out)
        seal(cache(name))
    manifest.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
