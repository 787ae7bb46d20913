"""Run directories that are either complete or absent.

A run is written into a hidden sibling ``.NAME.partial-PID@HOST`` and renamed to
its final name only after every file is written, so an interrupted or failed
run never leaves a directory that looks complete. An existing directory is
never overwritten: the next free name (``NAME-2``, ``NAME-3``...) is taken
when the run commits (so two identical runs started together both keep their
result), unless ``replace`` is asked for and the existing directory is a
fincon run.

Staging directories of processes that died (SIGKILL, a power cut) are swept
at the next run in the same parent directory, with one line saying so. Only
this machine's are swept: on a filesystem shared by several machines (a Ray
cluster running one experiment) another machine's process cannot be seen from
here, and its staging directory may be in use.
SIGTERM is turned into an exception by the CLI, so the staging directory of a
terminated run is removed on the way out.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import socket
import sys
from pathlib import Path
from typing import Any

from fincon.errors import ConfigError, DataError, FinconError

log = logging.getLogger(__name__)

_PARTIAL = re.compile(r"^\.(?P<name>.+)\.partial-(?P<pid>\d+)(?:@(?P<host>[^@/]+))?$")
#: files that mark a directory as a fincon run (safe to replace)
RUN_MARKERS = ("config.yaml", "metrics.json")


def check_out_path(out: Path | str) -> Path:
    """Validate a user-given ``--out``: it must name a directory that can be
    created (or an existing run directory, which gets a free ``-N`` name)."""
    text = str(out)
    path = Path(text)
    if not text.strip() or path.name in ("", ".", "..") or text.rstrip().endswith(("/.", "/..")):
        raise ConfigError(f"--out {text!r} does not name a new run directory; give a path such as runs/my-run")
    if path.exists() and not path.is_dir():
        raise ConfigError(f"--out {text} exists and is not a directory; choose another path")
    if path.is_symlink():
        raise ConfigError(f"--out {text} is a symbolic link; give a plain directory path")
    return path


def free_path(path: Path) -> Path:
    """``path`` if unused, else the first unused ``path-N``."""
    if not os.path.lexists(path):
        return path
    n = 2
    while True:
        candidate = path.with_name(f"{path.name}-{n}")
        if not os.path.lexists(candidate):
            return candidate
        n += 1


def _host() -> str:
    """This machine's name, as it appears in staging directory names."""
    return re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())[:64] or "localhost"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_partials(parent: Path) -> list[Path]:
    """Remove ``.NAME.partial-PID[@HOST]`` directories in ``parent`` whose
    process (on this machine) is gone; each removal is reported on stderr."""
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in entries:
        m = _PARTIAL.match(entry.name)
        if not m or not entry.is_dir() or m.group("host") not in (None, _host()) or _pid_alive(int(m.group("pid"))):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
            print(
                f"fincon: removed {entry}, left by an interrupted run (process {m.group('pid')} is gone)",
                file=sys.stderr,
            )
    return removed


class RunDir:
    """A staging directory that becomes ``final`` (or a free ``final-N``) on
    :meth:`commit`."""

    def __init__(self, final: Path, *, replace: bool = False):
        self.final = final
        self.replace = replace
        if replace and final.exists() and not any((final / m).exists() for m in RUN_MARKERS):
            raise ConfigError(f"--replace: {final} exists but is not a fincon run directory; refusing to replace it")
        self.staging = final.with_name(f".{final.name}.partial-{os.getpid()}@{_host()}")
        self._made_parents = [p for p in reversed(final.parents) if not p.exists()]
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            sweep_stale_partials(final.parent)
            if self.staging.exists():
                shutil.rmtree(self.staging)
            self.staging.mkdir()
        except OSError as exc:
            self._remove_made_parents()
            raise FinconError(f"cannot create run directory under {final.parent}: {exc.strerror or exc}") from None

    @property
    def path(self) -> Path:
        return self.staging

    def commit(self) -> Path:
        """Rename the staging directory to its final name and return it."""
        if self.replace and self.final.exists():
            old = self.final.with_name(f".{self.final.name}.replaced-{os.getpid()}")
            self.final.rename(old)
            self.staging.rename(self.final)
            shutil.rmtree(old, ignore_errors=True)
            return self.final
        for _ in range(1000):
            target = free_path(self.final)
            try:
                # rename(2) onto an existing non-empty directory fails, so a
                # concurrent run that took the name first is detected here
                os.rename(self.staging, target)
            except OSError:
                if os.path.lexists(target):
                    continue
                raise
            if target != self.final:
                print(f"fincon: {self.final} already exists; this run was written to {target}", file=sys.stderr)
            self.final = target
            return target
        raise FinconError(f"could not find a free name next to {self.final}; result kept in {self.staging}")

    def abort(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)
        self._remove_made_parents()

    def _remove_made_parents(self) -> None:
        """Remove the (empty) parent directories this run created, so a run
        that failed leaves no empty ``runs/`` behind."""
        for parent in reversed(self._made_parents):
            try:
                parent.rmdir()
            except OSError:
                break

    def __enter__(self) -> "RunDir":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None and self.staging.exists():
            self.abort()


def write_json(path: Path, obj: Any) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=True, allow_nan=False) + "\n")


def read_equity(run: Path):
    """A run's ``equity.csv`` as a value series; a file that is empty or not
    in the ``date,value`` layout is a :class:`DataError` naming it."""
    import numpy as np
    import pandas as pd

    path = run / "equity.csv"
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError, OSError) as exc:
        raise DataError(f"{path}: cannot read ({type(exc).__name__}); is this a fincon run directory?") from None
    if list(frame.columns) != ["date", "value"]:
        raise DataError(f"{path}: expected the columns date,value, found {','.join(map(str, frame.columns))[:60]}")
    dates = pd.to_datetime(frame["date"], errors="coerce", format="%Y-%m-%d")
    values = pd.to_numeric(frame["value"], errors="coerce")
    if frame.empty or dates.isna().any() or values.isna().any() or not np.isfinite(values).all():
        raise DataError(f"{path}: no rows, or rows that are not YYYY-MM-DD,number; rerun the backtest")
    return pd.Series(values.to_numpy(dtype=float), index=pd.DatetimeIndex(dates, name="date"), name="value")
