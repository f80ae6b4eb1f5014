"""MiniLM with int8 weights for embedding questions at retrieval time, made once from the
verified fp32 export (onnxruntime's dynamic quantisation, per channel) and cached beside it.

Only the retrieval query uses it: documents, sentence vectors and the question vector the
answerer compares with sentences stay fp32, so answers do not change. Its vectors are close to,
not equal to, fp32's (cosine 0.95-0.99 on questions), so it is checked for closeness on the
probes (MIN_COSINE) and its retrieval quality is measured (bench/retrieval.py, bench/onnx_int8.py),
not assumed. When it cannot be made or fails its check, questions embed through fp32, which is
slower and exactly as good.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from rag.providers.onnx_export import (
    MODEL_FILE,
    PROBES,
    _export_lock,
    _write_atomically,
    recorded_problem,
    sha256_file,
)
from rag.providers.onnx_runtime import OnnxEncoder, OnnxUnavailable

INT8_FILE, INT8_RECORD = "model.int8.onnx", "model.int8.onnx.json"
INT8_VERSION = 1  # bump when the recipe changes: the next load quantises again
# Measured: 0.981 on the weakest probe, 0.99 on questions. A broken model gives ~0 or NaN, so
# this floor tells a faulty file from quantisation's usual error.
MIN_COSINE = 0.95
LOG = logging.getLogger(__name__)
_LOCK = threading.Lock()
_ENCODERS: dict[str, OnnxEncoder] = {}


def _problem(folder: Path, source_sha: str) -> str | None:
    return recorded_problem(folder / INT8_FILE, folder / INT8_RECORD, "not quantised yet",
                            {"source_sha256": source_sha, "version": INT8_VERSION},
                            "it was made from another fp32 model or recipe")


def open_int8(fp32: OnnxEncoder) -> OnnxEncoder:
    """The int8 encoder made from `fp32` (its folder holds the verified fp32 export): cached
    when its record matches, else quantised and checked now. Raises OnnxUnavailable."""
    folder = fp32.path.parent
    with _LOCK:
        if str(folder) in _ENCODERS:
            return _ENCODERS[str(folder)]
        try:
            source_sha = sha256_file(folder / MODEL_FILE)
        except OSError as e:
            raise OnnxUnavailable(f"cannot read the fp32 model to quantise it: {e}") from e
        problem = _problem(folder, source_sha)
        encoder = None
        if problem is None:
            encoder = OnnxEncoder(folder / INT8_FILE, fp32.tokenizer_path)
            try:
                check(encoder, fp32)
            except OnnxUnavailable as e:
                problem, encoder = str(e), None
        if encoder is None:
            if problem != "not quantised yet":
                LOG.warning("Quantising the query model again: %s", problem)
            encoder = _quantise(folder, source_sha, fp32)
        _ENCODERS[str(folder)] = encoder
        return encoder


def _quantise(folder: Path, source_sha: str, fp32: OnnxEncoder) -> OnnxEncoder:
    try:
        with _export_lock(folder):
            if _problem(folder, source_sha) is None:  # another process just made it
                encoder = OnnxEncoder(folder / INT8_FILE, fp32.tokenizer_path)
                check(encoder, fp32)
                return encoder
            fd, name = tempfile.mkstemp(prefix=".int8-", suffix=".onnx.part", dir=folder)
            os.close(fd)
            temp = Path(name)
            try:
                started = time.perf_counter()
                quantise_file(folder / MODEL_FILE, temp)
                encoder = OnnxEncoder(temp, fp32.tokenizer_path)
                worst = check(encoder, fp32)
                record = {"sha256": sha256_file(temp), "source_sha256": source_sha,
                          "version": INT8_VERSION, "min_cosine": worst,
                          "seconds": round(time.perf_counter() - started, 2),
                          "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
                temp.chmod(0o644)
                os.replace(temp, folder / INT8_FILE)
                _write_atomically(folder / INT8_RECORD, json.dumps(record, indent=2) + "\n")
                return OnnxEncoder(folder / INT8_FILE, fp32.tokenizer_path)
            finally:
                temp.unlink(missing_ok=True)
    except OSError as e:
        raise OnnxUnavailable(f"cannot write the int8 model into {folder}: {e}") from e


def quantise_file(source: Path, target: Path) -> None:
    try:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # the quantiser advises "pre-processing" on the root logger
        try:
            quantize_dynamic(str(source), str(target), weight_type=QuantType.QInt8,
                             per_channel=True)
        finally:
            root.setLevel(level)
    except Exception as e:  # the quantiser raises many types; any of them means "use fp32"
        raise OnnxUnavailable(f"int8 quantisation failed: {e}") from e


def check(encoder: OnnxEncoder, fp32: OnnxEncoder) -> float:
    """The lowest cosine to fp32's vectors over the probes; below MIN_COSINE it is refused."""
    reference = fp32.embed(list(PROBES))
    vectors = np.vstack([encoder.embed([p]) for p in PROBES])
    if vectors.shape != reference.shape or not np.isfinite(vectors).all():
        raise OnnxUnavailable(f"the int8 model gave vectors of shape {vectors.shape}")
    cosines = np.sum(vectors * reference, axis=1)  # both unit length
    i = int(np.argmin(cosines))
    if cosines[i] < MIN_COSINE:
        raise OnnxUnavailable(f"int8 vectors are too far from fp32's (cosine {cosines[i]:.4f} "
                              f"< {MIN_COSINE} on probe {i + 1} of {len(PROBES)})")
    return round(float(cosines[i]), 6)
