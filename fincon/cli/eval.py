"""``fincon eval``: evaluations that score a part of the team against known
answers (not backtests). Each evaluation is one module exposing
``register(subparsers)``; listed in :data:`EVALS`, imported lazily."""

from __future__ import annotations

import argparse
import importlib

#: name -> module with register(sub)
EVALS = {
    "numeric": "fincon.eval.numeric",
    "debate": "fincon.eval.debate",
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="score parts of the team against known answers (numeric critics, debate)",
                       description=__doc__.split("\n\n")[0])
    inner = p.add_subparsers(dest="eval", metavar="EVAL", required=True)
    for name, module in EVALS.items():
        try:
            importlib.import_module(module).register(inner)
        except ModuleNotFoundError as exc:  # an evaluation not written yet
            if exc.name != module:
                raise
