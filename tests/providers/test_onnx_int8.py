"""The int8 query model: made once from the verified fp32 export, checked and cached; used for
retrieval questions only (the answerer's vector stays exact); any fault leaves fp32 in use."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from rag.config import load_settings
from rag.errors import ConfigError
from rag.providers import onnx_int8
from rag.providers.local_embedder import LocalEmbedder
from rag.providers.memo import QueryMemo
from rag.providers.onnx_export import MODEL_FILE, RECORD_FILE
from rag.providers.onnx_int8 import INT8_FILE, INT8_RECORD, MIN_COSINE, open_int8
from rag.providers.onnx_runtime import OnnxEncoder, OnnxUnavailable

QUESTIONS = ["What is the zero moment point?", "How fast does a humanoid fall?",
             "Which middleware does ROS 2 use under the hood?", "PID integral windup",
             "Why do balance controllers rely on body-internal sensors?"]


@pytest.fixture()
def fp32_copy(onnx_encoder, tmp_path: Path) -> OnnxEncoder:
    """The session's fp32 export copied into a fresh folder, so each test quantises alone."""
    folder = tmp_path / "export"
    folder.mkdir()
    for name in (MODEL_FILE, RECORD_FILE):
        shutil.copy2(onnx_encoder.path.parent / name, folder / name)
    onnx_int8._ENCODERS.pop(str(folder), None)
    return OnnxEncoder(folder / MODEL_FILE, onnx_encoder.tokenizer_path)


@pytest.fixture()
def int8_embedder(embedder, fp32_copy) -> LocalEmbedder:
    made = LocalEmbedder(runtime="onnx", cache_dir=fp32_copy.path.parent,
                         query_model="int8")
    made._encoder, made._tried = fp32_copy, True  # the copy, not a new export
    return made


def test_the_int8_model_is_made_once_with_its_record(fp32_copy, monkeypatch) -> None:
    encoder = open_int8(fp32_copy)
    folder = fp32_copy.path.parent
    record = json.loads((folder / INT8_RECORD).read_text())
    assert encoder.path == folder / INT8_FILE
    assert record["min_cosine"] >= MIN_COSINE and len(record["sha256"]) == 64
    assert (folder / INT8_FILE).stat().st_size < (folder / MODEL_FILE).stat().st_size / 2
    onnx_int8._ENCODERS.clear()  # a new process: the file on disk is used, not made again
    monkeypatch.setattr(onnx_int8, "quantise_file", lambda *a: pytest.fail("quantised again"))
    assert open_int8(fp32_copy).path == folder / INT8_FILE


def test_int8_question_vectors_are_close_to_fp32(int8_embedder) -> None:
    for question in QUESTIONS:
        fast, exact = int8_embedder.embed_query(question), int8_embedder.embed_query_exact(
            question)
        assert abs(np.linalg.norm(fast) - 1) < 1e-3
        assert 0.97 <= float(fast @ exact) < 0.99999, question  # close, and really int8's
    assert int8_embedder.query_model_used == "int8"


def test_a_damaged_int8_file_is_made_again(fp32_copy) -> None:
    open_int8(fp32_copy)
    path = fp32_copy.path.parent / INT8_FILE
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    onnx_int8._ENCODERS.clear()
    assert "SHA-256" in onnx_int8._problem(path.parent, onnx_int8.sha256_file(
        fp32_copy.path))
    open_int8(fp32_copy)
    assert onnx_int8._problem(path.parent, onnx_int8.sha256_file(fp32_copy.path)) is None


def test_a_failed_quantisation_leaves_questions_on_fp32(int8_embedder, monkeypatch) -> None:
    def broken(source, target):
        raise OnnxUnavailable("int8 quantisation failed: no space left")

    monkeypatch.setattr(onnx_int8, "quantise_file", broken)
    question = QUESTIONS[0]
    assert int8_embedder.query_model_used == "fp32"
    assert np.array_equal(int8_embedder.embed_query(question),
                          int8_embedder.embed_query_exact(question))
    assert not (int8_embedder.cache_dir / INT8_FILE).exists()


def test_a_model_far_from_fp32_is_refused(fp32_copy, monkeypatch) -> None:
    monkeypatch.setattr(onnx_int8, "quantise_file",  # "quantises" to a copy of the wrong model
                        lambda source, target: shutil.copy2(source, target))
    rotate = OnnxEncoder.embed

    def shifted(self, texts, threads=1):
        vectors = rotate(self, texts, threads)
        return np.roll(vectors, 1, axis=1) if self.path.name.startswith(".int8") else vectors

    monkeypatch.setattr(OnnxEncoder, "embed", shifted)
    with pytest.raises(OnnxUnavailable, match="too far from fp32"):
        open_int8(fp32_copy)
    assert not (fp32_copy.path.parent / INT8_FILE).exists()


def test_fp32_query_model_embeds_questions_exactly(embedder) -> None:
    exact = LocalEmbedder(runtime="onnx", cache_dir=embedder.cache_dir, query_model="fp32")
    exact._encoder, exact._tried = embedder.onnx_encoder(), True
    assert exact.query_model_used == "fp32"
    assert np.array_equal(exact.embed_query(QUESTIONS[1]), exact.embed_query_exact(QUESTIONS[1]))


def test_a_request_memo_keeps_both_vectors_apart(int8_embedder) -> None:
    memo = QueryMemo(int8_embedder)
    fast, exact = memo.embed_query(QUESTIONS[2]), memo.embed_query_exact(QUESTIONS[2])
    assert not np.array_equal(fast, exact)
    assert memo.embed_query(QUESTIONS[2]) is fast and memo.embed_query_exact(QUESTIONS[2]) is exact


def test_the_query_model_is_chosen_in_settings_or_the_environment(tmp_path: Path) -> None:
    assert load_settings(env={"RAG_QUERY_MODEL": "fp32"}).query_model == "fp32"
    path = tmp_path / "settings.toml"
    path.write_text('[embedders.local]\nthreshold = 0.3\nquery_model = "fp32"\n')
    assert load_settings(settings_file=path, env={}).query_model == "fp32"
    with pytest.raises(ConfigError, match="RAG_QUERY_MODEL .* must be int8 or fp32"):
        load_settings(env={"RAG_QUERY_MODEL": "int4"})
    path.write_text('[embedders.cohere]\nthreshold = 0.3\nquery_model = "int8"\n')
    with pytest.raises(ConfigError, match="only \\[embedders.local\\] has a query_model"):
        load_settings(settings_file=path, env={})
    with pytest.raises(ConfigError, match="query model must be one of int8, fp32"):
        LocalEmbedder(runtime="onnx", cache_dir=tmp_path, query_model="fp16")
