"""How a model's field is spelled on the command line: :class:`Flag`, kept
beside the field it sets.

Why here, at the bottom: the models that flags set live in every layer
(``LLMSettings`` in llm, ``FinConParams`` in agents, ``RunConfig`` in config,
``ExperimentConfig`` in workflow) and the CLI sits on top. A field carries
its flag as ``Annotated`` metadata (``Annotated[int, Flag("--llm-seed")]``),
which pydantic keeps on the field and ignores when it validates, so the
field's type, range, default and description and the flag that sets it are
written once, in one place; :mod:`fincon.cli.flags` turns them into
argparse arguments and reads the given values back under the field's key.
Nothing here imports anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable


@dataclass(frozen=True, kw_only=True)
class FlagSpec:
    """The spelling of one field on the command line (made by :func:`Flag`).

    ``names``: the flags (``"--ticker", "--tickers"``; none: ``--field-name``;
    a name without dashes is a positional argument). ``help``: a template of
    ``{desc}`` (the field's description) and ``{default}`` (its default);
    empty: the description. ``metavar``, ``nargs``, ``required`` and
    ``choices`` are argparse's (``choices`` is read when the parser is
    built, so a registry may grow). ``parse``: the argparse type when the field's
    own type does not say it (a comma list read later, a path kept as text).
    ``read``: how a given value becomes the field's value (None: as given).
    ``repeat``: the flag may be given again (its values are collected).
    ``const``: a switch that stores this value (``--no-cvar``: False).
    ``prefix``: on a field that is a section of its own, the flags of its
    fields are this prefix and their names (``--train-`` -> ``--train-start``).
    ``group``: the help section the flag is listed in.
    """

    names: tuple[str, ...] = ()
    help: str = ""
    metavar: str | None = None
    nargs: str | None = None
    required: bool = False
    choices: Iterable[Any] | None = None
    parse: Callable[[str], Any] | None = None
    read: Callable[[Any], Any] | None = None
    repeat: bool = False
    const: Any = None
    prefix: str | None = None
    group: str | None = None


def flag_of_field(info: Any) -> FlagSpec | None:
    """The :class:`FlagSpec` on a pydantic field (its ``FieldInfo``), or None."""
    return next((m for m in info.metadata if isinstance(m, FlagSpec)), None)


def names_of(flag: FlagSpec, field: str, prefix: str = "--") -> tuple[str, ...]:
    """The flags that set ``field``: the ones its Flag names, else ``prefix``
    and the field's name (``--llm-`` + ``max_tokens``: ``--llm-max-tokens``)."""
    return flag.names or (prefix + field.replace("_", "-"),)


def spelled(model: Any, field: str, prefix: str = "--", section: str = "") -> str:
    """How a user gives ``field`` of the pydantic ``model``: its first flag
    (``--alias``, ``--llm-model``), or for a field without one its config key
    (``section`` + field: ``llm.n_ctx``)."""
    flag = flag_of_field(model.model_fields[field])
    return f"{section}{field}" if flag is None else names_of(flag, field, prefix)[0]


def Flag(*names: str, **kw: Any) -> FlagSpec:  # noqa: N802  (read as a type in ``Annotated[int, Flag(...)]``)
    """How a field is spelled on the command line: ``Flag("--ticker", "--tickers", metavar="T")``."""
    return FlagSpec(names=names, **kw)


# -- readers: how a given value becomes the field's ---------------------------------------


def absolute(text: Any) -> str:
    """A path saved absolute, so a run's config.yaml works from any directory."""

    return str(Path(text).expanduser().absolute())


def kept_absolute(path: Any) -> Any:
    """A path saved absolute whatever gave it (a flag, a YAML file, --param), of its own type; None stays
    None. config.yaml kept a YAML's relative ``dir: prices``, and rerun from another folder it read that
    folder's prices, unsaid (a pydantic ``AfterValidator``)."""
    if path is None:
        return None
    return Path(absolute(path)) if isinstance(path, Path) else absolute(path)


def absolute_or_sample(text: str) -> str:
    """``sample`` (the bundled corpus) as it is, any other path absolute."""
    return text if text == "sample" else absolute(text)


def on_off(text: str) -> bool:
    """``on`` / ``off`` as a bool."""
    return text == "on"
