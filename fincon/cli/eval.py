"""``fincon eval``: evaluations that score a part of the team against known
answers (not backtests). Each evaluation is one module exposing
``register(subparsers)``; listed in :data:`EVALS`.

The evaluation modules import the team (pandas, numpy, ...), and
``fincon --help`` must stay light, so each evaluation is registered here as a
stub that takes its arguments unparsed; the module is imported, and its own
parser built, only when that evaluation runs (``fincon eval numeric --help``
shows its full help)."""

from __future__ import annotations

import argparse
import importlib

#: name -> (module with register(sub), one-line help)
EVALS = {
    "numeric": ("fincon.eval.numeric",
                "numeric critics: exact match of an analyst alone, with one critic, with both"),
    "debate": ("fincon.eval.debate",
               "debate: direction accuracy of the call reports at 1/5/20 days, with and without the debate round"),
}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("eval", help="score parts of the team against known answers (numeric critics, debate)",
                       description=__doc__.split("\n\n")[0])
    inner = p.add_subparsers(dest="eval", metavar="EVAL", required=True)
    for name, (module, text) in EVALS.items():
        # "+" as the option prefix: every "-..." argument is passed through to the real parser
        stub = inner.add_parser(name, help=text, add_help=False, prefix_chars="+")
        stub.add_argument("args", nargs="*")
        stub.set_defaults(func=_runner(name, module))


def _runner(name: str, module: str):
    def run(args: argparse.Namespace) -> int:
        from fincon.cli.main import _Parser

        real = _Parser(prog="fincon eval")
        importlib.import_module(module).register(real.add_subparsers(parser_class=_Parser))
        ns = real.parse_args([name, *args.args])
        return ns.func(ns)

    return run
