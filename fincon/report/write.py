"""Writing the report page: the page is built whole, then renamed into place."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from fincon import report
from fincon.errors import FinconError
from fincon.files import write_atomic
from fincon.ownership import is_fincon_report


def build_report(runs: Sequence[str | Path], note: str = "", sealed: dict[str, Any] | None = None) -> str:
    """The HTML page for the given run directories (same inputs, same bytes); ``note``: what the page
    is, under its title (a forward journal's: simulated or live, verified, anchored); ``sealed``: what
    the journal's verification found, for its card (fincon.report.evidence.Evidence)."""
    return report.render(report.load_report_data([Path(r) for r in runs]), note, sealed)


def write_report(
    runs: Sequence[str | Path], out: str | Path, note: str = "", sealed: dict[str, Any] | None = None
) -> Path:
    """Write the page to ``out`` (through a temporary file renamed into place,
    so a failed report never leaves half a page)."""
    out = Path(out)
    if out.is_dir():
        raise FinconError(f"--out {out} is a directory; give a file name such as {out / 'report.html'}")
    if not out.parent.is_dir():
        what = "is a file, not a folder" if out.parent.exists() else "does not exist"
        raise FinconError(f"--out {out}: directory {out.parent} {what}")
    if out.exists() and not is_fincon_report(out):
        raise FinconError(
            f"--out {out} exists and is not a report fincon wrote; choose another file name (nothing was changed)"
        )
    text = build_report(runs, note, sealed)
    try:
        write_atomic(out, text)
    except OSError as exc:
        raise FinconError(f"cannot write {out}: {exc.strerror or exc}") from None
    return out
