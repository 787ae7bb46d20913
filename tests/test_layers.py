"""The layers of docs/architecture.md hold: ``lint-imports`` (import-linter)
checks the contracts in pyproject.toml, imports inside functions included, so
the suite fails on an upward import or an import circle as ``make test`` does."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports() -> str:
    here = Path(sys.executable).with_name("lint-imports")  # the venv's, beside its python
    found = str(here) if here.exists() else shutil.which("lint-imports")
    assert found, "lint-imports is not installed: pip install -e '.[dev]' (import-linter)"
    return found


def test_import_contracts_are_kept():
    res = subprocess.run([_lint_imports(), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "0 broken" in res.stdout


def test_a_lazy_upward_import_breaks_the_layers(tmp_path):
    """The contracts count imports inside functions: a copy of the package in
    which the engine lazily imports the CLI fails them."""
    shutil.copytree(ROOT / "fincon", tmp_path / "fincon", ignore=shutil.ignore_patterns("data", "__pycache__"))
    (tmp_path / "fincon" / "data").mkdir()
    for f in (ROOT / "fincon" / "data").rglob("*.py"):
        dest = tmp_path / "fincon" / "data" / f.relative_to(ROOT / "fincon" / "data")
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(f, dest)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    with open(tmp_path / "fincon" / "engine" / "feed.py", "a", encoding="utf-8") as fh:
        fh.write("\n\ndef _upward():\n    from fincon.cli.main import main\n\n    return main\n")
    res = subprocess.run([_lint_imports(), "--no-cache"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1, res.stdout[-4000:]
    assert "fincon.engine.feed -> fincon.cli.main" in res.stdout


def _imports_inside_functions() -> list[str]:
    """Every import of a fincon module made inside a function, as ``file:line module``."""
    import ast

    out = []
    for path in sorted((ROOT / "fincon").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("fincon"):
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module}")
    return sorted(set(out))


def test_fincon_modules_are_imported_at_the_top_unless_their_cost_says_otherwise():
    """An import of fincon's own module inside a function is the exception (CONTRIBUTING.md,
    "Imports"): one that would load a third-party package the importing module does not (pandas,
    backtrader, chromadb, matplotlib, ...) or one more module into ``fincon --help``. 382 were
    inside functions before the clean-up; the ones left were each tried at the top and measured.
    The count may only go down."""
    found = _imports_inside_functions()
    assert len(found) <= 121, f"{len(found)} imports of fincon modules inside functions (at most 121):\n" + "\n".join(
        found
    )
