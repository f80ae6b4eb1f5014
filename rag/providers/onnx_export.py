"""MiniLM exported to ONNX once from the verified PyTorch weights, checked against them on fixed
probes before use, cached in a folder keyed by the weights' hash with its SHA-256 recorded beside
it and checked at every load (a damaged or changed file is exported again).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import logging
import os
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from rag.providers.onnx_runtime import OnnxEncoder, OnnxUnavailable

EXPORT_VERSION = 1  # bump when the export recipe changes: the next load exports again
MIN_COSINE = 0.9999
MODEL_FILE, RECORD_FILE, LOCK_FILE = "model.onnx", "model.onnx.json", ".export.lock"
PROBES: tuple[str, ...] = (
    "",
    "   \n\t ",
    "?",
    "What is the zero moment point?",
    "How does a PID loop avoid integral windup when the actuator saturates?",
    "Café naïve façade, coöperate and résumé; 日本語のテキスト, ελληνικά, emoji 🙂🤖.",
    "def step(x):\n    return x * 0.5  # 3.14159 rad/s at 10 kHz, tolerance 1e-3 m",
    "The integral term removes steady-state error but winds up when the actuator saturates. "
    * 30,  # ~500 word pieces: checks the cut at 256 is the same on both sides
)
LOG = logging.getLogger(__name__)
_LOCK = threading.Lock()
_ENCODERS: dict[str, OnnxEncoder] = {}
_FILE_MODE = 0o644  # mkstemp makes files 0600; the cache is as readable as the index beside it


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_folder(cache_root: Path, weights_sha: str) -> Path:
    return Path(cache_root) / f"{weights_sha[:16]}-v{EXPORT_VERSION}"


def cached_problem(folder: Path, weights_sha: str) -> str | None:
    """Why the cached export cannot be used as it is, or None when its SHA-256 matches."""
    return recorded_problem(folder / MODEL_FILE, folder / RECORD_FILE, "not exported yet",
                            {"weights_sha256": weights_sha}, "it was exported from other weights")


def recorded_problem(model: Path, record_path: Path, missing: str, expected: dict[str, object],
                     other: str) -> str | None:
    """Why a cached model file cannot be trusted: absent (`missing`), no readable record beside
    it, a record that does not hold `expected` (`other`), or bytes that differ from the SHA-256
    it records. None when it can be used."""
    if not model.is_file():
        return missing
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return f"{record_path.name} is missing or unreadable"
    if not isinstance(record, dict) or any(record.get(k) != v for k, v in expected.items()):
        return other
    try:
        actual = sha256_file(model)
    except OSError as e:
        return f"{model.name} cannot be read: {e}"
    if actual != record.get("sha256"):
        return f"{model.name} does not match its recorded SHA-256 (damaged or changed)"
    return None


def open_encoder(cache_root: Path, weights_sha: str, tokenizer_path: Path,
                 torch_model: Callable[[], object],
                 torch_embed: Callable[[list[str]], np.ndarray]) -> OnnxEncoder:
    """The verified encoder for these weights: the cached file when its SHA-256 matches its
    record, else exported, verified against PyTorch and cached now. Raises OnnxUnavailable."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError as e:
        raise OnnxUnavailable("onnxruntime is not installed (pip install -r requirements.txt)"
                              ) from e
    folder = export_folder(cache_root, weights_sha)
    with _LOCK:
        if str(folder) in _ENCODERS:
            return _ENCODERS[str(folder)]
        problem = cached_problem(folder, weights_sha)
        encoder = None
        if problem is None:
            try:
                encoder = OnnxEncoder(folder / MODEL_FILE, tokenizer_path)
                encoder.session(1)
            except OnnxUnavailable as e:
                problem, encoder = str(e), None
        if encoder is None:
            if problem != "not exported yet":
                LOG.warning("Exporting the ONNX embedder again: %s", problem)
            encoder = export_verified(folder, weights_sha, tokenizer_path, torch_model,
                                      torch_embed)
        _ENCODERS[str(folder)] = encoder
        return encoder


def export_verified(folder: Path, weights_sha: str, tokenizer_path: Path,
                    torch_model: Callable[[], object],
                    torch_embed: Callable[[list[str]], np.ndarray]) -> OnnxEncoder:
    """Export into a temp file, verify it on the probes, then rename it into place and record
    its SHA-256 beside it (the record last: a model without one is exported again)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with _export_lock(folder):
            if cached_problem(folder, weights_sha) is None:  # another process just finished it
                encoder = OnnxEncoder(folder / MODEL_FILE, tokenizer_path)
                encoder.session(1)
                return encoder
            fd, name = tempfile.mkstemp(prefix=".model-", suffix=".onnx.part", dir=folder)
            os.close(fd)
            try:
                return _export_into(Path(name), folder, weights_sha, tokenizer_path, torch_model,
                                    torch_embed)
            finally:
                Path(name).unlink(missing_ok=True)
    except OSError as e:
        raise OnnxUnavailable(f"cannot write the ONNX model into {folder}: {e}") from e


def _export_into(temp: Path, folder: Path, weights_sha: str, tokenizer_path: Path,
                 torch_model: Callable[[], object],
                 torch_embed: Callable[[list[str]], np.ndarray]) -> OnnxEncoder:
    started = time.perf_counter()
    export_model(torch_model(), temp)
    encoder = OnnxEncoder(temp, tokenizer_path)
    worst = verify_encoder(encoder, torch_embed)
    record = {"sha256": sha256_file(temp), "weights_sha256": weights_sha,
              "export_version": EXPORT_VERSION, "probes": len(PROBES), "min_cosine": worst,
              "seconds": round(time.perf_counter() - started, 2), "versions": _versions(),
              "created": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")}
    temp.chmod(_FILE_MODE)
    os.replace(temp, folder / MODEL_FILE)
    encoder.path = folder / MODEL_FILE
    _write_atomically(folder / RECORD_FILE, json.dumps(record, indent=2) + "\n")
    return encoder


def export_model(model, target: Path) -> None:
    """Trace the sentence-transformers model (BERT + mean pooling + normalise) into `target`."""
    import torch

    class Pooled(torch.nn.Module):
        def __init__(self, bert) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            hidden = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                               token_type_ids=torch.zeros_like(input_ids)).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)  # one padded row, so the traced graph honours the mask
    axes = {"input_ids": {0: "batch", 1: "pieces"}, "attention_mask": {0: "batch", 1: "pieces"},
            "embedding": {0: "batch"}}
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Pooled(model[0].auto_model).eval(), (ids, mask), str(target),
                              input_names=["input_ids", "attention_mask"],
                              output_names=["embedding"], dynamic_axes=axes, opset_version=17,
                              dynamo=False)
    except Exception as e:  # the exporter raises many types; any of them means "use PyTorch"
        raise OnnxUnavailable(f"the ONNX export failed: {e}") from e


def verify_encoder(encoder: OnnxEncoder, torch_embed: Callable[[list[str]], np.ndarray]
                   ) -> float:
    """The lowest cosine between ONNX and PyTorch vectors over the probes, one at a time and as
    one padded batch; below MIN_COSINE for any probe the export is refused."""
    reference = np.asarray(torch_embed(list(PROBES)), dtype=np.float32)
    batch = encoder.embed(list(PROBES))
    single = np.vstack([encoder.embed([p]) for p in PROBES])
    worst = 1.0
    for vectors in (batch, single):
        if vectors.shape != reference.shape or not np.isfinite(vectors).all():
            raise OnnxUnavailable(f"the ONNX model gave vectors of shape {vectors.shape}, "
                                  f"expected {reference.shape}")
        cosines = np.sum(vectors * reference, axis=1) / np.maximum(
            np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1), 1e-12)
        i = int(np.argmin(cosines))
        if cosines[i] < MIN_COSINE:
            raise OnnxUnavailable(f"ONNX vectors differ from PyTorch's (cosine {cosines[i]:.6f} "
                                  f"< {MIN_COSINE} on probe {i + 1} of {len(PROBES)})")
        worst = min(worst, float(cosines[i]))
    return worst


@contextlib.contextmanager
def _export_lock(folder: Path) -> Iterator[None]:
    """One exporting process per folder; the others wait, then find the file done."""
    with (folder / LOCK_FILE).open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _write_atomically(path: Path, text: str) -> None:
    fd, name = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(name, _FILE_MODE)
        os.replace(name, path)
    finally:
        Path(name).unlink(missing_ok=True)


def _versions() -> dict[str, str]:
    import onnxruntime
    import torch

    return {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__}
