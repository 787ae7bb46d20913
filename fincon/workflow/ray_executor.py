"""The Ray executor (``fincon experiment --executor ray``), and why it is built as it is.

*A worker process serves at most* :data:`UNITS_PER_WORKER` *tasks*
(``max_calls``), one after the other, as the local executor runs every unit
in its one process: a fresh worker pays ~3 s of imports (chromadb,
backtrader, scikit-learn, pandas), which on a rolling evaluation's 108 units
was minutes of 2 cores. The bound keeps what a process holds on to per unit
(chromadb keeps one client per run store's path for the life of the
process) from growing without end.

*Same files as a local run.* Each worker changes to the driver's working
directory before it loads the task (relative paths in the config, such as
``--out`` or the default LLM cache, resolve as they do locally) and gets the
driver's ``OMP_NUM_THREADS`` back (Ray sets it to the task's CPUs when it is
unset; a thread count can change the last bits of a float reduction, e.g. an
embedding). tests/test_experiment_ray.py checks that results.json and every
unit's outputs are byte-identical to a local run's.

*The LLM cache has one owner: the driver's machine.* The cache is one SQLite
file, safe for several processes on one machine (WAL journal, a busy
timeout, and a write transaction that inserts only if the key is new and
reads back the row that won: first writer wins, and every run acts on the
answer its replay will read). SQLite on a network filesystem is not safe:
its locks are not reliable there, and WAL needs shared memory. So the driver
starts one Ray actor, pinned to its own node, that opens every cache file the
units name; in the workers the environment variable
:data:`fincon.llm.cache.SERVER_ENV` names the actor, and
:class:`~fincon.llm.cache.CallCache` reads and writes through it
(:class:`fincon.llm.remote_cache.RemoteCache`). SQLite is then opened on one machine only, and
"first writer wins" holds across every worker of the cluster exactly as it
does for processes sharing the file on one machine: no shard, no merge, no
conflict to resolve afterwards. (Per-task shards merged after the phase were
the alternative; two units asking the same question at the same time would
each act on their own answer, and the one whose answer loses the merge would
no longer replay from the merged cache, so it would have to run again.) The
price is one round trip to the actor per cache lookup (0.8 ms on one 2-core
machine, against 0.006 ms for a local read), small next to a model call.

*A failing unit* does not stop the others: the phase runs to its end (every
other unit keeps its results, so a rerun redoes only what failed), then the
first failure comes back as one line naming its unit (a :class:`FinconError`
with the unit's exit code: 3 for a run that stopped early, 1 for an error
that is not bad input), and how many others failed. No later phase starts.
Running the same command again resumes, as after a local failure. (Skipping
the units that had not started yet would fail sooner, but which ones had
started is a race, and an error that hits every unit, such as a server that
is down, makes them all fail quickly anyway.)

*An existing cluster* (``--ray-address auto`` or ``HEAD:PORT``): this machine
must be a node of the cluster (``ray start --address HEAD:PORT``; Ray Client
``ray://`` addresses are refused: the driver would not run here), every node
needs the same fincon installed, and the experiment directory, the data and
the driver's working directory must be on a filesystem shared at the same path
(run directories are written into staging directories named after their
machine and renamed, which is safe there; the LLM cache stays on this
machine, see above).

*A local cluster* listens on the loopback interface only, with no dashboard
and no usage statistics (``RAY_USAGE_STATS_ENABLED=0``): nothing leaves the
machine. Its workers' output is not forwarded (``log_to_driver=False``).

*A local cluster leaves nothing behind.* Ray's session files (sockets, logs,
spilled objects) go to a fresh directory ``fincon-ray-*`` in the system's temp
folder (``RAY_TMPDIR``, Ray's documented variable), not to Ray's shared
``/tmp/ray``, and that directory is deleted when the cluster stops. Ray 2.5x
turns token authentication on for a new local cluster and saves the token in
``~/.ray/auth_token``; fincon makes a random token for the process' lifetime
and hands it over in the environment (``RAY_AUTH_TOKEN``), so nothing is
written to the home folder.
tests/test_experiment_ray.py lists the home folder, the temp folder and
``/tmp/ray`` before and after a run. Only public Ray APIs and documented
environment variables are used, so a Ray upgrade cannot silently break them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from fincon import llm
from fincon.errors import FinconError
from fincon.workflow.unit_failures import UNITS_PER_WORKER, Task, UnitFailure, one_line, phase_error

log = logging.getLogger(__name__)

RAY_MISSING = "the ray executor needs Ray, an optional extra: pip install 'fincon[ray]'"
#: environment variables Ray changes in its workers that the units must see as the driver does
_DRIVER_ENV = ("OMP_NUM_THREADS", "FINCON_LEDGER")  # the ledger --ledger names: a cluster started apart kept its own
#: the local cluster's object store: tasks and results are small (a pickled unit, a path)
_OBJECT_STORE_BYTES = 256 * 2**20


def _import_ray(local: bool = False):
    """``ray``, or the one-line error naming the extra. For a local cluster,
    Ray's first import in this process happens with its cluster mode off
    (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read once at import): the
    node then announces, and binds to, the loopback address only."""
    try:
        if local and "ray" not in sys.modules:
            with _environment(RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0"):
                import ray
        else:
            import ray
    except ImportError:
        raise FinconError(RAY_MISSING) from None
    return ray


@contextlib.contextmanager
def _restored(*names: str) -> Iterator[None]:
    """Environment variables put back as they were at the start of the block,
    whoever changed them inside it (ray.init sets RAY_AUTH_MODE)."""
    old = {k: os.environ.get(k) for k in names}
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@contextlib.contextmanager
def _environment(**values: str) -> Iterator[None]:
    """Set environment variables for the length of a block (Ray reads them
    while it starts; the processes it starts inherit them)."""
    with _restored(*values):
        os.environ.update(values)
        yield


class RayExecutor:
    """Run tasks as Ray tasks; see the module docstring. Use it as a context
    manager: Ray starts (or connects) on the first non-empty phase and the
    cluster it started stops when the block ends."""

    def __init__(self, address: str | None = None, cpus: int | None = None):
        self.address = address
        self.cpus = cpus
        self._ray = _import_ray(local=address is None)  # fails now, before any unit, when Ray is missing
        if address is not None and not self._ray.is_initialized():
            _check_reachable(address)  # and so does a cluster that is not there
        self._coordinator = None
        self._owns_session = False
        #: the local cluster's environment (temp dir, auth token), set while it runs
        self._session_env = contextlib.ExitStack()
        self._ray_tmp: str | None = None

    def __enter__(self) -> "RayExecutor":
        if self.address is not None:
            # an existing cluster is joined now, before the command writes anything: one that is not
            # there (--ray-address auto on a machine that is no node) must leave no folder behind
            try:
                self._start()
            except BaseException:
                self.close()
                raise
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- the session ---------------------------------------------------------
    def _start(self) -> None:
        if self._coordinator is not None:
            return
        ray = self._ray
        if not ray.is_initialized():  # else: a session the caller opened is used as it is
            self._init()
            self._owns_session = True
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = ray.get_runtime_context().get_node_id()
        self._name = f"fincon-llm-cache-{uuid.uuid4().hex[:12]}"
        self._coordinator = (
            ray.remote(_Coordinator)
            .options(
                name=self._name,
                num_cpus=0,
                max_restarts=0,
                scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=False),
            )
            .remote()
        )
        ray.get(self._coordinator.ping.remote())

    def _init(self) -> None:
        ray = self._ray
        # ray.init replaces the SIGTERM handler; the CLI's (clean exit, status 143) is put back
        handler = signal.getsignal(signal.SIGTERM)
        common = {"log_to_driver": False, "logging_level": logging.ERROR, "include_dashboard": False}
        try:
            if self.address is None:
                self._init_local(common)
            else:
                try:
                    with _environment(RAY_USAGE_STATS_ENABLED="0"):
                        ray.init(address=self.address, **common)
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    raise FinconError(
                        f"cannot connect to the Ray cluster at {self.address} "
                        f"({one_line(exc)}); is this machine a node of it (ray start --address)?"
                    ) from None
        finally:
            if handler is not None and signal.getsignal(signal.SIGTERM) is not handler:
                with contextlib.suppress(ValueError):  # not the main thread
                    signal.signal(signal.SIGTERM, handler)

    def _init_local(self, common: dict[str, Any]) -> None:
        """A cluster on this machine that listens on the loopback interface only
        (see :func:`_import_ray`) and keeps its files in a temp directory of its
        own, with its auth token in the environment (module docstring). The
        variables stay set while the cluster runs: the processes Ray starts
        later (workers) inherit them."""
        self._ray_tmp = tempfile.mkdtemp(prefix="fincon-ray-")
        # RAY_AUTH_MODE stays unset: ray.init then turns token mode on itself
        # (and sets it in this process), finding the token in RAY_AUTH_TOKEN.
        # Ray reads the token once per process, so one token serves every
        # cluster this process starts: it stays in this process' environment.
        os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
        self._session_env.enter_context(_environment(RAY_USAGE_STATS_ENABLED="0", RAY_TMPDIR=self._ray_tmp))
        self._session_env.enter_context(_restored("RAY_AUTH_MODE"))
        try:
            self._ray.init(
                address="local",
                num_cpus=self.cpus or os.cpu_count() or 1,
                object_store_memory=_OBJECT_STORE_BYTES,
                **common,
            )
        except (OSError, RuntimeError, ValueError) as exc:
            self._end_session()
            raise FinconError(f"cannot start a local Ray cluster ({one_line(exc)})") from None
        ip = self._ray.util.get_node_ip_address()
        if not ip.startswith("127.") and ip != "::1":
            log.warning(
                "the local Ray cluster listens on %s, not only on the loopback interface: Ray was imported "
                "before fincon started it (import it with RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 to avoid this)",
                ip,
            )

    def _end_session(self) -> None:
        """Put the environment back and delete the local cluster's temp
        directory (Ray's processes may take a moment to exit and stop
        writing their logs: a few tries, then a warning naming it)."""
        self._session_env.close()
        path, self._ray_tmp = self._ray_tmp, None
        if path is None:
            return
        error: OSError | None = None
        for _ in range(20):
            try:
                shutil.rmtree(path)
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                error = exc
                time.sleep(0.25)
        log.warning(
            "could not delete the local Ray cluster's temp directory %s (%s); delete it by hand", path, one_line(error)
        )

    def close(self) -> None:
        ray = self._ray
        if self._coordinator is not None:
            with contextlib.suppress(Exception):
                ray.get(self._coordinator.close.remote(), timeout=60)
                ray.kill(self._coordinator)
            self._coordinator = None
        if self._owns_session:
            ray.shutdown()
            self._owns_session = False
            self._end_session()

    # -- one phase -----------------------------------------------------------
    def __call__(self, tasks: Sequence[Task], done: Callable[[int, Any], None]) -> None:
        if not tasks:
            return
        self._start()
        ray = self._ray
        from ray import cloudpickle

        names = [str(getattr(t, "name", None) or f"task {i + 1}") for i, t in enumerate(tasks)]
        env = {k: os.environ.get(k) for k in _DRIVER_ENV}
        work = ray.remote(num_cpus=1, max_calls=UNITS_PER_WORKER, max_retries=0)(_work)
        refs = {work.remote(cloudpickle.dumps(t), str(Path.cwd()), env, self._name): i for i, t in enumerate(tasks)}
        pending = list(refs)
        failures: list[tuple[str, UnitFailure]] = []
        try:
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    i = refs[ref]
                    try:
                        status, value = ray.get(ref)
                    except ray.exceptions.RayError as exc:  # the worker died (killed, out of memory, node lost)
                        status, value = (
                            "failed",
                            UnitFailure(f"its Ray worker died ({type(exc).__name__}: {_first_line(exc)})", 1, ""),
                        )
                    if status == "ok":
                        done(i, value)
                    else:
                        failures.append((names[i], value))
        except BaseException:
            for ref in pending:  # interrupted: stop what is still running (its staging dirs are removed)
                with contextlib.suppress(Exception):
                    ray.cancel(ref)
            raise
        if failures:
            raise phase_error(failures)


def _check_reachable(address: str) -> None:
    """Fail in seconds, in one line, when the cluster's GCS does not answer
    (ray.init would retry for minutes, logging every attempt). ``auto`` is
    left to ray.init, which fails at once when it finds no cluster."""
    if address == "auto":
        return
    try:
        host, port = address.rsplit(":", 1)
        socket.create_connection((host.strip("[]"), int(port)), timeout=10).close()
    except (OSError, ValueError) as exc:  # ConnectionError (no cluster found) is an OSError
        raise FinconError(
            f"cannot reach the Ray cluster at {address} ({one_line(exc) or type(exc).__name__}); "
            "start it (ray start --head) or join this machine to it (ray start --address HEAD:6379)"
        ) from None


def _work(blob: bytes, cwd: str, env: dict[str, str | None], server: str) -> tuple[str, Any]:
    """One task in its own Ray worker process: ("ok", result) or ("failed", UnitFailure)."""

    from ray import cloudpickle

    # before the task is unpickled (and imports its libraries): the driver's view
    for key, value in env.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    os.environ[llm.SERVER_ENV] = server
    try:
        os.chdir(cwd)
    except OSError as exc:
        return "failed", UnitFailure(
            f"the driver's working directory {cwd} is not on Ray node {socket.gethostname()} "
            f"({exc.strerror}); the experiment needs a filesystem shared at the same path",
            2,
            "",
        )
    try:
        return "ok", cloudpickle.loads(blob)()
    except FinconError as exc:
        return "failed", UnitFailure(" ".join(str(exc).split()), exc.exit_code, traceback.format_exc(), fincon=True)
    except Exception as exc:
        return "failed", UnitFailure(f"{type(exc).__name__}: {one_line(exc)}", 1, traceback.format_exc())


def _first_line(exc: BaseException) -> str:
    lines = [x.strip() for x in str(exc).splitlines() if x.strip()]
    return lines[0][:300] if lines else ""


# -- the LLM cache, owned by the driver's machine ----------------------------------


class _Coordinator:
    """The driver's agent in the cluster (a Ray actor on the driver's node): it
    owns the LLM cache files the units open."""

    def __init__(self):
        os.environ.pop(llm.SERVER_ENV, None)  # its own caches are the real files
        self._caches: dict[tuple[str, str], Any] = {}

    def ping(self) -> bool:
        return True

    def cache(self, path: str, mode: str, method: str, *args, **kwargs) -> tuple[str, Any]:
        """Call ``method`` of the cache at ``path`` opened in ``mode``; an error
        comes back as a value, raised again in the worker (:class:`~fincon.llm.remote_cache.RemoteCache`)."""

        try:
            cache = self._caches.get((path, mode))
            if cache is None:
                cache = self._caches[(path, mode)] = llm.CallCache(path, mode)
            return "ok", (getattr(cache, method)(*args, **kwargs) if method != "open" else None)
        except Exception as exc:
            try:  # the worker gets the exception itself (CacheMiss, LLMError) when it survives pickling
                pickle.loads(pickle.dumps(exc))
            except Exception:
                exc = FinconError(f"LLM cache {path}: {type(exc).__name__}: {one_line(exc)}")
            return "error", exc

    def close(self) -> None:
        for cache in self._caches.values():
            cache.close()
        self._caches.clear()
