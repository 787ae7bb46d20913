"""Run the independent LLM calls of one day concurrently, in a fixed order.

Results come back in the order the tasks were given, never in completion
order, and the ledger only sums integers per (agent, day), so a run's outputs
do not depend on which call finished first. The first failing task (in input
order) re-raises its exception after every task has finished, so no call is
left running behind the caller's back.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence, TypeVar

R = TypeVar("R")


def run_concurrently(tasks: Sequence[Callable[[], R]], limit: int = 4) -> list[R]:
    """Call every task with at most ``limit`` in flight; return results in input order."""
    if limit < 1:
        raise ValueError(f"concurrency limit must be >= 1, not {limit}")
    if len(tasks) <= 1 or limit == 1:
        return [t() for t in tasks]
    with ThreadPoolExecutor(max_workers=min(limit, len(tasks)), thread_name_prefix="fincon-llm") as pool:
        futures = [pool.submit(t) for t in tasks]
        outcomes = []
        for f in futures:
            exc = f.exception()
            outcomes.append((exc, None if exc else f.result()))
    for exc, _ in outcomes:
        if exc is not None:
            raise exc
    return [r for _, r in outcomes]
