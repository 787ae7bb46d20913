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
