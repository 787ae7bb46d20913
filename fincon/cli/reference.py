"""docs/reference.md, generated from the config models: every key, its type, default, flag and meaning.

Why generated: the docs repeated ``LLMSettings`` by hand and drifted from
it. Here each section of a run or experiment config is read from its model
(:func:`sections`): a field's meaning is its ``description``, else its
``Flag``'s help, else the ``#:`` comment above it in the source (the
convention Sphinx's autodoc reads); its flag is the one
:mod:`fincon.cli.flags` makes from it. ``make reference`` writes the page;
``tests/test_reference.py`` fails when it is out of date.
"""

from __future__ import annotations

import datetime as dt
import enum
import inspect
import re
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from fincon import workflow
from fincon.agents.policies import Policies
from fincon.agents.team.params import FinConParams
from fincon.cli.flags import _default, _unwrap, bounds_of
from fincon.config import BrokerConfig, DataConfig, MetricsConfig, RunConfig
from fincon.flag import flag_of_field
from fincon.llm.settings import LLMSettings
from fincon.workflow.executors import ExecutorSpec

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference.md"

HEAD = """\
# Configuration reference

*Generated from the config models by `make reference` (fincon/cli/reference.py); do not edit by hand.
A test fails when this page and the models disagree.*

Every key a run config (`fincon backtest --config`, docs/configuration.md) or an
experiment config (`fincon experiment --config`, docs/experiments.md) may hold,
section by section: its type, its default, the flag that sets it (where one does)
and what it means. A strategy's own keys go under `strategy_params.<strategy>`
(`--param STRATEGY.KEY=VALUE`); the team's are `strategy_params.fincon` below.
"""


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """``#:`` comments above each field in the model's source (and its bases')."""
    out: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            lines = inspect.getsource(cls).splitlines()
        except (OSError, TypeError):
            continue
        pending: list[str] = []
        for line in lines:
            text = line.strip()
            if text.startswith("#:"):
                pending.append(text[2:].strip())
                continue
            match = re.match(r"^([a-z_][a-z0-9_]*)\s*:", text)
            if match and pending and line.startswith("    ") and not line.startswith("     "):
                out[match.group(1)] = " ".join(pending)
            if not text.startswith("#"):
                pending = []
    return out


def _range(info: Any) -> str:
    """`` >= 1, <= 9``: a field's bounds as the flag and the model check them."""
    b = bounds_of(info)
    parts = []
    if b["lo"] is not None:
        parts.append(f"{'>' if b['lo_open'] else '>='} {b['lo']:g}")
    if b["hi"] is not None:
        parts.append(f"{'<' if b['hi_open'] else '<='} {b['hi']:g}")
    return f" ({', '.join(parts)})" if parts else ""


def _type(annotation: Any) -> str:
    annotation = _unwrap(annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return " \\| ".join(f"`{a}`" for a in typing.get_args(annotation))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return " \\| ".join(f"`{m.value}`" for m in annotation)
    if origin in (list, dict):
        args = ", ".join(_type(a) for a in typing.get_args(annotation))
        return f"{origin.__name__}[{args}]"
    if origin in (typing.Union, __import__("types").UnionType):
        return " or ".join(_type(a) for a in typing.get_args(annotation))
    if annotation is dt.date:
        return "date"
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def _shown(value: Any) -> str:
    if value is None or value is PydanticUndefined:
        return ""
    if isinstance(value, enum.Enum):
        value = value.value
    if isinstance(value, dt.date):
        value = value.isoformat()
    if isinstance(value, BaseModel):
        return "(section)"
    if isinstance(value, Path):
        value = str(value).replace(str(Path.home()), "~")
    return f"`{value}`"


def _meaning(name: str, info: Any, comments: dict[str, str]) -> str:
    """The field's description, else its ``#:`` comment, else its flag's help (defaults are in their column)."""
    flag = flag_of_field(info)
    text = info.description or comments.get(name) or (flag.help if flag is not None else "") or ""
    shown = _shown(_default(info)).strip("`") or "none"
    try:
        text = text.format(desc=info.description or "", default=_default(info), section="training or test")
    except (ValueError, TypeError, KeyError, IndexError):
        text = text.replace("{desc}", info.description or "").replace("{default}", shown)
    return " ".join(text.replace("|", "\\|").split())


def table(model: type[BaseModel], *, prefix: str = "--", flags: dict[str, str] | None = None) -> str:
    """One section's table: key, type, default, flag, meaning."""
    comments = _comments(model)
    rows = ["| key | type | default | flag | meaning |", "|---|---|---|---|---|"]
    for name, info in model.model_fields.items():
        flag = flag_of_field(info)
        spelled = ""
        if flag is not None and flag.prefix is None:
            spelled = (flags or {}).get(name) or (flag.names[0] if flag.names else prefix + name.replace("_", "-"))
        default = _default(info)
        rows.append(
            f"| `{name}` | {_type(info.annotation)}{_range(info)} | {_shown(default)} | "
            f"{f'`{spelled}`' if spelled else ''} | {_meaning(name, info, comments)} |"
        )
    return "\n".join(rows)


def sections() -> list[tuple[str, str, type[BaseModel], str]]:
    """(title, config path, model, flag prefix) of every section, in reading order."""

    return [
        ("The run", "(top level)", RunConfig, "--"),
        ("Data", "data", DataConfig, "--"),
        ("Broker", "broker", BrokerConfig, "--"),
        ("Metrics", "metrics", MetricsConfig, "--"),
        ("The model", "llm (and strategy_params.<strategy>.llm)", LLMSettings, "--llm-"),
        ("The agent team", "strategy_params.fincon (experiment: team)", FinConParams, "--"),
        ("The team's trading policies", "strategy_params.fincon.policies", Policies, "--"),
        ("The experiment", "(top level of an experiment config)", workflow.ExperimentConfig, "--"),
        ("A window", "train, test", workflow.Window, "--train-"),
        ("Rolling evaluation", "rolling", workflow.RollingSpec, "--rolling-"),
        ("Execution", "executor", ExecutorSpec, "--"),
    ]


def render() -> str:
    parts = [HEAD]
    for title, path, model, prefix in sections():
        own = model.__dict__.get("__doc__") or ""  # not BaseModel's, for a model without one
        doc = " ".join(inspect.cleandoc(own).split("\n\n")[0].split())
        parts.append(f"## {title}: `{path}`\n\n{doc}\n\n{table(model, prefix=prefix)}\n")
    return "\n".join(parts)


def write(path: Path = PAGE) -> Path:
    path.write_text(render(), encoding="utf-8")
    return path


if __name__ == "__main__":
    print(write())
