"""The layers of docs/architecture.md hold: ``lint-imports`` (import-linter)
checks the contracts in pyproject.toml, imports inside functions included, so
the suite fails on an upward import or an import circle as ``make test`` does."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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
    out = []
    for path in sorted((ROOT / "fincon").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("fincon"):
                        out.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.module}")
    return sorted(set(out))


def test_fincon_modules_are_imported_at_the_top_or_through_a_face():
    """No function imports a fincon module (CONTRIBUTING.md, "Imports"): a name whose module is
    costly to load (pandas, backtrader, chromadb, matplotlib, Ray, or one more module in
    ``fincon --help``) is reached through its package's face (:mod:`fincon.lazy`), which
    import-linter reads like any import. 382 were inside functions before the clean-up."""
    found = _imports_inside_functions()
    assert not found, f"{len(found)} imports of fincon modules inside functions:\n" + "\n".join(found)


def _faces() -> list[str]:
    return sorted(
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "fincon").rglob("__init__.py")
        if "= face(__name__, __file__)" in p.read_text(encoding="utf-8")
    )


def _defined_at_top(module: str) -> set[str]:
    """The names a fincon module binds at its top level (read, not imported), and its submodules'."""
    path = ROOT.joinpath(*module.split("."))
    names: set[str] = set()
    if path.is_dir():
        names |= {p.stem for p in path.glob("*.py")} | {p.name for p in path.iterdir() if (p / "__init__.py").is_file()}
        path = path / "__init__"
    for node in ast.parse(path.with_suffix(".py").read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return names


def test_every_name_a_face_offers_is_defined_where_it_says():
    """Read, not imported (the fast tier): each name of each face is bound at the top of the module
    the face names, or is a submodule of it. The slow test below imports them all."""
    from fincon.lazy import _offered

    missing = []
    for face in _faces():
        init = ROOT.joinpath(*face.split(".")) / "__init__.py"
        for attr, (module, orig) in _offered(face, str(init)).items():
            if orig not in _defined_at_top(module):
                missing.append(f"{face}.{attr}: {module} has no {orig}")
    assert not missing, "\n".join(missing)


@pytest.mark.slow
def test_every_name_a_face_offers_loads_from_where_it_says():
    """Each name of each face resolves in a fresh process (a face naming a moved or deleted name
    fails here, not in a user's run), and loading a face loads none of the modules it names."""
    faces = _faces()
    assert {"fincon.workflow", "fincon.engine", "fincon.data", "fincon.llm", "fincon.agents.team"} <= set(faces)
    code = (
        "import importlib, sys\n"
        "from fincon.lazy import _offered\n"
        f"pkgs = [importlib.import_module(name) for name in {faces!r}]\n"
        "named = {m for p in pkgs for m, _ in _offered(p.__name__, p.__file__).values()} - {p.__name__ for p in pkgs}\n"
        "assert not named & set(sys.modules), sorted(named & set(sys.modules))\n"
        "for pkg in pkgs:\n"
        "    for attr, (module, orig) in _offered(pkg.__name__, pkg.__file__).items():\n"
        "        home = importlib.import_module(module)\n"
        "        want = importlib.import_module(module + '.' + orig) if module == pkg.__name__ else getattr(home, orig)\n"
        "        assert getattr(pkg, attr) is want and attr in dir(pkg), (pkg.__name__, attr)\n"
        "print('ok', len(pkgs))\n"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0 and res.stdout.startswith("ok"), res.stderr[-3000:]


def test_a_face_refuses_a_name_it_does_not_offer():
    from fincon import workflow

    assert callable(workflow.run_config)
    try:
        workflow.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "module 'fincon.workflow' has no attribute 'no_such_name'" in str(exc)
    else:
        raise AssertionError("a face offered a name it does not list")


def test_a_face_reads_its_name_from_the_module_at_each_use(monkeypatch):
    """The face copies nothing onto the package: a name patched in its module (as tests do) is the
    patched one through the face too, after the face has been used."""
    import fincon.workflow.training as training
    from fincon import workflow

    assert workflow.train is training.train
    monkeypatch.setattr(training, "train", "patched")
    assert workflow.train == "patched"


def test_no_module_of_fincon_is_over_500_lines():
    """Issue 45 item 4: small modules. workflow/runner.py reached 507 lines this session unseen; a module
    that grows past the bound is split (or something moved to where it belongs) before it lands."""
    long = {
        str(p.relative_to(ROOT)): n
        for p in (ROOT / "fincon").rglob("*.py")
        if (n := len(p.read_text().splitlines())) > 500
    }
    assert long == {}
