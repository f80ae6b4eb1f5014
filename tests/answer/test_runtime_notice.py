"""When ONNX Runtime cannot run, the answer (embedded through PyTorch) is the one ONNX gives, its
status not lowered, and it carries the notice that says so."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rag.answer.pipeline import Pipeline
from rag.notices import EMBED_RUNTIME_FALLBACK
from rag.providers.local_embedder import LocalEmbedder

QUESTION = "How does a Kalman filter decide whether to believe its prediction or a new reading?"


def test_the_answer_is_the_same_and_carries_the_notice(sample_index, sample_settings, pipeline,
                                                       tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    embedder = LocalEmbedder(runtime="onnx", cache_dir=tmp_path / "a-file" / "onnx")
    index = dataclasses.replace(sample_index, embedder=embedder)
    response = Pipeline(index, sample_settings).answer(QUESTION)
    normal = pipeline.answer(QUESTION)
    assert normal.metadata["notices"] == [] and normal.citations
    assert (response.status, response.answer) == (normal.status, normal.answer)  # not degraded
    assert [c.chunk_id for c in response.citations] == [c.chunk_id for c in normal.citations]
    codes = [n["code"] for n in response.metadata["notices"]]
    assert codes == [EMBED_RUNTIME_FALLBACK]
    assert [n["code"] for n in response.validation["notices"]] == codes
