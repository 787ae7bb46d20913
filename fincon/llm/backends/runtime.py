"""The local model runtime (llama-cpp-python), built the first time a live
local model is needed.

Why lazily: PyPI serves no wheel of llama-cpp-python (0.3.36, nor any other
version), so installing it compiles llama.cpp: about 6 minutes on 2 cores,
most of a fresh ``make demo``, which replays its model calls from a cache
and never loads a model. So ``make demo`` does not install it, and the first
live call of the local backend builds it here, once, into the running
interpreter's environment (the same command and flags as ``make
install-llm-extras``, which ``make test`` runs), after one line saying so.

Two processes that need it at once (xdist workers, Ray workers) take a file
lock: one builds, the other waits and then imports the result. A failed
build is one error line naming its log and the command to run by hand.
``FINCON_NO_RUNTIME_BUILD=1`` turns the build off (the error line only).
"""

from __future__ import annotations

import fcntl
import importlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from fincon.llm.errors import LLMError

#: what ``make install-llm-extras`` installs; keep the two in step
REQUIREMENT = "llama-cpp-python[server]==0.3.36"
#: GGML_NATIVE=OFF keeps the built wheel portable between machines (pip caches it)
CMAKE_ARGS = "-DGGML_NATIVE=OFF"
#: the measured one-time cost, told before the build starts
EXPECTED = "~6 min on 2 cores"


def _importable() -> bool:
    importlib.invalidate_caches()
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        return False
    return True


def _constraints() -> Path | None:
    """constraints.txt of a source checkout (pins the server extra's
    dependencies to the tested versions); None for an installed package."""
    path = Path(__file__).resolve().parents[3] / "constraints.txt"
    return path if path.is_file() else None


def build_command() -> list[str]:
    cmd = [sys.executable, "-m", "pip", "install", "--quiet"]
    if (c := _constraints()) is not None:
        cmd += ["-c", str(c)]
    return cmd + [REQUIREMENT]


def by_hand() -> str:
    """The command a user runs to build it themselves."""
    return f"CMAKE_ARGS={shlex.quote(CMAKE_ARGS)} " + " ".join(shlex.quote(x) for x in build_command())


def _lock_path() -> Path:
    for d in (Path(sys.prefix), Path(tempfile.gettempdir())):
        if os.access(d, os.W_OK):
            return d / ".fincon-llama-build.lock"
    return Path(tempfile.gettempdir()) / ".fincon-llama-build.lock"  # pragma: no cover - raises below at open


def ensure_llama_cpp(notice=None) -> None:
    """Import llama_cpp, building it first if it is missing (see the module
    docstring). ``notice`` prints a line (default: stderr, flushed)."""
    if _importable():
        return
    say = notice or (lambda line: print(line, file=sys.stderr, flush=True))
    if os.environ.get("FINCON_NO_RUNTIME_BUILD"):
        raise LLMError(
            f"the local backend needs llama-cpp-python (FINCON_NO_RUNTIME_BUILD is set, so fincon "
            f"does not build it); build it with `make install-llm-extras` or: {by_hand()}"
        )
    with open(_lock_path(), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building it right now
        if _importable():
            return
        say(f"fincon: building the local model runtime (llama-cpp-python, one time, {EXPECTED})...")
        log = Path(tempfile.gettempdir()) / f"fincon-llama-build-{os.getpid()}.log"
        t0 = time.monotonic()
        with open(log, "w") as out:
            code = subprocess.call(
                build_command(),
                env={**os.environ, "CMAKE_ARGS": CMAKE_ARGS},
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        took = time.monotonic() - t0
        if code != 0 or not _importable():
            raise LLMError(
                f"building llama-cpp-python failed after {took:.0f} s (exit {code}; log {log}); "
                f"build it by hand: {by_hand()}"
            )
        say(f"fincon: local model runtime built in {took / 60:.1f} min; later runs use it directly")
        log.unlink(missing_ok=True)
