"""The quickstart and team notebooks run top to bottom and show their plots
(the training notebook: tests/test_training_planted.py)."""

from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.notebook

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "quickstart.ipynb"


def test_quickstart_notebook_executes(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # the notebook's tempfile.mkdtemp() lands here, not in /tmp
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    tables = [o["data"]["text/plain"] for o in outputs if "text/plain" in o.get("data", {})]
    assert any("cr_pct" in t and "markowitz" in t for t in tables)


TEAM_NOTEBOOK = NOTEBOOK.parent / "team_backtest.ipynb"


def test_team_notebook_executes_on_the_replayed_demo(tmp_path, monkeypatch):
    """Run as Jupyter runs it, in the notebook's own folder: nothing is written there (its run went to
    `team-demo/` beside the notebook, inside a clone: found in review 2026-12-02)."""
    from nbclient import NotebookClient

    (tmp_path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    here = tmp_path / "notebooks"
    here.mkdir()
    nb = nbformat.read(TEAM_NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(here)}}).execute()
    assert list(here.iterdir()) == []
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    text = "\n".join(o.get("text", "") + o.get("data", {}).get("text/plain", "") for o in outputs)
    assert "WHAT THE TEAM SAW AND SAID" in text and "relied on" in text.lower()
    assert "cr_pct" in text and "team_model_calls" in text


# notebooks/train_beliefs.ipynb runs in tests/test_training_planted.py: its
# training is the planted one that file checks, so it runs once, there.
