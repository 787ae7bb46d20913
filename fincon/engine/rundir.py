"""Run directories that are either complete or absent.

A run is written into a hidden sibling ``.NAME.partial-PID@HOST`` and renamed to
its final name only after every file is written, so an interrupted or failed
run never leaves a directory that looks complete. An existing directory is
never overwritten: the next free name (``NAME-2``, ``NAME-3``...) is taken
when the run commits (so two identical runs started together both keep their
result), unless ``replace`` is asked for and the existing directory is an
earlier fincon run of the same kind holding nothing but what that run wrote.

Whose files: a run directory is recognised by its ``run_manifest.json``,
which names the kind of run and lists every file the run wrote (added when
the run commits). A folder that merely holds a ``config.yaml`` or a
``metrics.json`` is not a run, and a run folder the user has since put
files into is not replaced either: the refusal names what is in the way.
Nothing that fincon did not write is ever deleted.

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

from fincon import stopping
from fincon.errors import ConfigError, FinconError
from fincon.files import write_atomic
from fincon.ownership import folder_identity, is_fincon_report, listing, shown, top_level

log = logging.getLogger(__name__)

_PARTIAL = re.compile(r"^\.(?P<name>.+)\.partial-(?P<pid>\d+)(?:@(?P<host>[^@/]+))?$")
#: an earlier run moved aside by a --replace while the new one takes its name (RunDir.commit)
_REPLACED = re.compile(r"^\.(?P<name>.+)\.replaced-(?P<pid>\d+)@(?P<host>[^@/]+)$")


def staging_name(name: str) -> bool:
    """``name`` is a run's staging folder (``.NAME.partial-PID@HOST``): a run not committed, which no
    reader takes for a run."""
    return _PARTIAL.match(name) is not None


#: the file that marks a directory as a fincon run: the kind of run and what it wrote
MANIFEST = "run_manifest.json"
#: run_manifest.json's kind for a directory written by fincon.workflow.runner.run_config
BACKTEST = "backtest"
#: folders a run owns whole: the agents' memory (chromadb names its files itself)
_WHOLE = ("memory",)


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


def _manifest(directory: Path) -> dict | None:
    """``directory``'s run manifest when fincon wrote one (its hashes are there), else None."""
    try:
        data = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    if not isinstance(data, dict) or not {"config_sha256", "data_sha256", "packages"} <= set(data):
        return None
    return data


def run_kind(directory: Path) -> tuple[str | None, set[str] | None]:
    """``(kind, files)`` from ``directory``'s run manifest: ``(None, None)``
    when it has none, or one that is not fincon's or lists no files."""
    data = _manifest(directory)
    if data is None or not isinstance(data.get("kind"), str) or not isinstance(data.get("files"), list):
        return None, None
    return data["kind"], set(data["files"])


def foreign_entries(directory: Path, kind: str, entries: list[str] | None = None) -> list[str] | None:
    """What in ``directory`` an earlier fincon run of ``kind`` did not write:
    None when ``directory`` is no such run at all, else the paths (empty when
    the directory holds only that run's own files). ``entries``: its
    listing, when the caller has it already."""
    found, files = run_kind(directory)
    if found != kind:
        return None
    entries = listing(directory, _WHOLE) if entries is None else entries
    # a report written into the run after it finished (backtest --report, fincon report --out RUN/...)
    entries = [e for e in entries if not (e.endswith(".html") and is_fincon_report(directory / e))]
    return [e for e in entries if e not in (files or ())]


def add_files(directory: Path, written: list[Path]) -> None:
    """Files fincon wrote into a finished run after it was sealed (the charts ``forward score``
    draws into a step's replay): listed in its manifest, so that the next ``--replace`` of the run
    takes them as its own rather than as the user's. Listed before they are drawn (a listed file
    that is absent harms nothing; a drawn one unlisted made every later step refuse the replay), and
    the sealed run's manifest replaced whole."""
    data = _manifest(directory)
    if data is None or not isinstance(data.get("files"), list):
        return
    data["files"] = sorted({*data["files"], *(Path(p).relative_to(directory).as_posix() for p in written)})
    write_json(directory / MANIFEST, data)


def check_replaceable(directory: Path, kind: str) -> None:
    """Refuse, in one line naming what is in the way, to replace ``directory``
    unless it is an earlier fincon run of ``kind`` holding only its own files."""
    if not directory.exists():
        return
    if directory.is_symlink() or not directory.is_dir():
        raise ConfigError(f"--out {directory} is not a fincon run directory; choose another --out")
    entries = listing(directory, _WHOLE)
    if not entries:
        return  # an empty folder: nothing in it to lose
    foreign = foreign_entries(directory, kind, entries)
    if foreign is None:
        found, _ = run_kind(directory)
        entries = top_level(entries)
        present = (directory / MANIFEST).is_file()
        what = (
            f"a fincon {found} run"
            if found
            else (
                f"written by an older fincon: its {MANIFEST} lists no files, so what it wrote cannot be told from yours"
                if _manifest(directory) is not None
                else (f"its {MANIFEST} is not one fincon wrote" if present else f"no {MANIFEST}")
            )
        )
        held = f"; it holds {shown(entries)}" if entries else ""
        raise ConfigError(
            f"--out {directory} is not an earlier fincon {kind} run ({what}{held}); "
            "fincon replaces only what it wrote: choose another --out"
        )
    if foreign:
        raise ConfigError(
            f"--out {directory} holds {shown(foreign)}, which no fincon run wrote; move "
            f"{'it' if len(foreign) == 1 else 'them'} out or choose another --out (nothing was changed)"
        )


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
    process (on this machine) is gone, and the runs a ``--replace`` moved
    aside (``.NAME.replaced-PID@HOST``): put back at ``NAME`` when the process
    was killed before the new run took the name, else removed; each is
    reported on stderr."""
    removed: list[Path] = []
    try:
        entries = list(parent.iterdir())
    except OSError:
        return removed
    for entry in sorted(entries, key=lambda e: not _REPLACED.match(e.name)):  # a run moved aside first
        m = _PARTIAL.match(entry.name) or _REPLACED.match(entry.name)
        if not m or not entry.is_dir() or m.group("host") not in (None, _host()) or _pid_alive(int(m.group("pid"))):
            continue
        final = parent / m.group("name")
        if m.re is _REPLACED and not final.exists():  # killed between the two renames: the earlier run is put back
            entry.rename(final)
            print(f"fincon: {final} put back, moved aside by a --replace killed before it finished", file=sys.stderr)
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

    def __init__(self, final: Path, *, replace: bool = False, kind: str = BACKTEST):
        self.final = final
        self.replace = replace
        self.kind = kind
        if replace:
            check_replaceable(final, kind)
        #: the folder --replace replaces: the one at ``final`` now (None: nothing), never one written there
        #: while this run works (two --replace runs on one --out: each said its run was there, one deleted)
        self._replaces = folder_identity(final) if replace else None
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

    def _seal(self) -> None:
        """Record in the run manifest the kind of run and every file it wrote,
        so a later ``--replace`` knows what is fincon's to remove."""
        path = self.staging / MANIFEST
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = {}
        data["kind"] = self.kind
        data["files"] = sorted({*listing(self.staging, _WHOLE), MANIFEST})
        write_json(path, data)

    def commit(self) -> Path:
        """Rename the staging directory to its final name and return it.

        With ``replace``, the earlier run is checked again (something may
        have been put into it while this run worked, or another command's run
        taken its place): if it is no longer replaceable, this run takes a free ``-N`` name instead, with one line
        saying why, and nothing of the earlier folder is touched."""
        self._seal()
        if self.replace and self.final.exists():
            try:
                check_replaceable(self.final, self.kind)
                if folder_identity(self.final) != self._replaces:
                    raise ConfigError(f"{self.final} was written by another command while this run worked")
            except ConfigError as exc:
                print(f"fincon: {exc}; not replaced", file=sys.stderr)
                self.replace = False
                return self.commit()
            old = self.final.with_name(f".{self.final.name}.replaced-{os.getpid()}@{_host()}")
            # a stop between the renames left the earlier run hidden and removed the new one ("partial
            # output removed"): the swap holds it (sent again after), and a failed rename puts it back
            with stopping.held():
                self.final.rename(old)
                try:
                    self.staging.rename(self.final)
                except OSError:
                    old.rename(self.final)
                    raise
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
        with stopping.held():  # a second stop must not end the removal half way (the folder left behind)
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
    """``obj`` as a run's JSON, written whole or not at all (a sealed run's manifest is rewritten in place)."""
    write_atomic(path, json.dumps(obj, indent=2, sort_keys=True, allow_nan=False, default=_numpy_scalar) + "\n")


def _numpy_scalar(o: Any) -> Any:
    """A numpy number as the Python number it equals (a count summed from numpy bools is an np.int64:
    the paper portfolio form's ended a finished run in a traceback and no folder, review 2026-12-02).
    Anything else is refused as json refuses it. numpy is not imported here: --help reads this module."""
    if type(o).__module__ == "numpy" and callable(getattr(o, "item", None)) and getattr(o, "shape", None) == ():
        return o.item()
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")
