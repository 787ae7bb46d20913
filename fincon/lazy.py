"""One lazy-loading face per package (PEP 562).

A package whose names are costly to load (they bring pandas, backtrader,
chromadb, matplotlib or Ray with them, or one more module into ``fincon
--help``) offers them through its ``__init__.py``: an ``if TYPE_CHECKING:``
block of ``from fincon.<package>.<module> import name as name`` lines, then
``__getattr__, __dir__ = face(__name__, __file__)``. A caller imports the
package at the top of its module (``from fincon import workflow``) and the
name's module loads the first time the name is used
(``workflow.run_config(cfg)``), never before.

Why the names are written as imports under ``TYPE_CHECKING`` and read back
from the file rather than listed in a table: the one list serves three
readers. mypy reads it for the names' types, import-linter reads it for the
layers (each name is an edge from the package to its module, so a face cannot
carry an upward or forbidden import past the contracts), and :func:`face`
reads it for where to load each name from.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path
from typing import Any, Callable


def _offered(package: str, init_file: str) -> dict[str, tuple[str, str]]:
    """Each name the ``if TYPE_CHECKING:`` block of ``init_file`` imports:
    the name it is offered as, to (module, name in that module). A name may not
    be a submodule's (``fincon.report.card``'s function ``card``): loading the
    submodule sets the package's attribute of that name to the module."""
    tree = ast.parse(Path(init_file).read_text(encoding="utf-8"), init_file)
    offered: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                if not isinstance(stmt, ast.ImportFrom) or stmt.level or not stmt.module:
                    raise SyntaxError(
                        f"{init_file}:{stmt.lineno}: a face offers names by `from fincon.x import y as y`"
                    )
                for alias in stmt.names:
                    name = alias.asname or alias.name
                    here = Path(init_file).parent
                    if stmt.module != package and ((here / f"{name}.py").exists() or (here / name).is_dir()):
                        raise SyntaxError(
                            f"{init_file}:{stmt.lineno}: {name} is also a submodule; offer it `as` another name"
                        )
                    offered[name] = (stmt.module, alias.name)
    return offered


def face(package: str, init_file: str) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package``: a name of its
    ``TYPE_CHECKING`` block is imported from its module on first use. It is
    read from its module at each use, not copied onto the package, so that the
    package and the module never disagree (a test that patches
    ``fincon.workflow.training.train`` patches ``workflow.train`` too)."""
    offered = _offered(package, init_file)

    def __getattr__(name: str) -> Any:
        if name not in offered:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = offered[name]
        # `from fincon.eval import leakage`: the package itself offers a submodule
        if module == package:
            return importlib.import_module(f"{module}.{attr}")
        return getattr(importlib.import_module(module), attr)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(offered))

    return __getattr__, __dir__
