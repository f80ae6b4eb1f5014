"""The local MiniLM: verified by hash, unit-length 384-d vectors, loaded once per process."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from rag.errors import ConfigError, ProviderError
from rag.notices import EMBED_RUNTIME_FALLBACK, FALLBACK
from rag.providers.local_embedder import EXPECTED_SHA256, LocalEmbedder, verify_files
from rag.providers.registry import EMBEDDERS, get_embedder


def tampered_copy(source: Path, target: Path, name: str) -> Path:
    """The model folder with every file linked except `name`, copied with one byte changed."""
    target.mkdir()
    for item in source.iterdir():
        if item.name != name:
            (target / item.name).symlink_to(item)
    data = bytearray((source / name).read_bytes())
    data[len(data) // 2] ^= 0x01
    (target / name).write_bytes(bytes(data))
    return target


def test_installed_model_matches_the_pinned_hashes(embedder) -> None:
    verify_files(embedder.directory)  # raises on a mismatch
    assert set(EXPECTED_SHA256) == {"model.safetensors", "tokenizer.json"}


@pytest.mark.parametrize("name", ["tokenizer.json", "model.safetensors"])
def test_a_changed_byte_is_refused_naming_the_file(embedder, tmp_path: Path, name: str) -> None:
    copy = tampered_copy(embedder.directory, tmp_path / "model", name)
    with pytest.raises(ProviderError, match=rf"{name} does not match upstream all-MiniLM-L6-v2"):
        verify_files(copy)
    with pytest.raises(ProviderError, match="reinstall the package"):
        LocalEmbedder(copy).model  # noqa: B018  (loading is what must fail)


def test_tampered_tokenizer_is_refused_before_counting(embedder, tmp_path: Path) -> None:
    copy = tampered_copy(embedder.directory, tmp_path / "model", "tokenizer.json")
    with pytest.raises(ProviderError, match="tokenizer.json"):
        LocalEmbedder(copy).count_tokens("hello")


def test_a_missing_file_is_named(embedder, tmp_path: Path) -> None:
    copy = tmp_path / "model"
    copy.mkdir()
    (copy / "tokenizer.json").symlink_to(embedder.directory / "tokenizer.json")
    with pytest.raises(ProviderError, match="model.safetensors is missing"):
        verify_files(copy)


def test_vectors_are_unit_length_384_float32(embedder) -> None:
    docs = embedder.embed_documents(["The integral term removes steady-state error.",
                                     "Bread needs flour, water and salt.", ""])
    query = embedder.embed_query("why does the integral term remove steady state error")
    assert docs.shape == (3, 384) and docs.dtype == np.float32
    assert query.shape == (384,) and query.dtype == np.float32
    assert np.allclose(np.linalg.norm(docs, axis=1), 1.0, atol=1e-5)
    assert np.isclose(np.linalg.norm(query), 1.0, atol=1e-5)
    assert docs[0] @ query > docs[1] @ query + 0.3


def test_query_and_document_embeddings_agree(embedder) -> None:
    """The exact question vector is the document vector; retrieval's int8 one is close to it."""
    text = "A humanoid keeps its balance by moving the centre of pressure."
    document = embedder.embed_documents([text])[0]
    assert np.allclose(embedder.embed_query_exact(text), document, atol=1e-5)
    assert float(embedder.embed_query(text) @ document) > 0.97


def test_batches_give_the_same_vectors_as_single_texts(embedder) -> None:
    texts = [f"Joint {i} uses a harmonic drive with {i * 10}:1 reduction." for i in range(5)]
    together = embedder.embed_documents(texts)
    alone = np.vstack([embedder.embed_documents([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-5)
    assert embedder.embed_documents([]).shape == (0, 384)


def test_progress_is_reported_per_batch(embedder) -> None:
    seen: list[tuple[int, int]] = []
    embedder.embed_documents(["a"] * 3, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(3, 3)]


def test_loaded_once_per_process(embedder) -> None:
    assert LocalEmbedder().model is embedder.model  # the same object, not a second load
    from rag.config import load_settings

    assert get_embedder(load_settings(env={})) is get_embedder(load_settings(env={}))


def test_runs_offline() -> None:
    assert os.environ.get("HF_HUB_OFFLINE") == "1"


def test_token_counts_exclude_special_tokens(embedder) -> None:
    assert embedder.count_tokens("hello world") == 2
    assert embedder.count_tokens_batch(["hello world", "", "unbelievably"]) == [
        2, 0, len(embedder.tokenizer.encode("unbelievably", add_special_tokens=False).ids)]
    assert (embedder.name, embedder.dim, embedder.max_tokens) == ("local", 384, 256)


def test_unknown_embedder_lists_the_known_ones() -> None:
    from rag.config import load_settings

    with pytest.raises(ConfigError, match="choose one of " + ", ".join(sorted(EMBEDDERS))):
        get_embedder(load_settings(env={"RAG_EMBEDDER": "word2vec"}))


# -- runtime: ONNX by default, PyTorch when asked or, with a notice, when ONNX cannot run -------


def blocked_cache(tmp_path: Path) -> Path:
    """A cache folder that cannot be created: its parent is a file."""
    (tmp_path / "a-file").write_text("")
    return tmp_path / "a-file" / "onnx"


def test_a_failed_onnx_path_embeds_through_torch_with_a_notice(torch_embedder,
                                                               tmp_path: Path) -> None:
    local = LocalEmbedder(runtime="onnx", cache_dir=blocked_cache(tmp_path))
    text = "How does a Kalman filter weigh its prediction?"
    assert np.allclose(local.embed_query(text), torch_embedder.embed_query(text), atol=1e-6)
    assert local.runtime_used == "torch" and len(local.notices) == 1
    notice = local.notices[0]
    assert (notice.code, notice.kind, notice.degraded) == (EMBED_RUNTIME_FALLBACK, FALLBACK, False)
    assert "cannot write the ONNX model" in notice.message and "PyTorch" in notice.message


def test_missing_onnxruntime_embeds_through_torch_with_a_notice(tmp_path: Path,
                                                                monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    local = LocalEmbedder(runtime="onnx", cache_dir=tmp_path / "onnx")
    assert local.embed_documents(["zero moment point"]).shape == (1, 384)
    assert "onnxruntime is not installed" in local.notices[0].message
    assert not (tmp_path / "onnx").exists()


def test_torch_when_asked_has_no_notice(torch_embedder) -> None:
    assert (torch_embedder.runtime_used, torch_embedder.notices) == ("torch", ())
    assert torch_embedder.onnx_encoder() is None


def test_an_unknown_runtime_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must be one of onnx, torch"):
        LocalEmbedder(runtime="tensorrt", cache_dir=tmp_path)
    with pytest.raises(ConfigError, match="needs a folder for its export"):
        LocalEmbedder(runtime="onnx")


@pytest.mark.parametrize("value, expected", [("abc", 1), ("0", 1), ("-3", 1), ("1", 1),
                                             ("9999", None)])
def test_thread_counts_from_the_environment_never_stop_the_app(monkeypatch, value, expected):
    import os

    from rag.providers import local_embedder

    monkeypatch.setenv("RAG_QUERY_THREADS", value)
    got = local_embedder._threads("RAG_QUERY_THREADS")
    assert got == (expected if expected is not None else (os.cpu_count() or 1))
