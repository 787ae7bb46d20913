"""``fincon llm``: the bundled model and a smoke call through the LLM layer.

* ``fincon llm model``   assemble (once) and hash-check a bundled GGUF; print its path
* ``fincon llm ask``     one schema-checked call through any backend, with usage
* ``fincon llm cache``   what a call cache holds (calls, tokens, per agent)

:func:`add_llm_arguments` and :func:`settings_from_args` are shared with
``fincon backtest`` so both commands spell the LLM flags the same way.
"""

from __future__ import annotations

import argparse
import json
import re
import sqlite3
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field, ValidationError

from fincon import llm
from fincon.cli.flags import Args, action, add, given
from fincon.config import read_yaml
from fincon.errors import ConfigError
from fincon.flag import Flag
from fincon.llm.settings import FLAGS, MASKING, LLMSettings, build_client
from fincon.validation import format_validation_error

#: the help section of the LLM flags (as ``fincon.llm.settings.GROUP``, which --help does not import)
GROUP = "LLM (see docs/llm.md)"

#: ``fincon llm --help`` text: plain, unlike the module docstring (argparse prints it verbatim)
HELP = """\
The bundled offline model, a smoke call and the call cache of the LLM layer.

  fincon llm model   assemble (once) and hash-check a bundled GGUF; print its path
  fincon llm ask     one schema-checked call through any backend, with usage
  fincon llm cache   what a call cache holds (calls, tokens, per agent)

The LLM flags of `fincon llm ask` are the same as those of `fincon backtest`.
See docs/llm.md.
"""


class CutoffGate(Args):
    """The flag of a command that runs windows the model may remember."""

    require_after_cutoff: Annotated[
        bool,
        Flag(
            help="refuse (exit 2, before any model call) a run whose window is not after the model's "
            "training-data cutoff: the model may remember what happened there",
            group=GROUP,
        ),
    ] = False


def add_llm_arguments(
    parser: argparse.ArgumentParser,
    *,
    with_budget: bool = True,
    with_cutoff_gate: bool = False,
    with_masking: bool = False,
    cache_default: str = "read-write",
) -> None:
    """The LLM flags (a section of their own, from ``LLMSettings``' fields) for
    any command that calls a model. ``with_cutoff_gate``: the command runs
    windows and refuses, with --require-after-cutoff, one the model may remember.
    ``cache_default`` only changes --llm-cache's help: the command applies it."""

    keys = [k for k in FLAGS if with_budget or k != "max_tokens"]
    add(parser, LLMSettings, *keys, *(MASKING if with_masking else ()), prefix="--llm-")
    cache = parser._option_string_actions["--llm-cache"]
    cache.help = (cache.help or "").replace("default read-write", f"default {cache_default}")
    if with_cutoff_gate:
        add(parser, CutoffGate)


def load_prices(path: Path) -> dict[str, Any]:
    """The --llm-prices table (YAML or JSON), read by the one YAML reader."""

    data = read_yaml(path, "--llm-prices")
    if not data:
        raise ConfigError(f"--llm-prices {path} must map model names to {{input_per_million, output_per_million}}")
    return data


def llm_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The LLM settings given on the command line (unset flags left out), as
    plain YAML-safe values, ready to merge into ``strategy_params.<strategy>``."""

    out = given(args, LLMSettings, prefix="--llm-")
    if "prices" in out:
        out["prices"] = load_prices(Path(out["prices"]))
    aliases = out.pop("aliases", None)
    if aliases:
        if not out.get("anonymize"):
            raise ConfigError("--alias names a firm to mask: it applies with --anonymize")
        table: dict[str, list[str]] = {}
        for item in aliases:
            ticker, sep, name = item.partition("=")
            if not sep or not ticker.strip() or not name.strip():
                raise ConfigError(f"--alias {item!r}: expected TICKER=NAME, e.g. --alias NFLX=Netflix")
            table.setdefault(ticker.strip().upper(), []).append(name.strip())
        out["aliases"] = table
    return out


def settings_from_args(args: argparse.Namespace, base: dict[str, Any] | None = None):
    """``base`` (e.g. a config file section) overridden by the flags, validated."""

    data = {**(base or {}), **llm_overrides(args)}
    try:
        return LLMSettings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"bad LLM settings: {format_validation_error('llm', exc, LLMSettings)}") from None


class SmokeAnswer(BaseModel):
    """The output schema of ``fincon llm ask``."""

    answer: str = Field(max_length=400)
    confidence: float = Field(ge=0, le=1)


def _cmd_model(args: argparse.Namespace) -> int:
    if args.name is not None and args.name not in llm.BUNDLED:
        raise ConfigError(f"unknown bundled model {args.name!r}; choose one of {', '.join(llm.BUNDLED)}")
    if args.all and args.name is not None:
        raise ConfigError(f"give a model name or --all, not both (--all already includes {args.name})")
    names = list(llm.BUNDLED) if args.all else [args.name or llm.DEFAULT_MODEL]
    for name in names:
        m = llm.BUNDLED.get(name)
        if m is None:
            raise ConfigError(f"unknown bundled model {name!r}; choose one of {', '.join(llm.BUNDLED)}")
        t0 = time.perf_counter()
        try:
            path = llm.assemble(m, args.model_dir, verify=args.verify)
        except OSError as exc:
            where = args.model_dir or "the model directory"
            raise ConfigError(
                f"cannot assemble {name} in {where}: {exc.strerror or exc}; "
                "pass a writable --model-dir (or set FINCON_MODEL_DIR)"
            ) from None
        took = time.perf_counter() - t0
        tag = " (default)" if name == llm.DEFAULT_MODEL else ""
        print(f"{name}{tag}: {path}")
        print(f"  {m.description}")
        print(
            f"  {m.parts} parts {m.dist_prefix}1..{m.parts}=={m.version}; sha256 {m.sha256} "
            f"{'verified' if args.verify else 'ok'} ({path.stat().st_size / 1e6:.0f} MB, {took:.1f}s)"
        )
    return 0


#: a smoke call should reach the model, not an old answer: ``ask`` does not use the cache unless told
ASK_CACHE_DEFAULT = "off"


def _cmd_ask(args: argparse.Namespace) -> int:
    base = {"cache": ASK_CACHE_DEFAULT} if args.llm_cache is None else {}
    settings = settings_from_args(args, base)
    client = build_client(settings)
    try:
        res = client.ask([{"role": "user", "content": args.prompt}], SmokeAnswer, agent="cli")
    finally:
        client.close()
    u = res.usage
    print(json.dumps(res.value.model_dump(), indent=1))
    print(
        f"backend {settings.backend}; {u.prompt_tokens} prompt + {u.completion_tokens} completion tokens; "
        f"{u.latency_s:.2f}s; cache {'hit' if u.cache_hit else 'miss'}; re-asks {u.reasks}; key {res.keys[-1][:16]}"
    )
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    path = args.path
    if not path.exists():
        raise ConfigError(f"no LLM cache at {path}; runs create it in read-write mode")
    if not path.is_file():
        raise ConfigError(f"{path} is not a file; pass the LLM cache file with --path")
    if args.key is not None and not re.fullmatch(r"[0-9a-f]{8,64}", args.key):
        raise ConfigError(f"--key {args.key!r}: give a call's key, 8 to 64 hex digits (decisions.jsonl's evidence)")
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            if args.key is not None:  # one call, as the model saw it: the audit trail behind a cited decision
                return _print_call(path, args.key, conn.execute(
                    "SELECT key, backend, model, agent, created_at, prompt_tokens, completion_tokens, messages, answer "
                    "FROM calls WHERE key LIKE ? LIMIT 2", (args.key + "%",)).fetchall())  # fmt: skip
            rows = conn.execute(
                "SELECT backend, model, agent, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(latency_s), "
                "SUM(typeof(prompt_tokens) != 'integer' OR typeof(completion_tokens) != 'integer') "
                "FROM calls GROUP BY backend, model, agent ORDER BY backend, model, agent"
            ).fetchall()
            if any(r[7] for r in rows):  # a row edited by hand ('5x' tokens): a ValueError traceback below
                raise ConfigError(
                    f"{path}: {sum(r[7] for r in rows)} call(s) hold token counts fincon never writes (edited?); "
                    "move the file away or pass another --path"
                )
            rows = [r[:7] for r in rows]
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ConfigError(
            f"{path} is not an LLM call cache ({_one_line(exc)}); "
            "pass the SQLite file a run wrote (default runs/.cache/llm.sqlite)"
        ) from None
    print(f"{path}: {sum(r[3] for r in rows):,} calls")
    seen, width = None, max((len(r[2]) for r in rows), default=0)
    for b, m, a, n, p, c, lat in rows:  # each model's calls under it: one cache may hold several
        if (b, m) != seen:
            seen = (b, m)
            print(f"  {b} {m}: {sum(r[3] for r in rows if r[:2] == (b, m)):,} calls")
        print(f"    {a:{width}s} {n:7,d} calls {p:11,d} prompt {c:9,d} completion tokens  {lat:8.1f}s live")
    return 0


def _print_call(path: Path, key: str, rows: list[tuple]) -> int:
    """One cached call: who asked what, as the model saw it (masked, if the run masked), and its answer."""
    if len(rows) != 1:
        raise ConfigError(
            f"--key {key}: no call in {path} has it" if not rows else f"--key {key}: several calls start so; give more"
        )
    k, backend, model, agent, created, p, c, messages, answer = rows[0]
    print(f"call {k}\n  agent {agent}; {backend} {model}; {p:,} prompt + {c:,} completion tokens; asked {created}")
    for m in json.loads(messages):
        print(f"--- {m.get('role')}\n{m.get('content')}")
    print(f"--- answer\n{answer}")
    return 0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


class ModelArgs(Args):
    name: Annotated[str | None, Flag("name", help="bundled model (default qwen2.5-coder-1.5b)")] = None
    all: Annotated[bool, Flag(help="every bundled model")] = False
    verify: Annotated[bool, Flag(help="re-hash the assembled file instead of trusting its stamp")] = False
    model_dir: Annotated[Path | None, Flag(help="where assembled models live (default ~/.cache/fincon/models)")] = None


class AskArgs(Args):
    prompt: Annotated[str, Flag("prompt", required=True, help="what to ask the model")]


class CacheArgs(Args):
    path: Annotated[Path, Flag(help="the SQLite call cache (default {default})")] = Path("runs/.cache/llm.sqlite")
    key: Annotated[
        str | None,
        Flag(
            metavar="KEY",
            help="print one call, its messages and answer: a key a run's decisions.jsonl cites as evidence "
            "(llm_calls.csv lists them); its first 8 or more characters do",
        ),
    ] = None


COMMAND = "llm"
SUMMARY = "bundled model, smoke call and cache of the LLM layer"
EXAMPLES = None


def register(p: argparse.ArgumentParser) -> None:
    s = p.add_subparsers(dest="llm_command", metavar="SUBCOMMAND")
    action(s, "model", ModelArgs, _cmd_model, help="assemble and hash-check a bundled GGUF; print its path")
    a = action(s, "ask", AskArgs, _cmd_ask, help="one schema-checked call through the configured backend")
    add_llm_arguments(a, with_budget=False, cache_default=ASK_CACHE_DEFAULT)
    action(s, "cache", CacheArgs, _cmd_cache, help="summarise an LLM call cache")
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])
