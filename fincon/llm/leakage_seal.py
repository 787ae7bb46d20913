"""The leakage audit reads the corpus a run read: a run's folder seals it (``run_manifest.json``'s
``corpus_sha256``), and a corpus folder changed since is refused before anything is audited."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from fincon.data.events.generator import SAMPLE_DIR
from fincon.data.inputs import SAMPLE
from fincon.errors import DataError
from fincon.files import folder_hash


def same_corpus(path: Path | None, spec: str, hashes: dict[str, str | None]) -> None:
    """Refuse to audit the run at ``path`` against another corpus than it read: the folder its config
    names holds other files than its run_manifest.json sealed (re-imported since: a masked MSFT run
    audited against a JNJ+HON corpus read "blind" where its own gave 3 %, review 2026-12-02). A run
    without the seal (a training's top folder, a run before it) is read as it is."""
    if path is None:  # the knowledge of a corpus alone, no run's folder (tests, the bench)
        return
    sealed = next((m for m in (path, path.parent) if (m / "run_manifest.json").is_file()), None)
    try:
        seal = json.loads((sealed / "run_manifest.json").read_text(encoding="utf-8")) if sealed else {}
        cfg = yaml.safe_load((sealed / "config.yaml").read_text(encoding="utf-8")) if sealed else {}
    except (OSError, ValueError, yaml.YAMLError):
        seal, cfg = {}, {}
    if not isinstance(seal, dict) or not isinstance(cfg, dict) or seal.get("corpus_sha256") is None:
        return
    # the seal is of the team's corpus (fincon.workflow.runner: the first of fincon, finmem the run holds);
    # a strategy that read another folder is not checked against it (found in the diff review)
    team = next((n for n in ("fincon", "finmem") if n in (cfg.get("strategies") or [])), None)
    if team is None or str(((cfg.get("strategy_params") or {}).get(team) or {}).get("events") or SAMPLE) != spec:
        return
    folder = SAMPLE_DIR if spec == SAMPLE else Path(spec).expanduser()
    if spec not in hashes:
        hashes[spec] = folder_hash(folder) if folder.is_dir() else None
    if hashes[spec] != seal["corpus_sha256"]:
        raise DataError(
            f"{path}: the corpus {spec} holds other files than the run read (its run_manifest.json's "
            "corpus_sha256 differs: re-imported or edited since; every file under it counts); put the corpus "
            "the run read back there, or point the run's config.yaml (events:) at where it is now"
        )
