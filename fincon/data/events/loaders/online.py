"""Helpers shared by the online loaders: reachability check and disk cache."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import socket
from pathlib import Path
from typing import Any, Sequence

from fincon.data.events.model import Event
from fincon.errors import SourceUnavailable
from fincon.files import write_atomic


def cache_root(cache_dir: str | Path | None) -> Path:
    if cache_dir:
        return Path(cache_dir)
    base = os.environ.get("FINCON_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "fincon")
    return Path(base)


def require_reachable(host: str, what: str, cached_hint: str, timeout: float = 3.0, port: int = 443) -> None:
    """Fail within ``timeout`` seconds (DNS + TCP) instead of a library's long retries."""

    pool = cf.ThreadPoolExecutor(max_workers=1)
    try:
        # getaddrinfo has no timeout of its own: bound the DNS lookup too
        pool.submit(socket.getaddrinfo, host, port).result(timeout=timeout)
        socket.create_connection((host, port), timeout=timeout).close()
    except (OSError, cf.TimeoutError) as exc:
        raise SourceUnavailable(
            f"{what} is unreachable ({host}: {exc.__class__.__name__}) and {cached_hint}; "
            f"connect to the internet or use the bundled sample / an event directory"
        ) from exc
    finally:
        pool.shutdown(wait=False)


def write_events(path: Path, events: Sequence[Event]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, "".join(e.to_json() + "\n" for e in events))


def read_events(path: Path) -> list[Event]:
    return [Event.from_dict(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(obj, sort_keys=True))
