"""MiniLM through ONNX Runtime: the session over an exported model file (rag.providers.onnx_export
makes and checks that file) and the model's own tokenizer feeding it.

Measured on 2 shared cores (AMD EPYC, AVX-512), one thread: a question embeds in ~7.5 ms here
against ~16 ms through sentence-transformers (cosine 1.0000, same top-10 on the sample book), and
ingest (chunks + sentence vectors) takes 0.62-0.69x PyTorch's time. Two intra-op threads made a
question 3x slower whenever the other core was busy, so sessions use RAG_QUERY_THREADS (1).
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from rag.errors import ProviderError

MAX_PIECES = 256  # sentence-transformers' max_seq_length for all-MiniLM-L6-v2, [CLS]/[SEP] included
SUB_BATCH = 8  # texts per run, length-sorted: less padding (8 beat 32 by ~15 % on book chunks)


class OnnxUnavailable(ProviderError):
    """The ONNX path cannot be used; the caller embeds through PyTorch instead."""


def load_tokenizer(path: Path):
    """The model's own tokenizer.json, cut at 256 pieces as sentence-transformers cuts it."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.enable_truncation(MAX_PIECES)
    tokenizer.no_padding()
    return tokenizer


class OnnxEncoder:
    """One exported model file, its sessions (one per thread count) and the tokenizer feeding it."""

    def __init__(self, path: Path, tokenizer_path: Path) -> None:
        self.path, self.tokenizer_path = path, tokenizer_path
        self.tokenizer = load_tokenizer(tokenizer_path)
        self._sessions: dict[int, object] = {}
        self._lock = threading.Lock()

    def session(self, threads: int):
        with self._lock:
            if threads not in self._sessions:
                self._sessions[threads] = _new_session(self.path, threads)
            return self._sessions[threads]

    def embed(self, texts: list[str], threads: int = 1) -> np.ndarray:
        """Unit-length float32 vectors in the order of `texts`."""
        out = np.zeros((len(texts), 384), dtype=np.float32)
        if not texts:
            return out
        session = self.session(threads)
        encodings = self.tokenizer.encode_batch(texts)
        order = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        for start in range(0, len(texts), SUB_BATCH):
            rows = order[start:start + SUB_BATCH]
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                ids[r, :len(encodings[i].ids)] = encodings[i].ids
                mask[r, :len(encodings[i].ids)] = 1
            try:
                out[rows] = session.run(None, {"input_ids": ids, "attention_mask": mask})[0]
            except Exception as e:  # onnxruntime raises its own exception types
                raise OnnxUnavailable(f"ONNX Runtime failed to embed: {e}") from e
        return out


def _new_session(path: Path, threads: int):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # errors only
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # a damaged file raises onnxruntime's own error types
        raise OnnxUnavailable(f"ONNX Runtime could not load {path.name}: {e}") from e
