"""docs/reference.md is the config models as they are (fincon/cli/reference.py)."""

from __future__ import annotations

from fincon.cli import reference


def test_the_reference_page_is_the_models_as_they_are():
    page = reference.PAGE.read_text(encoding="utf-8")
    assert page == reference.render(), "docs/reference.md is stale: run `make reference`"


def test_every_section_and_flag_is_on_the_page():
    page = reference.render()
    # a key of each section, its default and its flag, as the models say
    assert "| `backend` | `local` \\| `openai` | `local` | `--llm-backend` |" in page
    assert "| `samples` | int (>= 1, <= 9) | `3` | `--samples` |" in page
    assert "| `cvar` | bool | `True` | `--no-cvar` |" in page
    assert "| `cpus` | int (>= 1, <= 4096) |  | `--ray-cpus` |" in page
    # a field without a description or flag still has its meaning: the #: comment above it
    assert "| `answer_max_tokens` | int (>= 16, <= 8192) | `200` |  | cap on the tokens of one answer |" in page
