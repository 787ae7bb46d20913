"""``fincon eval``: evaluations that score a part of the team against known
answers (not backtests). The evaluations themselves are plain functions in
:mod:`fincon.eval` (``run(...)`` returns the results, ``report(res)`` the
table as text); this module builds their parsers and turns the LLM flags
into a client.

The evaluation modules import the team (pandas, numpy, ...), and
``fincon --help`` must stay light, so each one is imported only when its
command runs."""

from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

from pydantic import Field

from fincon import agents, data as fincon_data, eval as fincon_eval, llm, workflow
from fincon.cli.args import check_output_file, write_text_atomic
from fincon.cli.flags import Args, action
from fincon.cli.llm import add_llm_arguments, settings_from_args
from fincon.errors import ConfigError, DataError
from fincon.files import json_text
from fincon.flag import Flag
from fincon.llm.settings import build_client
from fincon.ownership import JSON_MARK, is_fincon_json
from fincon.workflow.journal import journal_hint

NUMERIC = """\
The numeric critics scored as the paper scores them (exact match of an
analyst alone, with the data-extraction critic, with both critics) on
questions about the bundled synthetic filings and calls."""

DEBATE = """\
Direction accuracy of the debate protocol's call reports against the
realised return, with and without the debate round."""


#: the out file of an evaluation: the table and every row as JSON (one meaning of --out across commands)
OUT_HELP = "also write the table and every {what} as JSON"


def _out(what: str) -> Any:
    return Flag(metavar="FILE", help=OUT_HELP.format(what=what))


#: the bar of the questions asked (an hour of a 1.5B's calls shows its ETA); on stderr, after 2 s
NO_PROGRESS = Flag(help="hide the progress bar")


class NumericArgs(Args):
    brain: Annotated[
        Literal["rules", "llm"],
        Flag(help="rules (deterministic baseline and critics, default) or llm (every agent a model call)"),
    ] = "rules"
    limit: Annotated[int | None, Flag(metavar="N", help="at most N questions (spread over the question kinds)")] = (
        Field(None, ge=1)
    )
    split: Annotated[
        Literal["test", "dev", "all"],
        Flag(help="which documents to score (default test: never in a prompt's example)"),
    ] = "test"
    format: Annotated[
        Literal["synthetic", "finqa"],
        Flag(
            help="synthetic: questions over the bundled filings (default); finqa: FinQA's published JSON "
            "(--data; download from https://github.com/czyssrs/FinQA, dataset/test.json)"
        ),
    ] = "synthetic"
    data: Annotated[Path | None, Flag(metavar="FILE.json", help="the FinQA file of --format finqa")] = None
    out: Annotated[Path | None, _out("answer")] = None
    no_progress: Annotated[bool, NO_PROGRESS] = False


class DebateArgs(Args):
    brain: Annotated[
        Literal["rules", "llm"],
        Flag(help="rules (deterministic specialists and debate, default) or llm (every role a model call)"),
    ] = "rules"
    tickers: Annotated[list[str] | None, Flag(metavar="T", help="tickers of the sample corpus (default all 11)")] = None
    transcripts: Annotated[
        Literal["text", "whisper"] | None,
        Flag(
            help="read the call's text (default, fast) or hear its audio through Whisper (cached); the sample "
            "calls only"
        ),
    ] = None
    dataset: Annotated[
        list[Path] | None,
        Flag(
            metavar="DIR",
            help="score the debate on the 10-Q/10-K filings of imported datasets (fincon data import "
            "investorbench ...) instead of the sample calls, beside always-bullish and the news "
            "sentiment tags",
        ),
    ] = None
    retrieval_model: Annotated[
        str | None,
        Flag(
            metavar="NAME",
            help="a sentence-transformers model (directory or hub name, e.g. a finance-tuned one) for the "
            "debate's retrieval over filings (--dataset; default: the offline embedder)",
        ),
    ] = None
    out: Annotated[Path | None, _out("call")] = None
    no_progress: Annotated[bool, NO_PROGRESS] = False


class ExtractionArgs(Args):
    dataset: Annotated[
        list[Path],
        Flag(
            required=True,
            metavar="DIR",
            help="imported datasets (fincon data import investorbench ...): their 10-Q/10-K are the set",
        ),
    ]
    brain: Annotated[
        Literal["rules", "llm"],
        Flag(help="rules (the filing's sentence restated, the rules critic) or llm (both model calls)"),
    ] = "rules"
    per_filing: Annotated[int, Flag(metavar="N", help="figures restated per filing (default {default})")] = Field(
        8, ge=1
    )
    out: Annotated[Path | None, _out("case")] = None
    no_progress: Annotated[bool, NO_PROGRESS] = False


class LeakageArgs(Args):
    run: Annotated[
        Path,
        Flag("run", required=True, metavar="RUN_DIR",
             help="a run, comparison, training or experiment directory of a strategy that called a model"),
    ]  # fmt: skip
    against: Annotated[
        list[Path],
        Flag(metavar="DIR", help="more datasets (fincon data import) whose firms the vocabulary adversary tells apart"),
    ] = Field(default_factory=list)
    threshold: Annotated[
        float,
        Flag(
            metavar="SHARE",
            help="the share of prompts giving away firm and day above which the run is not blind, and under "
            "which the Wilson interval must lie, of the prompts and of the days, for a blind verdict (default "
            "{default:.2f})",
        ),
    ] = Field(0.10, ge=0, le=1)
    llm_cache_path: Annotated[
        Path | None,
        Flag(metavar="FILE", help="the call cache the run used, when it is not where its config.yaml says"),
    ] = None
    as_json: Annotated[bool, Flag("--json", help="print the audit as JSON (every prompt's row included)")] = False


class LookaheadArgs(Args):
    ticker: Annotated[str, Flag(required=True, metavar="T", help="the ticker to probe")]
    start: Annotated[dt.date, Flag(required=True, help="first day of the window")]
    end: Annotated[dt.date, Flag(required=True, help="last day of the window")]
    data: Annotated[
        Path | None,
        Flag(metavar="DIR", help="a dataset (fincon data import): its prices and items (default: the bundled sample)"),
    ] = None
    samples: Annotated[int, Flag(metavar="N", help="decision days and items (default {default})")] = Field(
        50, ge=1, le=10_000
    )
    seed: Annotated[int, Flag(metavar="S", help="sampling seed (default {default})")] = Field(0, ge=0, le=2**32 - 1)
    run: Annotated[
        Path | None,
        Flag(
            metavar="RUN_DIR",
            help="also audit a masked team run on this window (fincon eval leakage): a run whose prompts are not "
            "blind is never cleared by the masked verdict",
        ),
    ] = None
    out: Annotated[Path | None, _out("row and every question")] = None
    no_progress: Annotated[bool, NO_PROGRESS] = False


COMMAND = "eval"
SUMMARY = "score parts of the team against known answers; probe and audit what a model knows"
HELP = """\
Evaluations that score a part of the team against known answers (not
backtests): numeric critics, debate, extraction, look-ahead probes and
leakage audits. `fincon eval EVAL --help` gives each one's flags."""
EXAMPLES = None


def register(p: argparse.ArgumentParser) -> None:
    inner = p.add_subparsers(dest="eval", metavar="EVAL", required=True)
    numeric = "numeric critics: exact match of an analyst alone, with one critic, with both"
    add_llm_arguments(action(inner, "numeric", NumericArgs, _numeric, help=numeric, description=NUMERIC))
    debate = "debate: direction accuracy of the call reports at 1/5/20 days, with and without the debate round"
    add_llm_arguments(action(inner, "debate", DebateArgs, _debate, help=debate, description=DEBATE))
    extraction = "the extraction critic on real filings: restated figures, half perturbed in code; precision and recall of its flags"
    add_llm_arguments(action(inner, "extraction", ExtractionArgs, _extraction, help=extraction))
    _register_lookahead(inner)
    _register_leakage(inner)


LOOKAHEAD = """\
Does the model remember the window? Recall: for N decision days sampled
from --start..--end, up or down over the next 5 and 20 trading days and the
bucket of the close 20 days later, scored against the real prices (answers
no backtest prompt contains). Re-identification: N items of the corpus, and
the model names the company and the year. Each row: accuracy, the chance
rate it is tested against, a Wilson 95 % interval and a one-sided binomial
p-value. With --anonymize both probes are asked again on masked text.
Cached like every call: --llm-cache replay repeats a probe without a model."""


LEAKAGE = """\
Could a model that has read the corpus tell which firm and which day a
prompt is about? The audit reads back every prompt a finished run sent (its
llm_calls.csv and call cache) and attacks each with six adversaries that
need no model: the corpus (word 5-grams of every item, with its date), the
bag of words (TF-IDF bags; a masked item's tone or topic looked up among the
corpus's items masked alike; the firm its topics' industry names), the
prices (precise returns; a count of closes shorter than the run's window),
the vocabulary (names, products, terms mined from the corpus), a linker
(prompts of one day sharing a verbatim run) and a replay of the analysts'
own pipeline over every firm and session. Per agent: the share of prompts
whose firm, day (exactly; within 5 sessions) and both are given away, with a
Wilson 95 % interval. More than --threshold of them: not blind; the whole
interval at or under it, of the prompts and of the decision days: blind;
between: inconclusive. A last line, beside the verdict and not in it: what
the run's prompts read together, as its call log, name (stretches of 1 to
10 sessions whose firm and window alone fit best) (docs/llm.md#masked-prompts)."""


def _register_leakage(inner) -> None:
    action(
        inner,
        "leakage",
        LeakageArgs,
        _leakage,
        help="audit a finished run's prompts: can firm and day be recovered by an adversary that knows the corpus",
        description=LEAKAGE,
        epilog="examples:\n"
        "  fincon eval leakage runs/team-msft-masked\n"
        "  fincon eval leakage runs/team-msft-masked --against data/ib-jnj data/ib-hon --json\n",
    )


def _leakage(args: argparse.Namespace) -> int:
    hint = journal_hint(args.run)
    if hint:  # a journal's prompts are in its replayed run
        raise DataError(hint)
    res = agents.audit_run(args.run, cache=args.llm_cache_path, against=args.against, threshold=args.threshold)
    if args.json:
        print(json_text({JSON_MARK: "fincon eval leakage", **res}, default=str), end="")
    else:
        print(llm.leakage.report(res))
    return 0


def _register_lookahead(inner) -> None:
    p = action(
        inner,
        "lookahead",
        LookaheadArgs,
        _lookahead,
        help="recall and re-identification probes: does the model remember the window (named and masked)",
        description=LOOKAHEAD,
        epilog="examples:\n"
        "  fincon eval lookahead --ticker TSLA --start 2022-10-05 --end 2023-06-09 --samples 50 --anonymize\n"
        "  fincon eval lookahead --ticker MSFT --data data/ib-msft --start 2020-10-01 --end 2021-05-06\n",
    )
    add_llm_arguments(p, with_masking=True)


def _lookahead(args: argparse.Namespace) -> int:
    import pandas as pd

    _check_json(args)
    start, end = dt.date.fromisoformat(args.start), dt.date.fromisoformat(args.end)
    if start > end:
        raise ConfigError(f"--start {start} is after --end {end}")
    ticker = args.ticker.strip().upper()
    inputs = fincon_data.open_inputs("csv", args.data) if args.data is not None else fincon_data.open_inputs()
    ds = inputs.dataset
    if args.data is not None and ds is None:
        raise DataError(
            f"--data {args.data}: not a dataset directory (no dataset.json); make one with fincon data import"
        )
    source = inputs.source
    raw = source.load(ticker, pd.Timestamp("1900-01-01"), pd.Timestamp("2100-01-01"))
    closes = fincon_data.validate_bars(raw, ticker, source.describe(ticker))["close"]
    if not ((closes.index.date >= start) & (closes.index.date <= end)).any():
        raise DataError(f"{ticker}: no prices in {start}..{end} ({source.describe(ticker)})")
    settings = settings_from_args(args)
    extra = llm.user_names(settings.aliases)
    name = (extra.get(ticker) or fincon_data.NAMES.get(ticker) or (ticker,))[0]
    candidates = sorted({*fincon_data.NAMES, *(ds.manifest.tickers if ds is not None else ())})
    # every firm of the corpus: the re-identification probe draws its items from each in turn
    corpus = sorted({ticker, *(ds.manifest.tickers if ds is not None else fincon_data.NAMES)})
    events = inputs.events(
        inputs.events_spec(None if ds is not None else fincon_data.SAMPLE), tuple(corpus)
    ).all_events()
    knowledge = llm.model_knowledge(settings, start, end)
    run_leakage = None
    if args.run is not None:
        # before any call: a bad RUN_DIR costs nothing
        _same_window(args.run, ticker, start, end)
        run_leakage = llm.leakage.summary(agents.audit_run(args.run))
    res = _run_llm(
        args,
        lambda client: fincon_eval.lookahead.run(
            client, ticker, start, end, closes, events, name=name, candidates=candidates, samples=args.samples,
            seed=args.seed, anonymize=bool(args.anonymize), aliases=extra, knowledge=knowledge,
            run_leakage=run_leakage, progress=not args.no_progress, mask_items=settings.mask_items,
        ),
    )  # fmt: skip
    print(fincon_eval.lookahead.report(res))
    _write_json(args.out, {k: v for k, v in res.items()}, args.eval)
    return 0


def _same_window(run: Path, ticker: str, start: dt.date, end: dt.date) -> None:
    """``--run``: a run of the probed ticker and window (an MSFT run of 2020 was audited into a TSLA verdict)."""
    import yaml

    try:
        cfg = yaml.safe_load((Path(run) / "config.yaml").read_text(encoding="utf-8"))
        tickers, first, last = [str(t) for t in cfg["tickers"]], str(cfg["start"]), str(cfg["end"])
    except (OSError, UnicodeDecodeError, yaml.YAMLError, KeyError, TypeError):
        return
    if ticker not in tickers or first > str(end) or last < str(start):
        raise ConfigError(f"--run {run}: a run of {','.join(tickers)} over {first}..{last}, not of {ticker} over "
                          f"{start}..{end}; give a masked team run of the probed ticker and window")  # fmt: skip


def _run_llm(args: argparse.Namespace, run: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """An evaluation that always asks the model (its client, closed whatever happens)."""

    client = build_client(settings_from_args(args, {"answer_max_tokens": 64}))
    client.budget_per_question = True  # --max-tokens stops the evaluation at the next question
    try:
        return run(client)
    finally:
        client.close()


def _extraction(args: argparse.Namespace) -> int:
    _check_json(args)
    _check_datasets(args.dataset)
    res = _run(
        args,
        256,
        lambda client: fincon_eval.extraction.run(
            args.dataset, args.brain, client, args.per_filing, progress=not args.no_progress
        ),
    )
    return _emit(args, fincon_eval.extraction.report(res), res, "cases", "cases", [c.__dict__ for c in res["cases"]])


def _check_datasets(dirs: list[Path]) -> None:
    """Every --dataset is a directory written by ``fincon data import``, with
    events: said before any work, in the words the user typed."""

    for d in dirs:
        ds = fincon_data.open_inputs("csv", d).dataset if Path(d).is_dir() else None
        if ds is None or not ds.has_events:
            raise DataError(
                f"--dataset {d}: not a dataset directory with events (no dataset.json and events/ there); "
                "make one with: fincon data import investorbench FILE.json.gz --out DIR"
            )


def _client(args: argparse.Namespace, base: dict[str, Any]):
    """The model client of ``--brain llm`` (None for the rules brain, which
    names the model flags it was given and ignores in one warning)."""
    if args.brain != "llm":
        workflow.warn_vacuous(settings_from_args(args), False, False, "the rules brain calls no model")
        return None

    client = build_client(settings_from_args(args, base))
    client.budget_per_question = True  # --max-tokens stops the evaluation at the next question
    return client


def _check_json(args: argparse.Namespace) -> None:
    """--out is checked before minutes of work, not when writing its result."""
    if args.out is not None:
        check_output_file(args.out, "--out", owned=is_fincon_json)


def _run(args: argparse.Namespace, answer_tokens: int, run: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
    """One evaluation with the client of ``--brain`` (closed whatever happens)."""
    client = _client(args, {"answer_max_tokens": answer_tokens, "n_ctx": 4096})
    try:
        return run(client)
    finally:
        if client is not None:
            client.close()


def _emit(args: argparse.Namespace, table: str, res: dict[str, Any], drop: str, key: str, rows: list) -> int:
    """Print the table; with --out write the result, ``drop`` replaced by ``key``: ``rows``."""
    print(table)
    if args.out:
        _write_json(args.out, {**{k: v for k, v in res.items() if k != drop}, key: rows}, args.eval)
    return 0


def _write_json(path: Path | None, data: dict[str, Any], name: str) -> None:
    """Whole or not at all (the path was checked before the evaluation ran),
    marked as fincon's so that a later run may replace it (and nothing else)."""
    if path:
        text = json_text({JSON_MARK: f"fincon eval {name}", **data}, sort_keys=False, default=str)
        write_text_atomic(path, text, "--out")


def _numeric(args: argparse.Namespace) -> int:
    if args.data is not None and args.format != "finqa":  # was: the synthetic set scored, the file never read
        raise ConfigError("--data is FinQA's file: add --format finqa (or drop --data for the synthetic set)")
    _check_json(args)
    if args.format == "finqa":
        return _finqa(args)
    res = _run(
        args,
        256,
        lambda client: fincon_eval.numeric.run(
            args.brain, args.limit, args.split, client, progress=not args.no_progress
        ),
    )
    if not res["questions"]:
        raise ConfigError(
            f"nothing to score: the {args.split} split has no question"
            f"{' within --limit' if args.limit is not None else ''}; use --split all or a larger --limit"
        )
    rows = [{"id": o.item.id, "gold": o.item.gold, **o.answers} for o in res["outcomes"]]
    return _emit(args, fincon_eval.numeric.report(res), res, "outcomes", "answers", rows)


def _finqa(args: argparse.Namespace) -> int:
    if args.split != "test":  # ignored, unsaid (the JSON said split null)
        raise ConfigError(
            f"--split {args.split} chooses among the synthetic questions; --format finqa scores the file it is "
            "given (FinQA ships its splits as files: dev.json, test.json)"
        )
    if not args.data:
        raise ConfigError(
            f"--format finqa needs --data FILE.json (FinQA's JSON; download: {fincon_eval.finqa.DOWNLOAD})"
        )
    if not Path(args.data).is_file():
        raise DataError(f"--data {args.data}: no such file (FinQA's JSON; download: {fincon_eval.finqa.DOWNLOAD})")
    res = _run(
        args,
        256,
        lambda client: fincon_eval.finqa.run(args.data, args.brain, args.limit, client, progress=not args.no_progress),
    )
    rows = [{"id": o.item.id, "gold": o.item.gold, "type": o.item.kind, **o.answers} for o in res["outcomes"]]
    return _emit(args, fincon_eval.finqa.report(res), res, "outcomes", "answers", rows)


def _debate(args: argparse.Namespace) -> int:
    _check_json(args)
    tickers = [t for x in (args.tickers or []) for t in x.split(",") if t] or None
    if args.dataset:
        for flag, value in (("--transcripts", args.transcripts), ("--tickers", args.tickers)):
            if value is not None:
                raise ConfigError(f"{flag} picks the sample calls to score; --dataset scores filings: drop {flag}")

        _check_datasets(args.dataset)
        res = _run(
            args,
            320,
            lambda client: fincon_eval.debate_filings.run(
                args.dataset, args.brain, client, args.retrieval_model, progress=not args.no_progress
            ),
        )
        rows = [r.__dict__ for r in res["results"]]
        return _emit(args, fincon_eval.debate_filings.report(res), res, "results", "filings", rows)
    if args.retrieval_model is not None:
        raise ConfigError(
            "--retrieval-model is the retrieval over filings (--dataset DIR); the sample calls are read whole: "
            "add --dataset or drop --retrieval-model"
        )
    corpus = fincon_eval.debate.sample_tickers()
    missing = [t.upper() for t in (tickers or []) if t.upper() not in corpus]
    if missing:
        raise DataError(
            f"nothing to score for {', '.join(missing)}: the sample corpus has no earnings calls of "
            f"{'it' if len(missing) == 1 else 'them'}; pick from {', '.join(corpus)}"
        )
    res = _run(
        args,
        320,
        lambda client: fincon_eval.debate.run(
            args.brain, tickers, client, args.transcripts or "text", progress=not args.no_progress
        ),
    )
    if not res["calls_scored"]:
        raise DataError(
            f"nothing to score: no earnings call of {', '.join(res['tickers'])} in the sample corpus "
            f"is followed by a trading day; pick other tickers ({', '.join(corpus)})"
        )
    return _emit(args, fincon_eval.debate.report(res), res, "results", "calls", [r.__dict__ for r in res["results"]])
