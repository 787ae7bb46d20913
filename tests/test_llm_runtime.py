"""The local model runtime is built on first need (fincon.llm.backends.runtime):
one notice line before, the duration after, one error line naming the log
and the command to run by hand if the build fails. The pip build itself is
replaced by a tiny command here (the real one compiles for 6 minutes)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from fincon.llm.backends import runtime
from fincon.llm.errors import LLMError

MAKEFILE = Path(__file__).resolve().parents[1] / "Makefile"


@pytest.fixture
def missing(monkeypatch, tmp_path):
    """llama_cpp not importable until ``state['built']``; builds logged under tmp_path."""
    state = {"built": False, "checks": 0}

    def importable():
        state["checks"] += 1
        return state["built"]

    monkeypatch.setattr(runtime, "_importable", importable)
    monkeypatch.setattr(runtime.tempfile, "gettempdir", lambda: str(tmp_path))
    monkeypatch.setattr(runtime, "_lock_path", lambda: tmp_path / "build.lock")
    monkeypatch.delenv("FINCON_NO_RUNTIME_BUILD", raising=False)
    return state


def test_a_missing_runtime_is_built_once_with_a_notice_and_its_duration(missing, monkeypatch):
    def build():
        missing["built"] = True  # what a finished pip install makes importable
        return [sys.executable, "-c", "import os; assert os.environ['CMAKE_ARGS'] == '-DGGML_NATIVE=OFF'"]

    monkeypatch.setattr(runtime, "build_command", build)
    lines = []
    runtime.ensure_llama_cpp(notice=lines.append)
    assert lines[0] == "fincon: building the local model runtime (llama-cpp-python, one time, ~6 min on 2 cores)..."
    assert re.fullmatch(r"fincon: local model runtime built in \d+\.\d min; later runs use it directly", lines[1])
    runtime.ensure_llama_cpp(notice=lines.append)  # now importable: nothing more is said or built
    assert len(lines) == 2


def test_a_failed_build_is_one_line_with_its_log_and_the_command_by_hand(missing, monkeypatch, tmp_path):
    monkeypatch.setattr(
        runtime, "build_command", lambda: [sys.executable, "-c", "print('cmake: no compiler'); raise SystemExit(3)"]
    )
    lines = []
    with pytest.raises(LLMError) as err:
        runtime.ensure_llama_cpp(notice=lines.append)
    msg = str(err.value)
    assert "\n" not in msg and len(lines) == 1
    assert msg.startswith("building llama-cpp-python failed after ") and "(exit 3; log " in msg
    log = Path(re.search(r"log (\S+)\)", msg).group(1))
    assert log.parent == tmp_path and log.read_text().strip() == "cmake: no compiler"
    assert msg.endswith("build it by hand: " + runtime.by_hand())


def test_the_build_can_be_turned_off(missing, monkeypatch):
    monkeypatch.setenv("FINCON_NO_RUNTIME_BUILD", "1")
    monkeypatch.setattr(runtime.subprocess, "call", lambda *a, **k: pytest.fail("must not build"))
    with pytest.raises(LLMError, match=r"FINCON_NO_RUNTIME_BUILD is set.*make install-llm-extras") as err:
        runtime.ensure_llama_cpp(notice=lambda line: pytest.fail("no notice without a build"))
    assert str(err.value).endswith(runtime.by_hand()) and "\n" not in str(err.value)


def test_the_command_by_hand_is_the_makefiles():
    """`make install-llm-extras` (run by `make test`) and the lazy build install the same thing the same way."""
    recipe = MAKEFILE.read_text().split("\ninstall-llm-extras:", 1)[1].split("\n\n", 1)[0]
    assert f'CMAKE_ARGS="{runtime.CMAKE_ARGS}"' in recipe and f'"{runtime.REQUIREMENT}"' in recipe
    hand = runtime.by_hand()
    assert hand.startswith(f"CMAKE_ARGS={runtime.CMAKE_ARGS} {sys.executable} -m pip install --quiet -c ")
    assert hand.endswith("constraints.txt 'llama-cpp-python[server]==0.3.36'")
