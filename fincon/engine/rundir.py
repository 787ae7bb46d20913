"""Run directories that are either complete or absent.

A run is written into a hidden sibling ``.NAME.partial-PID`` and renamed to
its final name only after every file is written, so an interrupted or failed
run never leaves a directory that looks complete. An existing directory is
never overwritten: the next free name (``NAME-2``, ``NAME-3``...) is used.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from fincon.errors import FinconError


def free_path(path: Path) -> Path:
    """``path`` if unused, else the first unused ``path-N``."""
    if not path.exists():
        return path
    n = 2
    while True:
        candidate = path.with_name(f"{path.name}-{n}")
        if not candidate.exists():
            return candidate
        n += 1


class RunDir:
    """A staging directory that becomes ``final`` on :meth:`commit`."""

    def __init__(self, final: Path):
        self.final = final
        self.staging = final.with_name(f".{final.name}.partial-{os.getpid()}")
        try:
            if self.staging.exists():
                shutil.rmtree(self.staging)
            self.staging.mkdir(parents=True)
        except OSError as exc:
            raise FinconError(f"cannot create run directory under {final.parent}: {exc.strerror}") from None

    @property
    def path(self) -> Path:
        return self.staging

    def commit(self) -> Path:
        if self.final.exists():
            raise FinconError(f"{self.final} appeared while the run was going; result kept in {self.staging}")
        self.staging.rename(self.final)
        return self.final

    def abort(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def __enter__(self) -> "RunDir":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self.staging.exists():
            self.abort()


def write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n")
