"""The ONNX export: made once, verified against PyTorch before use, cached with its SHA-256, and
made again (or refused, leaving PyTorch in use) when the cached file is damaged or wrong."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from rag.providers.local_embedder import EXPECTED_SHA256
from rag.providers.onnx_export import (
    MIN_COSINE,
    MODEL_FILE,
    PROBES,
    RECORD_FILE,
    cached_problem,
    export_folder,
    open_encoder,
    sha256_file,
)
from rag.providers.onnx_runtime import MAX_PIECES, OnnxUnavailable

WEIGHTS = EXPECTED_SHA256["model.safetensors"]


def must_not_run(*args):
    raise AssertionError("the cached export should have been used as it is")


def copy_export(source: Path, root: Path) -> Path:
    """The session's export copied under a new cache root; returns the copy's folder."""
    target = export_folder(root, WEIGHTS)
    target.mkdir(parents=True)
    for name in (MODEL_FILE, RECORD_FILE):
        shutil.copy2(source / name, target / name)
    return target


@pytest.fixture(scope="module")
def exported(onnx_dir, onnx_encoder) -> Path:
    return export_folder(onnx_dir, WEIGHTS)


def reopen(embedder, root: Path, torch_model=None, torch_embed=None):
    return open_encoder(root, WEIGHTS, embedder.directory / "tokenizer.json",
                        torch_model or (lambda: embedder.model),
                        torch_embed or (lambda texts: embedder._torch_embed(texts, 1)))


def test_the_export_is_kept_with_its_sha256_and_probe_result(exported, onnx_encoder) -> None:
    record = json.loads((exported / RECORD_FILE).read_text())
    assert onnx_encoder.path == exported / MODEL_FILE
    assert record["sha256"] == sha256_file(exported / MODEL_FILE)
    assert record["weights_sha256"] == WEIGHTS and record["probes"] == len(PROBES)
    assert MIN_COSINE <= record["min_cosine"] <= 1.0 + 1e-6
    assert cached_problem(exported, WEIGHTS) is None
    assert not [p.name for p in exported.iterdir() if p.name.endswith(".part")]


def test_probes_include_an_empty_and_an_over_long_input(embedder) -> None:
    counts = embedder.count_tokens_batch(list(PROBES))
    assert min(counts) == 0 and max(counts) > MAX_PIECES


def test_a_cached_export_is_used_without_exporting(embedder, exported, onnx_encoder,
                                                   tmp_path: Path) -> None:
    folder = copy_export(exported, tmp_path)
    encoder = reopen(embedder, tmp_path, must_not_run, must_not_run)
    assert encoder.path == folder / MODEL_FILE
    texts = ["What is the zero moment point?", "Kalman gain"]
    assert np.allclose(encoder.embed(texts), onnx_encoder.embed(texts), atol=1e-6)


def test_a_changed_byte_is_found_and_the_model_exported_again(embedder, exported,
                                                              tmp_path: Path) -> None:
    folder = copy_export(exported, tmp_path)
    data = bytearray((folder / MODEL_FILE).read_bytes())
    data[len(data) // 2] ^= 0x01
    (folder / MODEL_FILE).write_bytes(bytes(data))
    assert "does not match its recorded SHA-256" in cached_problem(folder, WEIGHTS)
    encoder = reopen(embedder, tmp_path)
    assert cached_problem(folder, WEIGHTS) is None
    reference = embedder._torch_embed(["centre of pressure"], 1)
    assert float(encoder.embed(["centre of pressure"])[0] @ reference[0]) >= MIN_COSINE


def test_a_missing_or_foreign_record_means_the_file_is_not_trusted(exported, tmp_path: Path
                                                                    ) -> None:
    folder = copy_export(exported, tmp_path)
    record = json.loads((folder / RECORD_FILE).read_text())
    (folder / RECORD_FILE).write_text(json.dumps({**record, "weights_sha256": "0" * 64}))
    assert cached_problem(folder, WEIGHTS) == "it was exported from other weights"
    (folder / RECORD_FILE).unlink()
    assert "missing or unreadable" in cached_problem(folder, WEIGHTS)
    assert cached_problem(tmp_path / "empty", WEIGHTS) == "not exported yet"


def test_an_export_that_disagrees_with_pytorch_is_refused_and_not_kept(embedder,
                                                                      tmp_path: Path) -> None:
    def shifted(texts: list[str]) -> np.ndarray:  # PyTorch's vectors, each for the next probe
        return embedder._torch_embed(texts[1:] + texts[:1], 1)

    with pytest.raises(OnnxUnavailable, match="ONNX vectors differ from PyTorch's"):
        reopen(embedder, tmp_path, torch_embed=shifted)
    folder = export_folder(tmp_path, WEIGHTS)
    assert not (folder / MODEL_FILE).exists() and not (folder / RECORD_FILE).exists()
    assert not list(folder.glob("*.part"))


def test_an_unwritable_cache_folder_is_refused(embedder, tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    with pytest.raises(OnnxUnavailable, match="cannot write the ONNX model"):
        reopen(embedder, blocker / "onnx")


def test_missing_onnxruntime_is_refused(embedder, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # what an absent package looks like
    with pytest.raises(OnnxUnavailable, match="onnxruntime is not installed"):
        reopen(embedder, tmp_path)
