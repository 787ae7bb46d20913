"""How ``fincon experiment`` runs the independent units of a phase.

An executor is called once per phase with the phase's tasks (picklable,
argument-free callables: :class:`fincon.workflow.experiment_units.Job`) and a
``done(index, result)`` callback that it calls as each task finishes. Units
of one phase never read each other's outputs, so the order in which they run
does not change a file.

* :func:`serial` (``--executor local``, the default): one task after the other
  in this process.
* :class:`~fincon.workflow.process_pool.ProcessPool` (``--workers N``): the
  units of a phase in N local worker processes.
* :class:`~fincon.workflow.ray_executor.RayExecutor` (``--executor ray``): every task is a Ray task, run in
  parallel on a local Ray cluster (``--ray-cpus``) or on an existing one
  (``--ray-address``). Ray is an optional extra: ``pip install 'fincon[ray]'``.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import re
from typing import Annotated, Any, Callable, Iterator, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from fincon import workflow
from fincon.errors import FinconError
from fincon.flag import Flag
from fincon.workflow.unit_failures import Task

#: the help section of the executor's flags
GROUP = "execution (see Scale-out above)"

log = logging.getLogger(__name__)

#: runs independent tasks, calling ``done(index, result)`` as each finishes
Executor = Callable[[Sequence[Task], Callable[[int, Any], None]], None]


def serial(tasks: Sequence[Task], done: Callable[[int, Any], None]) -> None:
    """The default executor: one task after the other, in order; a failure names its unit, as the
    workers' and Ray's do (a damaged beliefs.json of a test unit read "--beliefs: cannot read ...",
    a flag the user never gave, with no unit named)."""
    for i, task in enumerate(tasks):
        try:
            result = task()
        except FinconError as exc:
            name = getattr(task, "name", None)
            if not name or str(name) in str(exc):
                raise
            named = copy.copy(exc)
            named.args = (f"{name}: {exc}",)
            raise named from None
        done(i, result)


class ExecutorSpec(BaseModel):
    """How the units run (``executor:`` in the experiment config; ``--executor``,
    ``--ray-address``, ``--ray-cpus``). Not part of the experiment's identity:
    a local run and a Ray run of one config share their directory and resume
    each other."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # NaN/inf are never settings

    kind: Annotated[
        Literal["local", "ray"],
        Flag(
            "--executor",
            help="local (default): the units on this machine, one after the other in this process or "
            "--workers at a time; ray: each unit as a Ray task, in parallel (pip install 'fincon[ray]')",
            group=GROUP,
        ),
    ] = "local"
    #: local worker processes, i.e. units run at once (None or 1: one after the other in this process)
    workers: Annotated[
        int | None,
        Flag(
            metavar="N",
            help="local executor: run N units at a time in worker processes on this machine (default 1: "
            "one after the other in this process); no Ray needed",
            group=GROUP,
        ),
    ] = Field(None, ge=1, le=1024)
    #: an existing Ray cluster (auto, or HEAD:PORT); None: a local cluster on this machine
    address: Annotated[
        str | None,
        Flag(
            "--ray-address",
            metavar="ADDR",
            help="run on an existing Ray cluster: auto (the one this machine belongs to) or HEAD:PORT "
            "(default: start a local cluster for this command)",
            group=GROUP,
        ),
    ] = None
    #: CPUs of the local Ray cluster, i.e. units run at once (None: every core)
    cpus: Annotated[
        int | None,
        Flag(
            "--ray-cpus",
            metavar="N",
            help="size of the local Ray cluster: units run N at a time (default: every core)",
            group=GROUP,
        ),
    ] = Field(None, ge=1, le=4096)

    @model_validator(mode="before")
    @classmethod
    def _short(cls, data: Any) -> Any:
        return {"kind": data} if isinstance(data, str) else data  # executor: ray

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        if v is None:
            return v
        v = v.strip()
        if not v or any(c.isspace() for c in v):
            raise ValueError("give a Ray cluster address such as auto or 10.0.0.5:6379")
        if "://" in v:
            raise ValueError(
                f"{v!r} is a Ray Client address; fincon's driver must run on a node of the cluster: "
                "join it (ray start --address HEAD:6379) and pass auto or HEAD:6379"
            )
        if v != "auto" and not re.fullmatch(r"(\[[0-9A-Fa-f:]+\]|[^\s:\[\]]+):\d{1,5}", v):
            raise ValueError(f"{v!r} is not a Ray cluster address: give auto or HEAD:PORT (e.g. 10.0.0.5:6379)")
        return v

    @model_validator(mode="after")
    def _ray_only(self):
        if self.kind == "ray" and self.workers is not None:
            raise ValueError("workers (--workers) is for the local executor; Ray sizes itself with cpus (--ray-cpus)")
        if self.kind != "ray":
            for key, flag in (("address", "--ray-address"), ("cpus", "--ray-cpus")):
                if getattr(self, key) is not None:
                    raise ValueError(f"{key} ({flag}) is for the ray executor; set kind: ray (--executor ray)")
        if self.address is not None and self.cpus is not None:
            raise ValueError(
                "cpus (--ray-cpus) sizes a local Ray cluster; an existing cluster (--ray-address) has its own size"
            )
        return self


@contextlib.contextmanager
def open_executor(spec: ExecutorSpec) -> Iterator[Executor]:
    """The executor ``spec`` asks for, for the length of a ``with`` block (a
    Ray cluster started here is shut down at its end)."""
    if spec.kind == "local":
        if (spec.workers or 1) == 1:
            yield serial
            return

        with workflow.ProcessPool(spec.workers or 1) as pool:
            yield pool
        return

    with workflow.RayExecutor(spec.address, spec.cpus) as executor:
        yield executor
