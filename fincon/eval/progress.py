"""The progress bar of an evaluation: its questions, with a rate and an ETA.

Why: ``fincon eval lookahead --samples 50`` asks the bundled 1.5B some 400
questions at 5-30 s each on a laptop, an hour or more with nothing on the
screen, which looks like a hang. Each evaluation wraps the loop over its
questions (or filings, or debated events) in :func:`each`: on stderr, shown
after 2 s and cleared at the end, like a backtest's bar, so a run from the
cache or on the rules brain prints nothing; ``--no-progress`` hides it.
"""

from __future__ import annotations

import sys
from typing import Iterator, Sequence, TypeVar

from tqdm import tqdm

T = TypeVar("T")


def bar(total: int, what: str, enabled: bool, unit: str = "question") -> tqdm:
    """A bar of ``total`` ``unit``s named ``what`` (``update()`` it), drawn when ``enabled``."""
    return tqdm(
        total=total,
        desc=what,
        unit=unit,
        delay=2.0,
        disable=not enabled,
        file=sys.stderr,
        leave=False,
        dynamic_ncols=True,
    )


def each(items: Sequence[T], what: str, enabled: bool, unit: str = "question") -> Iterator[T]:
    """``items`` one by one, counted on a bar named ``what`` when ``enabled``."""
    with bar(len(items), what, enabled, unit) as b:
        for item in items:
            yield item
            b.update()
