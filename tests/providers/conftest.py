"""The PyTorch path of MiniLM beside the session's ONNX one (both share the loaded weights)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def torch_embedder():
    from rag.providers.local_embedder import LocalEmbedder

    return LocalEmbedder(runtime="torch")


@pytest.fixture(scope="session")
def onnx_encoder(embedder):
    """The session's one ONNX export (in the session's RAG_ONNX_DIR), loaded."""
    encoder = embedder.onnx_encoder()
    assert encoder is not None, embedder.notices
    return encoder
