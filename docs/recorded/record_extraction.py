"""Record the live run of the extraction critic on the real filings (issue 21,
item 3) with the bundled model; tests/test_eval_extraction.py replays it.

    .venv/bin/python docs/recorded/record_extraction.py [INVESTORBENCH_DIR]

INVESTORBENCH_DIR defaults to ../shared/data/investorbench beside the main
checkout. MSFT, JNJ and HON are imported to a temporary directory (never
copied into the repository), then

    fincon eval extraction --brain llm --dataset <msft> <jnj> <hon> \
        --llm-cache read-write --llm-cache-path tests/recordings/investorbench/extraction-investorbench.sqlite \
        --json docs/recorded/extraction-investorbench.json

runs live: up to 8 restatements per filing and one extraction-critic call
per restated figure (about 220 model calls; run it on a quiet machine).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from fincon.testing.corpora import IB_RECORDINGS, INVESTORBENCH

HERE = Path(__file__).resolve().parent
ASSETS = ("msft", "jnj", "hon")


def shared_dir() -> Path:
    """InvestorBench's files, read from ../shared (third-party text: never copied in)."""
    return INVESTORBENCH


#: the recording quotes InvestorBench's filings (MIT) in its prompts: committed beside the licence
CACHE = IB_RECORDINGS / "extraction-investorbench.sqlite"
RESULT = HERE / "extraction-investorbench.json"


def args(datasets: list[Path], mode: str, json_out: Path) -> list[str]:
    return [
        "eval",
        "extraction",
        "--brain",
        "llm",
        "--dataset",
        *map(str, datasets),
        "--llm-cache",
        mode,
        "--llm-cache-path",
        str(CACHE),
        "--out",
        str(json_out),
    ]


def import_assets(src: Path, tmp: Path) -> list[Path]:
    from fincon.cli.main import main as fincon

    out = []
    for a in ASSETS:
        d = tmp / a
        if fincon(["data", "import", "investorbench", str(src / f"{a}.json.gz"), "--out", str(d)]) != 0:
            raise SystemExit(f"import of {a} failed")
        out.append(d)
    return out


def main(argv: list[str]) -> None:
    from fincon.cli.main import main as fincon

    src = Path(argv[0]) if argv else shared_dir()
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    CACHE.unlink(missing_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        datasets = import_assets(src, Path(tmp))
        if fincon(args(datasets, "read-write", RESULT)) != 0:
            raise SystemExit("recording failed")
    import sqlite3

    conn = sqlite3.connect(CACHE)
    conn.execute("PRAGMA journal_mode=DELETE")
    conn.execute("VACUUM")
    conn.close()


if __name__ == "__main__":
    main(sys.argv[1:])
