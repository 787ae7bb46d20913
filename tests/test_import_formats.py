"""The import formats live in one registry (``fincon.data.importers.IMPORTERS``):
``fincon data import`` takes its format choices and the formats part of its
``--help`` from it, and reads through it. A format added there is a choice
and is listed, with nothing else to edit in the CLI."""

import importlib

import pytest

from fincon.cli.main import main
from fincon.data.importers import IMPORTERS, Importer, read_corpus
from fincon.errors import ConfigError


def _help(capsys, monkeypatch) -> str:
    monkeypatch.setenv("COLUMNS", "200")  # the usage line on one line
    with pytest.raises(SystemExit) as exc:
        main(["data", "import", "--help"])
    assert exc.value.code == 0
    return capsys.readouterr().out


def test_every_registered_format_is_a_choice_listed_in_help_with_a_reader(capsys, monkeypatch):
    out = _help(capsys, monkeypatch)
    assert "{investorbench,finsaber,csv}" in out  # the choices, in the registry's order
    for name, imp in IMPORTERS.items():
        lines = [f"  {name:<15}{imp.help[0]}", *(" " * 17 + line for line in imp.help[1:])]
        assert "\n" + "\n".join(lines) + "\n" in out, name
        assert callable(importlib.import_module(imp.module).read), imp.module


def test_a_format_added_to_the_registry_is_a_choice_and_listed(capsys, monkeypatch):
    monkeypatch.setitem(IMPORTERS, "toy", Importer("fincon.data.importers.table", ("a toy table,", "two lines")))
    out = _help(capsys, monkeypatch)
    assert "{investorbench,finsaber,csv,toy}" in out
    assert "\n  toy            a toy table,\n                 two lines\n" in out


def test_an_unknown_format_is_refused_naming_the_registered_ones():
    with pytest.raises(ConfigError, match="unknown import format 'nope'; use one of investorbench, finsaber, csv$"):
        read_corpus("nope", [], None)
