"""What a run checks about the model its strategies call, before it writes anything and as it ends:
each strategy's window against its model's training-data cutoff (``model_knowledge``), names for
every firm a masked run reads, the flags a run without a model would ignore, and the leakage audit
of a masked run's prompts (fincon.llm.knowledge, fincon.llm.masking, fincon.llm.leakage)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Collection, Mapping

import yaml

from fincon.agents.beliefs import Beliefs
from fincon.agents.replayed_prompts import Replayed
from fincon.agents.replayed_sessions import read_together
from fincon.config import RunConfig
from fincon.data.aliases import NAMES
from fincon.data.inputs import RunInputs
from fincon.errors import ConfigError
from fincon.flag import spelled
from fincon.llm import leakage, leakage_inputs
from fincon.llm.cache import DEFAULT_CACHE_PATH, CacheMode
from fincon.llm.knowledge import model_knowledge, warning, written_by
from fincon.llm.masking_terms import mined_terms
from fincon.strategies.base import Strategy


def warn_vacuous(
    llm: Any,
    require_after_cutoff: bool,
    any_model: bool,
    why: str = "no strategy of this run calls a model",
    also: Collection[str] = (),
) -> None:
    """One warning naming every model setting a run without a model would take
    and ignore (``--anonymize``, ``--llm-model``, ``--max-tokens``, an ``llm:``
    key of its config, ``--require-after-cutoff``, ``also``: the broker's
    ``--charge-llm``, ...): said, never dropped in silence."""
    if any_model:
        return
    first = ("anonymize", "aliases", "knowledge_cutoff")  # the masking and cutoff flags, as they were said first
    fields = [f for f in first if f in llm.model_fields_set]
    fields += [f for f in type(llm).model_fields if f in llm.model_fields_set and f not in first]
    given = [spelled(type(llm), f, "--llm-", "llm.") for f in fields] + (
        ["--require-after-cutoff"] if require_after_cutoff else []
    )
    given += list(also)
    if given:
        print(
            f"fincon: warning: {', '.join(given)}: {why}, so "
            f"{'it changes' if len(given) == 1 else 'they change'} nothing here",
            file=sys.stderr,
        )


def warn_run_without_model(
    cfg: RunConfig,
    blocks: Mapping[str, Mapping[str, Any]],
    require_after_cutoff: bool,
    strategies: Mapping[str, Strategy] = {},
) -> None:
    """:func:`warn_vacuous` for a run config whose strategies' knowledge
    ``blocks`` (label "no-model" for each that calls none) say no model is
    asked: its LLM settings and the broker's ``--charge-llm``; and
    :func:`warn_unpriced` for the ``strategies`` that do call one."""
    any_model = any(b["label"] != "no-model" for b in blocks.values())
    warn_vacuous(cfg.llm, require_after_cutoff, any_model, also=["--charge-llm"] if cfg.broker.charge_llm else [])
    if cfg.broker.charge_llm:
        warn_unpriced(strategies)


def warn_unpriced(strategies: Mapping[str, Strategy]) -> None:
    """``--charge-llm`` takes a model's spend at the price table's price: a
    model with no row there is charged $0, which the run would report as a
    cost charged. One warning per strategy whose model has no price."""
    for name, strategy in strategies.items():
        llm = strategy.llm_settings()
        if llm is not None and llm.price_key not in llm.prices:
            print(
                f"fincon: warning: --charge-llm: the price table has no row for {name}'s model ({llm.price_key}), "
                "so its calls are charged $0 (--llm-prices FILE, USD per million tokens)",
                file=sys.stderr,
            )


#: a training's or experiment's settings of one brain alone: (the brain that reads it, its flag)
BRAIN_ONLY = {"temperature": ("llm", "--temperature"), "explore": ("rules", "--explore")}


def warn_other_brain(brain: str, given: Collection[str]) -> None:
    """One warning naming the settings of the other brain a training or an
    experiment was given (``--temperature`` samples the llm brain's manager,
    ``--explore`` puts noise on the rules brain's weights): said, never
    dropped in silence."""
    unused = [flag for key, (reader, flag) in BRAIN_ONLY.items() if key in given and reader != brain]
    if unused:
        print(
            f"fincon: warning: {', '.join(unused)}: {'a setting' if len(unused) == 1 else 'settings'} of the other "
            f"brain; with the {brain} brain {'it changes' if len(unused) == 1 else 'they change'} nothing here",
            file=sys.stderr,
        )


def check_masking(cfg: RunConfig, inputs: RunInputs, strategies: Mapping[str, Strategy]) -> None:
    """A masked run must know a name for every firm whose items it reads:
    without one, the items name the firm in clear and the run only looks
    blind. The names come from fincon's table, the dataset's own, ``--alias``
    and the corpus itself (fincon.llm.masking_terms.mined_terms, from the items
    before the window). Refused before anything is written, pointing at
    ``--alias``; an ``--alias`` for a ticker the run does not trade is refused
    too (it would mask nothing)."""

    masked = [s for s in strategies.values() if s.llm_settings() is not None and s.llm_settings().anonymize]
    if not masked:
        return
    user = {t.upper(): v for t, v in cfg.llm.aliases.items()}
    stray = sorted(set(user) - set(cfg.tickers))
    if stray:
        raise ConfigError(
            f"--alias {stray[0]}=...: {stray[0]} is not traded in this run (tickers: {', '.join(cfg.tickers)}); "
            "drop it or add the ticker"
        )
    critic = next((s for s in masked if getattr(getattr(s, "params", None), "critics", False)), None)
    if critic is not None:  # their prompt quotes the cited filing: MSFT's three segments named the firm and its quarter
        raise ConfigError(
            f"--anonymize with --critics on ({critic.name}): the numeric critics send each cited filing's sentences "
            "to the model as written (1,500 characters), naming the firm and its quarter; leave the critics off "
            "in a masked run"
        )
    readers = [s for s in masked if getattr(s, "reads_events", False)]
    if not readers:
        return  # no item reaches a prompt: the tickers alone are masked
    dataset = inputs.dataset.manifest.names if inputs.dataset is not None else {}
    unnamed = [t for t in cfg.tickers if not (NAMES.get(t) or dataset.get(t) or user.get(t))]
    if unnamed:
        spec = inputs.events_spec(getattr(getattr(readers[0], "params", None), "events", None))
        mined, _ = mined_terms(spec, tuple(sorted(cfg.tickers)), cfg.start)
        unnamed = [t for t in unnamed if not mined.get(t)]
    if unnamed:
        t = unnamed[0]
        raise ConfigError(
            f"--anonymize: fincon knows no name for {t} (not in its table, the dataset names none, and its items "
            f"before {cfg.start} name none often enough), so its items would name the firm in clear; give its "
            f"names with --alias {t}=NAME (repeat for each name)"
        )


def with_audit(block: Mapping[str, Any], strategy: Strategy, run_path: Path, cfg: RunConfig) -> dict[str, Any]:
    """The strategy's ``model_knowledge`` block with the leakage audit's result
    (fincon.llm.leakage): a masked run is audited as it ends, its prompts
    read back from the call cache (``blind`` / ``inconclusive`` / ``not blind``); a run whose
    prompts are named is ``not audited`` (a named prompt names the firm and
    the day). What the report card's temporal integrity reads."""

    settings = strategy.llm_settings()
    if settings is None:
        return dict(block)
    if not settings.anonymize or not (run_path / "llm_calls.csv").is_file():
        return {**block, "audit": {"result": "not audited"}}
    info = leakage_inputs.run_info(run_path, yaml.safe_load(cfg.to_yaml()))
    k = leakage_inputs.build_knowledge([info])
    prompts, replayed = leakage_inputs.prompts_of(info), Replayed([info], k)
    res = leakage.audit(prompts, k, replayed=replayed)
    res["together"] = read_together(replayed, prompts)  # beside the verdict: the card prints it
    return {**block, "audit": leakage.summary(res)}


def knowledge(cfg: RunConfig, strategies: Mapping[str, Strategy]) -> dict[str, dict[str, Any]]:
    """Each strategy's ``model_knowledge`` block: its model's training-data
    cutoff against the run's window (fincon.llm.knowledge)."""

    out = {}
    for name, s in strategies.items():
        block = model_knowledge(s.llm_settings(), cfg.start, cfg.end)
        given = (cfg.params(name) or {}).get("beliefs")  # texts a model reads every day: who wrote them
        if block["label"] != "no-model" and isinstance(given, str):
            writer = written_by(Beliefs.load(given).model_knowledge, cfg.start, cfg.end)
            block = block | ({"beliefs": writer} if writer else {})
        out[name] = block
    return out


def check_knowledge(blocks: Mapping[str, Mapping[str, Any]], *, require: bool = False, warn: bool = True) -> None:
    """One warning line per LLM strategy whose window is not after its
    model's cutoff; with ``require`` (--require-after-cutoff) a one-line
    error instead, raised before any model is called."""

    lines = [w for name, b in blocks.items() if (w := warning(dict(b), name))]
    if require and lines:
        raise ConfigError(f"--require-after-cutoff: {lines[0]}")
    if warn:
        for line in lines:
            print(f"fincon: warning: {line}", file=sys.stderr)


def check_cache_outside(strategies: Mapping[str, Strategy], out: Path) -> None:
    """Refuse a new run directory ``out`` that a strategy's call cache would lie in: the cache is made
    before the run is written, so the run would find its own name taken and go to ``out``-2."""
    if out.exists():
        return  # taken already: the run goes to a free -N name, as --out's help says
    for s in strategies.values():
        llm = s.llm_settings()
        if (
            llm is not None
            and llm.cache is not CacheMode.OFF
            and llm.cache_path.resolve().is_relative_to(out.resolve())
        ):
            flag = "the default --llm-cache-path" if llm.cache_path == DEFAULT_CACHE_PATH else "--llm-cache-path"
            raise ConfigError(
                f"--out {out} would hold the model's call cache ({llm.cache_path}, {flag}), made before the run "
                f"is written, so the run could not take its name: give the run a folder of its own (--out "
                f"{out}/NAME) or the cache another path (--llm-cache-path FILE)"
            )
