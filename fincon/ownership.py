"""What in a folder fincon wrote, so that nothing else is ever deleted.

A command that replaces an earlier result (``backtest --replace``, ``demo``,
``data import --replace``, a rerun over a failed training's leftovers)
removes a folder. It may only do so when everything in that folder is what
an earlier fincon command of the same kind wrote; anything else (a user's
notes, a data folder, files put into a run directory afterwards) is named in
a one-line refusal and left alone. The run directories, the datasets and the
status-file studies each know their own files; this module holds the one
walk they share and the way a refusal names what it found. fincon's SQLite
files (the call cache, the vector cache, the trial ledger) are checked as
fincon's here too (:func:`sqlite_foreign`), and opened in WAL mode
(:func:`sqlite_wal`) by the one helper that waits for another process.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fincon import stopping
from fincon.errors import ConfigError


def listing(root: Path, whole: tuple[str, ...] = ()) -> list[str]:
    """Every file under ``root`` as a relative POSIX path, and every empty
    folder with a trailing ``/``; symbolic links are listed, never followed.
    A folder named in ``whole`` is one entry (``memory/``), not its files:
    what a library writes inside it has names of its own choosing (chromadb's
    are random), and a listing must be the same for the same run."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        rel = here.relative_to(root)
        for d in [d for d in dirnames if d in whole and not (here / d).is_symlink()]:
            out.append((rel / d).as_posix() + "/")
            dirnames.remove(d)
        links = [d for d in dirnames if (here / d).is_symlink()]
        dirnames[:] = sorted(d for d in dirnames if d not in links)
        for name in [*filenames, *links]:
            out.append((rel / name).as_posix())
        if not dirnames and not filenames and not links and rel != Path("."):
            out.append(rel.as_posix() + "/")
    return sorted(out)


def top_level(paths: list[str]) -> list[str]:
    """The first component of each path (``data/`` for anything in data)."""
    return sorted({p.split("/")[0] + ("/" if "/" in p else "") for p in paths})


def shown(paths: list[str], limit: int = 3) -> str:
    """At most ``limit`` paths, then how many more."""
    more = len(paths) - limit
    return ", ".join(paths[:limit]) + (f" and {more} more" if more > 0 else "")


#: the mark every HTML report fincon writes carries in its head: a file at a
#: report's --out is replaced only when it has it (a page of the user's is not)
REPORT_MARK = '<meta name="generator" content="fincon">'


def is_fincon_report(path: Path) -> bool:
    """Is the file at ``path`` an HTML report fincon wrote?"""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return REPORT_MARK.encode() in head


#: the key every JSON result fincon writes at a user's path carries (``"generator": "fincon ..."``):
#: such a file is replaced by a later run only when it has it (a user's notes are not)
JSON_MARK = "generator"
#: the PNG text chunk ``fincon plot`` writes (``Software: fincon``)
PNG_MARK = b"tEXtSoftware\x00fincon"


def is_fincon_json(path: Path) -> bool:
    """Is the file at ``path`` a JSON result fincon wrote (an object whose
    ``generator`` starts with ``fincon``)?"""

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and str(data.get(JSON_MARK, "")).startswith("fincon")


def is_fincon_png(path: Path) -> bool:
    """Is the file at ``path`` a PNG ``fincon plot`` wrote (its Software chunk says fincon)?"""
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError:
        return False
    return head.startswith(b"\x89PNG") and PNG_MARK in head


def sqlite_wal(conn: sqlite3.Connection, seconds: float = 30.0) -> None:
    """Switch ``conn``'s file to WAL, waiting up to ``seconds`` for another process that holds it. SQLite
    gives the switch no busy wait: two runs creating one file at once (a call cache, the trial ledger)
    had the second fail at once with "database is locked", whatever its busy_timeout said."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def sqlite_read_only(path: Path, timeout: float = 30.0, **kwargs) -> sqlite3.Connection:
    """``path`` opened read only. A WAL database (every cache fincon writes) needs a ``-shm`` file beside
    it to be read, which a read-only folder or a full disk cannot hold: a healthy cache was then called
    "not an LLM call cache" and could not be replayed from read-only media (found in review). Without a
    ``-wal`` file whose rows it would miss, it is then read as immutable (nothing can write there)."""
    uri = path.resolve().as_uri()
    conn = sqlite3.connect(f"{uri}?mode=ro", uri=True, timeout=timeout, **kwargs)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError:
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size:
            raise
        conn.close()
        conn = sqlite3.connect(f"{uri}?mode=ro&immutable=1", uri=True, timeout=timeout, **kwargs)
    return conn


def sqlite_foreign(path: Path, tables: dict[str, tuple[str, ...]]) -> str | None:
    """Why the file at ``path`` is not one of fincon's SQLite files made of
    ``tables`` (name -> the columns fincon writes), or None when it is one, or
    is missing or empty (a new file fincon may create). A user's own
    database, a text file or a file whose ``trials`` table has other columns
    is never altered: opening it with ``CREATE TABLE IF NOT EXISTS`` would add
    a table to it in silence."""

    try:
        if not path.exists() or path.stat().st_size == 0:
            return None
        with open(path, "rb") as fh:
            if fh.read(16) != b"SQLite format 3\x00":
                return "it is not a SQLite file"
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    try:
        conn = sqlite_read_only(path)
    except sqlite3.DatabaseError as exc:  # its first read: a file whose header only is SQLite's
        return f"it is not a readable SQLite database ({' '.join(str(exc).split())})"
    except sqlite3.Error as exc:
        return f"it cannot be opened ({exc})"
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        found = {n: tuple(r[1] for r in conn.execute(f'PRAGMA table_info("{n}")')) for n in names}
    except sqlite3.DatabaseError as exc:
        return f"it is not a readable SQLite database ({' '.join(str(exc).split())})"
    finally:
        conn.close()
    foreign = sorted(n for n in found if n not in tables and not n.startswith("sqlite_"))
    if foreign:
        return f"it holds tables fincon did not write ({shown(foreign)})"
    for name, cols in tables.items():
        if name in found and not set(cols) <= set(found[name]):
            missing = sorted(set(cols) - set(found[name]))
            return f"its {name} table lacks fincon's columns ({shown(missing)})"
    return None


def folder_identity(folder: Path) -> tuple[int, int] | None:
    """Which folder is at ``folder`` (device and inode; one renamed into its place is another), None: none."""
    try:
        st = folder.stat()
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


#: the file in a staging folder naming the folder its --out held when the command began (swap_in reads it)
_WAS = ".fincon-replaces"


@dataclass(frozen=True)
class OwnedFolder:
    """A folder one fincon command writes whole (a dataset, a sample corpus):
    its ``--out`` must be new or empty, or one it wrote before and holds
    nothing else, with ``--replace``. The files are written to a staging
    folder beside ``--out`` and renamed into place, so an interrupted command
    leaves no half-written folder and never a mix of an old one and a new one."""

    #: what the folder is called in messages ("dataset", "sample corpus")
    kind: str
    #: the file that marks a folder of this kind (``dataset.json``, ``README.md``)
    mark: str
    #: who writes it, as messages name it ("fincon import", "`fincon data sample`")
    made_by: str
    #: the files the command that wrote ``out`` made, or None when fincon did not write it
    own_files: Callable[[Path], set[str] | None]

    def holds(self, out: Path) -> bool:
        return (Path(out) / self.mark).is_file()

    def check_out(self, out: Path, replace: bool) -> None:
        """Refuse, in one line and before any work, an ``--out`` this command may not write."""
        if not out.exists():
            for parent in out.parents:
                if parent.exists():
                    if not parent.is_dir():
                        raise ConfigError(f"--out {out}: {parent} is a file, not a folder")
                    break
            return
        if not out.is_dir():
            raise ConfigError(f"--out {out} exists and is a file; choose a new folder")
        if not self.holds(out):
            if any(out.iterdir()):
                raise ConfigError(
                    f"--out {out} exists and is not a fincon {self.kind}; choose a new folder "
                    "(fincon never writes into a folder it did not make)"
                )
            return
        if not replace and self.own_files(out) is not None:
            raise ConfigError(f"--out {out} already holds a {self.kind}; pass --replace to overwrite it")
        self.check_replaceable(out, "--replace" if replace else f"--out {out}")  # a mark not fincon's, files beside

    def check_replaceable(self, out: Path, flag: str = "--replace") -> None:
        """``--replace`` removes a folder only when fincon wrote it and it holds
        nothing else; anything else in it is named (after ``flag``) and left alone."""
        own = self.own_files(out)
        if own is None:
            raise ConfigError(
                f"{flag}: {out}/{self.mark} was not written by fincon; fincon replaces only a {self.kind} "
                f"{self.made_by} wrote: choose a new folder"
            )
        dirs = {str(Path(f).parent) + "/" for f in own if "/" in f}
        foreign = [e for e in listing(out) if e not in own and e not in dirs]
        if foreign:
            raise ConfigError(
                f"{flag}: {out} holds {shown(foreign)}, which no {self.made_by} wrote; move "
                f"{'it' if len(foreign) == 1 else 'them'} out or choose a new folder (nothing was changed)"
            )

    def staging(self, out: Path) -> Path:
        """A fresh staging folder beside ``out`` (renamed into place by :meth:`swap_in`). ``--out .``
        staged inside itself (its name is empty) and failed as "written by another command"; the
        folder a command runs in cannot be swapped for a new one, and is refused."""
        if out.resolve() == Path.cwd().resolve():
            raise ConfigError(f"--out {out} is the folder this command runs in; give a new folder (e.g. --out data)")
        out = out.resolve()
        staging = out.parent / f".{out.name}.partial-{os.getpid()}@{socket.gethostname()}"
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            if staging.exists():
                shutil.rmtree(staging)
            staging.mkdir()
            (staging / _WAS).write_text(json.dumps(folder_identity(out)))
        except OSError as exc:  # a parent folder not writable: was a PermissionError traceback
            raise ConfigError(f"cannot create {out}: {exc.strerror or exc}; choose a folder you can write") from None
        return staging

    def swap_in(self, staging: Path, out: Path, replace: bool) -> None:
        """Rename the finished staging folder to ``out``. Another command that
        finished first into the same ``out`` wins; this one then fails with one
        line instead of overwriting it (``--replace`` swaps the old one out)."""
        taken = ConfigError(  # with --replace given, the advice to pass it would not help (found in review)
            f"--out {out} was written by another command while this one ran; nothing was changed "
            + ("(run the same command again to replace it)" if replace else "(pass --replace to overwrite it)")
        )
        was_file = staging / _WAS
        try:
            was = json.loads(was_file.read_text())
            was_file.unlink()
        except (OSError, ValueError):
            was = None
        # --replace replaces what --out held when this command began: two at once on one --out both said
        # they wrote it, and the second deleted the first's new folder as "the earlier one" (found in review)
        if replace and out.exists() and folder_identity(out) != (tuple(was) if was else None):
            raise taken
        if out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
            try:
                out.rmdir()  # an empty folder given as --out: the new one takes its place
            except OSError:
                pass
        if out.exists():
            if not (replace and self.holds(out)):
                raise taken
            self.check_replaceable(out)  # again: something may have been put into it meanwhile
            old = out.parent / f".{out.name}.replaced-{os.getpid()}"
            # a stop between the two renames left the user's folder hidden under ``old`` and nothing at
            # ``out`` ("partial output removed"): the stop waits for the swap (sent again after it)
            with stopping.held():
                out.rename(old)
                try:
                    staging.rename(out)
                except OSError:
                    old.rename(out)
                    raise
                shutil.rmtree(old, ignore_errors=True)
            return
        try:
            staging.rename(out)
        except OSError:  # created meanwhile (rename onto a non-empty folder fails)
            raise taken from None
