"""`build_index` (what `rag ingest` runs) makes the ONNX export beside a new index, then embeds
through it; a failed export leaves a working index built through PyTorch, with a notice."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag.book.chunk import embed_text_for
from rag.config import load_settings
from rag.index.load import build_index, load_index, store_for
from rag.notices import EMBED_RUNTIME_FALLBACK
from rag.providers.local_embedder import EXPECTED_SHA256, LocalEmbedder
from rag.providers.onnx_export import MODEL_FILE, RECORD_FILE, cached_problem, export_folder
from rag.providers.registry import get_embedder


@pytest.fixture
def tiny_book(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "control").mkdir(parents=True)
    (root / "control" / "pid.md").write_text(
        "---\nid: pid\ntitle: PID control\n---\n# PID control\n\n## Windup {#windup}\n\n"
        "Integral windup happens when the actuator saturates and the integral term keeps "
        "growing; clamping the integrator avoids it.\n", encoding="utf-8")
    return root


def test_ingest_exports_beside_the_new_index_and_embeds_through_onnx(
        tiny_book: Path, index_dir: Path, monkeypatch) -> None:
    monkeypatch.delenv("RAG_ONNX_DIR", raising=False)
    settings = load_settings(env={}, book_dir=tiny_book, index_dir=index_dir)
    summary = build_index(settings)
    local = get_embedder(settings)
    folder = local.onnx_encoder().path.parent
    assert folder.parent == index_dir / "onnx"
    assert (folder / MODEL_FILE).is_file() and (folder / RECORD_FILE).is_file()
    assert cached_problem(folder, EXPECTED_SHA256["model.safetensors"]) is None
    assert summary.embedded == summary.chunks >= 1 and local.notices == ()
    index, _ = load_index(settings, build=False)
    ids = [c.chunk_id for c in index.chunks]
    stored = index.store.fetch_vectors(index.collection, ids)
    torch = LocalEmbedder(runtime="torch").embed_documents(
        [embed_text_for(c.heading_path, c.text) for c in index.chunks])
    index.store.close()
    assert min(float(stored[cid] @ torch[i]) for i, cid in enumerate(ids)) >= 0.9999


def test_a_failed_export_still_builds_the_index_through_torch(tiny_book: Path, tmp_path: Path,
                                                             monkeypatch) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("RAG_ONNX_DIR", str(tmp_path / "a-file" / "onnx"))
    settings = load_settings(env={}, book_dir=tiny_book, index_dir=tmp_path / "index")
    summary = build_index(settings)
    store_for(settings).close()
    local = get_embedder(settings)
    assert summary.embedded == summary.chunks >= 1 and local.runtime_used == "torch"
    assert [n.code for n in local.notices] == [EMBED_RUNTIME_FALLBACK]


def test_ingest_of_an_up_to_date_index_still_makes_the_export(tiny_book: Path, index_dir: Path,
                                                             onnx_dir: Path, monkeypatch) -> None:
    """An index built before ONNX (here: with the export kept elsewhere) gets its own export
    at the next ingest, though nothing needs embedding, so no question waits for it."""
    monkeypatch.setenv("RAG_ONNX_DIR", str(onnx_dir))
    build_index(load_settings(env={}, book_dir=tiny_book, index_dir=index_dir))
    monkeypatch.delenv("RAG_ONNX_DIR")
    assert not (index_dir / "onnx").exists()
    settings = load_settings(env={}, book_dir=tiny_book, index_dir=index_dir)
    summary = build_index(settings)
    store_for(settings).close()
    assert summary.embedded == 0 and summary.reused == summary.chunks
    folder = export_folder(index_dir / "onnx", EXPECTED_SHA256["model.safetensors"])
    assert cached_problem(folder, EXPECTED_SHA256["model.safetensors"]) is None
