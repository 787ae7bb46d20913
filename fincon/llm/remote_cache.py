"""A worker's view of an LLM cache file owned by another machine's process.

In the worker processes of ``fincon experiment --executor ray`` the cache
files are opened on the driver's machine only, by one Ray actor (SQLite is
not safe on a network filesystem, and one owner keeps "first writer wins"
across machines; the why is in :mod:`fincon.workflow.executors`, which starts
the actor). :class:`~fincon.llm.cache.CallCache` delegates to
:class:`RemoteCache` when :data:`~fincon.llm.cache.SERVER_ENV` names that
actor. It lives in the LLM layer, beside the cache it stands for, so the
cache never imports the workflow that runs it; it imports Ray only when built.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class RemoteCache:
    """A worker's view of one cache file held by the driver's
    :class:`fincon.workflow.ray_executor._Coordinator` (a Ray actor);
    :class:`~fincon.llm.cache.CallCache` delegates to it when
    :data:`~fincon.llm.cache.SERVER_ENV` is set."""

    def __init__(self, server: str, path: Path, mode: str):
        import ray

        self._ray = ray
        self._actor = ray.get_actor(server)
        self._where = (str(Path(path).absolute()), str(getattr(mode, "value", mode)))
        self._call("open")  # a file that is not a usable cache fails now, as a local one does

    def _call(self, method: str, *args, **kwargs) -> Any:
        status, value = self._ray.get(self._actor.cache.remote(*self._where, method, *args, **kwargs))
        if status == "error":
            raise value
        return value

    def get(self, key: str):
        return self._call("get", key)

    def put(self, key: str, **fields: Any):
        return self._call("put", key, **fields)

    def __len__(self) -> int:
        return self._call("__len__")

    def rows(self) -> list[dict[str, Any]]:
        return self._call("rows")
