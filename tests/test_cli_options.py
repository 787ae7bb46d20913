"""The shared flag groups (fincon/cli/options.py): built from the config
models' fields, declared once and used by backtest, train and experiment."""

from __future__ import annotations

import argparse
import ast
import typing
from pathlib import Path
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from fincon.cli import flags, options
from fincon.cli.main import build_parser
from fincon.flag import Flag

COMMANDS = ("backtest", "train", "experiment")
#: the flags of the shared groups every one of the three commands has
SHARED = ("--ticker", "--param", "--source", "--data", "--cache-dir", "--brain", "--events")


class _Model(BaseModel):
    mode: Annotated[Literal["fast", "slow"], Flag()] = Field("fast", description="how fast it goes")
    rate: Annotated[float, Flag(help="{desc} (default {default:g})")] = Field(0.5, gt=0, le=2, description="a rate")
    count: Annotated[int | None, Flag("--count", "--n", help="how many")] = Field(None, ge=1, lt=10)
    silent: Annotated[int | None, Flag()] = None
    off: Annotated[bool, Flag("--no-off", const=False, help="turn it off")] = True


def _actions(command: str) -> dict[str, argparse.Action]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {s: a for a in sub.choices[command]._actions for s in a.option_strings}


def test_a_literal_field_becomes_the_choices_and_its_description_the_help():
    p = argparse.ArgumentParser()
    flags.add(p, _Model, "mode", "rate")
    mode, rate = p._option_string_actions["--mode"], p._option_string_actions["--rate"]
    assert mode.choices == ["fast", "slow"]
    assert mode.help == "how fast it goes"
    assert p.parse_args(["--mode", "slow"]).mode == "slow"
    assert p.parse_args([]).mode is None  # not given: the config's value (or the model's default) stands
    # a template reads the description and the default
    assert rate.help == "a rate (default 0.5)"
    # the run config's own: --source's choices are DataConfig.source's Literal, in every command
    from fincon.config import DataConfig

    for command in COMMANDS:
        assert _actions(command)["--source"].choices == list(
            typing.get_args(DataConfig.model_fields["source"].annotation)
        )
    assert _actions("backtest")["--charge-llm"].help.startswith("take each day's LLM spend")


def test_a_field_without_description_needs_a_help():
    with pytest.raises(ValueError, match="silent has no description"):
        flags.add(argparse.ArgumentParser(), _Model, "silent")


def test_a_bounded_field_becomes_a_finite_number_within_its_range():
    p = argparse.ArgumentParser(exit_on_error=False)
    flags.add(p, _Model, "rate", "count", "off")
    assert p.parse_args(["--rate", "2", "--n", "9"]) == argparse.Namespace(rate=2.0, count=9, no_off=None)
    for argv, message in (
        (["--rate", "0"], "0 is out of range (0, 2]"),  # gt: open, le: closed
        (["--rate", "nan"], "not a finite number (range (0, 2])"),
        (["--count", "10"], "10 is out of range [1, 10)"),  # int | None: an int, None when not given
        (["--count", "1.5"], "invalid int value"),
    ):
        with pytest.raises(argparse.ArgumentError) as err:
            p.parse_args(argv)
        assert message in str(err.value), argv
    # read back under the fields' keys: only what was given, a switch-off as False
    args = p.parse_args(["--count", "3", "--no-off"])
    assert flags.given(args, _Model, "rate", "count", "off") == {"count": 3, "off": False}
    assert flags.names(_Model) == {"mode": "--mode", "rate": "--rate", "count": "--count", "silent": "--silent",
                                   "off": "--no-off"}  # fmt: skip
    # the broker's: --commission-max is PerShareCommission.maximum (ge 0, lt 1)
    assert _actions("backtest")["--commission-max"].type("0.5") == 0.5
    with pytest.raises(argparse.ArgumentTypeError, match=r"out of range \[0, 1\)"):
        _actions("backtest")["--commission-max"].type("1")


def test_the_shared_groups_are_declared_once_and_used_by_all_three_commands():
    def same(action: argparse.Action, flag: str) -> tuple:
        if flag == "--param":  # each command says what its --param sets
            return (action.dest, type(action), action.default)
        return (action.dest, type(action), action.choices, action.metavar, action.help, action.type)

    parsed = {command: _actions(command) for command in COMMANDS}
    for flag in SHARED:
        for command in COMMANDS[1:]:
            assert same(parsed[command][flag], flag) == same(parsed["backtest"][flag], flag), (command, flag)
    # no command module spells a shared flag in an add_argument of its own
    cli = Path(options.__file__).parent
    for command in COMMANDS:
        tree = ast.parse((cli / f"{command}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
                strings = [a.value for a in node.args if isinstance(a, ast.Constant)]
                assert not set(strings) & set(SHARED), (command, strings)


def test_the_team_flags_are_finconparams_fields():
    from fincon.agents.team.params import FinConParams

    backtest = _actions("backtest")
    assert backtest["--brain"].choices == flags.choices_of(FinConParams.model_fields["brain"].annotation)
    samples = flags.bounds_of(FinConParams.model_fields["samples"])
    assert (samples["lo"], samples["hi"]) == (1, 9)
    assert backtest["--samples"].type("9") == 9
    with pytest.raises(argparse.ArgumentTypeError, match=r"out of range \[1, 9\]"):
        backtest["--samples"].type("10")
    args = build_parser().parse_args(
        ["backtest", "--strategy", "fincon", "--no-cvar", "--critics", "on", "--candidates", "tsla, msft"]
    )
    assert options.team_values(args, "cvar", "critics", "candidates", "brain") == {
        "cvar": False,
        "critics": True,
        "candidates": ["tsla", "msft"],  # FinConParams upper-cases them
    }


def test_every_flag_is_made_from_a_model_in_one_place():
    """No command module calls add_argument: the generator (fincon/cli/flags.py) is the one
    place flags are made, and fincon/cli has fewer than 40 calls in all (138 before)."""
    cli = Path(options.__file__).parent
    calls = {}
    for path in sorted(cli.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        n = sum(
            isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" for node in ast.walk(tree)
        )
        if n:
            calls[path.name] = n
    assert sum(calls.values()) < 40, calls
    for command in ("backtest.py", "train.py", "experiment.py", "forward.py", "llm.py", "eval.py", "data.py"):
        assert command not in calls, (command, calls)


def test_train_hands_the_builder_only_its_own_flags(tmp_path):
    from fincon.cli.train import TRAIN_END, TRAIN_START, build_config
    from fincon.workflow.training import TrainOptions

    args = build_parser().parse_args(["train", "--brain", "rules", "--candidates", "tsla,msft", "--events", "sample"])
    for faked in ("strategies", "no_benchmark", "cash", "commission", "fill", "alpha", "beliefs", "protocol"):
        assert not hasattr(args, faked), faked  # no defaults for flags train does not have
    # --explore is None unless given (so an --explore 0.3 the llm brain ignores is said): the training's default
    # then, the one its help states
    assert (args.episodes, args.explore, args.lr) == (TrainOptions.episodes, None, TrainOptions.lr)
    sub = next(a for a in build_parser("train")._actions if isinstance(a, argparse._SubParsersAction))
    explore = next(a for a in sub.choices["train"]._actions if a.dest == "explore")
    assert explore.help.endswith(f"(default {TrainOptions.explore})")
    cfg = build_config(args)
    assert cfg.strategies == ["fincon"] and cfg.benchmark is False
    assert (cfg.start.isoformat(), cfg.end.isoformat()) == (TRAIN_START, TRAIN_END)
    assert cfg.tickers == ["TSLA", "MSFT"]
    assert cfg.params("fincon") == {"brain": "rules", "candidates": ["TSLA", "MSFT"], "events": "sample"}


def _helps(parser: argparse.ArgumentParser, path: str = "fincon") -> dict[str, str]:
    """``--help`` of ``parser`` and of every sub-command under it, by command path."""
    out = {path: parser.format_help()}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out.update(_helps(child, f"{path} {name}"))
    return out


def test_no_help_shows_a_doubled_percent_sign():
    """Found in review: `--mask-items`'s help printed "80 %%": its text escaped the % that
    fincon.cli.flags escapes for argparse. A help text says % once; every help of every command is read."""
    doubled = {
        path: line.strip()
        for path, text in _helps(build_parser()).items()
        for line in text.splitlines()
        if "%%" in line
    }
    assert doubled == {}
    assert "80 % of" in " ".join(_helps(build_parser("backtest"))["fincon backtest"].split())  # said once, as written


def test_a_command_line_builds_its_one_command_and_reads_as_the_whole_parser():
    """``main`` builds only the command it was given (the others: name and
    summary): each command's help, and every help under it, is the whole
    parser's, and so is ``fincon --help`` with no command built at all."""
    whole = _helps(build_parser())
    commands = sorted({path.split()[1] for path in whole if path != "fincon"})
    assert len(commands) == 13 and "backtest" in commands and "forward" in commands
    bare = _helps(build_parser(""))
    assert bare["fincon"] == whole["fincon"]
    assert all(text.count("\n") == 4 for path, text in bare.items() if path != "fincon")  # a stub: usage and -h
    for command in commands:
        alone = _helps(build_parser(command))
        mine = {path: text for path, text in alone.items() if path.split()[1:2] == [command]}
        assert mine == {path: text for path, text in whole.items() if path.split()[1:2] == [command]}, command
        assert alone["fincon"] == whole["fincon"]


def test_brain_sets_a_single_agent_baseline_without_the_team_and_a_team_param_alone_is_refused(tmp_path, capsys):
    """--brain is written for every strategy with a brain, the team's section included; without the team
    that section goes (the run is finsent's alone) but a --param fincon.KEY given with it stays and is
    refused as any strategy's parameters the run does not run (it was dropped in silence)."""
    import yaml

    from fincon.cli.main import main

    base = ["backtest", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2022-10-20", "--no-progress",
            "--ledger", "off", "--brain", "rules"]  # fmt: skip
    assert main([*base, "--strategy", "finsent", "--out", str(tmp_path / "run")]) == 0
    cfg = yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())
    assert cfg["strategy_params"]["finsent"]["brain"] == "rules" and "fincon" not in cfg["strategy_params"]
    capsys.readouterr()
    assert (
        main([*base, "--strategy", "finsent", "--param", "fincon.analysts=[news]", "--out", str(tmp_path / "x")]) == 2
    )
    err = capsys.readouterr().err
    assert "strategy_params given for 'fincon', which this run does not run (running: finsent)" in err
    assert not (tmp_path / "x").exists()


def test_a_flag_a_strategys_own_setting_contradicts_is_refused_and_brain_reaches_labelled_copies(tmp_path, capsys):
    """Found in review: --brain rules beside --param fincon.brain=llm ran the model (the --param won, unsaid);
    --brain rules reached fincon and not fincon@r; and --anonymize --max-tokens 100 lost to a config's
    strategy_params.llm-trader.{anonymize: false, max_tokens: 1000000}, while config.yaml's llm section
    recorded the flags. Each contradiction is one line now, and --brain reaches every copy."""
    import yaml

    from fincon.cli.main import main

    base = ["backtest", "--ticker", "TSLA", "--start", "2022-10-05", "--end", "2022-10-07", "--no-progress",
            "--ledger", "off"]  # fmt: skip
    for extra, said in (
        (["--strategy", "fincon", "--brain", "rules", "--param", "fincon.brain=llm"],
         "--brain rules and --param fincon.brain=llm disagree; give one"),
        (["--strategy", "fincon", "--no-cvar", "--param", "fincon.cvar=true"],
         "--no-cvar and --param fincon.cvar=true disagree; give one"),
    ):  # fmt: skip
        assert main([*base, *extra, "--out", str(tmp_path / "x")]) == 2
        assert capsys.readouterr().err.strip().endswith(said) and not (tmp_path / "x").exists()
    capsys.readouterr()
    assert main(["experiment", "--brain", "rules", "--param", "fincon.brain=llm", "--out", str(tmp_path / "e")]) == 2
    assert capsys.readouterr().err.strip().endswith("--brain rules and --param fincon.brain=llm disagree; give one")
    run = tmp_path / "copies"
    assert main([*base, "--strategy", "fincon,fincon@r", "--brain", "rules", "--out", str(run)]) == 0
    params = yaml.safe_load((run / "config.yaml").read_text())["strategy_params"]
    assert params["fincon"]["brain"] == params["fincon@r"]["brain"] == "rules"
    config = tmp_path / "own.yaml"
    config.write_text(
        "strategies: [llm-trader]\nstrategy_params:\n  llm-trader: {anonymize: false, max_tokens: 1000000}\n"
    )
    capsys.readouterr()
    assert main([*base, "--config", str(config), "--anonymize", "--out", str(tmp_path / "y")]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(
            "--anonymize and strategy_params.llm-trader.anonymize=false disagree (the strategy's own setting "
            "would win); give one"
        )
    )


@pytest.mark.slow  # a short team run, about 3 s
def test_paths_a_config_file_or_param_gives_are_saved_absolute(tmp_path, monkeypatch):
    """Found in review: a YAML's `data: {dir: prices}` (and --param fincon.events=ev, --llm-cache-path
    c.sqlite) stayed relative in config.yaml, so the run's config rerun from another folder read that
    folder's prices (the benchmark ended at 1,618,429 where the run's read 1,602,405), unsaid."""
    import shutil

    import yaml

    from fincon.cli.main import main
    from fincon.data.sources import SampleSource

    a = tmp_path / "A"
    (a / "prices").mkdir(parents=True)
    shutil.copy(SampleSource().directory / "TSLA.csv.gz", a / "prices" / "TSLA.csv.gz")
    (a / "run.yaml").write_text("tickers: [TSLA]\nstrategies: [fincon]\ndata: {dir: prices}\n"
                                "strategy_params:\n  fincon: {brain: rules, transcripts: text, transcript_cache: tc}\n")  # fmt: skip
    monkeypatch.chdir(a)
    assert main(["backtest", "--config", "run.yaml", "--start", "2022-10-05", "--end", "2022-10-07",
                 "--llm-cache-path", "c.sqlite", "--ledger", "off", "--no-progress", "--out", "r"]) == 0  # fmt: skip
    cfg = yaml.safe_load((a / "r" / "config.yaml").read_text())
    assert cfg["data"]["dir"] == str(a / "prices")
    assert cfg["strategy_params"]["fincon"]["transcript_cache"] == str(a / "tc")
    assert cfg["llm"]["cache_path"] == str(a / "c.sqlite")


def test_train_says_a_run_configs_strategies_and_benchmark_are_not_its_own(tmp_path, capsys):
    """Found in review: `fincon train --config` with strategies [markowitz, sma-cross] and benchmark true
    trained the team alone and said nothing of the two keys it replaced."""
    from fincon.cli.main import build_parser
    from fincon.cli.train import build_config

    path = tmp_path / "run.yaml"
    path.write_text("tickers: [TSLA]\nstrategies: [markowitz, sma-cross]\nbenchmark: true\n")
    cfg = build_config(build_parser().parse_args(["train", "--config", str(path), "--brain", "rules"]))
    assert cfg.strategies == ["fincon"] and cfg.benchmark is False
    assert capsys.readouterr().err == (
        f"fincon: warning: {path}: strategies: ['markowitz', 'sma-cross'] and benchmark: True are the "
        "backtest's; fincon train runs the team alone, without a benchmark\n"
    )


def test_a_flag_and_a_strategys_own_setting_naming_one_path_agree(tmp_path, monkeypatch):
    """The strategy's own path is saved absolute, the flag's as typed: the same file both ways is no
    contradiction (another file is)."""
    from fincon.cli.backtest import build_config
    from fincon.cli.main import build_parser
    from fincon.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "own.yaml").write_text(
        "strategies: [llm-trader]\nstrategy_params:\n  llm-trader: {cache_path: c.sqlite}\n"
    )

    def cfg(path):
        return build_config(build_parser().parse_args(["backtest", "--config", "own.yaml", "--llm-cache-path", path]))

    assert cfg("c.sqlite").params("llm-trader")["cache_path"] == str(tmp_path / "c.sqlite")
    with pytest.raises(ConfigError, match="--llm-cache-path d.sqlite and strategy_params.llm-trader.cache_path="):
        cfg("d.sqlite")
