"""When ONNX Runtime cannot run, retrieval still finds the same chunks through PyTorch and says
so in a notice."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from rag.notices import EMBED_RUNTIME_FALLBACK
from rag.providers.local_embedder import LocalEmbedder
from rag.providers.memo import QueryMemo
from rag.retrieval.hybrid import retrieve

QUESTION = "How does a Kalman filter decide whether to believe its prediction or a new reading?"


@pytest.fixture(scope="module")
def fallen_back(sample_index, tmp_path_factory):
    """The sample index queried by an embedder whose ONNX cache folder cannot be created."""
    blocker: Path = tmp_path_factory.mktemp("blocked") / "a-file"
    blocker.write_text("")
    embedder = LocalEmbedder(runtime="onnx", cache_dir=blocker / "onnx")
    return dataclasses.replace(sample_index, embedder=embedder)


def test_retrieval_says_pytorch_was_used_and_finds_the_same_chunks(fallen_back, sample_index,
                                                                   sample_settings) -> None:
    fallback = retrieve(fallen_back, QUESTION, sample_settings.retrieval)
    normal = retrieve(sample_index, QUESTION, sample_settings.retrieval)
    assert [n.code for n in fallback.notices] == [EMBED_RUNTIME_FALLBACK]
    assert "embedded through PyTorch" in fallback.notices[0].message
    assert normal.notices == ()
    assert [h.chunk.chunk_id for h in fallback.hits] == [h.chunk.chunk_id for h in normal.hits]


def test_the_notice_passes_through_the_per_request_memo(fallen_back, sample_settings) -> None:
    memo = dataclasses.replace(fallen_back, embedder=QueryMemo(fallen_back.embedder))
    result = retrieve(memo, QUESTION, sample_settings.retrieval)
    assert [n.code for n in result.notices] == [EMBED_RUNTIME_FALLBACK]

