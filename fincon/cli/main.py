"""Entry point of the ``fincon`` console script.

Sub-command modules are listed in :data:`COMMANDS`; each one names its
command (``COMMAND``), says what it is (``SUMMARY``, the line of ``fincon
--help``; ``HELP`` and ``EXAMPLES``, the top and foot of its own ``--help``,
or None) and ``register(parser)`` adds its flags to the parser made here and
sets ``func``. User errors
(:class:`fincon.errors.FinconError`, bad flags) become one line on stderr
and exit 2. Building the parser imports no numerical library (each command
imports its work lazily), so ``fincon --help`` answers at once.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import logging
import os
import signal
import sys
from typing import Iterator

from fincon import __version__, cli, stopping, workflow
from fincon.errors import FinconError

COMMANDS = (
    "fincon.cli.backtest",
    "fincon.cli.train",
    "fincon.cli.eval",
    "fincon.cli.experiment",
    "fincon.cli.demo",
    "fincon.cli.explain",
    "fincon.cli.report",
    "fincon.cli.ledger",
    "fincon.cli.forward",
    "fincon.cli.plot",
    "fincon.cli.data",
    "fincon.cli.transcribe",
    "fincon.cli.llm",
)

EPILOG = """\
examples:
  fincon backtest --ticker TSLA --strategy buy-and-hold --start 2022-10-05 --end 2023-06-09
  fincon backtest --tickers TSLA,MSFT,PFE --strategy markowitz --start 2022-10-05 --end 2023-06-09
  fincon plot runs/demo/fincon runs/demo/sma-cross --out compare.png

Run `fincon COMMAND --help` for the options of one command.

exit status:
  0    every run completed
  2    bad input or a failure before anything finished (one line on stderr;
       no run directory is left, and nothing of yours is touched)
  3    a run stopped early (LLM server gone, token budget spent): its
       decisions are saved up to the last finished day, its book to the
       stopped day's close, and it is marked stopped_early
  130  interrupted (Ctrl-C); 143 terminated (SIGTERM): partial output removed
"""

EXIT_STOPPED = 3


class Terminated(BaseException):
    """SIGTERM, raised in the main thread so every ``with`` block (staging
    run directories, caches) cleans up on the way out."""


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error: the usage block is noise when one
    flag value is wrong; ``--help`` shows it. No abbreviations (every
    subcommand's parser is one of these): ``--cash 5000 --cas 100`` ran with
    $100, past the check that refuses a flag given twice."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str):  # type: ignore[override]
        self.exit(2, f"fincon: error: {message} (see `{self.prog} --help`)\n")


@contextlib.contextmanager
def _stoppable() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` and Ctrl-C KeyboardInterrupt in the
    main thread while the command runs, also when the stop was lost on its
    way out (:mod:`fincon.stopping`): swallowed by a finalizer (sent again),
    or turned into another error (that error ends the command as the stop,
    its notes kept). The handlers and hook before are put back after. In
    embedded use (not the main thread) signals are left alone."""
    try:
        undo = stopping.install({signal.SIGTERM: Terminated, signal.SIGINT: KeyboardInterrupt})
    except ValueError:  # not the main thread
        yield
        return
    try:
        yield
    except BaseException as exc:
        stop = stopping.received()
        if stop is None or isinstance(exc, stop):
            raise
        instead = stop()  # e.g. shutil.rmtree's 'Bad file descriptor': what the user did was stop the command
        instead.__notes__ = list(getattr(exc, "__notes__", ()))
        raise instead from exc
    finally:
        undo()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``fincon`` parser; ``command``: build only that command's flags.

    Every other command gets its name and summary, which is all ``fincon
    --help`` and an unknown command's error show. A command line names one
    command, and every command's flags took 12-15 ms to build against 2-4 ms
    for one (``main`` runs ~1,000 times in-process in the suite: 10 % of the
    fast tier's CPU). None builds them all (the docs' checks walk them)."""
    parser = _Parser(
        prog="fincon",
        description="Backtest trading strategies and LLM agent teams on point-in-time data.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fincon {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(name)
        if command is None or command == module.COMMAND:
            module.register(
                sub.add_parser(
                    module.COMMAND,
                    help=module.SUMMARY,
                    description=module.HELP,
                    epilog=module.EXAMPLES,
                    formatter_class=argparse.RawDescriptionHelpFormatter,
                )
            )
        else:
            sub.add_parser(module.COMMAND, help=module.SUMMARY)
    return parser


def _named(argv: list[str]) -> str:
    """The command ``argv`` names: its first word that is not a flag (none of
    ``fincon``'s own flags takes a value); "" when it names none."""
    return next((a for a in argv if not a.startswith("-")), "")


def _command_parser(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the (sub)command ``argv`` names (``fincon data import``'s, not ``fincon``'s)."""
    deepest = parser
    for word in (a for a in argv if not a.startswith("-")):
        sub = next((a for a in deepest._actions if isinstance(a, argparse._SubParsersAction)), None)
        if sub is None or word not in sub.choices:
            break
        deepest = sub.choices[word]
    return deepest


def _refuse_repeated(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A flag that takes one value given twice (``--strategy a --strategy b``, ``--ticker A --tickers
    B``): argparse keeps the last and the first was dropped without a word."""
    deepest, seen = _command_parser(parser, argv), {}
    for word in (a.split("=")[0] for a in argv if a.startswith("--") and a != "--"):
        action = deepest._option_string_actions.get(word)
        if type(action) is not argparse._StoreAction:  # an append (--param), a switch, or none
            continue
        if action.dest in seen:
            both = (
                f"{word} given twice" if seen[action.dest] == word else f"{seen[action.dest]} and {word} set one value"
            )
            deepest.error(f"{both}: the last would replace the first; give it once (a flag that takes a list takes "
                          "one comma-separated word: --strategy A,B)")  # fmt: skip
        seen[action.dest] = word


def _refuse_unknown(parser: argparse.ArgumentParser, argv: list[str], unknown: list[str]) -> None:
    """Words no parser took, refused by the command they were typed for (its ``--help``, not
    ``fincon --help``), with the flag each mistyped one is closest to (``--simulated``: did you
    mean ``--simulate-from``?)."""
    import difflib

    deepest = _command_parser(parser, argv)
    flags = [o for a in deepest._actions for o in a.option_strings if o.startswith("--")]
    near = [
        f"{word.split('=')[0]}: did you mean {close[0]}?"
        for word in unknown
        if word.startswith("--") and (close := difflib.get_close_matches(word.split("=")[0], flags, n=1, cutoff=0.75))
    ]
    deepest.error(f"unrecognized arguments: {' '.join(unknown)}" + (f" ({'; '.join(near)})" if near else ""))


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(_named(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        _refuse_unknown(parser, argv, unknown)
    _refuse_repeated(parser, argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        with _stoppable():
            return int(args.func(args) or 0)
    except FinconError as exc:
        print(f"fincon: error: {cli.as_typed(' '.join(str(exc).split()), args)}", file=sys.stderr)
        return exc.exit_code
    except (KeyboardInterrupt, Terminated) as exc:
        print(f"fincon: {'interrupted' if isinstance(exc, KeyboardInterrupt) else 'terminated'}; {_left(exc)}",
              file=sys.stderr)  # fmt: skip
        return 130 if isinstance(exc, KeyboardInterrupt) else 143
    except BrokenPipeError:
        # stdout closed early (e.g. piped into `head`): not an error of ours
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # a full (or read-only) disk: a 54-line traceback from whichever library wrote last
        full = isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS)
        if not (full or "disk is full" in str(exc)):
            raise
        where = f"{exc.filename}: " if isinstance(exc, OSError) and exc.filename else ""
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else "database or disk is full"
        print(f"fincon: error: {where}{why}; free some space (or write elsewhere) and run the same command again "
              f"({_left(exc)})", file=sys.stderr)  # fmt: skip
        return 1


def _left(exc: BaseException) -> str:
    """What a stop left behind: a study (train, experiment) keeps its finished
    units to resume from (fincon.workflow.status.marking notes where); any
    other command removed its partial output."""

    said = [n[len(workflow.KEPT) :] for n in getattr(exc, "__notes__", ()) if n.startswith(workflow.KEPT)]
    if said:
        return said[-1]
    kept = [n[len(workflow.RESUMABLE) :] for n in getattr(exc, "__notes__", ()) if n.startswith(workflow.RESUMABLE)]
    if kept:
        return f"the finished units are kept in {kept[-1]}: run the same command to resume"  # the outermost study
    return "partial output removed"


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
